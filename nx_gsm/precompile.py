"""Compile every kernel variant ahead of the first query: :func:`warmup` and ``nx-gsm warmup``.

Numba compiles a kernel on its first call with a new signature and caches the result on disk
(:mod:`nx_gsm.kernel_cache`), so the first query of each compiled path pays seconds and later
processes load it in milliseconds. :func:`warmup` runs tiny queries that drive every path the
planner and the engines can take (counts, enumerations, first-k, induced and monomorphism,
directed graphs, multigraphs and edge labels, node labels and callables, self-loops, the probe,
the parallel split, the partitioned engine, the GPU engines' host levels), so that a later
process compiles nothing.

With a usable GPU it also compiles every GPU kernel variant the engines can launch: each GPU
engine runs tiny queries, gmatch's at each of its stack depths (8, 16 and 32 levels) with its
levels on the device, fused and not; then the variants no query reached -- gmatch's DFS and
fused kernels at every stack depth with int32 and int64 stack offsets, GSI's join kernels at
every partial-match length -- are compiled for the argument types those launches used (the
variants of a kernel take the same arguments). GPU kernels are cached per compute capability
(:func:`nx_gsm.kernel_cache.cached_kernel`), so a later process launches them without compiling.

The first compile of a process with a cold cache prints one line to stderr saying it is a
one-time cost (:func:`notice_first_compile`, called before the first plan is made). The cache is
cold when Numba's index for the core kernels is missing or stale (Numba keys it by the kernel
source file's stamp, so an upgraded install counts as cold).

The module is not called ``warmup``: importing a submodule binds its name on the package, which
would shadow the function ``nx_gsm.warmup``.
"""

from __future__ import annotations

import sys
import time

from . import kernel_cache

__all__ = ["warmup", "notice_first_compile"]

_NOTICE = ("nx-gsm: compiling the CPU kernels once (about 20-40 s); later runs load them from "
           "{}")
# checked once per process: after the first plan the kernels are compiled or loaded
_checked = False


def _cold():
    """Whether the search kernel, which every query's first call compiles, has no fresh entry
    in Numba's cache."""
    from .engines.cpu import kernels

    try:
        return not kernels.search._cache._cache_file._load_index()
    except Exception:  # Numba's cache layout is private: if it changed, say nothing
        return False


def notice_first_compile():
    """Print the one-time-cost line to stderr if this process is about to compile the kernels.

    Called before the first plan of a process is made; checks once per process (reading
    Numba's index files, about a millisecond) and prints only when the cache is cold.

    Returns
    -------
    bool
        Whether the line was printed.

    Examples
    --------
    >>> from nx_gsm.precompile import notice_first_compile
    >>> notice_first_compile() in (True, False)
    True
    """
    global _checked
    if _checked:
        return False
    _checked = True
    if not _cold():
        return False
    print(_NOTICE.format(kernel_cache.numba_cache_dir()), file=sys.stderr, flush=True)
    return True


# -- the tiny queries ---------------------------------------------------------------------------
def _graphs():
    """Small graphs (and patterns cut out of them, so every query has matches and reaches
    every depth) for each kind of input."""
    import networkx as nx

    und = nx.circulant_graph(24, [1, 2, 5])
    nx.set_node_attributes(und, {v: v % 3 for v in und}, "label")
    nx.set_edge_attributes(und, {(u, v): (u + v) % 2 for u, v in und.edges}, "label")
    di = nx.DiGraph()
    di.add_nodes_from(und.nodes(data=True))
    di.add_edges_from(und.edges(data=True))
    # reciprocal pairs: the in-direction checks and multiplicities both ways
    di.add_edges_from(((v, u, {"label": 1}) for u, v in und.edges if (u + v) % 3 == 0))
    multi = nx.MultiGraph(und)
    multi.add_edges_from(((u, v, {"label": 2}) for u, v in und.edges if (u * v) % 4 == 0))
    multidi = nx.MultiDiGraph(di)
    multidi.add_edges_from(((u, v, {"label": 2}) for u, v in di.edges if (u * v) % 4 == 0))
    loops = und.copy()
    loops.add_edges_from(((v, v, {"label": v % 2}) for v in range(0, 24, 3)))
    sub = list(range(5))
    return {name: (g, g.subgraph(sub).copy())
            for name, g in (("undirected", und), ("directed", di), ("multigraph", multi),
                            ("multidigraph", multidi), ("self-loops", loops))}


def _queries(G, H, engine, edge_labels=True):
    """The matching functions' compiled paths on one pair: counts, first-k, enumeration and
    finds, both modes, with and without node labels, edge labels and callables."""
    import nx_gsm

    def node_match(a, b):  # a callable: the planner's compatibility table, not a label index
        return a["label"] == b["label"]

    def edge_match(a, b):
        return a == b if G.is_multigraph() else a["label"] == b["label"]

    labels = [{}, {"node_label": "label"}, {"node_match": node_match}]
    if edge_labels:
        labels += [{"edge_label": "label"}, {"node_label": "label", "edge_match": edge_match}]
    for kw in labels:
        for count, it in ((nx_gsm.count_subgraph_monomorphisms, nx_gsm.subgraph_monomorphisms),
                          (nx_gsm.count_subgraph_isomorphisms, nx_gsm.subgraph_isomorphisms)):
            count(G, H, engine=engine, **kw)
            count(G, H, engine=engine, limit=3, **kw)
            sum(1 for _ in it(G, H, engine=engine, **kw))
            next(it(G, H, engine=engine, limit=2, **kw), None)
    nx_gsm.find_subgraph_monomorphisms(G, H, engine=engine, node_label="label")
    nx_gsm.is_subgraph_isomorphic(G, H, engine=engine)


def _plans():
    """Plans for the engines' internal kernels: a labelled one and an unlabelled, deep one."""
    import networkx as nx

    from .interop.networkx import as_gsm
    from .plan.planner import make_plan

    G, H = _graphs()["undirected"]
    labelled = make_plan(as_gsm(G, edge_attrs=False), as_gsm(H, edge_attrs=False), "mono",
                         node_label="label")
    deep = make_plan(as_gsm(nx.circulant_graph(30, [1, 2, 5])), as_gsm(nx.path_graph(6)), "mono")
    return labelled, deep


def _step_probe():
    """The planner's probe (``engine="auto"`` runs it when a GPU engine is usable), the bounded
    count and the candidate-space size the GPU engines ask for, the prefix tasks of the
    distributed counts and of the GPU engines' hand-over to the CPU, and every order with the
    tree estimate a long count weighs them by (tiny searches never reach it)."""
    from .distributed import split_prefixes
    from .engines.auto import probe
    from .engines.cpu import CpuEngine, count_probe, plan_arrays
    from .engines.cpu.kernels import tree_estimate
    from .plan.order import ORDERS, matching_order
    from .plan.space import space_visits

    eng = CpuEngine()
    for plan in _plans():
        P = plan_arrays(plan)
        for name in ORDERS:
            matching_order(plan.H, plan.candidate_counts(), name)
        tree_estimate(P, 4, 1)
        probe(P, plan.k, False)
        probe(P, plan.k, True)
        count_probe(plan, 1 << 10)
        space_visits(plan)
        prefixes = split_prefixes(plan, 2)
        eng.count_from(plan, prefixes[0])
        sum(c.shape[0] for c in eng.iter_from(plan, prefixes[0]))


def _step_host_levels():
    """gmatch's first BFS levels on the host, narrow (one thread) and wide (every thread),
    written or counted."""
    import numba
    import numpy as np

    from .engines.cpu import expand_wide, host_levels, plan_arrays

    for plan in _plans():
        P = plan_arrays(plan)
        roots = plan.cand_flat[plan.cand_ptr[0]:plan.cand_ptr[1]]
        rows = np.ascontiguousarray(roots, dtype=np.int32).reshape(-1, 1)
        threads = numba.get_num_threads()
        for count_last in (False, True):
            # wide_rows=1 and two threads: the parallel levels, whatever the frontier's size
            host_levels(P, rows, 1 << 16, plan.k, max(threads, 2), wide_rows=1,
                        count_last=count_last, count_cap=1 << 16, work_cap=0)
            host_levels(P, rows, 1 << 16, plan.k, threads, count_last=count_last,
                        count_cap=1 << 16, work_cap=1 << 8)
        expand_wide(P, rows, 1 << 16, 2)


def _step_partitioned():
    """The partitioned engine's seeded cross-part search (count and rows), inner engine CPU."""
    import networkx as nx

    import nx_gsm

    from .engines.partitioned import PartitionedEngine

    G, H = _graphs()["undirected"]
    for g, h, kw in ((G, H, {"node_label": "label"}), (nx.circulant_graph(30, [1, 2, 5]),
                                                        nx.path_graph(4), {})):
        eng = PartitionedEngine(inner="cpu", parts=3, cross="cpu")
        nx_gsm.count_subgraph_monomorphisms(g, h, engine=eng, **kw)
        sum(1 for _ in nx_gsm.subgraph_isomorphisms(g, h, engine=eng, **kw))


def _step_parallel():
    """Counts past the sequential probe (the window of slots, work splitting) and a candidate
    space built on every thread."""
    import networkx as nx

    import nx_gsm

    nx_gsm.count_subgraph_monomorphisms(nx.circulant_graph(30, [1, 2, 5]), nx.path_graph(6),
                                        engine="cpu")
    # about 7 x 10^4 adjacency entries read: over the space's one-thread cut
    nx_gsm.count_subgraph_monomorphisms(nx.circulant_graph(6000, [1, 2, 3]), nx.path_graph(3),
                                        engine="cpu")


def _step_networkx():
    """The NetworkX backend and the matcher classes (through the same planner)."""
    import networkx as nx

    import nx_gsm

    G, H = _graphs()["undirected"]
    nx_gsm.GraphMatcher(G, H).subgraph_is_monomorphic()
    sum(1 for _ in nx_gsm.isomorphisms(G, G, node_label="label"))
    # two graphs of its own: NetworkX warns when it finds a graph it converted before
    nx.vf2pp_is_isomorphic(_graphs()["undirected"][0], _graphs()["undirected"][0],
                           node_label="label", backend="gsm")


def _step_incremental():
    """Incremental matching's anchored searches (CPU engine)."""
    import nx_gsm

    G, H = _graphs()["undirected"]
    m = nx_gsm.IncrementalMatcher(G, H, engine="cpu")
    m.apply(insert=[(0, 12)], delete=[(0, 1)])
    m.count()


def _chain_pair(n, k):
    """A cycle of ``n`` nodes labelled 0/1 in turn and a path of ``k`` nodes labelled alike:
    ``n`` matches from ``n / 2`` roots, a few hundred rows a level at any depth -- device work
    at every depth, and little of it."""
    import networkx as nx

    G, H = nx.cycle_graph(n), nx.path_graph(k)
    for g in (G, H):
        nx.set_node_attributes(g, {v: v % 2 for v in g}, "label")
    return G, H


def _step_gmatch_depths():
    """gmatch at each stack depth (patterns of 5, 12 and 20 nodes: its 8-, 16- and 32-level
    kernels) with every level on the device: a count's fused kernel; the BFS level kernel;
    and the DFS after one device level, counting and writing rows. (On a chain this small
    the BFS runs to the last depth and never hands over to the DFS unless told to; the DFS's
    signature then reached warmup's variant step from no launch at all.)"""
    import nx_gsm

    from .engines.gpu.gmatch import GMatchEngine

    engines = (GMatchEngine(host_rows=0), GMatchEngine(host_rows=0, fused=False),
               GMatchEngine(host_rows=0, fused=False, bfs_levels=1))
    for k in (5, 12, 20):
        G, H = _chain_pair(240, k)
        for eng in engines:
            nx_gsm.count_subgraph_monomorphisms(G, H, engine=eng, node_label="label")
            sum(1 for _ in nx_gsm.subgraph_monomorphisms(G, H, engine=eng, node_label="label"))


def _step_gsi_depths():
    """GSI's join kernels on a deep pattern too (a 20-node one)."""
    import nx_gsm

    G, H = _chain_pair(240, 20)
    nx_gsm.count_subgraph_monomorphisms(G, H, engine="gsi", node_label="label")


def _step_variants(usable):
    """Every other gmatch DFS and fused variant and every GSI join length, for each argument
    signature the steps before launched them with. Last of all: GSI hands deep levels to
    gmatch's DFS over a device plan of its own, so a signature may first appear in any
    engine's step, and one that appeared after this step would reach one variant only."""
    if "gmatch" in usable:
        from .engines.gpu.gmatch.kernels import compile_variants

        compile_variants()
    if "gsi" in usable:
        from .engines.gpu.gsi_kernels import compile_variants

        compile_variants()


def _cpu_steps(reasons):
    """``(name, callable)`` for every CPU step, and ``{name: reason}`` for those not run (the
    partitioned engine without pymetis; ``reasons``: available_engines())."""
    steps, skipped = [], {}
    for name in ("undirected", "directed", "multigraph", "multidigraph", "self-loops"):
        def run(name=name):
            G, H = _graphs()[name]
            _queries(G, H, "cpu")
            if name == "undirected":
                _queries(G, H, "auto", edge_labels=False)
        steps.append((f"cpu: {name}", run))
    steps += [("cpu: parallel count", _step_parallel),
              ("cpu: probe and prefix tasks", _step_probe)]
    if reasons.get("partitioned") is None:
        steps.append(("cpu: partitioned engine", _step_partitioned))
    else:
        skipped["cpu: partitioned engine"] = reasons["partitioned"]
    steps += [("cpu: incremental", _step_incremental),
              ("cpu: networkx backend", _step_networkx)]
    return steps, skipped


def _gpu_steps(reasons):
    """``(name, callable)`` for each usable GPU engine (``reasons``: available_engines()), or
    none without one."""
    from .engines.registry import engines_with

    usable = [n for n in engines_with(device=True) if reasons.get(n) is None]
    if not usable:
        return []
    steps = [("gpu: host levels", _step_host_levels)]
    for name in engines_with(device=True, delta=False):
        if name not in usable:
            continue

        def run(name=name):
            for kind in ("undirected", "directed", "multigraph"):
                G, H = _graphs()[kind]
                _queries(G, H, name)
        steps.append((f"gpu: {name}", run))
    if "gmatch" in usable:
        steps.append(("gpu: gmatch stack depths", _step_gmatch_depths))
    if "gsi" in usable:
        steps.append(("gpu: gsi join lengths", _step_gsi_depths))
    if "gamma" in usable:
        def run_gamma():
            import nx_gsm

            G, H = _graphs()["undirected"]
            m = nx_gsm.IncrementalMatcher(G, H, engine="gamma")
            m.apply(insert=[(0, 12)], delete=[(0, 1)])
            m.count()
        steps.append(("gpu: gamma", run_gamma))
    if "gmatch" in usable or "gsi" in usable:
        steps.append(("gpu: kernel variants", lambda: _step_variants(usable)))
    return steps


def warmup(progress=True):
    """Compile every kernel variant the planner and the engines can choose, once.

    Runs tiny queries through each compiled path of the CPU engine, the planner and the
    partitioned and incremental engines, and with a usable GPU through each GPU engine, so
    that later processes load the compiled code from the cache (:func:`nx_gsm.kernel_cache
    .cache_dir`) instead of compiling on their first queries. The first run takes a minute or
    two; a run with a warm cache takes a few seconds.

    Parameters
    ----------
    progress : bool
        Show a progress bar over the steps (on stderr), and a line naming the GPU engines
        skipped when none is usable.

    Returns
    -------
    dict
        ``steps``: seconds per step run; ``skipped``: the reason per step not run (the GPU
        engines without a usable device, the partitioned engine without pymetis); ``cache_dir``: where the compiled code is kept;
        ``gpu_kernels``: the GPU kernels' signatures ``compiled`` and ``loaded`` from the
        cache (:func:`nx_gsm.kernel_cache.gpu_kernel_stats`; zeros without a GPU).

    Examples
    --------
    >>> import nx_gsm
    >>> report = nx_gsm.warmup(progress=False)  # doctest: +SKIP
    >>> sorted(report)  # doctest: +SKIP
    ['cache_dir', 'gpu_kernels', 'skipped', 'steps']
    """
    global _checked
    from tqdm.auto import tqdm

    from .engines.registry import available_engines

    _checked = True  # the progress bar says what happens; no one-time-cost line as well
    kernel_cache.notice_given()
    reasons = available_engines()
    steps, skipped = _cpu_steps(reasons)
    gpu = _gpu_steps(reasons)
    if not gpu:
        why = reasons.get("gmatch") or "no GPU engine loads"
        skipped["gpu"] = why
        if progress:
            print(f"nx-gsm warmup: GPU kernels skipped ({why})", file=sys.stderr, flush=True)
    steps += gpu
    times = {}
    with tqdm(total=len(steps), desc="nx-gsm warmup", unit="step", disable=not progress,
              file=sys.stderr) as bar:
        for name, run in steps:
            bar.set_postfix_str(name)
            t = time.perf_counter()
            run()
            times[name] = round(time.perf_counter() - t, 3)
            bar.update()
    gpu_stats = kernel_cache.gpu_kernel_stats()
    return {"steps": times, "skipped": skipped, "cache_dir": str(kernel_cache.numba_cache_dir()),
            "gpu_kernels": {k: gpu_stats[k] for k in ("compiled", "loaded")}}
