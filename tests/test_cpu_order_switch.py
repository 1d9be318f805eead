"""The CPU count's order switch (engine.other_order): a count the probe does not finish, in
the planner's default order, runs in GraphQL's order where Knuth's estimate of the search tree
says it is smaller; and its tail swap (engine.other_tail): a count still running at the check
runs its last two depths the other way round where that counted faster. Exactness does not
depend on either choice; these tests force each branch."""

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms import isomorphism as iso

from nx_gsm.api import prepare
from nx_gsm.engines.cpu import CpuEngine, engine, plan_arrays
from nx_gsm.engines.cpu.kernels import tree_estimate
from nx_gsm.plan.planner import reorder
from nx_gsm.plan.space import build_space, space_visits

from tests.test_cpu_intersection import _case, _vf2


def test_the_estimate_is_exact_where_every_walk_branches_alike():
    """K_4 in K_7: every walk meets 7, 6, 5 candidates above the last depth, so the estimate
    is the tree's 7 + 42 + 210 internal nodes whatever the seed."""
    plan, _, _ = prepare(nx.complete_graph(7), nx.complete_graph(4), "mono")
    P = plan_arrays(plan)
    assert {tree_estimate(P, 20, seed) for seed in (1, 2, 3)} == {7 + 42 + 210}


def _spy(monkeypatch, name, call):
    """``engine.<name>`` replaced by ``call(real, *args)``; returns the list that records, per
    call, whether it chose (returned something)."""
    seen = []
    real = getattr(engine, name)

    def spy(*args):
        got = call(real, *args)
        seen.append(got is not None)
        return got
    monkeypatch.setattr(engine, name, spy)
    return seen


@pytest.fixture
def always_switch(monkeypatch):
    """Every count past a one-step probe takes the other order where it differs."""
    monkeypatch.setattr(engine, "_PROBE_STEPS", 1)
    monkeypatch.setattr(engine, "_ORDER_STEPS", 1)
    monkeypatch.setattr(engine, "_ORDER_MIN_TREE", 0.0)
    monkeypatch.setattr(engine, "_ORDER_PER_VISIT", 0.0)
    monkeypatch.setattr(engine, "_ORDER_GAIN", 0.0)
    return _spy(monkeypatch, "other_order", lambda real, plan, P: real(plan, P))


def test_a_named_order_is_kept(always_switch):
    G = nx.gnp_random_graph(40, 0.3, seed=1)
    H = nx.Graph([(0, 1), (1, 2), (2, 3), (3, 0), (0, 2), (3, 4)])
    for order in ("greedy", "gql", "ri"):
        plan, _, _ = prepare(G, H, "mono", order=order)
        assert plan.stages["order_fixed"]
        assert engine.other_order(plan, plan_arrays(plan)) is None
    plan, _, _ = prepare(G, H, "mono")
    assert not plan.stages["order_fixed"]
    # a reordered plan (PBE's sequences, a distributed task's roots) keeps its order too
    assert reorder(plan, plan.order[::-1].copy()).stages["order_fixed"]
    assert not plan.stages["order_fixed"]


def test_a_count_keeps_the_default_order_where_the_estimate_is_near(monkeypatch):
    monkeypatch.setattr(engine, "_PROBE_STEPS", 1)
    monkeypatch.setattr(engine, "_ORDER_STEPS", 1)
    monkeypatch.setattr(engine, "_ORDER_MIN_TREE", 0.0)
    monkeypatch.setattr(engine, "_ORDER_PER_VISIT", 0.0)
    monkeypatch.setattr(engine, "_ORDER_GAIN", np.inf)
    G = nx.gnp_random_graph(40, 0.3, seed=2)
    H = nx.Graph([(0, 1), (1, 2), (2, 3), (3, 0), (0, 2), (3, 4)])
    plan, _, _ = prepare(G, H, "mono")
    assert engine.other_order(plan, plan_arrays(plan)) is None
    want = sum(1 for _ in iso.GraphMatcher(G, H).subgraph_monomorphisms_iter())
    assert CpuEngine().count(plan) == want


def test_explain_names_the_order_the_count_runs_in(monkeypatch):
    import nx_gsm
    from nx_gsm.engines import auto

    G, H = _case(0)  # (labelled: GraphQL's order differs from the default here)
    kw = {"engine": "cpu", "node_match": iso.categorical_node_match("l", None)}
    # a search the probe finishes keeps the planner's order
    assert nx_gsm.explain(G, H, **kw)["stages"]["count_order"] == "greedy"
    monkeypatch.setattr(auto, "PROBE_STEPS", 1)
    monkeypatch.setattr(auto, "PROBE_MAX", 1)
    monkeypatch.setattr(engine, "_ORDER_MIN_TREE", 0.0)
    monkeypatch.setattr(engine, "_ORDER_PER_VISIT", 0.0)
    monkeypatch.setattr(engine, "_ORDER_GAIN", 0.0)
    e = nx_gsm.explain(G, H, search=True, **kw)
    assert e["stages"]["order"] == "greedy" and e["stages"]["count_order"] == "gql"
    assert e["search"]["matches"] == len(_vf2(G, H, "mono"))
    assert nx_gsm.explain(G, H, order="greedy", **kw)["stages"]["count_order"] == "greedy"


def test_a_tree_small_beside_the_space_keeps_the_default_order(monkeypatch):
    """The switch builds the other order's candidate space, which reads about as many
    adjacency entries as this plan's did: a tree estimated under _ORDER_PER_VISIT nodes per
    entry keeps the default order without building it."""
    G, H = _case(0)
    plan, _, _ = prepare(G, H, "mono", node_match=iso.categorical_node_match("l", None))
    monkeypatch.setattr(engine, "_ORDER_MIN_TREE", 0.0)
    monkeypatch.setattr(engine, "_ORDER_GAIN", 0.0)
    P = plan_arrays(plan)
    monkeypatch.setattr(engine, "_ORDER_PER_VISIT", 0.0)
    assert engine.other_order(plan, P) is not None
    here = tree_estimate(P, engine._DIVES, 1)
    monkeypatch.setattr(engine, "_ORDER_PER_VISIT", 1.01 * here / space_visits(plan))
    assert engine.other_order(plan, P) is None
    monkeypatch.setattr(engine, "_ORDER_PER_VISIT", 0.99 * here / space_visits(plan))
    assert engine.other_order(plan, P) is not None


def test_building_the_space_counts_what_space_visits_counts():
    G, H = _case(0)
    nm = iso.categorical_node_match("l", None)
    want = space_visits(prepare(G, H, "mono", node_match=nm)[0])
    plan = prepare(G, H, "mono", node_match=nm)[0]
    build_space(plan)
    assert want > 0 and plan.__dict__["_space_visits"] == want


# The tail swap (engine.other_tail): the last two depths the other way round, where both keep
# a driver above them.

@pytest.fixture
def always_swap(monkeypatch):
    """Every count past a one-step probe runs its tail swapped where that keeps both drivers
    (``base=-1``: any count beats it); records whether each count swapped."""
    monkeypatch.setattr(engine, "_PROBE_STEPS", 1)
    monkeypatch.setattr(engine, "_ORDER_STEPS", 1)
    monkeypatch.setattr(engine, "_TAIL_PER_VISIT", 0.0)
    monkeypatch.setattr(engine, "_TAIL_STEPS", 0)
    return _spy(monkeypatch, "other_tail", lambda real, plan, P, base=None: real(plan, P, -1))


def test_the_tail_swaps_only_where_both_nodes_keep_a_driver():
    G = nx.complete_graph(6)
    for H in (nx.cycle_graph(4), nx.complete_graph(4), nx.star_graph(4)):
        plan, _, _ = prepare(G, H, "mono")
        o = plan.order.tolist()
        assert engine.swapped_tail(plan).tolist() == o[:-2] + [o[-1], o[-2]]
    assert engine.swapped_tail(prepare(G, nx.path_graph(2), "mono")[0]) is None
    # a triangle with a two-edge tail: the tail's end, last, has its only neighbour before it
    H = nx.Graph([(0, 1), (1, 2), (2, 0), (2, 3), (3, 4)])
    plan, _, _ = prepare(G, H, "mono")
    assert plan.order.tolist()[-2:] == [3, 4] and engine.swapped_tail(plan) is None


@pytest.fixture(params=["always_switch", "always_swap"])
def forced(request):
    """Each count in the other order (GraphQL's), then each with its tail swapped."""
    return request.getfixturevalue(request.param)


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("mode", ["mono", "induced"])
def test_counts_in_the_other_order_or_tail_are_exact(seed, mode, forced):
    G, H = _case(seed)
    plan, _, _ = prepare(G, H, mode, node_match=iso.categorical_node_match("l", None))
    assert CpuEngine().count(plan) == len(_vf2(G, H, mode))


def test_some_count_takes_the_other_order_or_tail(forced):
    """The cases above reach the choice (a GraphQL order unlike the default; a tail that keeps
    both drivers)."""
    for seed in range(12):
        G, H = _case(seed)
        plan, _, _ = prepare(G, H, "mono", node_match=iso.categorical_node_match("l", None))
        CpuEngine().count(plan)
    assert any(forced)


def test_a_swapped_tail_is_exact_on_multigraphs_with_loops_and_edge_labels(always_swap):
    G = nx.MultiGraph()
    for i in range(9):
        for j in range(i + 1, 9):
            if (i * 7 + j * 3) % 4 != 0:
                G.add_edge(i, j, c=(i + j) % 2)
                if (i + j) % 5 == 0:
                    G.add_edge(i, j, c=1)
        G.add_edge(i, i, c=i % 2)
    H = nx.MultiGraph([(0, 1, {"c": 0}), (1, 2, {"c": 1}), (2, 3, {"c": 0}), (3, 0, {"c": 1}),
                       (0, 2, {"c": 1}), (1, 1, {"c": 1})])
    em = iso.categorical_multiedge_match("c", None)
    for mode, fn in (("mono", "subgraph_monomorphisms_iter"),
                     ("induced", "subgraph_isomorphisms_iter")):
        want = sum(1 for _ in getattr(iso.MultiGraphMatcher(G, H, edge_match=em), fn)())
        plan, _, _ = prepare(G, H, mode, edge_match=em)
        assert CpuEngine().count(plan) == want
    assert any(always_swap)


def test_a_named_order_keeps_its_tail(always_swap):
    G = nx.gnp_random_graph(30, 0.4, seed=3)
    plan, _, _ = prepare(G, nx.cycle_graph(5), "mono", order="greedy")
    want = sum(1 for _ in iso.GraphMatcher(G, nx.cycle_graph(5)).subgraph_monomorphisms_iter())
    assert CpuEngine().count(plan) == want
    assert always_swap == []


def test_the_tail_keeps_the_order_where_the_swap_counts_no_faster():
    G = nx.gnp_random_graph(30, 0.4, seed=3)
    plan, _, _ = prepare(G, nx.cycle_graph(5), "mono")
    P = plan_arrays(plan)
    # base: more matches than any probe can count
    assert engine.other_tail(plan, P, base=1 << 60) is None
    alt, P2, got, seed = engine.other_tail(plan, P, base=-1)
    assert alt.stages["tail"] == "swapped" and alt.order.tolist() == \
        engine.swapped_tail(plan).tolist()


def test_a_count_that_looks_short_never_builds_the_other_tail(monkeypatch):
    monkeypatch.setattr(engine, "_PROBE_STEPS", 1)
    monkeypatch.setattr(engine, "_ORDER_STEPS", 1)
    monkeypatch.setattr(engine, "_TAIL_PER_VISIT", 1e12)
    monkeypatch.setattr(engine, "other_tail", lambda *a: pytest.fail("the tail was checked"))
    G = nx.gnp_random_graph(30, 0.4, seed=3)
    plan, _, _ = prepare(G, nx.cycle_graph(5), "mono")
    want = sum(1 for _ in iso.GraphMatcher(G, nx.cycle_graph(5)).subgraph_monomorphisms_iter())
    assert CpuEngine().count(plan) == want


def test_explain_names_a_swapped_tail(monkeypatch):
    import nx_gsm
    from nx_gsm.engines import auto

    G = nx.gnp_random_graph(30, 0.4, seed=3)
    H = nx.cycle_graph(5)
    assert nx_gsm.explain(G, H, engine="cpu")["stages"]["count_tail"] == "kept"
    monkeypatch.setattr(auto, "PROBE_STEPS", 1)
    monkeypatch.setattr(auto, "PROBE_MAX", 1)
    import nx_gsm.engines.cpu as cpu

    real = engine.other_tail
    monkeypatch.setattr(cpu, "other_tail", lambda plan, P, base=None: real(plan, P, -1))
    e = nx_gsm.explain(G, H, engine="cpu", search=True)
    assert e["stages"]["count_tail"] == "swapped"
    want = sum(1 for _ in iso.GraphMatcher(G, H).subgraph_monomorphisms_iter())
    assert e["search"]["matches"] == want
