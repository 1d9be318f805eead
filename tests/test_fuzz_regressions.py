"""Regressions the differential fuzz (conformance/fuzz.py) found: each test states what VF2 or
NetworkX answers and checks nx_gsm against it on the smallest input that showed a difference."""

import collections

import networkx as nx
import numpy as np
import pandas as pd
import pytest
from networkx.algorithms import isomorphism as iso

import nx_gsm


def _vf2_mono(G, H):
    """VF2's monomorphisms as a multiset, run on int-relabelled copies (VF2 itself compares node
    keys with ``==`` in places, which NaN and numpy-beside-tuple keys answer wrongly) and
    mapped back to the key objects."""
    gk, hk = list(G), list(H)
    Gi = nx.relabel_nodes(G, {k: i for i, k in enumerate(gk)}.__getitem__)
    Hi = nx.relabel_nodes(H, {k: i for i, k in enumerate(hk)}.__getitem__)
    M = iso.MultiGraphMatcher(Gi, Hi) if G.is_multigraph() else iso.GraphMatcher(Gi, Hi)
    return collections.Counter(frozenset((gk[g], hk[h]) for g, h in m.items())
                               for m in M.subgraph_monomorphisms_iter())


def _multiset(mappings):
    return collections.Counter(frozenset(m.items()) for m in mappings)


# -- IncrementalMatcher.apply deletes by dict semantics ----------------------------------------
def _nan_loop_graph():
    n = float("nan")
    G = nx.MultiGraph()
    G.add_edge(n, n)
    G.add_edge(n, 1)
    return G, n


def _numpy_beside_tuple_graph():
    k = np.int64(7)
    G = nx.MultiGraph()
    G.add_edge(k, ("a", 1))
    G.add_edge(("a", 1), "b")
    return G, k


@pytest.mark.parametrize("build", [_nan_loop_graph, _numpy_beside_tuple_graph])
def test_incremental_delete_with_odd_keys_equals_vf2_on_edited_graph(build):
    G, k = build()
    u, v = next((a, b) for a, b in G.edges() if a is k)
    H = nx.MultiGraph([(0, 1)])
    m = nx_gsm.IncrementalMatcher(G, H, engine="cpu")
    before = _vf2_mono(G, H)
    res = m.apply(delete=[(u, v, 0)])
    # the oracle's edited graph: G without that edge, rebuilt (NetworkX's own remove_edge
    # compares the ends with != and fails on exactly these keys)
    G1 = nx.MultiGraph()
    G1.add_nodes_from(G)
    G1.add_edges_from(e for e in G.edges(keys=True) if not (e[0] is u and e[1] is v))
    after = _vf2_mono(G1, H)
    assert m.count() == sum(after.values())
    assert _multiset(m.matches()) == after
    assert (_multiset(res.added), _multiset(res.removed)) == (after - before, before - after)
    assert m.graph.number_of_edges() == G1.number_of_edges()
    assert G.number_of_edges() == G1.number_of_edges() + 1  # the input is not mutated


def test_incremental_sync_deletes_from_the_users_graph_with_nan_keys():
    G, n = _nan_loop_graph()
    m = nx_gsm.IncrementalMatcher(G, nx.MultiGraph([(0, 1)]), engine="cpu", sync=True)
    m.apply(delete=[(n, n, 0)])
    assert list(G.edges(keys=True)) == [(n, 1, 0)]
    assert list(G.adj[1]) == [n] and list(G.adj[n]) == [1]


# -- pandas output keeps the key objects -------------------------------------------------------
def test_to_pandas_with_two_nan_pattern_keys():
    a, b = float("nan"), float("nan")
    H = nx.Graph()
    H.add_edge(a, b)
    G = nx.path_graph(3)
    ms = nx_gsm.find_subgraph_monomorphisms(G, H)
    df = ms.to_pandas()
    assert df.shape == (4, 2)
    assert df.columns[0] is a and df.columns[1] is b
    rows = collections.Counter(frozenset(zip(r, (a, b))) for r in df.itertuples(index=False))
    assert rows == _vf2_mono(G, H)


def test_pandas_key_columns_stay_key_objects_beside_strings():
    nan = np.float64("nan")
    G = nx.Graph()
    G.add_edge(nan, "x")
    H = nx.Graph([(("p", 0), ("p", 1))])  # tuple labels stay labels, not a MultiIndex
    want = _vf2_mono(G, H)
    frames = [nx_gsm.find_subgraph_monomorphisms(G, H).to_pandas(),
              *nx_gsm.match_frames(G, H, rows_per_frame=1)]
    for df in frames:
        assert list(df.columns) == [("p", 0), ("p", 1)]
        assert not isinstance(df.columns, pd.MultiIndex)
        assert all(dt.kind == "O" for dt in df.dtypes)
    rows = [r for df in frames[1:] for r in df.itertuples(index=False)]
    assert collections.Counter(frozenset(zip(r, H)) for r in rows) == want
    assert any(x is nan for df in frames for x in df.iloc[:, 0])


# -- dispatched VF2++ follows NetworkX's label semantics and early returns ---------------------
def _both(fn, *args):
    out = []
    for backend in (None, "gsm"):
        try:
            out.append(("ok", _multiset(fn(*args, backend=backend))))
        except Exception as exc:  # noqa: BLE001 -- the exception is the answer compared
            out.append(("raised", type(exc)))
    return out


@pytest.fixture
def _no_cache():
    old = nx.config.cache_converted_graphs
    nx.config.cache_converted_graphs = False
    yield
    nx.config.cache_converted_graphs = old


def _label_graphs():
    G = nx.Graph()
    G.add_node(0, a=1)
    H = nx.Graph()
    H.add_node(0, a=[1])
    H.add_node(1, a=1)
    return G, H


@pytest.mark.parametrize("args", [
    # node_label=None: every node is labelled default_label, which must be hashable
    lambda: (nx.path_graph(3), nx.path_graph(2), None, [1]),
    lambda: (nx.path_graph(2), nx.path_graph(3), None, [1]),
    lambda: (nx.path_graph(3), nx.path_graph(2), None, 5),
    # a pattern larger than the data graph: no mapping before its labels are hashed
    lambda: _label_graphs() + ("a", None),
    # ...but the data graph's labels are hashed before the sizes are compared
    lambda: tuple(reversed(_label_graphs())) + ("a", None),
    lambda: (nx.path_graph(2), nx.path_graph(3), "a", [1]),
    # an unhashable pattern label in a pattern that fits
    lambda: (nx.path_graph(3), _label_graphs()[1], "a", None),
    # empty graphs: no mapping, whatever the labels
    lambda: (nx.Graph(), nx.path_graph(2), None, [1]),
])
@pytest.mark.parametrize("name", ["vf2pp_all_monomorphisms", "vf2pp_all_subgraph_isomorphisms",
                                  "vf2pp_all_isomorphisms"])
def test_dispatched_vf2pp_labels_follow_networkx(_no_cache, args, name):
    nx_answer, gsm_answer = _both(getattr(nx, name), *args())
    assert gsm_answer == nx_answer


def test_dispatched_vf2pp_groups_pattern_labels_first_as_networkx():
    # Decimal("1") then np.int64(1) in one dict: Decimal's == refuses the numpy int and NumPy's
    # reflected comparison raises TypeError; VF2++ groups the pattern's labels by themselves
    # before looking them up, so it raises here (the data graph's order compares the other way)
    from decimal import Decimal

    G = nx.Graph()
    G.add_nodes_from([(0, {"a": np.int64(1)}), (1, {"a": Decimal("1")}), (2, {})])
    H = nx.Graph()
    H.add_nodes_from([("p", {"a": Decimal("1")}), ("q", {"a": np.int64(1)})])
    nx_answer, gsm_answer = _both(nx.vf2pp_all_monomorphisms, G, H, "a", None)
    assert nx_answer == ("raised", TypeError)
    assert gsm_answer == nx_answer


# -- IncrementalMatcher asks node_match only where a full search may --------------------------
def _raising_on_arrays(a, b):
    return bool(a.get("a") == b.get("a"))  # NumPy: ambiguous truth value for arrays


def test_incremental_apply_does_not_ask_node_match_on_impossible_pairs():
    # the pattern has a node with a self-loop (induced: the data image needs one too) and no
    # data node has one, so a full search asks node_match about nothing, and VF2 returns 0;
    # the deleted edge's ends pass the local degree checks against other pattern nodes whose
    # attribute is an array, which node_match cannot compare
    G = nx.Graph()
    G.add_nodes_from([(30, {"a": None}), (1, {"a": None}), (15, {"a": np.array([1, 2])})])
    G.add_edge(30, 1)
    H = nx.Graph()
    H.add_nodes_from([("s", {"a": None}), ("t", {"a": np.array([1, 2])}),
                      ("u", {"a": None}), ("v", {"a": np.array([1, 2])})])
    H.add_edges_from([("s", "s"), ("s", "u"), ("t", "u"), ("v", "v")])
    want = iso.GraphMatcher(G, H)  # structure alone: no mapping at all, before or after
    assert not any(True for _ in want.subgraph_isomorphisms_iter())
    m = nx_gsm.IncrementalMatcher(G, H, induced=True, engine="cpu",
                                  node_match=_raising_on_arrays)
    res = m.apply(delete=[(30, 1)])
    assert (res.num_added, res.num_removed, m.count()) == (0, 0, 0)


def test_incremental_node_match_errors_still_reach_the_caller():
    # the same callable on a pair a search does use: its exception is not swallowed
    G = nx.Graph()
    G.add_nodes_from([(0, {"a": np.array([1, 2])}), (1, {"a": np.array([1, 2])})])
    H = nx.Graph()
    H.add_nodes_from([("x", {"a": np.array([1, 2])}), ("y", {"a": np.array([1, 2])})])
    H.add_edge("x", "y")
    m = nx_gsm.IncrementalMatcher(G, H, engine="cpu", node_match=_raising_on_arrays)
    with pytest.raises(ValueError, match="ambiguous"):
        m.apply(insert=[(0, 1)])
