"""GENEVA's kernels under Numba's CUDA simulator (run by test_gpu_geneva_sim.py in a subprocess).

The same kernel source runs on the CPU (every lane a Python thread; per-warp barriers stand in
for the warp intrinsics). Cases are tiny: the simulator is ~10^5 times slower. Every case compares
the set of mappings with the CPU engine and the count with NetworkX's VF2; a case fails on its
first difference.
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
from nx_gsm.engines.gpu.geneva import GenevaEngine, phase_plan  # noqa: E402
from nx_gsm.testing import random_graph as rand_graph  # noqa: E402
from nx_gsm.testing import rows_of as _rows  # noqa: E402

# one random stream for the cases below, drawn in their order (sim_runner runs a group whole),
# and the graph the phase cases share
RND = random.Random(11)
NM = iso.categorical_node_match("c", None)
SHARED = {}

MATCHERS = {nx.Graph: iso.GraphMatcher, nx.DiGraph: iso.DiGraphMatcher,
            nx.MultiGraph: iso.MultiGraphMatcher, nx.MultiDiGraph: iso.MultiDiGraphMatcher}


def vf2_count(G, H, mode, kw):
    gm = MATCHERS[type(G)](G, H, node_match=kw.get("node_match"),
                           edge_match=kw.get("edge_match"))
    it = gm.subgraph_monomorphisms_iter() if mode == "mono" else gm.subgraph_isomorphisms_iter()
    return sum(1 for _ in it)


def check(G, H, mode, label, engine_kw=None, tiny_budget=None, **kw):
    plan, _, _ = prepare(G, H, mode, **kw)
    cpu = CpuEngine()
    want = cpu.count(plan)
    vf2 = vf2_count(G, H, mode, kw)
    eng = GenevaEngine(**(engine_kw or {}))
    if tiny_budget:
        # bytes per step: frontiers split into chunks, heavy rows matched one vertex at a time,
        # single rows enumerated in windows
        eng._allow = lambda st: tiny_budget
    got = eng.count(plan)
    ref = set(map(tuple, _rows(cpu.iter_chunks(plan), plan.k).tolist()))
    rows = _rows(eng.iter_chunks(plan, chunk=5), plan.k)
    stats = dict(eng.last_stats)  # of the complete collect
    mine = set(map(tuple, rows.tolist()))
    ok = got == want == vf2 and len(rows) == want and mine == ref
    lim = max(1, want // 3)
    part = _rows(eng.iter_chunks(plan, limit=lim), plan.k)
    ok = ok and eng.count(plan, limit=lim) == min(want, lim) and len(part) == min(want, lim)
    ok = ok and set(map(tuple, part.tolist())) <= ref
    print(f"{label}: k={plan.k} want={want} vf2={vf2} got={got} rows={len(rows)} ok={ok} "
          f"phases={stats.get('phases')} rows/phase={stats.get('rows_per_phase')} "
          f"launches={stats.get('launches')}", flush=True)
    if not ok:
        raise AssertionError(f"{label}: differs")
    return stats


def sub_pattern(rnd, G, k):
    """The subgraph of ``G`` induced by a random connected set of ``k`` nodes (relabelled), so
    every case has matches in both modes; its self-loops, parallel edges and labels come along."""
    U = G.to_undirected(as_view=True)
    nodes = [rnd.choice([u for u in G if U.degree(u) > 0])]
    while len(nodes) < k:
        nxt = sorted({w for u in nodes for w in U[u]} - set(nodes))
        if not nxt:
            break
        nodes.append(rnd.choice(nxt))
    return nx.relabel_nodes(G.subgraph(nodes).copy(), {u: f"h{u}" for u in nodes})


@sim_case
def classes_and_modes():
    """The four classes x both modes; node labels on some, edge labels (interval-PCSR lookups)
    on others; self-loops in the data and in the pattern; parallel edges in the multigraphs."""
    for i, cls in enumerate([nx.Graph, nx.DiGraph, nx.MultiGraph, nx.MultiDiGraph]):
        G = rand_graph(RND, cls, 9, 0.6, loops=True, n_labels=2, n_elabels=2)
        H = sub_pattern(RND, G, 4)
        em = (iso.categorical_multiedge_match if G.is_multigraph()
              else iso.categorical_edge_match)("w", None)
        for mode in ("mono", "induced"):
            kw = {"node_match": NM} if i % 2 else {"edge_match": em, "node_match": NM}
            check(G, H, mode, f"{cls.__name__}/{mode}", **kw)


@sim_case
def multi_vertex_phases():
    """A star (pattern 5 on tree vertices), a labelled star (6), a cycle (core: pairs only), a
    tailed triangle (core pair + tree), a disconnected pattern."""
    G = SHARED["G"] = rand_graph(RND, nx.Graph, 9, 0.5, n_labels=2)
    star = nx.star_graph(3)
    st = check(G, star, "mono", "star/mono")
    assert any(g >= 3 for _, g, _ in st["phases"]), st["phases"]
    lstar = nx.star_graph(3)
    for u in lstar:
        lstar.nodes[u]["c"] = u % 2
    check(G, lstar, "mono", "labelled-star/mono", node_match=NM)
    st = check(G, nx.cycle_graph(4), "mono", "cycle/mono")
    assert all(g <= 2 for _, g, _ in st["phases"]), st["phases"]
    tailed = nx.Graph([(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (3, 5)])
    check(rand_graph(RND, nx.Graph, 8, 0.7), tailed, "induced", "tailed-triangle/induced")
    disc = nx.Graph([(0, 1)])
    disc.add_node(2)
    check(G, disc, "mono", "disconnected/mono")


@sim_case
def sv_match():
    """SV-match (one vertex per phase) gives the same sets."""
    check(SHARED["G"], nx.star_graph(3), "mono", "star/sv-match", engine_kw={"group_max": 1})


@sim_case
def directed_star_edge_labels():
    """The in-direction interval-PCSR drives some candidates."""
    D = rand_graph(RND, nx.DiGraph, 8, 0.45, n_elabels=2)
    Hs = nx.DiGraph([(0, 1), (2, 0), (0, 3)])
    for u, v in Hs.edges:
        Hs.edges[u, v]["w"] = (u + v) % 2
    check(D, Hs, "mono", "directed-star/edge-labels",
          edge_match=iso.categorical_edge_match("w", None))


@sim_case
def tiny_budget():
    """Chunked frontiers, heavy-row split, windows."""
    S = rand_graph(RND, nx.Graph, 6, 0.6)
    st = check(S, nx.star_graph(3), "mono", "star/tiny-budget", tiny_budget=96)
    st2 = check(S, nx.path_graph(4), "mono", "path/tiny-budget", tiny_budget=384)
    assert st["one_vertex_rows"] and st["windows"] and st2["chunks"] > 2, (st, st2)


@sim_case
def empty_and_single_vertex_plans():
    """Plan-time empty and single-vertex patterns; the phase plan of a star."""
    G = SHARED["G"]
    check(G, nx.complete_graph(7), "mono", "too-dense")
    check(G, nx.empty_graph(1), "mono", "single-vertex")
    G2 = nx.complete_graph(5)
    plan = prepare(G2, nx.star_graph(3), "mono")[0]
    assert phase_plan(plan) == [(1, 3, 5)], phase_plan(plan)


if __name__ == "__main__":
    sys.exit(run_cases())
