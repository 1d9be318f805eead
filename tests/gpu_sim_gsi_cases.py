"""gsi's kernels under Numba's CUDA simulator (run by test_gpu_gsi_sim.py in a subprocess).

Tiny random cases of the four NetworkX graph classes, mono and induced, node and edge labels,
parallel edges and self-loops: each compares the set of mappings with the CPU engine, the count
with NetworkX VF2, and a limited count / collect. Further cases force the chunked depth-first
path (a row split into list ranges), every work tier (warp, multi-warp, block, grid), PCSR
lookups and the signature filter. A case fails on its first difference.
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
from nx_gsm.engines.gpu.gsi import GsiEngine  # noqa: E402
from nx_gsm.testing import random_graph as rand_graph  # noqa: E402
from nx_gsm.testing import rows_of as _rows  # noqa: E402

# one random stream for the cases below, drawn in their order (sim_runner runs a group whole)
RND = random.Random(7)
NM = iso.categorical_node_match("c", None)


def vf2_count(G, H, mode, nm=None, em=None):
    if G.is_directed():
        cls = iso.MultiDiGraphMatcher if G.is_multigraph() else iso.DiGraphMatcher
    else:
        cls = iso.MultiGraphMatcher if G.is_multigraph() else iso.GraphMatcher
    gm = cls(G, H, node_match=nm, edge_match=em)
    it = gm.subgraph_monomorphisms_iter() if mode == "mono" else gm.subgraph_isomorphisms_iter()
    return sum(1 for _ in it)


def fail(msg):
    raise AssertionError(msg)


def check(G, H, mode, label, engine_kw=None, expect=None, nm=None, em=None, limits=True):
    kw = {}
    if nm is not None:
        kw["node_match"] = nm
    if em is not None:
        kw["edge_match"] = em
    plan, _, _ = prepare(G, H, mode, **kw)
    cpu = CpuEngine()
    want = cpu.count(plan)
    vf2 = vf2_count(G, H, mode, nm, em)
    if want != vf2:
        fail(f"{label}: CPU engine {want} != VF2 {vf2}")
    eng = GsiEngine(**(engine_kw or {}))
    got = eng.count(plan)
    stats = dict(eng.last_stats)
    ref = set(map(tuple, _rows(cpu.iter_chunks(plan), plan.k).tolist()))
    rows = _rows(eng.iter_chunks(plan, chunk=7), plan.k)
    mine = set(map(tuple, rows.tolist()))
    ok = got == want and len(rows) == want and mine == ref
    if limits and want:
        lim = max(1, want // 3)
        part = _rows(eng.iter_chunks(plan, limit=lim), plan.k)
        ok = ok and eng.count(plan, limit=lim) == lim and len(part) == lim
        ok = ok and set(map(tuple, part.tolist())) <= ref
    if expect is not None:
        ok = ok and expect(stats)
    print(f"{label}: k={plan.k} want={want} got={got} rows={len(rows)} ok={ok} "
          f"levels={stats.get('rows_per_level')} chunks={stats.get('chunks')} "
          f"split={stats.get('split_rows')} tiers={stats.get('tiers')} pcsr={stats.get('pcsr')} "
          f"sig={stats.get('signature_pruned')}", flush=True)
    if not ok:
        fail(label)


def sub_pattern(rnd, G, k, drop=False):
    """A pattern with at least one match: G induced on a random walk's k nodes (an edge less
    when ``drop``), relabelled 0..k-1."""
    U = G.to_undirected(as_view=True)
    for _ in range(100):
        walk = [rnd.choice(list(G))]
        while len(walk) < k:
            nb = [x for x in U[walk[-1]] if x not in walk] or [
                x for y in walk for x in U[y] if x not in walk]
            if not nb:
                break
            walk.append(rnd.choice(nb))
        if len(walk) == k:
            break
    H = nx.convert_node_labels_to_integers(G.subgraph(walk).copy())
    if drop:
        e = [e for e in H.edges(keys=True) if e[0] != e[1]] if H.is_multigraph() else [
            e for e in H.edges() if e[0] != e[1]]
        if len(e) > 1:
            H.remove_edge(*rnd.choice(e))
    return H


@sim_case
def classes_and_modes():
    """The four classes, both modes: node labels on odd classes, edge labels on even ones."""
    rnd = RND
    for i, cls in enumerate([nx.Graph, nx.DiGraph, nx.MultiGraph, nx.MultiDiGraph]):
        G = rand_graph(rnd, cls, 8, 0.45, loops=i % 2 == 0, n_labels=2, n_elabels=2)
        em = (iso.categorical_multiedge_match if G.is_multigraph()
              else iso.categorical_edge_match)("w", None)
        for mode in ("mono", "induced"):
            H = sub_pattern(rnd, G, 3 if mode == "mono" else 4, drop=mode == "mono")
            if i % 2:
                check(G, H, mode, f"{cls.__name__}/{mode}/node-labels", nm=NM)
            else:
                check(G, H, mode, f"{cls.__name__}/{mode}/edge-labels", em=em,
                      expect=lambda s, G=G: s["pcsr"] if not G.is_multigraph() else True)


@sim_case
def directed_edge_labels():
    """PCSR lookups in both directions."""
    rnd = RND
    G = rand_graph(rnd, nx.DiGraph, 8, 0.5, n_elabels=2)
    em = iso.categorical_edge_match("w", None)
    for mode in ("mono", "induced"):
        check(G, sub_pattern(rnd, G, 3, drop=mode == "mono"), mode, f"DiGraph/{mode}/edge-labels",
              em=em, expect=lambda s: s["pcsr"])


@sim_case
def pcsr_chains():
    """PCSR overflow chains: the 18 nodes with a label-1 edge all hash to group 0 (ids = 0 mod
    18)."""
    em = iso.categorical_edge_match("w", None)
    G = nx.path_graph(310)
    nx.set_edge_attributes(G, 0, "w")
    G.add_edges_from(((0, 18 * j) for j in range(1, 18)), w=1)
    H = nx.Graph()
    H.add_edges_from([(0, 1), (1, 2)], w=1)
    check(G, H, "mono", "pcsr-chains", em=em, expect=lambda s: s["pcsr"], limits=False)


@sim_case
def disconnected():
    """A disconnected pattern: a depth whose candidates come from the plan's list."""
    G = rand_graph(RND, nx.Graph, 7, 0.4)
    H = nx.Graph([(0, 1)])
    H.add_node(2)
    check(G, H, "mono", "disconnected")


@sim_case
def chunked():
    """The chunked depth-first path (the DFS switch off): at most 3 GBA slots per join, so rows
    are split into list ranges."""
    G = rand_graph(RND, nx.Graph, 8, 0.6)
    check(G, nx.path_graph(3), "mono", "chunked",
          {"max_chunk": 3, "dfs_switch": False},
          expect=lambda s: s["chunks"] > 3 and s["split_rows"] > 0)


@sim_case
def work_tiers():
    """Every work tier: lists of length <= 2 per warp, 3 multi-warp, 4 block, longer grid (a
    lollipop with a branch on its path has degrees 1 to 5)."""
    G = nx.lollipop_graph(5, 4)
    G.add_edge(7, 9)
    check(G, nx.path_graph(3), "induced", "tiers", {"tiers": (2, 3, 4)},
          expect=lambda s: all(s["tiers"][t] > 0 for t in s["tiers"]))


@sim_case
def write_cache():
    """More than 32 valid candidates in one row: write-cache flushes of 32 and a remainder."""
    G = nx.star_graph(40)
    check(G, nx.path_graph(2), "mono", "write-cache", limits=False)


@sim_case
def signatures():
    """The signature filter: node 0 has one label-0 neighbour, the pattern centre needs two."""
    G = nx.Graph([(0, 1), (0, 2), (3, 4), (3, 5)])
    for u in G:
        G.nodes[u]["c"] = 1 if u in (0, 2, 3) else 0
    H = nx.Graph([(0, 1), (0, 2)])
    for u, c in ((0, 1), (1, 0), (2, 0)):
        H.nodes[u]["c"] = c
    check(G, H, "mono", "signatures", nm=NM, expect=lambda s: s["signature_pruned"] > 0)


@sim_case
def single_node_and_no_match():
    """A single-node pattern and a pattern with no match."""
    check(rand_graph(RND, nx.DiGraph, 5, 0.3, loops=True), nx.DiGraph([(0, 0)]), "mono",
          "self-loop-k1")
    check(nx.path_graph(4), nx.complete_graph(3), "mono", "no-match")


if __name__ == "__main__":
    sys.exit(run_cases())
