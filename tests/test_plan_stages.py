"""The planner's stages selected by name: the GraphQL and RI orders' properties, every filter and
order giving the same matches (VF2 the oracle), and what explain() reports about the stages."""

import random

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms import isomorphism as iso

import nx_gsm
from nx_gsm.api import prepare
from nx_gsm.engines.cpu import CpuEngine, search_tree
from nx_gsm.interop.networkx import as_gsm
from nx_gsm.plan.order import ORDERS, matching_order, undirected_neighbours
from nx_gsm.plan.planner import FILTERS

CLASSES = [nx.Graph, nx.DiGraph, nx.MultiGraph, nx.MultiDiGraph]


def _pattern(seed):
    rng = random.Random(seed)
    n = rng.randint(0, 12)
    cls = rng.choice(CLASSES)
    X = cls(nx.gnp_random_graph(n, rng.random() * 0.6, seed=seed,
                                directed=cls in (nx.DiGraph, nx.MultiDiGraph)))
    if n and rng.random() < 0.3:
        X.add_edge(0, 0)
    counts = [rng.choice([1, 2, 3, 5, 8, 13]) for _ in range(n)]
    return as_gsm(X, node_attrs=False, edge_attrs=False), counts


def _neighbours(h):
    return [nb - {u} for u, nb in enumerate(undirected_neighbours(h))]


@pytest.mark.parametrize("method", ORDERS)
@pytest.mark.parametrize("seed", range(60))
def test_order_is_a_connected_permutation(method, seed):
    """Each order lists every pattern node once, and every node but a component's first has an
    earlier neighbour (the drivers that bound its candidates); a new component starts only
    when the ordered nodes have no unordered neighbour left."""
    h, counts = _pattern(seed)
    order = matching_order(h, counts, method).tolist()
    assert sorted(order) == list(range(h.n))
    nb = _neighbours(h)
    for d, u in enumerate(order):
        earlier = set(order[:d])
        if not nb[u] & earlier:
            frontier = {w for x in earlier for w in nb[x]} - earlier
            assert not frontier, (method, order, d)


@pytest.mark.parametrize("seed", range(60))
def test_gql_order_takes_the_fewest_candidates(seed):
    """GraphQL's rule: the root has the fewest candidates, and each later node has the fewest
    among the frontier's (ties by higher degree, then lower id)."""
    h, counts = _pattern(seed)
    order = matching_order(h, counts, "gql").tolist()
    nb = _neighbours(h)
    deg = [len(x) for x in nb]
    for d, u in enumerate(order):
        earlier = set(order[:d])
        frontier = {w for x in earlier for w in nb[x]} - earlier
        pool = frontier or set(range(h.n)) - earlier
        assert u == min(pool, key=lambda x: (counts[x], -deg[x], x))


@pytest.mark.parametrize("seed", range(60))
def test_ri_order_follows_structure(seed):
    """RI's rule, on structure alone: the root has the highest degree, each later node the most
    ordered neighbours, and the candidate counts change nothing."""
    h, counts = _pattern(seed)
    order = matching_order(h, counts, "ri").tolist()
    assert order == matching_order(h, counts[::-1], "ri").tolist()
    nb = _neighbours(h)
    if h.n:
        assert len(nb[order[0]]) == max(len(x) for x in nb)
    for d in range(1, h.n):
        earlier = set(order[:d])
        back = {u: len(nb[u] & earlier) for u in range(h.n) if u not in earlier}
        assert back[order[d]] == max(back.values())


def test_unknown_stage_names_are_refused():
    G, H = nx.complete_graph(4), nx.path_graph(3)
    with pytest.raises(ValueError, match="order must be one of"):
        prepare(G, H, "mono", order="vf2")
    with pytest.raises(ValueError, match="filter must be one of"):
        nx_gsm.explain(G, H, filter="cfl")
    with pytest.raises(ValueError, match="order must be one of"):
        matching_order(as_gsm(H), [1, 1, 1], "fast")


def _case(seed):
    rng = random.Random(seed)
    cls = CLASSES[seed % 4]
    labels = rng.choice([1, 2, 3])

    def graph(n, m):
        X = cls()
        X.add_nodes_from((i, {"l": rng.randrange(labels)}) for i in range(n))
        for _ in range(m):
            X.add_edge(rng.randrange(n), rng.randrange(n))
        return X

    n = rng.randint(6, 14)
    G = graph(n, rng.randint(n, 3 * n))
    k = rng.randint(2, 5)
    return G, graph(k, rng.randint(k - 1, 2 * k)), rng.choice(["mono", "induced"])


@pytest.mark.parametrize("seed", range(24))
def test_every_stage_choice_gives_the_same_matches(seed):
    """Every filter x order finds the same mappings as VF2 (mono and induced, every graph
    class, self-loops and parallel edges), and the one-thread tree count agrees."""
    G, H, mode = _case(seed)
    nm = iso.categorical_node_match("l", None)
    matcher = (iso.MultiDiGraphMatcher if G.is_directed() else iso.MultiGraphMatcher) \
        if G.is_multigraph() else (iso.DiGraphMatcher if G.is_directed() else iso.GraphMatcher)
    gm = matcher(G, H, node_match=nm)
    it = gm.subgraph_monomorphisms_iter() if mode == "mono" else gm.subgraph_isomorphisms_iter()
    want = sorted(tuple(sorted(m.items())) for m in it)
    find = nx_gsm.subgraph_monomorphisms if mode == "mono" else nx_gsm.subgraph_isomorphisms
    for flt in FILTERS:
        for order in ORDERS:
            plan, _, _ = prepare(G, H, mode, node_match=nm, filter=flt, order=order)
            assert plan.stages["filter"] == flt and plan.stages["order"] == order
            got = sorted(tuple(sorted(m.items())) for m in
                         nx_gsm.api.iter_mappings(plan, CpuEngine()))
            assert got == want, (flt, order)
            assert search_tree(plan)["matches"] == len(want)
    assert sorted(tuple(sorted(m.items())) for m in find(G, H, node_match=nm)) == want


def test_ldf_keeps_at_least_the_refined_candidates():
    G = nx.les_miserables_graph()
    H = nx.cycle_graph(4)
    ac, _, _ = prepare(G, H, "mono", filter="ac")
    ldf, _, _ = prepare(G, H, "mono", filter="ldf")
    assert (ldf.cand >= ac.cand).all()
    assert ldf.stages["candidates"] >= ac.stages["candidates"]


def test_explain_reports_the_stages_and_the_search_tree():
    G, H = nx.les_miserables_graph(), nx.cycle_graph(4)
    counts = {}
    for order in ORDERS:
        e = nx_gsm.explain(G, H, engine="cpu", order=order, filter="ldf", search=True)
        st = e["stages"]
        assert st["order"] == order and st["filter"] == "ldf"
        assert st["candidates"] == sum(e["candidates"].values())
        for stage in ("convert", "check_labels", "labels", "filter", "order", "depths",
                      "space", "probe"):
            assert st["seconds"][stage] >= 0.0
        s = e["search"]
        assert s["matches"] == nx_gsm.count_subgraph_monomorphisms(G, H)
        assert s["nodes"][-1] == s["matches"] and len(s["nodes"]) == 4
        assert s["calls"] == sum(s["nodes"][:-1])
        counts[order] = s["matches"]
    assert len(set(counts.values())) == 1
    assert "search" not in nx_gsm.explain(G, H)


def test_search_tree_without_failing_sets_and_bounded():
    G, H = nx.les_miserables_graph(), nx.cycle_graph(4)
    plan, _, _ = prepare(G, H, "mono")
    full = search_tree(plan)
    flat = search_tree(plan, prune=False)
    assert flat["matches"] == full["matches"] and full["complete"] and flat["complete"]
    assert np.all(np.asarray(flat["nodes"]) >= np.asarray(full["nodes"]))
    cut = search_tree(plan, max_steps=5)
    assert not cut["complete"] and cut["matches"] <= full["matches"]
