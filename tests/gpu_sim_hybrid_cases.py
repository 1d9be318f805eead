"""GSI's BFS -> DFS switch and gmatch's count_from/iter_from under Numba's CUDA simulator
(run by test_gpu_hybrid_sim.py in a subprocess).

Tiny random cases of the four NetworkX graph classes, mono and induced, node and edge labels,
parallel edges and self-loops, with ``max_chunk`` small enough that a level does not fit: GSI
hands its frontier to gmatch's warp DFS (at the root level, in several slices, or one level
down), and the counts, the mapping sets and limited runs must equal the CPU engine's (and the
count VF2's); the same runs with ``dfs_switch=False`` take the chunked BFS path. gmatch's
public ``count_from``/``iter_from`` are checked on every feasible depth-2 prefix (dead ones
included) against ``CpuEngine.count_from``/``iter_from``. A case fails on its first difference.
"""

import os
import random
import sys
import time

assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", "run with NUMBA_ENABLE_CUDASIM=1"

import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402
from networkx.algorithms import isomorphism as iso  # noqa: E402
from sim_runner import run_cases, sim_case  # noqa: E402

from nx_gsm.api import prepare  # noqa: E402
from nx_gsm.engines.cpu import CpuEngine, expand, plan_arrays  # noqa: E402
from nx_gsm.engines.gpu.gmatch import GMatchEngine  # noqa: E402
from nx_gsm.engines.gpu.gsi import GsiEngine  # noqa: E402
from nx_gsm.testing import rows_of as _rows  # noqa: E402


def _set(rows):
    s = set(map(tuple, rows.tolist()))
    if len(s) != len(rows):
        fail("a match was produced twice")
    return s


def fail(msg):
    raise AssertionError(msg)


def vf2_count(G, H, mode, kw):
    if G.is_directed():
        cls = iso.MultiDiGraphMatcher if G.is_multigraph() else iso.DiGraphMatcher
    else:
        cls = iso.MultiGraphMatcher if G.is_multigraph() else iso.GraphMatcher
    gm = cls(G, H, **kw)
    it = gm.subgraph_monomorphisms_iter() if mode == "mono" else gm.subgraph_isomorphisms_iter()
    return sum(1 for _ in it)


def check(G, H, mode, label, max_chunk, level, kw, bfs_too=False):
    """The switch at ``level`` (None: no switch expected) under ``max_chunk`` GBA slots (None:
    as many as the root level has rows, so it fits and its lists do not); with ``bfs_too`` also
    the count of the chunked BFS path (``dfs_switch=False``)."""
    t0 = time.perf_counter()
    plan, _, _ = prepare(G, H, mode, **kw)
    if max_chunk is None:
        max_chunk = int(plan.cand_ptr[1] - plan.cand_ptr[0])
    cpu = CpuEngine()
    want = cpu.count(plan)
    if want != vf2_count(G, H, mode, kw):
        fail(f"{label}: CPU engine differs from VF2")
    ref = _set(_rows(cpu.iter_chunks(plan), plan.k))
    eng = GsiEngine(max_chunk=max_chunk)
    got = eng.count(plan)
    st = dict(eng.last_stats)
    rows = _rows(eng.iter_chunks(plan, chunk=5), plan.k)
    ok = [want > 0, got == want, _set(rows) == ref, st["switched_to_dfs_at_level"] == level,
          (st["dfs_pool_rows"] > 0) == (level is not None),
          level is not None or st["chunks"] > 1,  # no switch, though the level did not fit
          eng.last_stats["switched_to_dfs_at_level"] == level]
    if want > 1:
        lim = want // 2
        part = _rows(eng.iter_chunks(plan, limit=lim), plan.k)
        ok += [eng.count(plan, limit=lim) == lim, len(part) == lim, _set(part) <= ref]
    chunks = None
    if bfs_too:
        bfs = GsiEngine(max_chunk=max_chunk, dfs_switch=False)
        ok += [bfs.count(plan) == want, bfs.last_stats["switched_to_dfs_at_level"] is None]
        chunks = bfs.last_stats["chunks"]
        ok.append(level is None or chunks > 1)
    print(f"{label}: k={plan.k} want={want} got={got} rows={len(rows)} ok={ok} "
          f"levels={st['rows_per_level']} switch={st['switched_to_dfs_at_level']} "
          f"pool={st['dfs_pool_rows']} chunks(bfs)={chunks} "
          f"{time.perf_counter() - t0:.1f}s", flush=True)
    if not all(ok):
        fail(label)


def check_from(G, H, mode, label, kw, gm_kw):
    """gmatch's count_from/iter_from on every other feasible depth-2 prefix."""
    plan, _, _ = prepare(G, H, mode, **kw)
    cpu = CpuEngine()
    P = plan_arrays(plan)
    pre = expand(P, expand(P, np.zeros((1, 0), dtype=np.int32)))[::2]
    want = cpu.count_from(plan, pre)
    ref = _set(_rows(cpu.iter_from(plan, pre), plan.k))
    gm = GMatchEngine(blocks=1, steal=False, **gm_kw)
    got = gm.count_from(plan, pre)
    rows = _rows(gm.iter_from(plan, pre, chunk=4), plan.k)
    ok = got == want and _set(rows) == ref and want > 0
    lim = max(1, want // 3)
    part = _rows(gm.iter_from(plan, pre, limit=lim), plan.k)
    ok = ok and gm.count_from(plan, pre, limit=lim) == lim and len(part) == lim
    ok = ok and _set(part) <= ref
    full = _rows(cpu.iter_chunks(plan), plan.k)
    ok = ok and gm.count_from(plan, full) == len(full) and gm.count_from(plan, pre[:0]) == 0
    try:
        gm.count_from(plan, np.zeros((2, plan.k + 1), dtype=np.int32))
        ok = False
    except ValueError:
        pass
    print(f"{label}: k={plan.k} prefixes={len(pre)} want={want} got={got} rows={len(rows)} "
          f"ok={ok}", flush=True)
    if not ok:
        fail(label)


def rand_graph(rnd, cls, n, p, loops=False):
    """Labels 0 (three in four) or 1 on nodes ("c") and edges ("w"): the label-0 patterns below
    keep most of the graph, so levels grow."""
    G = cls()
    G.add_nodes_from(range(n))
    for u in range(n):
        for v in range(n):
            if (u == v and not loops) or (not G.is_directed() and v < u):
                continue
            if rnd.random() < p:
                G.add_edge(u, v, w=int(rnd.random() < 0.25))
                if G.is_multigraph() and rnd.random() < 0.3:
                    G.add_edge(u, v, w=int(rnd.random() < 0.25))
    for u in G:
        G.nodes[u]["c"] = int(rnd.random() < 0.25)
    return G


def pattern(cls, edges):
    H = cls()
    H.add_edges_from(edges, w=0)
    nx.set_node_attributes(H, 0, "c")
    return H


PATH = [(0, 1), (1, 2), (2, 3)]
STAR = [(0, 1), (0, 2), (0, 3)]
# one random stream for the cases below, drawn in their order (sim_runner runs a group whole)
RND = random.Random(0)
NM = iso.categorical_node_match("c", None)


@sim_case
def switch_at_level_1_every_class():
    """Every class, the switch at level 1."""
    rnd = RND
    em = iso.categorical_edge_match("w", None)
    G = rand_graph(rnd, nx.Graph, 9, 0.5, loops=True)
    check(G, pattern(nx.Graph, PATH), "mono", "Graph/mono/edge-labels", None, 1,
          {"edge_match": em})
    G = rand_graph(rnd, nx.DiGraph, 9, 0.3, loops=True)
    check(G, pattern(nx.DiGraph, PATH), "induced", "DiGraph/induced", None, 1, {}, bfs_too=True)
    G = rand_graph(rnd, nx.MultiGraph, 9, 0.4)
    check(G, pattern(nx.MultiGraph, PATH), "induced", "MultiGraph/induced", None, 1, {})
    G = rand_graph(rnd, nx.MultiDiGraph, 9, 0.5, loops=True)
    check(G, pattern(nx.MultiDiGraph, PATH), "mono", "MultiDiGraph/mono/node-labels", None, 1,
          {"node_match": NM})


@sim_case
def root_level_in_slices():
    """More roots than slots: the root level goes to the DFS in slices of 5 rows."""
    G = rand_graph(RND, nx.Graph, 10, 0.5)
    check(G, nx.path_graph(4), "induced", "sliced", 5, 1, {})


@sim_case
def switch_at_level_2():
    """The root level fits (one root, a short list), the next does not: switch at level 2."""
    G = nx.complete_graph(7)
    nx.set_node_attributes(G, {u: int(u == 0) for u in G}, "c")
    H = nx.star_graph(3)
    nx.set_node_attributes(H, {u: int(u == 0) for u in H}, "c")
    check(G, H, "mono", "level-2", 6, 2, {"node_match": NM})


@sim_case
def last_level_never_switches():
    """The last level is not stored: k = 2 is chunked as before."""
    check(rand_graph(RND, nx.DiGraph, 7, 0.5), nx.DiGraph([(0, 1)]), "mono", "last-level", 8,
          None, {})


@sim_case
def gmatch_from_prefixes():
    """gmatch on prefixes made elsewhere: one buffer; then batches of 2 rows, where prefixes
    with 3 matches are heavy and re-expanded a level."""
    mem = iso.categorical_multiedge_match("w", None)
    G = rand_graph(RND, nx.MultiDiGraph, 8, 0.5, loops=True)
    check_from(G, pattern(nx.MultiDiGraph, PATH), "mono", "from/multidigraph/edge-labels",
               {"edge_match": mem}, {})
    G = rand_graph(RND, nx.Graph, 9, 0.6)
    check_from(G, nx.path_graph(4), "induced", "from/batches", {}, {"out_capacity": 4})


if __name__ == "__main__":
    sys.exit(run_cases())
