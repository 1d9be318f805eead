"""Drop-in GraphMatcher classes."""

import networkx as nx
import pytest
from networkx.algorithms import isomorphism as iso

import nx_gsm

PAIRS = [
    (nx_gsm.GraphMatcher, iso.GraphMatcher, nx.Graph),
    (nx_gsm.DiGraphMatcher, iso.DiGraphMatcher, nx.DiGraph),
    (nx_gsm.MultiGraphMatcher, iso.MultiGraphMatcher, nx.MultiGraph),
    (nx_gsm.MultiDiGraphMatcher, iso.MultiDiGraphMatcher, nx.MultiDiGraph),
]


def _s(it):
    return {frozenset(m.items()) for m in it}


@pytest.mark.parametrize("ours, theirs, cls", PAIRS)
def test_same_results_as_networkx(ours, theirs, cls):
    G = nx.gnm_random_graph(9, 20, seed=1, directed=cls().is_directed())
    G = cls(G)
    G.add_edge(0, 0)
    H = cls(nx.gnm_random_graph(4, 4, seed=2, directed=cls().is_directed()))
    a, b = ours(G, H), theirs(G, H)
    assert isinstance(a, theirs)
    assert _s(a.subgraph_monomorphisms_iter()) == _s(b.subgraph_monomorphisms_iter())
    assert _s(a.subgraph_isomorphisms_iter()) == _s(b.subgraph_isomorphisms_iter())
    assert a.subgraph_is_monomorphic() == b.subgraph_is_monomorphic()
    assert a.subgraph_is_isomorphic() == b.subgraph_is_isomorphic()
    assert a.mapping == b.mapping or a.subgraph_is_isomorphic()
    a2, b2 = ours(G, G.copy()), theirs(G, G.copy())
    assert _s(a2.isomorphisms_iter()) == _s(b2.isomorphisms_iter())
    assert a2.is_isomorphic() and a2.test == "graph"


def test_mapping_attribute_and_test_flag():
    GM = nx_gsm.GraphMatcher(nx.complete_graph(4), nx.path_graph(2))
    first = next(GM.subgraph_monomorphisms_iter())
    assert GM.mapping == first and GM.test == "mono"


def test_directedness_errors_like_networkx():
    with pytest.raises(nx.NetworkXError, match="DiGraphMatcher"):
        nx_gsm.GraphMatcher(nx.DiGraph(), nx.DiGraph())
    with pytest.raises(nx.NetworkXError, match="same directedness"):
        nx_gsm.GraphMatcher(nx.Graph(), nx.DiGraph())


def test_overridden_feasibility_falls_back_to_vf2():
    class OddOnly(nx_gsm.GraphMatcher):
        def semantic_feasibility(self, G1_node, G2_node):
            return G1_node % 2 == 1

    GM = OddOnly(nx.path_graph(6), nx.Graph([(0, 1)]))
    assert not GM._own_path()
    assert list(GM.subgraph_monomorphisms_iter()) == []
    GM = OddOnly(nx.complete_graph(6), nx.Graph([(0, 1)]))
    assert all(k % 2 for m in GM.subgraph_monomorphisms_iter() for k in m)
