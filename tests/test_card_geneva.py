"""The GENEVA GPU engine against the CPU engine and NetworkX (runs only where CUDA is usable).

Random cases of all four graph classes, monomorphism and induced subgraph isomorphism, node and
edge labels (interval-PCSR lookups), self-loops and parallel edges; multi-vertex phases and the
SV-match variant; a count above 10**10 (exact); a small memory budget that splits every frontier
into chunks; limits, timeouts; a yeast query with its published count; the format bytes report.
"""

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
    from nx_gsm.engines.gpu.geneva import GenevaEngine

    return GenevaEngine(**kw)


def _cpu():
    from nx_gsm.engines.cpu import CpuEngine

    return CpuEngine()


def _case(seed):
    return random_case(seed)


@pytest.mark.parametrize("mode", ["mono", "induced"])
@pytest.mark.parametrize("seed", range(32))
def test_random_cases_match_cpu_engine(seed, mode):
    G, H, kw = _case(seed)
    plan, _, _ = prepare(G, H, mode, **kw)
    cpu, eng = _cpu(), _engine(group_max=(1, 2, 4)[seed % 3])
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
    H = cls(nx.star_graph(3, create_using=cls))  # a tree: one 4-vertex phase
    for u in H:
        H.nodes[u]["c"] = u % 2
    Matcher = {nx.Graph: iso.GraphMatcher, nx.DiGraph: iso.DiGraphMatcher,
               nx.MultiGraph: iso.MultiGraphMatcher, nx.MultiDiGraph: iso.MultiDiGraphMatcher}[cls]
    gm = Matcher(G, H, node_match=iso.categorical_node_match("c", None))

    def sset(it):
        return {frozenset(m.items()) for m in it}

    assert sset(nx_gsm.subgraph_monomorphisms(G, H, node_label="c", engine="geneva")) == sset(
        gm.subgraph_monomorphisms_iter())
    assert sset(nx_gsm.subgraph_isomorphisms(G, H, node_label="c", engine="geneva")) == sset(
        gm.subgraph_isomorphisms_iter())


def test_count_above_1e10_is_exact():
    # every injective map of P7 into K30 is a monomorphism: 30!/23! = 10,260,432,000 > 2**33
    G, H = nx.complete_graph(30), nx.path_graph(7)
    want = 30 * 29 * 28 * 27 * 26 * 25 * 24
    assert nx_gsm.count_subgraph_monomorphisms(G, H, engine="geneva") == want


def test_small_budget_splits_frontiers():
    rnd = random.Random(3)
    G = _random_graph(rnd, nx.Graph, 30, 0.2)
    G.add_edges_from((0, v) for v in range(1, 30))  # a hub: heavy rows
    for H, mode in ((nx.path_graph(4), "mono"), (nx.star_graph(3), "mono"),
                    (nx.cycle_graph(4), "induced")):
        plan, _, _ = prepare(G, H, mode)
        want = _as_set(_rows(_cpu().iter_chunks(plan), plan.k))
        eng = _engine(memory_budget=1 << 20, format_stats=False)
        eng._allow = lambda st: 1 << 16  # far below one level's table
        got = _rows(eng.iter_chunks(plan, chunk=1000), plan.k)
        assert _as_set(got) == want
        assert eng.last_stats["chunks"] > len(eng.last_stats["phases"])
        assert eng.count(plan) == len(want)


def test_timeout_returns_partial_count():
    G, H = nx.complete_graph(40), nx.star_graph(7)  # 40!/32! ~ 3.9e12 matches
    c = nx_gsm.count_subgraph_monomorphisms(G, H, engine="geneva", timeout=0.5)
    assert getattr(c, "partial", False) is True


def test_yeast_published_counts():
    from nx_gsm.data import demo_graph_path, demo_queries
    from nx_gsm.interop.files import read_graph

    G = read_graph(demo_graph_path("yeast"))
    for path, published in demo_queries()[:4]:
        H = read_graph(path, edge_labels=False)
        assert nx_gsm.count_subgraph_monomorphisms(G, H, node_label="label",
                                                   engine="geneva") == published, path.name


def test_stats_report_formats_and_memory():
    from nx_gsm.engines.gpu.geneva import format_bytes

    rnd = random.Random(5)
    G = _random_graph(rnd, nx.Graph, 50, 0.2, n_elabels=3)
    H = nx.Graph()
    H.add_edge(0, 1, w=0)
    H.add_edge(1, 2, w=1)
    plan, _, _ = prepare(G, H, "mono", edge_match=iso.categorical_edge_match("w", None))
    assert not plan.empty
    eng = _engine()
    eng.count(plan)
    s = eng.last_stats
    fb = format_bytes(plan.G, plan.eclass)
    assert s["pcsr_bytes"] == fb["pcsr"] and s["interval_pcsr_bytes"] == fb["interval_pcsr"]
    assert s["interval_pcsr_bytes"] < s["pcsr_bytes"]
    assert s["peak_device_bytes"] >= s["graph_bytes"] + s["interval_pcsr_device_bytes"]
    assert s["rows_per_phase"] and s["launches"] >= 3


def test_engine_registered():
    from nx_gsm.engines import available_engines, get_engine

    assert available_engines()["geneva"] is None
    assert get_engine("geneva").name == "geneva"
