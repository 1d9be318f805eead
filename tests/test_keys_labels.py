"""Node keys that compare oddly, label values that compare equal but differ, and callables
that raise on pairs no mapping could use: every answer equals VF2's (issue 53, findings 1-3).

Expected results come from NetworkX's GraphMatcher on the same inputs, never from constants.
"""

import collections
import datetime as dt
import random
from decimal import Decimal
from fractions import Fraction

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms import isomorphism as iso

import nx_gsm
from nx_gsm.plan.labels import _Unkeyable, exact_key

P = collections.namedtuple("P", "x y")


def _matcher(G, H, nm=None, em=None):
    cls = iso.DiGraphMatcher if G.is_directed() else iso.GraphMatcher
    return cls(G, H, node_match=nm, edge_match=em)


def _vf2(G, H, induced=False, nm=None, em=None):
    """VF2's mappings as a list of item tuples, or the exception type it raised."""
    m = _matcher(G, H, nm, em)
    it = m.subgraph_isomorphisms_iter() if induced else m.subgraph_monomorphisms_iter()
    try:
        return [tuple(d.items()) for d in it]
    except Exception as exc:  # noqa: BLE001 -- VF2 raising is an answer to compare with
        return type(exc)


def _ours(G, H, induced=False, nm=None, em=None):
    fn = nx_gsm.subgraph_isomorphisms if induced else nx_gsm.subgraph_monomorphisms
    return [tuple(d.items()) for d in fn(G, H, node_match=nm, edge_match=em)]


def _same_mappings(a, b):
    # mappings as sets of (data key, pattern key) pairs: a pair holds the graphs' own key
    # objects, so NaN keys compare by identity, as in the graphs
    return collections.Counter(frozenset(m) for m in a) == \
        collections.Counter(frozenset(m) for m in b)


def _check(G, H, induced=False, nm=None, em=None):
    """Where VF2 returns, count and mappings equal its own; where it raises, anything goes."""
    want = _vf2(G, H, induced, nm, em)
    if isinstance(want, type):
        return
    count = (nx_gsm.count_subgraph_isomorphisms if induced else
             nx_gsm.count_subgraph_monomorphisms)(G, H, node_match=nm, edge_match=em)
    assert count == len(want)
    assert _same_mappings(_ours(G, H, induced, nm, em), want)


# -- finding 1: node keys follow dict semantics -------------------------------------------------

def _odd_key_graph(keys, seed, loops=True, cls=nx.Graph):
    rng = random.Random(seed)
    G = cls()
    G.add_nodes_from(keys)
    for _ in range(2 * len(keys)):
        u, v = rng.choice(keys), rng.choice(keys)
        if u is not v or loops:
            G.add_edge(u, v)
    return G


PATTERNS = [nx.path_graph(2), nx.path_graph(3), nx.Graph([(0, 0), (0, 1)]),
            nx.Graph([(0, 0), (0, 1), (1, 1)]), nx.cycle_graph(3)]


@pytest.mark.parametrize("induced", [False, True])
def test_numpy_scalar_key_beside_tuple_key(induced):
    G = nx.Graph()
    G.add_edge(np.int64(7), ("a", 1))
    G.add_edge(("a", 1), 3)
    G.add_edge(3, np.int64(7))
    G.add_edge(np.float64(2.5), 3)
    for H in PATTERNS[:2] + PATTERNS[4:]:
        _check(G, H, induced)


@pytest.mark.parametrize("induced", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_nan_keys_with_self_loops(induced, seed):
    keys = [float("nan"), float("nan"), float("nan"), 0, ("t", float("nan"))]
    G = _odd_key_graph(keys, seed)
    assert nx.number_of_selfloops(G) or seed  # the loops are on NaN keys for some seeds
    for H in PATTERNS:
        _check(G, H, induced)


def test_mixed_keys_directed_multigraph():
    keys = [float("nan"), np.int64(7), ("a", 1), 2**70, frozenset({1, 2}), "\ufeff1", 1.5]
    for seed in range(4):
        G = _odd_key_graph(keys, seed, cls=nx.MultiDiGraph)
        for H in (nx.MultiDiGraph([(0, 1), (0, 1)]), nx.MultiDiGraph([(0, 0), (0, 1)]),
                  nx.MultiDiGraph([(0, 1), (1, 2)])):
            _check(G, H)
            _check(G, H, induced=True)


def _vf2_count(G, H, induced):
    got = _vf2(G, H, induced)
    assert not isinstance(got, type), got
    return len(got)


@pytest.mark.parametrize("induced", [False, True])
def test_incremental_matcher_with_odd_keys(induced):
    """Random single-edge inserts and deletes (self-loops included) on NaN, numpy, tuple and
    big-int keys: each delta moves the count to VF2's count of the updated graph."""
    keys = [float("nan"), float("nan"), np.int64(7), ("a", 1), 3, frozenset({1}), 2**70]
    rng = random.Random(5)
    for H in (nx.Graph([(0, 0), (0, 1)]), nx.path_graph(3),
              nx.Graph([(0, 0), (0, 1), (1, 1)])):
        G = nx.Graph()
        G.add_nodes_from(keys)
        m = nx_gsm.IncrementalMatcher(G, H, induced=induced)
        count = m.count()
        assert count == _vf2_count(G, H, induced)
        for _ in range(14):
            u, v = rng.choice(keys), rng.choice(keys)
            if m.graph.has_edge(u, v):
                d = m.apply(delete=[(u, v)])
            else:
                d = m.apply(insert=[(u, v)])
            count += d.num_added - d.num_removed
            want = _vf2_count(nx.Graph(m.graph), H, induced)
            assert count == want
            assert m.count() == want


# -- finding 2: label classes group only values no callable can tell apart -------------------

def _path_with(values, pattern_values, attr="v"):
    G, H = nx.path_graph(len(values)), nx.path_graph(len(pattern_values))
    for n, v in zip(G, values):
        G.nodes[n][attr] = v
    for n, v in zip(H, pattern_values):
        H.nodes[n][attr] = v
    return G, H


_T0 = dt.datetime(2020, 1, 1, 12, tzinfo=dt.timezone.utc)
_T1 = _T0.astimezone(dt.timezone(dt.timedelta(hours=1)))  # the same instant, == _T0

NODE_CASES = [
    ("namedtuple", [P(1.0, 2), P(1, 2), P(1, 2)], [P(1, 2)] * 2,
     lambda a, b: repr(a["v"]) == repr(b["v"])),
    ("negative zero", [-0.0, 0.0, 0.0], [0.0, 0.0], lambda a, b: str(a["v"]) == str(b["v"])),
    ("tz datetime", [_T1, _T0, _T0], [_T0, _T0], lambda a, b: a["v"].hour == b["v"].hour),
    ("int and bool", [True, 1, 1], [1, 1], lambda a, b: type(a["v"]) is type(b["v"])),
    ("int and float", [1.0, 1, 1], [1, 1], lambda a, b: str(a["v"]) == str(b["v"])),
    ("decimal", [Decimal("1.0"), Decimal("1"), Decimal("1")], [Decimal("1")] * 2,
     lambda a, b: str(a["v"]) == str(b["v"])),
    ("fraction and int", [Fraction(1), 1, 1], [1, 1], lambda a, b: type(a["v"]) is int),
    ("nan", [float("nan")] * 3, [float("nan")] * 2, lambda a, b: str(a["v"]) == str(b["v"])),
    ("nested dict order", [{"a": 1, "b": 2}, {"b": 2, "a": 1}, {"b": 2, "a": 1}],
     [{"b": 2, "a": 1}] * 2, lambda a, b: list(a["v"]) == list(b["v"])),
    ("frozenset order", [frozenset([1, 9]), frozenset([9, 1]), frozenset([9, 1])],
     [frozenset([9, 1])] * 2, lambda a, b: list(a["v"]) == list(b["v"])),
    ("list and tuple", [[1, 2], (1, 2), (1, 2)], [(1, 2)] * 2,
     lambda a, b: type(a["v"]) is type(b["v"])),
    ("numpy array", [np.array([1, 2]), np.array([1, 3]), np.array([1, 2])],
     [np.array([1, 2])] * 2, lambda a, b: bool((a["v"] == b["v"]).all())),
    ("numpy scalar types", [np.int32(1), np.int64(1), np.int64(1)], [np.int64(1)] * 2,
     lambda a, b: a["v"].dtype == b["v"].dtype),
]


@pytest.mark.parametrize("name,values,pvalues,nm", NODE_CASES, ids=[c[0] for c in NODE_CASES])
@pytest.mark.parametrize("induced", [False, True])
def test_callable_tells_apart_equal_values(name, values, pvalues, nm, induced):
    G, H = _path_with(values, pvalues)
    _check(G, H, induced, nm=nm)


@pytest.mark.parametrize("helper", [iso.categorical_node_match("v", None),
                                    iso.categorical_node_match(["v", "w"], [None, 0])])
def test_recognised_helper_on_values_whose_equality_and_hash_disagree(helper):
    """NumPy compares a float32 with a Python float in float32 (equal), while their hashes
    differ, and an int64 with a float in float64: the helper's dictionary lookup must not
    decide such values."""
    for values, pvalues in (([np.float32(0.1)] * 3, [0.1, 0.1]),
                            ([np.int64(2**53 + 1)] * 3, [2.0**53] * 2),
                            ([np.float32(0.1), 0.1, np.float32(0.1)], [0.1, np.float32(0.1)])):
        G, H = _path_with(values, pvalues)
        _check(G, H, nm=helper)


def _multi(edges, cls=nx.MultiGraph):
    G = cls()
    for u, v, k, d in edges:
        G.add_edge(u, v, key=k, **d)
    return G


def _first(e):
    return next(iter(e.values()))


EDGE_CASES = [
    # attribute dicts whose key order differs
    ("attribute order", _multi([(0, 1, 0, {"a": 1, "b": 2}), (1, 2, 0, {"b": 2, "a": 1})]),
     _multi([(0, 1, 0, {"a": 1, "b": 2})]),
     lambda e, f: [list(x) for x in e.values()] == [list(x) for x in f.values()]),
    # parallel edges whose key order differs: a callable reading the first one
    ("first parallel edge", _multi([(0, 1, 1, {"c": 2}), (0, 1, 0, {"c": 1}),
                                    (1, 2, 0, {"c": 1}), (1, 2, 1, {"c": 2})]),
     _multi([(0, 1, 0, {"c": 1})]), lambda e, f: _first(e)["c"] == _first(f)["c"]),
    ("edge namedtuple", nx.Graph([(0, 1, {"w": P(1.0, 2)}), (1, 2, {"w": P(1, 2)})]),
     nx.Graph([(0, 1, {"w": P(1, 2)})]), lambda e, f: repr(e["w"]) == repr(f["w"])),
    ("edge negative zero", nx.DiGraph([(0, 1, {"w": -0.0}), (1, 2, {"w": 0.0})]),
     nx.DiGraph([(0, 1, {"w": 0.0})]), lambda e, f: str(e["w"]) == str(f["w"])),
    ("loop namedtuple", nx.Graph([(0, 0, {"w": P(1.0, 2)}), (1, 1, {"w": P(1, 2)}), (0, 1)]),
     nx.Graph([(0, 0, {"w": P(1, 2)})]), lambda e, f: repr(e.get("w")) == repr(f.get("w"))),
]


@pytest.mark.parametrize("name,G,H,em", EDGE_CASES, ids=[c[0] for c in EDGE_CASES])
@pytest.mark.parametrize("induced", [False, True])
def test_edge_callable_tells_apart_equal_data(name, G, H, em, induced):
    _check(G, H, induced, em=em)


EQUAL_BUT_DIFFERENT = [
    (1, True), (1, 1.0), (0.0, -0.0), (P(1, 2), (1, 2)), ((1,), (True,)), ("a", np.str_("a")),
    ({"a": 1, "b": 2}, {"b": 2, "a": 1}), (frozenset([1, 9]), frozenset([9, 1])),
    (np.int32(1), np.int64(1)), (np.float64(0.5), 0.5), (Decimal("1.0"), Decimal("1")),
    ({0: {"c": 1}, 1: {"c": 2}}, {1: {"c": 2}, 0: {"c": 1}}), (_T0, _T1),
]


@pytest.mark.parametrize("a,b", EQUAL_BUT_DIFFERENT)
def test_exact_key_never_groups_values_a_callable_can_tell_apart(a, b):
    assert a == b  # they compare equal, yet repr, type, order or sign tell them apart
    try:
        ka, kb = exact_key(a), exact_key(b)
    except _Unkeyable:
        return
    assert ka != kb


@pytest.mark.parametrize("value", [7, "s", b"b", None, True, 2.5, -1.5, 0.0, -0.0, (1, "a"),
                                   frozenset({3}), {"a": (1, 2.0)}, np.int64(4),
                                   np.float32(0.25), 2**80])
def test_exact_key_groups_indistinguishable_copies(value):
    """A value and an equal copy built anew (another object) share a class."""
    import copy
    import pickle

    other = pickle.loads(pickle.dumps(value))
    assert exact_key(value) == exact_key(copy.deepcopy(other))


# -- finding 3: a callable sees only pairs that pass the structural checks --------------------

def test_edge_callable_raising_on_structurally_impossible_edges():
    # the data edge 0-1 has one parallel edge under key 5: no key 0, and too few for the pattern
    G = _multi([(0, 1, 5, {}), (1, 2, 0, {"c": 1}), (1, 2, 1, {"c": 1})])
    H = _multi([(0, 1, 0, {"c": 1}), (0, 1, 1, {"c": 1})])
    em = lambda a, b: a[0]["c"] == b[0]["c"]  # noqa: E731
    assert len(_vf2(G, H, em=em)) == 2
    _check(G, H, em=em)
    _check(G, H, induced=True, em=em)


@pytest.mark.parametrize("nodes", [0, 1, 2])
def test_multiedge_helper_on_a_simple_data_graph_with_an_edgeless_pattern(nodes):
    G = nx.DiGraph([(0, 1, {"c": 1}), (1, 2, {"c": 2})])
    H = nx.MultiDiGraph()
    H.add_nodes_from(range(nodes))
    em = iso.categorical_multiedge_match("c", None)
    assert not isinstance(_vf2(G, H, em=em), type)
    _check(G, H, em=em)
    _check(G, H, induced=True, em=em)


def test_node_callable_not_asked_about_a_node_without_the_pattern_loop():
    G = nx.Graph([(0, 0)])
    G.nodes[0]["c"] = 1
    G.add_node(1)  # no attribute: the callable would raise, but it has no loop
    H = nx.Graph([(0, 0)])
    H.nodes[0]["c"] = 1
    nm = lambda a, b: a["c"] == b["c"]  # noqa: E731
    assert len(_vf2(G, H, nm=nm)) == 1
    _check(G, H, nm=nm)


def _random_attr_graph(rng, cls, n, m):
    """A random graph whose items carry ``c`` (70%), and each node its structure under
    ``"s"``: its distinct out-/in-neighbours (self-loops aside) and its loops."""
    G = cls()
    G.add_nodes_from(range(n))
    for _ in range(m):
        G.add_edge(rng.randrange(n), rng.randrange(n))
    pred = G.pred if G.is_directed() else G.adj
    for x in G:
        G.nodes[x]["s"] = (len(set(G.adj[x]) - {x}), len(set(pred[x]) - {x}),
                           G.number_of_edges(x, x))
        if rng.random() < 0.7:
            G.nodes[x]["c"] = rng.randrange(2)
    for u, v in set(G.edges()):
        for d in G[u][v].values() if G.is_multigraph() else [G[u][v]]:
            if rng.random() < 0.7:
                d["c"] = rng.randrange(2)
    return G


def _callables(multi, induced, strict):
    """``node_match``/``edge_match`` comparing ``c`` (absent: None). ``strict``: raise on a pair
    that fails the documented structural checks (the data node's distinct neighbours and loops
    against the pattern node's, an edge's multiplicity against the pattern edge's), the only
    pairs a callable must never be asked about; else answer False there, as VF2 sees them."""
    def fits(have, need):
        return have == need if induced else have >= need

    def node_match(a, b):
        (ao, ai, al), (bo, bi, bl) = a["s"], b["s"]
        if not (ao >= bo and ai >= bi and fits(al, bl)):
            if strict:
                raise AssertionError(f"node_match asked about {a} and {b}")
            return False
        return a.get("c") == b.get("c")

    def edge_match(a, b):
        da, db = (next(iter(a.values())), next(iter(b.values()))) if multi else (a, b)
        if not fits(len(a) if multi else 1, len(b) if multi else 1):
            if strict:
                raise AssertionError(f"edge_match asked about {a} and {b}")
            return False
        return da.get("c") == db.get("c")

    return node_match, edge_match


@pytest.mark.parametrize("cls", [nx.Graph, nx.DiGraph, nx.MultiGraph, nx.MultiDiGraph])
def test_callables_see_only_structurally_possible_pairs(cls):
    """Callables that raise on any pair failing the structural checks: nx-gsm never asks them
    about such a pair, and returns VF2's mappings (VF2 itself asks about such pairs, so it runs
    with callables that answer False there instead)."""
    rng = random.Random(53)
    multi = cls().is_multigraph()
    for _ in range(40):
        G = _random_attr_graph(rng, cls, rng.randrange(3, 7), rng.randrange(2, 10))
        H = _random_attr_graph(rng, cls, rng.randrange(1, 4), rng.randrange(0, 4))
        for induced in (False, True):
            nm, em = _callables(multi, induced, strict=True)
            vnm, vem = _callables(multi, induced, strict=False)
            for use_nm, use_em in ((True, False), (False, True), (True, True)):
                want = _vf2(G, H, induced, vnm if use_nm else None, vem if use_em else None)
                got = _ours(G, H, induced, nm if use_nm else None, em if use_em else None)
                assert _same_mappings(got, want)


@pytest.mark.parametrize("cls", [nx.Graph, nx.DiGraph])
@pytest.mark.parametrize("old,new", [({"w": 0.0}, {"w": -0.0}),
                                     ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
                                     ({"w": (1, 2)}, {"w": P(1, 2)})])
def test_incremental_replaced_edge_whose_data_only_compares_equal(cls, old, new):
    """Replacing an edge's attributes with values that compare equal but differ changes what
    ``edge_match`` sees: the delta must count it, as a recount with VF2 does."""
    em = lambda e, f: repr(e) == repr(f)  # noqa: E731
    G = cls([(0, 1, dict(old)), (1, 2, dict(old))])
    H = cls([(0, 1, dict(new))])
    m = nx_gsm.IncrementalMatcher(G, H, edge_match=em)
    count = m.count()
    d = m.apply(delete=[(0, 1)], insert=[(0, 1, dict(new))])
    count += d.num_added - d.num_removed
    want = _vf2(cls(m.graph), H, em=em)
    assert count == len(want) > 0
    assert m.count() == len(want)
