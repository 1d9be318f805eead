"""The gMatch GPU engine against the CPU engine and NetworkX (runs only where CUDA is usable).

Random cases of all four graph classes, monomorphism and induced subgraph isomorphism, node and
edge labels, self-loops and parallel edges; a count's fused search (levels and DFS in one
cooperative launch) against the chained path; a count above 10**10 (exact, int64 accumulation); a
collect that streams through a device buffer far smaller than the output; limits; work donation
on and off; and the CPU fallback for patterns deeper than the shared-memory stack.
"""

import logging
import random

import networkx as nx
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
    from nx_gsm.engines.gpu.gmatch import GMatchEngine

    return GMatchEngine(**kw)


def _cpu():
    from nx_gsm.engines.cpu import CpuEngine

    return CpuEngine()


def _case(seed):
    return random_case(seed, edge_labels=(1, 2), k_max=7, p_edge_match=0.4)


@pytest.mark.parametrize("mode", ["mono", "induced"])
@pytest.mark.parametrize("seed", range(24))
def test_random_cases_match_cpu_engine(seed, mode):
    G, H, kw = _case(seed)
    plan, _, _ = prepare(G, H, mode, **kw)
    # odd seeds: every BFS level on the GPU's kernels (even ones: small levels on the host)
    cpu, eng = _cpu(), _engine(steal=bool(seed % 2), host_rows=0 if seed % 2 else None)
    want = cpu.count(plan)
    assert eng.count(plan) == want
    got = _rows(eng.iter_chunks(plan, chunk=97), plan.k)
    assert _as_set(got) == _as_set(_rows(cpu.iter_chunks(plan), plan.k))
    if want > 1:
        lim = want // 2
        assert eng.count(plan, limit=lim) == lim
        part = _rows(eng.iter_chunks(plan, limit=lim), plan.k)
        assert len(part) == lim and _as_set(part) <= _as_set(got)


@pytest.mark.parametrize("cls", CLASSES)
def test_against_networkx_matchers(cls):
    rnd = random.Random(7)
    G = _random_graph(rnd, cls, 14, 0.35, n_labels=2, n_elabels=2)
    H = _random_graph(rnd, cls, 4, 0.6, n_labels=2, n_elabels=2)
    if not nx.is_weakly_connected(H) if H.is_directed() else not nx.is_connected(H):
        H = cls(nx.path_graph(4, create_using=cls))
        for u in H:
            H.nodes[u]["c"] = u % 2
    Matcher = {nx.Graph: iso.GraphMatcher, nx.DiGraph: iso.DiGraphMatcher,
               nx.MultiGraph: iso.MultiGraphMatcher, nx.MultiDiGraph: iso.MultiDiGraphMatcher}[cls]
    nm = iso.categorical_node_match("c", None)
    gm = Matcher(G, H, node_match=nm)

    def sset(it):
        return {frozenset(m.items()) for m in it}

    assert sset(nx_gsm.subgraph_monomorphisms(G, H, node_label="c", engine="gmatch")) == sset(
        gm.subgraph_monomorphisms_iter())
    assert sset(nx_gsm.subgraph_isomorphisms(G, H, node_label="c", engine="gmatch")) == sset(
        gm.subgraph_isomorphisms_iter())


@pytest.mark.parametrize("seed", range(16))
def test_fused_count_matches_chained_and_cpu(seed):
    # a count's fused search (one cooperative launch) from host rows, from the roots, with the
    # DFS from the roots, and the chained path (levels launched from the host)
    G, H, kw = _case(seed)
    plan, _, _ = prepare(G, H, "mono" if seed % 2 else "induced", **kw)
    want = _cpu().count(plan)
    for eng_kw in ({}, {"host_rows": 0}, {"host_rows": 0, "pool_target": 1},
                   {"host_rows": 0, "fused": False}):
        eng = _engine(steal=bool(seed % 3), **eng_kw)
        assert eng.count(plan) == want, eng_kw
        if want > 2:
            assert eng.count(plan, limit=want // 2) == want // 2, eng_kw


def test_fused_levels_across_the_grid(monkeypatch):
    # every level from the roots inside one launch of hundreds of blocks, grid barriers between
    # them; then a level buffer that the third level overflows (the DFS starts from the second)
    from nx_gsm.engines.gpu.gmatch import host  # (it reads FUSED_BUF_INTS)

    G = nx.gnm_random_graph(3000, 7500, seed=1)
    plan, _, _ = prepare(G, nx.path_graph(6), "mono")
    want = _cpu().count(plan)
    eng = _engine(host_rows=0, pool_target=1 << 20)
    assert eng.count(plan) == want
    st = eng.last_stats
    assert st["fused"] and st["gpu_levels"] >= 3 and st["blocks"] >= 100, st
    lv = st["level_rows"]

    def line(n):  # each region of the buffer starts on a 128-byte line
        return (n + 31) // 32 * 32

    # the roots, the first level, the second level and 64 ints: the third level has no room
    monkeypatch.setattr(host, "FUSED_BUF_INTS", line(st["host_rows"]) + line(lv[0] * 2)
                        + lv[1] * 3 + 64)
    eng = _engine(host_rows=0, pool_target=1 << 20)
    assert eng.count(plan) == want
    assert eng.last_stats["pool_depth"] == 3 and len(eng.last_stats["level_rows"]) == 3


def test_count_above_1e10_is_exact():
    # every injective map of P7 into K30 is a monomorphism: 30!/23! = 10,260,432,000 > 2**33
    G, H = nx.complete_graph(30), nx.path_graph(7)
    want = 30 * 29 * 28 * 27 * 26 * 25 * 24
    assert want > 10**10
    assert nx_gsm.count_subgraph_monomorphisms(G, H, engine="gmatch") == want


def test_timeout_returns_partial_count():
    G, H = nx.complete_graph(40), nx.path_graph(8)  # 40!/32! ~ 3.9e12 matches: hours of work
    c = nx_gsm.count_subgraph_monomorphisms(G, H, engine="gmatch", timeout=0.5)
    assert getattr(c, "partial", False) is True
    assert 0 <= c < 40 * 39 * 38 * 37 * 36 * 35 * 34 * 33


def test_streamed_collect_through_small_buffer():
    rnd = random.Random(3)
    G = _random_graph(rnd, nx.Graph, 60, 0.2)
    H = nx.path_graph(4)
    plan, _, _ = prepare(G, H, "mono")
    want = _as_set(_rows(_cpu().iter_chunks(plan), plan.k))
    assert len(want) > 20_000
    eng = _engine(out_capacity=1000, pool_target=1)  # the DFS kernel writes the rows
    got = _rows(eng.iter_chunks(plan, chunk=333), plan.k)
    assert eng.last_stats.get("streamed") is True
    assert _as_set(got) == want
    # with a limit larger than the buffer
    part = _rows(eng.iter_chunks(plan, limit=5000), plan.k)
    assert len(part) == 5000 and _as_set(part) <= want


@pytest.mark.parametrize("steal", [False, True])
def test_skewed_work_with_and_without_donation(steal):
    # a hub makes a few pool rows far heavier than the rest
    G = nx.barabasi_albert_graph(400, 6, seed=1)
    G.add_edges_from((0, v) for v in range(1, 400))
    H = nx.cycle_graph(4)
    plan, _, _ = prepare(G, H, "induced")
    want = _cpu().count(plan)
    eng = _engine(steal=steal, pool_target=1)
    assert eng.count(plan) == want


def test_long_pattern_falls_back_to_cpu(caplog):
    G, H = nx.cycle_graph(40), nx.path_graph(34)
    plan, _, _ = prepare(G, H, "mono")
    eng = _engine()
    with caplog.at_level(logging.WARNING, logger="nx_gsm.gpu"):
        assert eng.count(plan) == _cpu().count(plan)
    assert "falling back to the CPU engine" in caplog.text


def test_engine_registered():
    from nx_gsm.engines import available_engines, get_engine

    assert available_engines()["gmatch"] is None
    assert get_engine("gmatch").name == "gmatch"
