"""gmatch's kernels under Numba's CUDA simulator (run by test_gpu_gmatch_sim.py in a subprocess).

The simulator has no warp intrinsics; gmatch swaps in per-warp barriers there, so the same kernel
source runs (every lane a Python thread). Cases are tiny: the simulator is ~10^5 times slower.
A case fails on its first difference from the CPU engine.
"""

import os
import random
import sys

assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", "run with NUMBA_ENABLE_CUDASIM=1"

import networkx as nx  # noqa: E402
from networkx.algorithms import isomorphism as iso  # noqa: E402
from sim_runner import run_cases, sim_case  # noqa: E402

from nx_gsm.api import prepare  # noqa: E402
from nx_gsm.engines.cpu import CpuEngine  # noqa: E402
from nx_gsm.engines.gpu.gmatch import GMatchEngine  # noqa: E402
from nx_gsm.testing import random_graph as rand_graph  # noqa: E402
from nx_gsm.testing import rows_of as _rows  # noqa: E402

# two groups, one process each (each under its own timeout): "search" and "levels"; each draws
# its own random stream in its cases' order (sim_runner runs a group whole)
RND = {"search": random.Random(5), "levels": random.Random(6)}
NM = iso.categorical_node_match("c", None)
SHARED = {}


def check(G, H, mode, label, engine_kw, **kw):
    plan, _, _ = prepare(G, H, mode, **kw)
    cpu = CpuEngine()
    want = cpu.count(plan)
    eng = GMatchEngine(blocks=1, **engine_kw)
    got = eng.count(plan)
    if "t_upload" in eng.last_stats and \
            eng.last_stats.get("space") != engine_kw.get("candidate_space", True):
        print(f"{label}: the candidate space was not used as asked: {eng.last_stats}")
        sys.exit(1)
    # the adjacency bitmap exactly where the edge tests may use it: a simple data graph (every
    # multiplicity 1) without edge labels; else the rows' binary search
    bits = engine_kw.get("adjacency_bits", True) and not plan.has_elabels and \
        int(plan.G.mult.max(initial=0)) <= 1
    if "t_upload" in eng.last_stats and eng.last_stats.get("adj_bits") != bits:
        print(f"{label}: adjacency bitmap {eng.last_stats.get('adj_bits')}, expected {bits}")
        sys.exit(1)
    ref = set(map(tuple, _rows(cpu.iter_chunks(plan), plan.k).tolist()))
    rows = _rows(eng.iter_chunks(plan, chunk=5), plan.k)
    mine = set(map(tuple, rows.tolist()))
    ok = got == want and len(rows) == want and mine == ref
    lim = max(1, want // 3)
    part = _rows(eng.iter_chunks(plan, limit=lim), plan.k)
    ok = ok and eng.count(plan, limit=lim) == min(want, lim) and len(part) == min(want, lim)
    ok = ok and set(map(tuple, part.tolist())) <= ref
    print(f"{label}: k={plan.k} want={want} got={got} rows={len(rows)} ok={ok} "
          f"{eng.last_stats}", flush=True)
    if not ok:
        sys.exit(1)


@sim_case(group="search")
def classes_and_modes():
    """The four classes, both modes; the pool stops at depth 1 so the warp DFS does the work,
    its local candidate sets drawn from the candidate space (default) or from raw rows."""
    rnd, nm = RND["search"], NM
    for i, cls in enumerate([nx.Graph, nx.DiGraph, nx.MultiGraph, nx.MultiDiGraph]):
        G = rand_graph(rnd, cls, 9, 0.45, loops=i % 2 == 0, n_labels=2, n_elabels=2)
        H = rand_graph(rnd, cls, 3, 0.7, n_labels=2, n_elabels=2)
        # and a piece of G, so that it occurs (a random multigraph pattern rarely does)
        piece = nx.convert_node_labels_to_integers(G.subgraph(rnd.sample(sorted(G), 4)))
        em = (iso.categorical_multiedge_match if G.is_multigraph()
              else iso.categorical_edge_match)("w", None)
        for mode in ("mono", "induced"):
            kw = {"node_match": nm} if i % 2 else {"edge_match": em}
            for space in (True, False):
                for name, P in (("", H), ("piece", piece)):
                    check(G, P, mode, f"{cls.__name__}/{mode}/{name}space={space}",
                          {"pool_target": 1, "steal": False, "candidate_space": space}, **kw)


@sim_case(group="search")
def disconnected_streamed():
    """A disconnected pattern (a depth with no backward neighbour), streamed through 4 rows."""
    G = rand_graph(RND["search"], nx.Graph, 8, 0.4)
    H = nx.Graph([(0, 1)])
    H.add_node(2)
    check(G, H, "mono", "disconnected/streamed", {"pool_target": 1, "out_capacity": 4,
                                                   "steal": False})


@sim_case(group="search")
def warp_donation():
    """Work donation between the warps of one block."""
    G = rand_graph(RND["search"], nx.Graph, 12, 0.6)
    check(G, nx.path_graph(4), "induced", "donation", {"pool_target": 1, "steal": True,
                                                        "queue_capacity": 8})


@sim_case(group="search")
def host_prefix():
    """The default pool (8 rows here): host BFS levels (HOST_BFS_ROWS), the GPU BFS level that
    crosses the target, then the DFS; and a search the host prefix finishes alone."""
    nm = NM
    G = rand_graph(RND["search"], nx.Graph, 14, 0.4)
    nx.set_node_attributes(G, {v: "r" if v == 0 else "x" for v in G}, "c")
    SHARED["G"] = G
    for H, want_device in ((nx.path_graph(5), True), (nx.cycle_graph(3), False)):
        nx.set_node_attributes(H, {v: "r" if v == 0 else "x" for v in H}, "c")
        SHARED["H"] = H
        eng_kw = {"steal": False}
        check(G, H, "mono", f"host-prefix/{H.number_of_nodes()}", eng_kw, node_match=nm)
        plan, _, _ = prepare(G, H, "mono", node_match=nm)
        eng = GMatchEngine(blocks=1, **eng_kw)
        eng.count(plan)
        st = eng.last_stats
        on_device = "t_upload" in st
        # (the small triangle search is the CPU engine's probe's: no host level written)
        host = st["host_levels"] >= 1 or (st.get("probe") and not want_device)
        if not host or on_device != want_device or \
                (on_device and st["pool_depth"] <= 1 + st["host_levels"]):
            print("host prefix not as expected:", st)
            sys.exit(1)


@sim_case(group="search")
def host_wide():
    """Host levels wide enough for every host thread (parallel blocks of rows), the whole search
    finished on the host: 40 roots, 1,560 rows, 59,280 matches (the chained path: a fused count
    leaves levels past FUSED_HOST_ROWS to the device)."""
    wide_kw = {"pool_target": 1 << 20, "host_rows": 1 << 20, "steal": False, "fused": False}
    check(nx.complete_graph(40), nx.path_graph(3), "mono", "host-wide", wide_kw)
    eng = GMatchEngine(blocks=1, **wide_kw)
    got = eng.count(prepare(nx.complete_graph(40), nx.path_graph(3), "mono")[0])
    if eng.last_stats["host_levels"] != 2 or "t_upload" in eng.last_stats or \
            not eng.last_stats.get("host_counted") or got != 40 * 39 * 38:
        print("the wide host levels did not finish the search (its last level counted):",
              got, eng.last_stats)
        sys.exit(1)


@sim_case(group="search")
def host_count_rows():
    """A count's last level counted on the host past host_rows (host_count_rows): 1,560-row
    frontier under a cap of 2,000 rows, 59,280 matches counted, nothing on the device."""
    eng = GMatchEngine(blocks=1, pool_target=1 << 20, host_rows=2000, host_count_rows=60000,
                       steal=False, fused=False)
    got = eng.count(prepare(nx.complete_graph(40), nx.path_graph(3), "mono")[0])
    if got != 40 * 39 * 38 or "t_upload" in eng.last_stats or \
            not eng.last_stats.get("host_counted"):
        print("host_count_rows did not let the host count the last level:", got,
              eng.last_stats)
        sys.exit(1)


@sim_case(group="search")
def gpu_bfs():
    """host_rows=0: every prefix level on the GPU's BFS kernels (host_prefix's graph)."""
    nm = NM
    G, H = SHARED["G"], SHARED["H"]
    P5 = nx.path_graph(5)
    nx.set_node_attributes(P5, {v: "r" if v == 0 else "x" for v in P5}, "c")
    check(G, P5, "mono", "gpu-bfs", {"steal": False, "host_rows": 0}, node_match=nm)
    eng = GMatchEngine(blocks=1, host_rows=0)
    eng.count(prepare(G, H, "mono", node_match=nm)[0])
    if eng.last_stats["host_levels"] != 0 or eng.last_stats["pool_depth"] < 2:
        print("host_rows=0 did not keep the prefix on the device:", eng.last_stats)
        sys.exit(1)


@sim_case(group="search")
def donation_ring():
    donation_cases(NM)


@sim_case(group="search")
def fused():
    fused_cases(NM)


@sim_case(group="levels")
def bfs_levels():
    bfs_level_cases(RND["levels"], NM)


@sim_case(group="levels")
def bfs_chains():
    bfs_chain_cases(RND["levels"])


@sim_case(group="levels")
def kept_plans():
    kept_plan_cases(RND["levels"], NM)


@sim_case(group="levels")
def space_choice():
    space_choice_cases()


def donation_cases(nm):
    """One pool row and seven idle warps, so the busy warp must donate: the donations pass
    through a ring of one slot (from the second on, each reuses it: generations tell them
    apart) and each is claimed through its ticket; the count, the collected set and a limit
    (which stops the search while idle warps hold tickets) stay exact."""
    G = nx.complete_graph(12)
    nx.set_node_attributes(G, {v: "r" if v == 0 else "x" for v in G}, "c")
    H = nx.path_graph(5)
    nx.set_node_attributes(H, {v: "r" if v == 0 else "x" for v in H}, "c")
    plan, _, _ = prepare(G, H, "mono", node_match=nm)
    eng = GMatchEngine(blocks=1, pool_target=1, steal=True, queue_capacity=1, host_rows=0)
    got = eng.count(plan)
    st = eng.last_stats
    if got != 11 * 10 * 9 * 8 or st["pool_rows"] != 1 or st["donated"] < 1 or \
            st["stolen"] != st["donated"]:
        print("donation not exercised as expected:", got, st)
        sys.exit(1)
    ref = set(map(tuple, _rows(CpuEngine().iter_chunks(plan), plan.k).tolist()))
    rows = _rows(eng.iter_chunks(plan), plan.k)
    lim = eng.count(plan, limit=1000)
    if len(rows) != got or set(map(tuple, rows.tolist())) != ref or lim != 1000:
        print("donation: collect or limit differs:", len(rows), lim)
        sys.exit(1)
    print("donation/ring-of-1: ok", st, flush=True)


def bfs_level_cases(rnd, nm):
    """One GPU BFS level (``GMatchEngine._expand``) gives the CPU engine's level as a set: the
    four classes, both modes, depths 1-3, with 1 and 3 warps per row, a buffer too small for
    the level (sized exactly and run again) and a budget too small for it (refused)."""
    import numpy as np

    from nx_gsm.engines import cpu
    from nx_gsm.engines.gpu.gmatch import (
        host as gm,  # (it reads LEVEL_ROWS, level_grid)
    )
    from nx_gsm.engines.gpu.residency import DevPlan
    from nx_gsm.plan.space import build_space

    grid, rows_cap = gm.level_grid, gm.LEVEL_ROWS
    for i, cls in enumerate([nx.Graph, nx.DiGraph, nx.MultiGraph, nx.MultiDiGraph]):
        G = rand_graph(rnd, cls, 10, 0.6, loops=i % 2 == 1, n_labels=2, n_elabels=2)
        # a piece of G, so that it occurs (a random multigraph pattern rarely does)
        H = nx.convert_node_labels_to_integers(G.subgraph(rnd.sample(sorted(G), 4)))
        for mode in ("mono", "induced"):
            plan, _, _ = prepare(G, H, mode, node_match=nm)
            P = cpu.plan_arrays(plan)
            eng = GMatchEngine(blocks=1)
            # the level's local sets from the candidate space (mono) or from raw rows
            dp = DevPlan(plan, eng.xp, eng._graph_arrays(plan.G),
                         space=build_space(plan) if mode == "mono" else None)
            rows = cpu.expand(P, np.zeros((1, 0), dtype=np.int32))
            for L in range(1, min(plan.k, 4)):
                want = cpu.expand(P, rows)
                for g, level_rows in ((1, rows_cap), (3, rows_cap), (1, 2)):
                    gm.level_grid = lambda n, g=g: (g, 1)
                    gm.LEVEL_ROWS = level_rows
                    try:
                        got = eng._expand(dp, np.ascontiguousarray(rows), L)
                    finally:
                        gm.level_grid, gm.LEVEL_ROWS = grid, rows_cap
                    ok = got is not None and got.shape == want.shape and \
                        set(map(tuple, np.asarray(got).tolist())) == \
                        set(map(tuple, want.tolist()))
                    print(f"bfs-level {cls.__name__}/{mode} L={L} g={g} cap={level_rows}: "
                          f"{len(want)} rows ok={ok}", flush=True)
                    if not ok:
                        sys.exit(1)
                if len(want) > 1:  # a budget under four times the level's bytes refuses it
                    tight = GMatchEngine(blocks=1)  # budgets have a 1 MiB floor: set it here
                    tight._budget = lambda b=4 * 4 * (L + 1) * len(want) - 1: b
                    if tight._expand(dp, np.ascontiguousarray(rows), L) is not None:
                        print(f"bfs-level {cls.__name__}/{mode} L={L}: not refused")
                        sys.exit(1)
                rows = want
                if not len(rows):
                    break


def bfs_chain_cases(rnd):
    """GPU BFS levels launched in chains (``GMatchEngine._chain``, sizes read once a chain)
    stop where one level at a time stopped -- the target, the last depth, an empty level, a
    frontier under 32 rows after 4 GPU levels (a 12-cycle's paths) -- with the same rows as
    the CPU engine's levels, for chains of 1, 2, 4 and 8 levels, and where a level past its
    buffer is sized and run again alone mid-chain (buffers of 3 rows)."""
    import numpy as np

    from nx_gsm.engines import cpu
    from nx_gsm.engines.gpu.gmatch import host as gm  # (it reads LEVEL_ROWS)
    from nx_gsm.engines.gpu.residency import DevPlan
    from nx_gsm.plan.space import build_space

    rows_cap = gm.LEVEL_ROWS
    cases = 0
    graphs = []
    for cls in (nx.Graph, nx.MultiDiGraph):
        G = rand_graph(rnd, cls, 8, 0.7, loops=False, n_labels=1, n_elabels=1)
        graphs.append((G, nx.convert_node_labels_to_integers(
            G.subgraph(rnd.sample(sorted(G), 6))), ((1, rows_cap), (4, rows_cap), (2, 3))))
    graphs.append((nx.cycle_graph(12), nx.path_graph(8), ((1, rows_cap), (8, rows_cap))))
    for G, H, runs in graphs:
        plan, _, _ = prepare(G, H, "mono")
        P = cpu.plan_arrays(plan)
        roots = cpu.expand(P, np.zeros((1, 0), dtype=np.int32))
        for target in (1 << 20, 40, 2):
            # one level at a time, as _bfs did before chains
            want, L, gl = roots, 1, 0
            while L < plan.k and len(want) and len(want) < target and not (gl >= 4 and
                                                                            len(want) < 32):
                want, L, gl = cpu.expand(P, want), L + 1, gl + 1
            for chain, level_rows in runs:
                eng = GMatchEngine(blocks=1, bfs_chain=chain)
                dp = DevPlan(plan, eng.xp, eng._graph_arrays(plan.G), space=build_space(plan))
                eng.last_stats = {}
                gm.LEVEL_ROWS = level_rows
                try:
                    got, gL = eng._bfs(dp, np.ascontiguousarray(roots), target)
                finally:
                    gm.LEVEL_ROWS = rows_cap
                got = np.asarray(got)
                ok = gL == L and got.shape == want.shape and \
                    set(map(tuple, got.tolist())) == set(map(tuple, want.tolist()))
                cases += 1
                if not ok or (chain > 1 and gl > 1 and level_rows == rows_cap and
                              eng.last_stats["chains"] >= gl):
                    print(f"bfs-chain {G} target={target} chain={chain} rows={level_rows}: "
                          f"depth {gL} vs {L}, {got.shape} vs {want.shape}, {eng.last_stats}")
                    sys.exit(1)
    print(f"bfs-chain: {cases} cases ok", flush=True)


def kept_plan_cases(rnd, nm):
    """One engine, many plans: each search's arrays go to the engine's kept slots
    (``residency.PlanSlots``) and kept buffers, laid out again only when a plan outgrows them; a
    plan made while an unfinished iterator holds the slots gets arrays of its own. Every count
    and every iterated row set equals the CPU engine's."""
    import numpy as np

    from nx_gsm.engines.gpu import clear_device_caches
    from nx_gsm.engines.gpu.residency import DevPlan

    clear_device_caches()  # the slots are the thread's: start them here
    eng = GMatchEngine(blocks=1, host_rows=0, pool_target=2, out_capacity=4, steal=False)
    cpu = CpuEngine()
    em = iso.categorical_edge_match("w", None)
    plans = []
    for i, (cls, k) in enumerate([(nx.Graph, 3), (nx.DiGraph, 4), (nx.MultiGraph, 3),
                                  (nx.Graph, 5), (nx.DiGraph, 3), (nx.Graph, 3)]):
        G = rand_graph(rnd, cls, 9, 0.5, loops=i == 1, n_labels=2, n_elabels=1 + i % 3)
        H = nx.convert_node_labels_to_integers(G.subgraph(rnd.sample(sorted(G), k)))
        kw = {"edge_match": (iso.categorical_multiedge_match("w", None)
                             if G.is_multigraph() else em)} if i % 2 == 0 else {"node_match": nm}
        plans.append(prepare(G, H, "mono" if i % 2 else "induced", **kw)[0])
    for i, plan in enumerate(plans):
        want, got = cpu.count(plan), eng.count(plan)
        print(f"kept-plan {i}: k={plan.k} want={want} got={got} "
              f"layouts={eng._slots.layouts}", flush=True)
        if got != want:
            sys.exit(1)
    before = eng._slots.layouts
    if not 1 <= before <= len(plans) or eng.count(plans[0]) != cpu.count(plans[0]) or \
            eng._slots.layouts != before:
        print("a plan that fits the slots was laid out again:", eng._slots.layouts, before)
        sys.exit(1)
    # placed again right after itself: its kept packed image, one copy; the same plan without
    # the candidate space packs anew (other arrays), and so does the next count -- unless the
    # plan's search had no space to begin with (then the arrays are the same: hits all along)
    hits = eng._slots.image_hits
    raw = GMatchEngine(blocks=1, host_rows=0, pool_target=2, steal=False,
                       candidate_space=False)
    got = [eng.count(plans[0]), eng._slots.image_hits - hits]
    spaced = bool(eng.last_stats.get("space"))
    got += [raw.count(plans[0]), eng._slots.image_hits - hits, eng.count(plans[0]),
            eng.count(plans[0]), eng._slots.image_hits - hits]
    want = cpu.count(plans[0])
    print("kept-plan image:", got, want, "space" if spaced else "no space", flush=True)
    if got != ([want, 1, want, 1, want, want, 2] if spaced else [want, 1, want, 2, want, want, 4]):
        sys.exit(1)
    # the same plan right after itself finds its bytes on the device (no copy); after another
    # plan's search its image is copied again
    res = eng._slots.resident_hits
    other = None
    for p in plans[1:]:  # (the first whose search reaches the device; small ones stay on the host)
        if eng.count(p) != cpu.count(p):
            sys.exit(1)
        if "t_upload" in eng.last_stats:
            other = p
            break
    got = [other is not None, eng._slots.resident_hits - res, eng.count(plans[0]),
           eng._slots.resident_hits - res, eng.count(plans[0]), eng._slots.resident_hits - res]
    print("kept-plan resident:", got, flush=True)
    if got != [True, 0, want, 0, want, 1]:
        sys.exit(1)
    # a plan that outgrows them (candidate bits of 1,000 data nodes): laid out once more
    G = nx.disjoint_union(nx.empty_graph(990), rand_graph(rnd, nx.Graph, 10, 0.5))
    nx.set_node_attributes(G, {v: "z" if v < 990 else "x" for v in G}, "c")
    P = nx.path_graph(3)
    nx.set_node_attributes(P, "x", "c")
    big = prepare(G, P, "mono", node_match=nm)[0]
    if eng.count(big) != cpu.count(big) or eng._slots.layouts != before + 1 or \
            eng.count(plans[1]) != cpu.count(plans[1]) or eng._slots.layouts != before + 1:
        print("a plan past the slots' capacity:", eng._slots.layouts, before)
        sys.exit(1)
    # an unfinished iterator holds the slots; counts in between use arrays of their own
    ref = set(map(tuple, _rows(cpu.iter_chunks(plans[3]), plans[3].k).tolist()))
    it = eng.iter_chunks(plans[3], chunk=1)
    first = [next(it)]
    if eng._slots._holder() is None:
        print("the iterator's plan does not hold the slots")
        sys.exit(1)
    for plan in plans[:3]:
        if eng.count(plan) != cpu.count(plan):
            print("a count during an iteration differs")
            sys.exit(1)
    mine = set(map(tuple, _rows(first + list(it), plans[3].k).tolist()))
    print(f"kept-plan iterator: {len(mine)} rows ok={mine == ref}", flush=True)
    if mine != ref:
        sys.exit(1)
    # another engine object of this thread: the same slots, nothing laid out again
    other = GMatchEngine(blocks=1, host_rows=0, pool_target=2, steal=False)
    layouts = eng._slots.layouts
    if other._slots is not eng._slots or other.count(plans[2]) != cpu.count(plans[2]) or \
            other._slots.layouts != layouts:
        print("a second engine object did not share the thread's slots")
        sys.exit(1)
    # a directed graph whose longest row is an in-row: the local sets' bound counts it
    G = nx.DiGraph([(v, 0) for v in range(1, 7)])
    plan = prepare(G, nx.DiGraph([(1, 0), (2, 0)]), "mono")[0]
    dp = DevPlan(plan, np, eng._graph_arrays(plan.G))
    if dp.longest < 6:
        print("DevPlan.longest misses in-rows:", dp.longest)
        sys.exit(1)


def space_choice_cases():
    """When the kernels' local sets come from the candidate space (``GMatchEngine._space``):
    by default; not when switched off, for a pattern without driver edges, for a space whose
    build would read more than ``SPACE_VISITS`` adjacency entries (unless the host levels built
    it already), or past an eighth of the memory budget (``space_visits``: tests/test_plan.py)."""
    import numpy as np

    from nx_gsm.engines.gpu.gmatch import engine as gm  # (it reads SPACE_VISITS)
    from nx_gsm.plan.space import build_space, space_visits

    def fresh(G, H):
        return prepare(G, H, "mono")[0]

    G, H = nx.cycle_graph(9000), nx.path_graph(4)
    plan = fresh(G, H)
    want = sum(int(np.diff(plan.G.indptr)[plan.cand[int(plan.order[int(j)])]].sum())
               for j in plan.drv_j)
    fails = []
    if space_visits(plan) != want or want != 3 * 2 * 9000:
        fails.append(f"visits {space_visits(plan)}, want {want}")
    if GMatchEngine()._space(plan) is None:
        fails.append("default: no space")
    if GMatchEngine(candidate_space=False)._space(fresh(G, H)) is not None:
        fails.append("candidate_space=False: a space")
    if GMatchEngine()._space(fresh(G, nx.empty_graph(3))) is not None:
        fails.append("no driver edges: a space")
    limit = gm.SPACE_VISITS
    gm.SPACE_VISITS = want - 1
    try:
        p2 = fresh(G, H)
        if GMatchEngine()._space(p2) is not None:
            fails.append("over SPACE_VISITS: a space")
        build_space(p2)  # as the host levels do
        if GMatchEngine()._space(p2) is None:
            fails.append("over SPACE_VISITS but built already: no space")
    finally:
        gm.SPACE_VISITS = limit
    # 4 x 9,000 int32 cidx alone: 144,000 bytes, past an eighth of a 1 MiB budget
    if GMatchEngine(memory_budget=1 << 20)._space(fresh(G, H)) is not None:
        fails.append("past the memory budget: a space")
    print("space choice:", fails or "ok", flush=True)
    if fails:
        sys.exit(1)

def fused_cases(nm):
    """A count's fused search (``GMatchEngine._fused``: BFS levels and the DFS in one launch,
    levels separated by grid barriers): a level past the kernel's buffer leaves the DFS to
    start from the level before (from the roots, and from the first level), levels up to
    depth k - 1, a limit, the four graph classes in both modes against the chained path
    (``fused=False``), and an empty level."""
    from nx_gsm.engines.gpu.gmatch import (  # (they read the constants patched)
        engine,
        host,
    )

    G = nx.complete_graph(8)
    H = nx.path_graph(4)
    plan, _, _ = prepare(G, H, "mono")
    want = 8 * 7 * 6 * 5
    keep = host.FUSED_BUF_INTS
    # 8 roots -> 56 rows of 2 (112 ints, the next level from int 128) -> 336 rows of 3
    for buf, depth in ((64, 1), (600, 2), (1 << 16, 3)):
        host.FUSED_BUF_INTS = buf
        try:
            eng = GMatchEngine(blocks=1, host_rows=0, pool_target=1 << 20, steal=False)
            got = eng.count(plan)
        finally:
            host.FUSED_BUF_INTS = keep
        st = eng.last_stats
        over = depth < plan.k - 1
        if got != want or not st.get("fused") or st["pool_depth"] != depth or \
                len(st["level_rows"]) != depth - 1 + over:
            print(f"fused buffer {buf}: got {got} (want {want})", st)
            sys.exit(1)
        print(f"fused/buffer={buf}: pool depth {depth} ok", st["level_rows"], flush=True)
    eng = GMatchEngine(blocks=1, host_rows=0, pool_target=1 << 20, steal=True)
    if eng.count(plan, limit=777) != 777:
        print("fused: limit not exact")
        sys.exit(1)
    # narrow levels in block 0 to depth k - 1 (one root's search, 8 -> 56 -> 336 rows), then
    # past the buffer inside them: the DFS from the level before, as with grid barriers
    H1 = nx.path_graph(4)
    G1 = nx.complete_graph(8)
    nx.set_node_attributes(G1, {v: int(v == 0) for v in G1}, "label")
    nx.set_node_attributes(H1, {v: int(v == 0) for v in H1}, "label")
    plan1, _, _ = prepare(G1, H1, "mono", node_label="label")
    want1 = CpuEngine().count(plan1)
    for buf in (64, 1 << 16):
        host.FUSED_BUF_INTS = buf
        try:
            eng = GMatchEngine(blocks=1, host_rows=0, pool_target=1 << 20, fused_narrow=1 << 20)
            got = eng.count(plan1)
        finally:
            host.FUSED_BUF_INTS = keep
        st = eng.last_stats
        print(f"fused/narrow buffer={buf}: {got} (want {want1})", st["level_rows"], flush=True)
        if got != want1 or not st.get("fused"):
            sys.exit(1)
    rnd = random.Random(11)
    for i, cls in enumerate([nx.Graph, nx.DiGraph, nx.MultiGraph, nx.MultiDiGraph]):
        G = rand_graph(rnd, cls, 10, 0.5, loops=i % 2 == 1, n_labels=2, n_elabels=2)
        H = nx.convert_node_labels_to_integers(G.subgraph(rnd.sample(sorted(G), 4)))
        for mode in ("mono", "induced"):
            plan, _, _ = prepare(G, H, mode, node_match=nm)
            want = CpuEngine().count(plan)
            # block 0's narrow levels: the default, none, and every level up to the pool
            got = [GMatchEngine(blocks=1, host_rows=0, pool_target=64, fused=f,
                                fused_narrow=nw).count(plan)
                   for f, nw in ((True, None), (False, None), (True, 0), (True, 1 << 20))]
            print(f"fused/{cls.__name__}/{mode}: want={want} got={got}", flush=True)
            if got != [want] * 4:
                sys.exit(1)
    # the small-search rule: a 10-node path labelled along a 12-cycle (a candidate space of
    # about one entry per pattern node) stays on the host, and starts from the roots with the
    # rule off; unlabelled in a 30-cycle (60 matches, 12 entries per pattern node) it starts
    # from the roots. A small search is the CPU engine's sequential probe's, or the host
    # levels' where the probe ran out of steps (SMALL_STEPS 1)
    C12, P10 = nx.cycle_graph(12), nx.path_graph(10)
    nx.set_node_attributes(C12, {v: v for v in C12}, "label")
    nx.set_node_attributes(P10, {v: v for v in P10}, "label")
    keep = engine.SMALL_STEPS
    for G2, H2, small, knob, steps in ((C12, P10, True, None, keep), (C12, P10, True, None, 1),
                                       (C12, P10, False, 0, keep),
                                       (nx.cycle_graph(30), nx.path_graph(10), False, None,
                                        keep)):
        plan2, _, _ = prepare(G2, H2, "mono", node_label="label" if G2 is C12 else None)
        eng = GMatchEngine(blocks=1, pool_target=1 << 20, small_space=knob)
        engine.SMALL_STEPS = steps
        try:
            got = eng.count(plan2)
        finally:
            engine.SMALL_STEPS = keep
        want2 = CpuEngine().count(plan2)
        st = eng.last_stats
        print(f"fused/small={small} steps={steps}: {got} (want {want2})", st.get("host_levels"),
              st.get("probe"), flush=True)
        if got != want2 or bool(st.get("host_counted")) != small or \
                bool(st.get("probe")) != (small and steps == keep) or \
                (not small and st.get("host_levels") != 0):
            sys.exit(1)
    # a level with no rows: a triangle pattern in a tree
    plan, _, _ = prepare(nx.balanced_tree(2, 3), nx.cycle_graph(3), "mono")
    if GMatchEngine(blocks=1, host_rows=0, pool_target=1 << 20).count(plan) != 0:
        print("fused: a tree has no triangle")
        sys.exit(1)
    # the fused search's kept setup (GMatchEngine._fused_setup): one entry per thread, shared by
    # the thread's engines, made again when what it depends on changes (here the pool target),
    # dropped with the thread's device caches
    from nx_gsm.engines.gpu.faults import clear_device_caches

    plan, _, _ = prepare(nx.complete_graph(8), nx.path_graph(4), "mono")
    a, b = (GMatchEngine(blocks=1, host_rows=0, pool_target=1 << 20) for _ in range(2))
    c = GMatchEngine(blocks=1, host_rows=0, pool_target=64)
    got = [a.count(plan)]
    first = a._fused_memo
    got.append(b.count(plan))
    flags = [first is not None, b._fused_memo is first]
    got.append(c.count(plan))
    flags += [c._fused_memo is not first, c._fused_memo.target == 64]
    clear_device_caches()
    flags.append(a._fused_memo is None)
    got.append(a.count(plan))
    flags.append(a._fused_memo not in (None, first))
    print("fused/kept setup:", got, flags, flush=True)
    if got != [8 * 7 * 6 * 5] * 4 or not all(flags):
        sys.exit(1)


if __name__ == "__main__":
    sys.exit(run_cases())
