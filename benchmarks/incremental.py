"""Batch-dynamic matching benchmark: per-batch latency of ``IncrementalMatcher.apply`` against
recounting from scratch (issue 6; GAMMA's setup, ``docs/incremental.md``).

GitHub (SNAP musae-github: ``shared/datasets/snap/github/edges.csv``) with 5 seeded node labels, as
GAMMA's GH; 6-vertex dense (average degree >= 3), sparse (connected, not a tree, average degree
< 3) and tree patterns cut out of the data graph (seeded, so each has matches); batches of 0.1%,
1% and 10% of the edges, half deletions of present edges and half insertions of held-out edges
(seeded). ``--variants`` applies the same batches side by side to GAMMA without work stealing
in blocks (``nosteal``) or donation between them (``noring``), with another donation poll
(``pollN``: every N + 1 levels a warp makes, N = 2**j - 1), with a leaf's last depth batched
from another number of entries (``batchN``, 0: never), with candidate rows of >= 2N entries
offered in slices to idle warps (``sliceN``, 0: never), without coalesced search, seed
splitting or class-narrowed rows, or to the CPU path. Per batch:
``apply`` latency (``--counts-only``: the delta's sizes only, which the GPU counts on the
device), the delta's size, and a recount of
the matches of the after-graph from scratch with the best static engine on the same device
(``cpu``: the CPU engine; ``gamma``: gMatch on the GPU), each under a time cap (a capped recount
is a lower bound; one under a minute runs twice and the faster counts, see :func:`recount`).

    python -m benchmarks.incremental --engine cpu --quick --out benchmarks/results/x.json
    python -m benchmarks.incremental --engine gamma --out benchmarks/results/y.json
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from pathlib import Path

import networkx as nx
import numpy as np
from networkx.algorithms import isomorphism as iso

from .datasets import datasets_root
from .machine import machine_info
from .runner import save

PATTERNS = ("dense", "sparse", "tree")
FRACTIONS = (0.001, 0.01, 0.1)


class _Timeout(Exception):
    pass


def _alarm(seconds):
    def raise_(signum, frame):
        raise _Timeout()

    signal.signal(signal.SIGALRM, raise_)
    signal.setitimer(signal.ITIMER_REAL, seconds)


def load_github(root=None, labels=5, seed=0):
    """The GitHub graph (NetworkX, nodes 0..n-1) with ``labels`` seeded node labels ``"l"``."""
    path = Path(datasets_root(root)) / "snap" / "github" / "edges.csv"
    pairs = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.int64)
    n = int(pairs.max()) + 1
    G = nx.Graph()
    lab = np.random.default_rng(seed).integers(0, labels, n)
    G.add_nodes_from((i, {"l": int(lab[i])}) for i in range(n))
    G.add_edges_from(map(tuple, pairs[pairs[:, 0] != pairs[:, 1]].tolist()))
    return G


def tree_homs(G, label="l"):
    """A function of a tree ``T``: its labelled homomorphisms into ``G`` (a float; an upper
    bound on its monomorphisms, exact up to rounding), by dynamic programming over ``T`` rooted
    at its first node, one sparse product per tree edge."""
    idx = {v: i for i, v in enumerate(G)}
    e = np.array([(idx[u], idx[v]) for u, v in G.edges()], dtype=np.int64).reshape(-1, 2)
    src, dst = np.r_[e[:, 0], e[:, 1]], np.r_[e[:, 1], e[:, 0]]
    lab = np.array([G.nodes[v].get(label) for v in G], dtype=object)

    def homs(T):
        def ways(u, parent):  # per data vertex: homomorphisms of u's subtree with u there
            w = (lab == T.nodes[u].get(label)).astype(np.float64)
            for c in T[u]:
                if c != parent:
                    w *= np.bincount(src, weights=ways(c, u)[dst], minlength=len(idx))
            return w

        return float(ways(next(iter(T)), None).sum())

    return homs


def cut_pattern(G, kind, k=6, seed=0, tree_tries=32):
    """A connected ``k``-vertex pattern of class ``kind`` cut out of ``G`` (labels kept). A
    tree is the one with the fewest labelled homomorphisms (:func:`tree_homs`) of
    ``tree_tries`` cut trees: on GitHub with 5 labels the median 6-vertex tree has ~3 x 10^11
    of them and the worst ~10^14, past what a recount from scratch finishes in a device call;
    the fewest is ~10^10."""
    if kind == "tree" and tree_tries > 1:
        rng = np.random.default_rng(seed)
        trees = [cut_pattern(G, kind, k, int(rng.integers(1 << 31)), 1)
                 for _ in range(tree_tries)]
        return min(trees, key=tree_homs(G))
    rng = np.random.default_rng(seed)
    nodes = list(G)
    for _ in range(100000):
        start = nodes[rng.integers(len(nodes))]
        S = [start]
        while len(S) < k:  # random expansion along edges
            nb = [w for w in G[S[rng.integers(len(S))]] if w not in S]
            if not nb:
                break
            S.append(nb[rng.integers(len(nb))])
        if len(S) < k:
            continue
        I = G.subgraph(S)
        m = I.number_of_edges()
        if kind == "dense" and 2 * m < 3 * k:
            continue
        T = nx.bfs_tree(I, start).to_undirected()
        H = nx.Graph(T.edges())
        if kind == "sparse":
            extra = [e for e in I.edges() if not H.has_edge(*e)]
            if not extra:
                continue
            take = rng.permutation(len(extra))[: min(len(extra), int(rng.integers(1, 3)))]
            H.add_edges_from(extra[i] for i in take)
            if 2 * H.number_of_edges() >= 3 * k:
                continue
        elif kind == "dense":
            H = nx.Graph(I.edges())
        for u in H:
            H.nodes[u]["l"] = G.nodes[u]["l"]
        return nx.convert_node_labels_to_integers(H)
    raise RuntimeError(f"no {kind} pattern found")


def make_batches(G, fraction, count, seed=0):
    """``count`` batches of ``fraction * |E|`` updates: half deletions of present edges, half
    insertions of held-out edges. Returns (initial graph, batches)."""
    rng = np.random.default_rng(seed)
    edges = np.array(list(G.edges()), dtype=np.int64)
    size = max(2, int(round(fraction * len(edges))))
    half = size // 2
    perm = rng.permutation(len(edges))
    held = edges[perm[: half * count]]
    G0 = G.copy()
    G0.remove_edges_from(map(tuple, held.tolist()))
    cur = {tuple(e) for e in edges[perm[half * count :]].tolist()}
    batches = []
    for i in range(count):
        present = sorted(cur)
        dele = [present[j] for j in rng.choice(len(present), size - half, replace=False)]
        ins = [tuple(e) for e in held[i * half : (i + 1) * half].tolist()]
        cur.difference_update(dele)
        cur.update(ins)
        batches.append((ins, dele))
    return G0, batches


def _static_engine(name):
    from nx_gsm.engines import get_engine

    return get_engine("gmatch" if name == "gamma" else "cpu")


def recount(G, H, engine, cap, repeat_under=None):
    """(seconds, count, complete) of counting the matches from scratch (the graph's conversion,
    plan and count). With
    ``repeat_under``, a complete recount that took less than that many seconds runs again and
    the faster time counts: a graph's first recount also pays one-time costs (5-6 s were
    measured on a first recount that took 0.6 s the next time), which no recount of a served
    graph would."""
    from nx_gsm.api import prepare
    from nx_gsm.engines.base import Budget

    # from scratch includes the graph's conversion: a plain graph keeps its last one (the
    # stream's replayed graph would convert once for both timings: 0.03 s against 0.6 s)
    cache = getattr(G, "__networkx_cache__", None)
    if isinstance(cache, dict):
        cache.clear()
    t = time.perf_counter()
    plan, _, _ = prepare(G, H, "mono", node_match=iso.categorical_node_match("l", None),
                         engine=engine)
    c = 0 if plan.empty else engine.count(plan, budget=Budget(timeout=cap))
    dt = time.perf_counter() - t
    full = not getattr(c, "partial", False) and type(c).__name__ != "PartialCount"
    if repeat_under is not None and full and dt < repeat_under:
        dt = min(dt, recount(G, H, engine, cap)[0])
    return dt, int(c), full


REPEAT_UNDER = 60.0  # seconds: a recount faster than this is timed twice, the faster counts

VARIANTS = {"nosteal": dict(steal=False), "nocoalesce": dict(coalesce=False),
            "nosplit": dict(split=False), "nonarrow": dict(narrow_row=1 << 62),
            "plain": dict(steal=False, coalesce=False, split=False),
            "noring": dict(donate=False),
            "cpu": None}


def _variant(G0, H, name):
    """A matcher for a side-by-side variant: GAMMA without stealing and/or coalescing, or the
    CPU path (``cpu``)."""
    from nx_gsm.incremental import IncrementalMatcher

    nm = iso.categorical_node_match("l", None)
    if name.startswith("poll"):  # pollN: the donation poll every N + 1 levels (N = 2**j - 1)
        settings = dict(poll=int(name[4:]))
    elif name.startswith("batch"):  # batchN: a leaf's last depth batched from N entries (0: off)
        settings = dict(batch_min=int(name[5:]))
    elif name.startswith("split"):  # splitN: a hub pair seed in one task per N of its degree
        settings = dict(split_row=int(name[5:]))
    elif name.startswith("slice"):  # sliceN: rows of >= 2N entries offered in slices (0: off)
        settings = dict(slice_min=int(name[5:]))
    elif name.startswith("warps"):  # warpsN: at most N warps (blocks of 16) per search
        settings = dict(warps=int(name[5:]))
    elif VARIANTS[name] is None:
        return IncrementalMatcher(G0, H, engine="cpu", node_match=nm)
    else:
        settings = VARIANTS[name]
    m = IncrementalMatcher(G0, H, engine="gamma", node_match=nm)
    for attr, value in settings.items():
        setattr(m._gamma, attr, value)
    return m


def _timed_apply(m, ins, dele, cap, counts_only, profile=0):
    """``(result, seconds)`` of one ``apply`` under ``cap`` seconds, or ``(None, None)`` when
    the cap cut it (the matcher's graph then no longer follows the batches). ``profile`` > 0
    prints that many of the apply's most expensive functions (cProfile, own time) to stderr;
    the timing then includes the profiler's overhead."""
    prof = None
    if profile:
        import cProfile

        prof = cProfile.Profile()
    t = time.perf_counter()
    try:
        _alarm(cap)
        if prof is not None:
            prof.enable()
        r = m.apply(insert=ins, delete=dele, counts_only=counts_only)
    except _Timeout:
        return None, None
    finally:
        if prof is not None:
            prof.disable()
        signal.setitimer(signal.ITIMER_REAL, 0)
    dt = time.perf_counter() - t
    if prof is not None:
        import pstats

        pstats.Stats(prof, stream=sys.stderr).sort_stats("tottime").print_stats(profile)
    return r, dt


def _apply_variants(others, ins, dele, cap, counts_only, row):
    """Apply the batch to every variant matcher; its time and delta sizes go into
    ``row["variants"]`` (a variant cut by ``cap`` is dropped: its graph no longer follows)."""
    out = row.setdefault("variants", {})
    for name in list(others):
        r, dt = _timed_apply(others[name], ins, dele, cap, counts_only)
        if r is None:
            out[name] = dict(apply_s=None, apply_capped_s=cap)
            del others[name]
            continue
        g = others[name]._gamma
        out[name] = dict(apply_s=dt, added=r.num_added, removed=r.num_removed,
                         exact=(r.num_added, r.num_removed) == (row.get("added"),
                                                                 row.get("removed")),
                         ratio=dt / row["apply_s"] if row.get("apply_s") else None,
                         **({"gamma": dict(g.last_stats)} if g is not None else {}))


def run(engine, patterns, fractions, batches, seed, cap, recount_cap, root=None,
        log=lambda row: print(json.dumps(row)), counts_only=False, variants=(), warm=1,
        recount_first=False, profile=0, recounts=True, stream=False):
    """Rows of per-batch timings (each also passed to ``log``); the first ``warm`` batches of
    each setting are applied to every matcher untimed (CuPy compiles some kernels on their first
    call with a batch's sizes); with
    ``recount_first`` only the first timed batch of a setting is recounted and the later ones
    are compared with that time (``recount_reused``: the graphs differ by a batch); without
    ``recounts`` none is made (latency runs); ``profile``: see :func:`_timed_apply`.

    With ``stream`` a setting's batches are applied back to back, as a served stream takes
    them, and each after-graph is recounted afterwards in a second pass (the batches replayed
    on a NetworkX copy of the start graph; rows marked ``recount_after_stream``): on a GPU machine's
    host an apply right after a recount was 25-30% slower in every phase (likely the
    recount evicting the host's caches)."""
    from nx_gsm.incremental import IncrementalMatcher

    G = load_github(root, seed=seed)
    static = _static_engine(engine)
    rows = []
    for kind in patterns:
        # the pattern's seed follows its kind, not its place in ``patterns``: a run of one kind
        # meets the same pattern as a run of all three
        H = cut_pattern(G, kind, seed=seed + PATTERNS.index(kind))
        # compile the static engine's kernels for this pattern (labels, size) outside the
        # recount timings, on a small piece of the graph
        if recounts:
            recount(G.subgraph(range(min(2000, G.number_of_nodes()))), H, static, recount_cap)
        for fraction in fractions:
            G0, bs = make_batches(G, fraction, batches + warm, seed=seed)
            m = IncrementalMatcher(G0, H, engine=engine,
                                   node_match=iso.categorical_node_match("l", None))
            others = {v: _variant(G0, H, v) for v in variants}
            for ins, dele in bs[:warm]:
                m.apply(insert=ins, delete=dele, counts_only=counts_only)
                _apply_variants(others, ins, dele, cap, counts_only, {})
            rs = full = None  # the setting's first recount (``recount_first``)
            later = []  # rows recounted after the stream (``stream``)
            for bi, (ins, dele) in enumerate(bs[warm:]):
                row = dict(pattern=kind, pattern_edges=H.number_of_edges(), fraction=fraction,
                           batch=bi, updates=len(ins) + len(dele))
                r, dt = _timed_apply(m, ins, dele, cap, counts_only, profile)
                if r is None:
                    row.update(apply_s=None, apply_capped_s=cap)
                else:
                    row.update(apply_s=dt, added=r.num_added, removed=r.num_removed)
                    if m._gamma is not None:  # device phases: kernels, graph + table update
                        row["gamma"] = dict(m._gamma.last_stats)
                    if others:
                        _apply_variants(others, ins, dele, cap, counts_only, row)
                if stream and recounts and r is not None:
                    rows.append(row)
                    later.append(row)
                    continue
                if recounts and recount_first and rs is not None and r is not None:
                    row.update(recount_s=rs, recount=None, recount_complete=full,
                               recount_reused=True)
                elif recounts:
                    rs, rc, full = recount(m.graph, H, static, recount_cap,
                                           repeat_under=REPEAT_UNDER)
                    row.update(recount_s=rs, recount=rc, recount_complete=full)
                if r is None:  # the graph did not move: recount of the before-graph
                    row["recount_graph"] = "before"
                elif recounts:
                    row["speedup"] = rs / row["apply_s"] if row["apply_s"] else None
                rows.append(row)
                log(row)
                if r is None:
                    break  # later batches would not be the seeded ones
            if later:
                _recount_stream(G0, bs, warm, later, m, H, static, recount_cap, log)
    return rows


def _recount_stream(G0, bs, warm, rows, m, H, static, recount_cap, log):
    """The second pass of a ``stream`` run: the batches replayed on a copy of the start graph
    ``G0``, each timed row's after-graph recounted (rows are the timed batches in order)."""
    Gs = G0.copy()
    for i, (ins, dele) in enumerate(bs):
        Gs.remove_edges_from(dele)
        Gs.add_edges_from(ins)
        if i < warm:
            continue
        if i - warm >= len(rows):
            break
        row = rows[i - warm]
        rs, rc, full = recount(Gs, H, static, recount_cap, repeat_under=REPEAT_UNDER)
        row.update(recount_s=rs, recount=rc, recount_complete=full, recount_after_stream=True,
                   speedup=rs / row["apply_s"] if row["apply_s"] else None)
        log(row)
    if len(rows) == len(bs) - warm:  # the replay ends where the matcher's graph is
        assert Gs.number_of_edges() == m.graph.number_of_edges()


def summary(row):
    """One line per batch row: latency, recount, speedup, delta sizes, device phases, variants."""
    g = row.get("gamma", {})
    dev = " ".join(f"{k}={g[k]:.4g}" if isinstance(g[k], float) else f"{k}={g[k]}"
                   for k in ("kernel_s", "steals", "slices", "total_s", "pairs_searched", "launches",
                             "timeline_ms")
                   if k in g)
    var = " ".join(f"{n}={v['apply_s']:.4g}s{'' if v.get('exact') else '(DIFF)'}"
                   if v.get("apply_s") else f"{n}=capped" for n, v in row.get("variants",
                                                                          {}).items())
    a = row.get("apply_s")
    return (f"{row['pattern']} {row['fraction']} #{row['batch']} apply="
            f"{'capped' if a is None else f'{a:.4g}s'} recount={row.get('recount_s') or 0:.4g}s "
            f"speedup={row.get('speedup') or 0:.3g} +{row.get('added')} -{row.get('removed')} "
            f"[{dev}] {var}")


def _warm_up(engine):
    """Compile the kernels (JIT) outside the timings."""
    from nx_gsm.incremental import IncrementalMatcher

    m = IncrementalMatcher(nx.cycle_graph(6), nx.path_graph(3), engine=engine)
    m.apply(insert=[(0, 3)], delete=[(1, 2)])
    recount(nx.cycle_graph(6), nx.path_graph(3), _static_engine(engine), 10)


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.incremental", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--engine", choices=("cpu", "gamma"), default="cpu")
    ap.add_argument("--patterns", default=",".join(PATTERNS))
    ap.add_argument("--fractions", default=",".join(map(str, FRACTIONS)))
    ap.add_argument("--batches", type=int, default=3, help="batches per (pattern, fraction)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cap", type=float, default=600.0, help="seconds per apply")
    ap.add_argument("--recount-cap", type=float, default=600.0, help="seconds per recount")
    ap.add_argument("--quick", action="store_true",
                    help="0.1%% and 1%% batches, 2 per setting, 60 s caps")
    ap.add_argument("--counts-only", action="store_true",
                    help="apply(counts_only=True): sizes of the delta, no mappings built")
    ap.add_argument("--recount-first", action="store_true",
                    help="recount only the first timed batch of each setting")
    ap.add_argument("--warm", type=int, default=1,
                    help="untimed batches per setting before the timed ones")
    ap.add_argument("--variants", default="",
                    help="side by side on the same batches, comma-separated: nosteal, "
                         "nocoalesce, nosplit, nonarrow (whole rows), plain (no stealing, "
                         "coalescing or splitting), noring, pollN, batchN, sliceN, splitN, "
                         "warpsN, cpu (the CPU path)")
    ap.add_argument("--cprofile", type=int, default=0, metavar="N",
                    help="print the N most expensive functions of each timed apply (stderr)")
    ap.add_argument("--no-recount", action="store_true",
                    help="skip the recounts (latency and profile runs)")
    ap.add_argument("--stream", action="store_true",
                    help="apply each setting's batches back to back, then recount each "
                         "after-graph in a second pass (no recount between two applies)")
    ap.add_argument("--datasets", default=None)
    ap.add_argument("--out", default=None, help="JSON record path")
    a = ap.parse_args(argv)
    fractions = [float(x) for x in a.fractions.split(",")]
    if a.quick:
        fractions, a.batches, a.cap, a.recount_cap = [0.001, 0.01], 2, 60.0, 60.0
    _warm_up(a.engine)
    t = time.perf_counter()
    rows = run(a.engine, a.patterns.split(","), fractions, a.batches, a.seed, a.cap,
               a.recount_cap, a.datasets,
               log=lambda row: print(summary(row), flush=True),
               counts_only=a.counts_only, variants=[v for v in a.variants.split(",") if v],
               warm=a.warm, recount_first=a.recount_first, profile=a.cprofile,
               recounts=not a.no_recount, stream=a.stream)
    rec = dict(benchmark="incremental", engine=a.engine, dataset="snap/github", labels=5,
               seed=a.seed, pattern_vertices=6, patterns=a.patterns.split(","),
               fractions=fractions, batches=a.batches,
               caps=dict(apply_s=a.cap, recount_s=a.recount_cap),
               quick=a.quick, counts_only=a.counts_only, variants=a.variants, warm=a.warm,
               stream=a.stream,
               wall_s=time.perf_counter() - t,
               machine=machine_info(), rows=rows)
    if a.out:
        save(rec, a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
