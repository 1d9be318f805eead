"""Property-based fuzzing (hypothesis): readers never crash on junk, the API agrees with VF2 on
arbitrary small graphs with odd node keys, and nothing raises anything but a clear error."""

import os
import string

import networkx as nx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from networkx.algorithms import isomorphism as iso

import nx_gsm
from nx_gsm.interop.files import GraphFormatError

# NX_GSM_FUZZ_EXAMPLES: the long mode (python -m conformance fuzz)
EXAMPLES = int(os.environ.get("NX_GSM_FUZZ_EXAMPLES", "150"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# node keys of mixed, awkward types: ints, strings, tuples, frozensets, floats, bools, None
keys = st.one_of(
    st.integers(-3, 40),
    st.text(string.ascii_letters, min_size=0, max_size=3),
    st.tuples(st.integers(0, 3), st.text("ab", max_size=1)),
    st.frozensets(st.integers(0, 3), max_size=2),
    st.floats(allow_nan=False, allow_infinity=False, width=16),
)
labels = st.one_of(st.none(), st.integers(0, 2), st.sampled_from(["x", "y"]),
                   st.lists(st.integers(0, 1), max_size=2))  # lists: unhashable


@st.composite
def graphs(draw, cls, max_nodes):
    nodes = draw(st.lists(keys, min_size=0, max_size=max_nodes, unique_by=lambda k: (type(k), k)))
    G = cls()
    for n in nodes:
        if draw(st.booleans()):
            G.add_node(n, c=draw(labels))
        else:
            G.add_node(n)
    if nodes:
        for _ in range(draw(st.integers(0, 3 * len(nodes)))):
            u, v = draw(st.sampled_from(nodes)), draw(st.sampled_from(nodes))
            if G.is_multigraph() or not G.has_edge(u, v):
                G.add_edge(u, v, w=draw(st.integers(0, 1)))
    return G


MATCHERS = {nx.Graph: iso.GraphMatcher, nx.DiGraph: iso.DiGraphMatcher,
            nx.MultiGraph: iso.MultiGraphMatcher, nx.MultiDiGraph: iso.MultiDiGraphMatcher}


def _s(it):
    out = [frozenset(m.items()) for m in it]
    assert len(out) == len(set(out))
    return set(out)


@pytest.mark.parametrize("cls", list(MATCHERS))
@SETTINGS
@given(data=st.data())
def test_api_equals_vf2_on_arbitrary_graphs(cls, data):
    G = data.draw(graphs(cls, 7))
    H = data.draw(graphs(cls, 4))
    nm = data.draw(st.sampled_from([None, iso.categorical_node_match("c", None),
                                    lambda a, b: a.get("c") == b.get("c") or b.get("c") is None]))
    em = data.draw(st.sampled_from([None, lambda a, b: True, (
        iso.categorical_multiedge_match("w", 0) if G.is_multigraph()
        else iso.categorical_edge_match("w", 0))]))
    gm = MATCHERS[cls](G, H, node_match=nm, edge_match=em)
    assert _s(nx_gsm.subgraph_monomorphisms(G, H, node_match=nm, edge_match=em)) == _s(
        gm.subgraph_monomorphisms_iter())
    assert _s(nx_gsm.subgraph_isomorphisms(G, H, node_match=nm, edge_match=em)) == _s(
        gm.subgraph_isomorphisms_iter())


@SETTINGS
@given(text=st.text(alphabet="tve 0123456789-#x\n\t.", max_size=200))
def test_graph_reader_never_crashes(tmp_path_factory, text):
    p = tmp_path_factory.mktemp("fuzz") / "f.graph"
    p.write_text(text)
    try:
        G = nx_gsm.read_graph(p)
    except GraphFormatError as exc:
        assert "f.graph" in str(exc)
    else:
        assert isinstance(G, nx.Graph)


@SETTINGS
@given(blob=st.binary(max_size=200))
def test_graph_reader_binary_input(tmp_path_factory, blob):
    p = tmp_path_factory.mktemp("fuzz") / "b.graph"
    p.write_bytes(blob)
    try:
        nx_gsm.read_graph(p)
    except GraphFormatError:
        pass


def test_huge_vertex_ids_are_rejected_cleanly(tmp_path):
    p = tmp_path / "huge.graph"
    p.write_text("t 2 1\nv 0 1\nv 99999999999999999999 1\n")
    with pytest.raises(GraphFormatError, match="outside"):
        nx_gsm.read_graph(p)
    p.write_text("t 99999999999999999999 0\n")
    with pytest.raises(GraphFormatError, match="declares"):
        nx_gsm.read_graph(p)


def test_no_recursion_needed_for_long_patterns():
    import sys

    # compiling a kernel recurses (Numba's compiler, not the search): the wide-table variant
    # that patterns of 255 nodes or more use is compiled first, at the usual limit
    assert nx_gsm.count_subgraph_monomorphisms(nx.path_graph(300), nx.path_graph(260)) == 82
    limit = sys.getrecursionlimit()
    try:
        sys.setrecursionlimit(200)
        G, H = nx.path_graph(1000), nx.path_graph(600)
        assert nx_gsm.count_subgraph_monomorphisms(G, H) == 2 * (1000 - 600 + 1)
    finally:
        sys.setrecursionlimit(limit)
