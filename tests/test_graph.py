"""GsmGraph and NetworkX conversion: structure, multiplicities, loops, attributes, round trips."""

import networkx as nx
import numpy as np
import pytest

import nx_gsm
from nx_gsm.graph import GsmGraph


def _edges(G):
    if G.is_multigraph():
        return sorted((repr(u), repr(v), k, repr(sorted(d.items())))
                      for u, v, k, d in G.edges(keys=True, data=True))
    return sorted((repr(u), repr(v), repr(sorted(d.items()))) for u, v, d in G.edges(data=True))


@pytest.mark.parametrize("cls", [nx.Graph, nx.DiGraph, nx.MultiGraph, nx.MultiDiGraph])
def test_round_trip(cls, rng):
    G = cls()
    G.add_nodes_from([("a", {"c": 1}), (("t", 1), {"c": 2}), (3, {}), (frozenset({1}), {"x": [1]})])
    nodes = list(G)
    for _ in range(15):
        u, v = rng.choice(nodes), rng.choice(nodes)
        if not G.is_multigraph() and G.has_edge(u, v):
            continue
        G.add_edge(u, v, w=rng.randrange(3))
    before = _edges(G)
    g = nx_gsm.from_networkx(G)
    assert g.number_of_nodes() == G.number_of_nodes()
    assert g.number_of_edges() == G.number_of_edges()
    H = nx_gsm.to_networkx(g)
    assert type(H) is cls
    assert list(H) == list(G)
    assert dict(H.nodes(data=True)) == dict(G.nodes(data=True))
    assert _edges(H) == before
    assert _edges(G) == before  # input untouched


def test_csr_layout():
    G = nx.MultiDiGraph([(0, 1), (0, 1), (2, 0), (1, 1), (1, 1), (1, 1)])
    g = nx_gsm.from_networkx(G)
    assert g.indptr.dtype == np.int64 and g.indices.dtype == np.int32
    assert g.indices.tolist() == [1, 0] and g.mult.tolist() == [2, 1]
    assert g.loops.tolist() == [0, 3, 0]
    assert g.in_indices.tolist() == [2, 0] and g.in_mult.tolist() == [1, 2]
    assert g.edge_position(0, 1) == 0 and g.edge_position(1, 0) == -1


def test_max_degree_counts_in_rows_of_directed_graphs():
    # five arcs into node 0, at most one out of any node: the longest row is an in-row
    G = nx.DiGraph([(i, 0) for i in range(1, 6)] + [(0, 6)])
    g = nx_gsm.from_networkx(G)
    assert int(g.out_degree().max()) == 1 and g.max_degree() == 5
    assert nx_gsm.from_networkx(G.to_undirected()).max_degree() == 6
    assert nx_gsm.from_networkx(nx.empty_graph(3, create_using=nx.DiGraph)).max_degree() == 0
    M = nx.MultiDiGraph([(1, 0), (1, 0), (2, 0), (0, 0)])  # distinct neighbours, loops apart
    assert nx_gsm.from_networkx(M).max_degree() == 2


def test_from_edges_matches_networkx():
    keys = list("abcd")
    g = GsmGraph.from_edges(keys, [0, 1, 2, 3, 0], [1, 2, 3, 3, 1], multigraph=True)
    G = nx.MultiGraph()
    G.add_nodes_from(keys)
    G.add_edges_from([("a", "b"), ("b", "c"), ("c", "d"), ("d", "d"), ("a", "b")])
    ref = nx_gsm.from_networkx(G)
    for attr in ("indptr", "indices", "mult", "loops"):
        assert getattr(g, attr).tolist() == getattr(ref, attr).tolist()
    with pytest.raises(ValueError, match="parallel edges"):
        GsmGraph.from_edges(keys, [0, 0], [1, 1])
    with pytest.raises(ValueError, match="outside"):
        GsmGraph.from_edges(keys, [0], [9])


def test_duck_typing_and_backend_attribute():
    g = nx_gsm.from_networkx(nx.path_graph(3))
    assert g.__networkx_backend__ == "gsm"
    assert not g.is_directed() and not g.is_multigraph()
    assert len(g) == 3 and 2 in g and "x" not in g and [] not in g
    assert "3 nodes" in repr(g)


def test_rejects_non_graph():
    with pytest.raises(TypeError, match="NetworkX graph"):
        nx_gsm.from_networkx({1: [2]})


def _vf2_count(G, H, induced=False):
    gm = nx.algorithms.isomorphism.GraphMatcher(
        G, H, node_match=nx.algorithms.isomorphism.categorical_node_match("c", None))
    it = gm.subgraph_isomorphisms_iter() if induced else gm.subgraph_monomorphisms_iter()
    return sum(1 for _ in it)


def test_conversion_cached_until_the_graph_changes():
    from nx_gsm.interop.networkx import as_gsm

    G = nx.cycle_graph(6)
    nx.set_node_attributes(G, "a", "c")
    H = nx.path_graph(3)
    nx.set_node_attributes(H, "a", "c")
    g = as_gsm(G)
    assert as_gsm(G) is g  # one conversion for repeated calls
    assert as_gsm(G, edge_attrs=False) is not g  # another attribute selection, another entry

    def count():
        return nx_gsm.count_subgraph_monomorphisms(G, H, node_label="c", engine="cpu")

    assert count() == _vf2_count(G, H) == 12
    G.add_edge(0, 3)  # a graph method clears the cache: the new edge is seen
    assert as_gsm(G) is not g
    assert count() == _vf2_count(G, H)
    G.nodes[1]["c"] = "b"  # an attribute edit in place: the kept conversion references the dict
    assert count() == _vf2_count(G, H)
    G.remove_node(5)
    assert count() == _vf2_count(G, H)


def test_conversion_cache_off_for_views_and_when_disabled():
    from nx_gsm.interop.networkx import as_gsm

    G = nx.complete_graph(5)
    view = G.subgraph([0, 1, 2, 3])
    a = as_gsm(view)
    assert as_gsm(view) is not a  # a view's cache is not cleared by its base graph's changes
    G.remove_edge(0, 1)
    assert as_gsm(view).number_of_edges() == 5
    G.__networkx_cache__ = None
    assert as_gsm(G) is not as_gsm(G)
    F = nx.path_graph(3)
    old = nx.config.cache_converted_graphs
    try:
        nx.config.cache_converted_graphs = False
        assert as_gsm(F) is not as_gsm(F)
    finally:
        nx.config.cache_converted_graphs = old
    assert as_gsm(F) is as_gsm(F)


def test_conversion_cache_follows_copies_and_pickles():
    import copy
    import pickle

    from nx_gsm.interop.networkx import as_gsm

    G = nx.path_graph(4)
    g = as_gsm(G)
    for X in (copy.deepcopy(G), pickle.loads(pickle.dumps(G))):
        x = as_gsm(X)
        assert x is not g and as_gsm(X) is x
        X.add_edge(0, 3)
        assert as_gsm(X).number_of_edges() == 4
    assert as_gsm(G) is g and g.number_of_edges() == 3
