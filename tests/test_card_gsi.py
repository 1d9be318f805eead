"""The GSI GPU engine against the CPU engine and NetworkX (runs only where CUDA is usable).

Random cases of all four graph classes, mono and induced, node and edge labels, self-loops and
parallel edges (sets of mappings against the CPU engine, limits); the NetworkX matchers through
the public API; a memory-bounded run under a 1 MiB budget (chunked levels, or with the BFS -> DFS
switch the level handed to gmatch), the switch in every class and mode, gmatch finishing CuPy
prefixes, a hub whose single list is split across chunks, every work tier on a skewed graph, a
timeout, and the bundled yeast queries against their published counts."""

import random

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms import isomorphism as iso

import nx_gsm
from nx_gsm.api import prepare
from nx_gsm.testing import CLASSES, random_case
from nx_gsm.testing import random_graph as _random_graph
from nx_gsm.testing import row_set as _as_set
from nx_gsm.testing import rows_of as _rows

pytestmark = pytest.mark.gpu  # the card: tests/conftest.py skips it without a device

def _engine(**kw):
    from nx_gsm.engines.gpu.gsi import GsiEngine

    return GsiEngine(**kw)


def _cpu():
    from nx_gsm.engines.cpu import CpuEngine

    return CpuEngine()


def _keys(rows, n):
    """Each row as one int64 (base-n digits), sorted: set comparisons of millions of rows in
    NumPy (every random case has n**k < 2**63)."""
    rows = np.asarray(rows, dtype=np.int64)
    keys = np.zeros(rows.shape[0], dtype=np.int64)
    for j in range(rows.shape[1]):
        keys = keys * n + rows[:, j]
    keys.sort()
    assert not (keys[1:] == keys[:-1]).any(), "a match was produced twice"
    return keys


def _case(seed):
    return random_case(seed, densities=(0.1, 0.3, 0.5), k_max=7)


@pytest.mark.parametrize("mode", ["mono", "induced"])
@pytest.mark.parametrize("seed", range(32))
def test_random_cases_match_cpu_engine(seed, mode):
    G, H, kw = _case(seed)
    plan, _, _ = prepare(G, H, mode, **kw)
    cpu, eng = _cpu(), _engine()
    want = cpu.count(plan)
    assert eng.count(plan) == want
    n = max(1, G.number_of_nodes())
    got = _keys(_rows(eng.iter_chunks(plan, chunk=4097), plan.k), n)
    assert np.array_equal(got, _keys(_rows(cpu.iter_chunks(plan), plan.k), n))
    if want > 1:
        lim = want // 2
        assert eng.count(plan, limit=lim) == lim
        part = _keys(_rows(eng.iter_chunks(plan, limit=lim), plan.k), n)
        assert len(part) == lim and np.isin(part, got).all()


@pytest.mark.parametrize("cls", CLASSES)
def test_against_networkx_matchers(cls):
    rnd = random.Random(11)
    G = _random_graph(rnd, cls, 16, 0.35, n_labels=2, n_elabels=2)
    H = cls(nx.path_graph(4, create_using=cls))
    for u in H:
        H.nodes[u]["c"] = u % 2
    Matcher = {nx.Graph: iso.GraphMatcher, nx.DiGraph: iso.DiGraphMatcher,
               nx.MultiGraph: iso.MultiGraphMatcher, nx.MultiDiGraph: iso.MultiDiGraphMatcher}[cls]
    gm = Matcher(G, H, node_match=iso.categorical_node_match("c", None))

    def sset(it):
        return {frozenset(m.items()) for m in it}

    assert sset(nx_gsm.subgraph_monomorphisms(G, H, node_label="c", engine="gsi")) == sset(
        gm.subgraph_monomorphisms_iter())
    assert sset(nx_gsm.subgraph_isomorphisms(G, H, node_label="c", engine="gsi")) == sset(
        gm.subgraph_isomorphisms_iter())


def test_memory_bounded_levels_are_chunked():
    # level 2 alone is ~270k rows (3 MB of columns): a 1 MiB budget forces chunks
    G = nx.gnp_random_graph(300, 0.1, seed=2)
    plan, _, _ = prepare(G, nx.path_graph(4), "mono")
    want = _cpu().count(plan)
    eng = _engine(memory_budget=1 << 20, dfs_switch=False)
    assert eng.count(plan) == want
    assert eng.last_stats["chunks"] > 10
    assert eng.last_stats["switched_to_dfs_at_level"] is None
    assert sum(eng.last_stats["rows_per_level"][:3]) > 200_000
    small = prepare(nx.gnp_random_graph(80, 0.15, seed=3), nx.path_graph(4), "mono")[0]
    got = _rows(eng.iter_chunks(small, chunk=1000), 4)
    assert _as_set(got) == _as_set(_rows(_cpu().iter_chunks(small), 4))


def test_memory_bounded_levels_switch_to_dfs():
    # the same 1 MiB budget with the switch on: the level that does not fit goes to gmatch
    G = nx.gnp_random_graph(300, 0.1, seed=2)
    plan, _, _ = prepare(G, nx.path_graph(4), "mono")
    want = _cpu().count(plan)
    eng = _engine(memory_budget=1 << 20)
    assert eng.count(plan) == want
    st = eng.last_stats
    assert st["switched_to_dfs_at_level"] in (1, 2) and st["dfs_pool_rows"] > 0, st
    assert st["chunks"] <= 2 and st["dfs_stats"]["pool_given"] is True
    # an enumeration through gmatch's batches: ~10^5 rows, the pool handed over at level 2
    small = prepare(nx.gnp_random_graph(80, 0.15, seed=3), nx.path_graph(4), "mono")[0]
    got = _rows(eng.iter_chunks(small, chunk=1000), 4)
    assert eng.last_stats["switched_to_dfs_at_level"] is not None
    assert _as_set(got) == _as_set(_rows(_cpu().iter_chunks(small), 4))
    lim = len(got) // 3
    assert eng.count(small, limit=lim) == lim
    part = _rows(eng.iter_chunks(small, limit=lim), 4)
    assert len(part) == lim and _as_set(part) <= _as_set(got)


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("mode", ["mono", "induced"])
def test_dfs_switch_every_class(cls, mode):
    # 128 slots hold the <= 60 roots but not their lists (270 to 382 feasible extensions in
    # these cases, 2,561 to 13,722 matches): the switch comes at level 1
    rnd = random.Random(CLASSES.index(cls))
    G = _random_graph(rnd, cls, 60, 0.2, loops=True, n_labels=2, n_elabels=2)
    H = nx.path_graph(4, create_using=cls)
    nx.set_edge_attributes(H, 0, "w")
    kw = {}
    if mode == "mono":
        em = iso.categorical_multiedge_match if G.is_multigraph() else iso.categorical_edge_match
        kw["edge_match"] = em("w", None)
    plan, _, _ = prepare(G, H, mode, **kw)
    cpu = _cpu()
    want = cpu.count(plan)
    eng = _engine(max_chunk=128)
    assert eng.count(plan) == want and want > 0
    assert eng.last_stats["switched_to_dfs_at_level"] == 1, eng.last_stats
    n = G.number_of_nodes()
    ref = _keys(_rows(cpu.iter_chunks(plan), plan.k), n)
    assert np.array_equal(_keys(_rows(eng.iter_chunks(plan, chunk=999), plan.k), n), ref)
    lim = max(1, want // 2)
    assert eng.count(plan, limit=lim) == lim
    part = _keys(_rows(eng.iter_chunks(plan, limit=lim), plan.k), n)
    assert len(part) == lim and np.isin(part, ref).all()
    assert _engine(max_chunk=128, dfs_switch=False).count(plan) == want


def test_gmatch_from_device_prefixes():
    # gmatch finishes prefixes given as CuPy arrays (int32 used in place, int64 converted)
    import cupy as cp

    from nx_gsm.engines.cpu import expand, plan_arrays
    from nx_gsm.engines.gpu.gmatch import GMatchEngine

    rnd = random.Random(4)
    G = _random_graph(rnd, nx.DiGraph, 50, 0.2, n_labels=2)
    plan, _, _ = prepare(G, nx.path_graph(4, create_using=nx.DiGraph), "induced")
    P = plan_arrays(plan)
    pre = expand(P, expand(P, np.zeros((1, 0), dtype=np.int32)))[::3]
    cpu, gm = _cpu(), GMatchEngine()
    want = cpu.count_from(plan, pre)
    assert want > 0
    assert gm.count_from(plan, cp.asarray(pre)) == want
    assert gm.count_from(plan, cp.asarray(pre, dtype=cp.int64)) == want
    got = _rows(gm.iter_from(plan, cp.asarray(pre), chunk=500), plan.k)
    assert _as_set(got) == _as_set(_rows(cpu.iter_from(plan, pre), plan.k))
    assert gm.count_from(plan, cp.asarray(pre), limit=3) == 3


def test_hub_list_split_across_chunks():
    # the hub's list (3000) is longer than a chunk (1000 slots): it is joined in list ranges
    G = nx.star_graph(3000)
    G.add_edges_from((i, i + 1) for i in range(1, 3000, 2))
    plan, _, _ = prepare(G, nx.path_graph(2), "induced")
    eng = _engine(max_chunk=1000)
    assert eng.count(plan) == 2 * G.number_of_edges()
    assert eng.last_stats["split_rows"] > 0
    got = _rows(eng.iter_chunks(plan), 2)
    assert _as_set(got) == _as_set(_rows(_cpu().iter_chunks(plan), 2))


def test_every_tier_on_a_skewed_graph():
    G = nx.barabasi_albert_graph(3000, 4, seed=1)
    G.add_edges_from((0, v) for v in range(1, 3000))
    plan, _, _ = prepare(G, nx.cycle_graph(4), "induced")
    want = _cpu().count(plan)
    eng = _engine(tiers=(8, 64, 512))
    assert eng.count(plan) == want
    assert all(v > 0 for v in eng.last_stats["tiers"].values()), eng.last_stats["tiers"]
    eng = _engine()  # SGSI's histogram cost model
    assert eng.count(plan) == want


def test_pcsr_and_signatures_on_labelled_graph():
    rnd = random.Random(5)
    G = _random_graph(rnd, nx.DiGraph, 200, 0.05, n_labels=3, n_elabels=4)
    H = nx.DiGraph([(0, 1), (0, 2), (2, 3)])
    for u in H:
        H.nodes[u]["c"] = 0
    for e in H.edges:
        H.edges[e]["w"] = 1
    kw = dict(node_match=iso.categorical_node_match("c", None),
              edge_match=iso.categorical_edge_match("w", None))
    plan, _, _ = prepare(G, H, "mono", **kw)
    eng = _engine()
    got = _rows(eng.iter_chunks(plan), plan.k)
    assert eng.last_stats["pcsr"] is True
    assert _as_set(got) == _as_set(_rows(_cpu().iter_chunks(plan), plan.k))


def test_timeout_returns_partial_count():
    G, H = nx.complete_graph(60), nx.path_graph(7)  # 60!/53! ~ 2.5e12 matches
    c = nx_gsm.count_subgraph_monomorphisms(G, H, engine="gsi", timeout=0.5)
    assert getattr(c, "partial", False) is True


def test_yeast_published_counts():
    from nx_gsm.data import demo_graph_path, demo_queries

    G = nx_gsm.read_graph(demo_graph_path(), edge_labels=False)
    for path, want in demo_queries():
        if want > 10**6:
            continue
        H = nx_gsm.read_graph(path, edge_labels=False)
        got = nx_gsm.count_subgraph_monomorphisms(G, H, node_label="label", engine="gsi")
        assert got == want, path.name


def test_engine_registered():
    from nx_gsm.engines import available_engines, get_engine

    assert available_engines()["gsi"] is None
    assert get_engine("gsi").name == "gsi"
