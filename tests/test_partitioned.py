"""The partitioned engine (PBE) is exact for every partition count: counts and mapping sets equal
the CPU engine's, inner and cross matches are disjoint, shared execution equals the naive search."""

import doctest
import random

import networkx as nx
import numpy as np
import pytest

import nx_gsm
from conformance.generator import generate_cases
from nx_gsm.api import prepare
from nx_gsm.engines import get_engine
from nx_gsm.engines.base import Budget
from nx_gsm.engines.cpu import CpuEngine
from nx_gsm.engines.partitioned import (PartitionedEngine, _sizes, cut_pairs, edge_orbits,
                                        partition)

pytest.importorskip("pymetis")


def _rows(engine, plan, **kw):
    return [tuple(r) for c in engine.iter_chunks(plan, **kw) for r in c.tolist()]


def _check(plan, parts, shared=True):
    """Partitioned count and mappings against the CPU engine; returns the engine's stats."""
    ref = set(_rows(CpuEngine(), plan))
    eng = PartitionedEngine(inner="cpu", parts=parts, shared=shared)
    got = _rows(eng, plan)
    assert len(got) == len(set(got)), "a mapping was emitted twice"
    assert set(got) == ref
    assert eng.count(plan) == len(ref)
    return eng.last_stats


def _random_graph(rng, cls, n, m, labels):
    G = cls()
    G.add_nodes_from(range(n))
    for _ in range(m):
        u, v = rng.randrange(n), rng.randrange(n)
        if u != v or rng.random() < 0.1:
            G.add_edge(u, v)
    if labels:
        for v in G:
            G.nodes[v]["c"] = rng.randrange(2)
        for e in G.edges(keys=True) if G.is_multigraph() else G.edges:
            G.edges[e]["w"] = rng.randrange(2)
    return G


def _pattern(rng, G, k):
    """A connected pattern cut out of G (a random walk's nodes, some edges dropped)."""
    U = G.to_undirected(as_view=True)
    start = rng.choice([v for v in G if U.degree(v) > 1])
    nodes = [start]
    while len(nodes) < k:
        nxt = rng.choice(list(U[rng.choice(nodes)]))
        if nxt not in nodes:
            nodes.append(nxt)
    H = G.subgraph(nodes).copy()
    tree = nx.minimum_spanning_tree(H.to_undirected())
    for e in list(H.edges(keys=True) if H.is_multigraph() else H.edges):
        if rng.random() < 0.3 and not tree.has_edge(e[0], e[1]) and e[0] != e[1]:
            H.remove_edge(*e)
    return H


CLASSES = [nx.Graph, nx.DiGraph, nx.MultiGraph, nx.MultiDiGraph]


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
@pytest.mark.parametrize("labels", [False, True], ids=["plain", "labels"])
def test_random_graphs_every_partition_count(cls, labels):
    rng = random.Random(f"{cls.__name__}{labels}")
    G = _random_graph(rng, cls, 40, 110, labels)
    if cls.__name__.startswith("Multi"):  # parallel edges: multiplicities must be compared
        for u, v in list(G.edges())[:25]:
            G.add_edge(u, v, w=1)
    kw = dict(node_label="c", edge_label="w") if labels else {}
    for k in (3, 4, 5):
        H = _pattern(rng, G, k)
        for mode in ("mono", "induced"):
            plan, _, _ = prepare(G, H, mode, **kw)
            for parts in (2, 5, 64):
                st = _check(plan, parts, shared=parts != 5)
                assert st["parts"] == min(parts, G.number_of_nodes()) and st["routed"] is None


def test_conformance_subset():
    """The quick conformance suite (every class, mode, label kind and shape) with 2, 3 or as
    many parts as nodes (every match then crosses parts), shared and naive alternating."""
    checked = 0
    for i, case in enumerate(generate_cases(quick=True)):
        plan, _, _ = prepare(case.G, case.H, case.mode, **case.gsm_kwargs())
        if plan.k == 0:
            continue
        _check(plan, (2, 3, 64)[i % 3], shared=i % 2 == 0)
        checked += 1
    assert checked > 600


def test_inner_and_cross_are_disjoint_and_cross_spans_parts():
    G = nx.grid_2d_graph(7, 7)
    plan, _, _ = prepare(G, nx.path_graph(4), "mono")
    eng = PartitionedEngine(inner="cpu", parts=4)
    total = eng.count(plan)
    st = dict(eng.last_stats)
    assert st["inner"] > 0 and st["cross"] > 0 and st["inner"] + st["cross"] == total
    part, _ = partition(plan.G, parts=4)
    rows = np.concatenate(list(eng.iter_chunks(plan)))
    spans = np.array([len(set(part[r].tolist())) for r in rows])
    assert (spans > 1).sum() == st["cross"] and (spans == 1).sum() == st["inner"]
    # the cut pairs METIS produced are the ones the engine reports
    assert cut_pairs(plan.G, part).shape[0] == st["cut_pairs"]


def test_shared_execution_groups_are_edge_orbits():
    def groups(G, H, **kw):
        plan, _, _ = prepare(G, H, "mono", **kw)
        return sorted(len(g) for g in edge_orbits(plan))

    K = nx.complete_graph(6)
    assert groups(K, nx.complete_graph(3)) == [3]
    assert groups(K, nx.complete_graph(4)) == [6]
    assert groups(K, nx.path_graph(4)) == [1, 2]
    assert groups(K, nx.star_graph(3)) == [3]
    assert groups(K, nx.cycle_graph(5)) == [5]
    # a label on one leaf breaks the star's symmetry; directions break the cycle's reversal
    star = nx.star_graph(3)
    nx.set_node_attributes(K, 0, "c")
    nx.set_node_attributes(star, 0, "c")
    star.nodes[1]["c"] = 1
    K.nodes[0]["c"] = 1
    assert groups(K, star, node_label="c") == [1, 2]
    D = nx.complete_graph(5, create_using=nx.DiGraph)
    assert groups(D, nx.cycle_graph(4, create_using=nx.DiGraph)) == [4]
    assert groups(D, nx.path_graph(3, create_using=nx.DiGraph)) == [1, 1]


def test_shared_equals_naive_and_saves_searches():
    G = nx.gnm_random_graph(80, 320, seed=3)
    plan, _, _ = prepare(G, nx.cycle_graph(5), "induced")
    st_shared = _check(plan, 6, shared=True)
    st_naive = _check(plan, 6, shared=False)
    assert st_shared["groups"] == 1 and st_naive["groups"] == 5
    assert st_shared["seeds"] * 5 == st_naive["seeds"]


def test_budget_forces_parts_that_fit():
    G = nx.gnm_random_graph(120, 400, seed=5)
    plan, _, _ = prepare(G, nx.cycle_graph(4), "mono")
    ref = CpuEngine().count(plan)
    for budget in (4000, 1500, 600):
        eng = PartitionedEngine(inner="cpu", max_device_bytes=budget)
        assert eng.count(plan) == ref
        p = eng.last_stats["parts"]
        assert p >= 2
        part, _ = partition(plan.G, parts=p)
        assert max(_sizes(plan.G, part, p, plan.k)) <= budget
    with pytest.raises(MemoryError):
        PartitionedEngine(inner="cpu", max_device_bytes=10).count(plan)


def test_disconnected_pattern_is_routed_with_reason():
    G = nx.gnm_random_graph(30, 60, seed=1)
    H = nx.Graph([(0, 1), (2, 3)])
    H.add_node(4)
    plan, _, _ = prepare(G, H, "mono")
    st = _check(plan, 4)
    assert "disconnected" in st["routed"] and st["parts"] == 1


def test_limit_budget_and_registration():
    G = nx.gnm_random_graph(50, 150, seed=2)
    H = nx.path_graph(4)
    plan, _, _ = prepare(G, H, "mono")
    eng = PartitionedEngine(inner="cpu", parts=3)
    full = eng.count(plan)
    assert eng.count(plan, limit=7) == 7
    some = _rows(eng, plan, limit=full - 3)
    assert len(some) == full - 3 and set(some) <= set(_rows(CpuEngine(), plan))
    stopped = Budget(timeout=0)
    c = eng.count(plan, budget=stopped)
    assert stopped.partial and getattr(c, "partial", False) and c <= full
    # registered engine: no GPU needed; the default budget on a CPU is one part (routed)
    assert get_engine("partitioned").name == "partitioned"
    assert nx_gsm.count_subgraph_monomorphisms(G, H, engine="partitioned") == full


def test_yeast_published_counts():
    """Sun & Luo's published yeast counts (4-, 8- and 16-vertex queries, dense and sparse)."""
    from conformance.yeast import published_sample

    sample = published_sample(12, max_count=20_000)
    if isinstance(sample, str):
        pytest.skip(sample)
    G, queries = sample
    for i, (name, H, published) in enumerate(queries):
        plan, _, _ = prepare(G, H, "mono", node_label="label")
        eng = PartitionedEngine(inner="cpu", parts=(2, 8, 32)[i % 3])
        assert eng.count(plan) == published, (name, eng.last_stats)


def test_docstring_examples():
    import nx_gsm.engines.partitioned as mod

    res = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert res.failed == 0 and res.attempted > 0
