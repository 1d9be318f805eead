"""The own API: semantics against NetworkX, limits, errors, and that inputs are never mutated."""

import copy
import pickle

import networkx as nx
import pytest
from networkx.algorithms import isomorphism as iso

import nx_gsm


def _set(it):
    out = [frozenset(m.items()) for m in it]
    assert len(out) == len(set(out)), "a mapping was produced twice"
    return set(out)


def test_known_counts():
    K4, P3, C4 = nx.complete_graph(4), nx.path_graph(3), nx.cycle_graph(4)
    assert nx_gsm.count_subgraph_monomorphisms(K4, P3) == 24
    assert nx_gsm.count_subgraph_isomorphisms(K4, P3) == 0
    assert nx_gsm.count_subgraph_monomorphisms(C4, P3) == 8
    assert nx_gsm.count_subgraph_isomorphisms(C4, P3) == 8
    assert nx_gsm.count_subgraph_isomorphisms(K4, nx.complete_graph(3)) == 24


def test_mapping_direction_and_keys():
    G = nx.Graph([("a", "b")])
    H = nx.Graph([(("x", 1), ("y", 2))])
    maps = list(nx_gsm.subgraph_monomorphisms(G, H))
    assert {frozenset(m.items()) for m in maps} == {
        frozenset({("a", ("x", 1)), ("b", ("y", 2))}),
        frozenset({("a", ("y", 2)), ("b", ("x", 1))}),
    }
    assert all(type(k) is str for m in maps for k in m)


def test_self_loops_and_multiplicity_semantics():
    G = nx.Graph([(0, 1), (1, 2), (1, 1)])
    H = nx.Graph([(0, 1)])
    assert nx_gsm.count_subgraph_isomorphisms(G, H) == 0
    assert nx_gsm.count_subgraph_monomorphisms(G, H) == 4
    M = nx.MultiGraph([(0, 1), (0, 1), (1, 2)])
    assert _set(nx_gsm.subgraph_isomorphisms(M, nx.MultiGraph([(0, 1)]))) == {
        frozenset({(1, 0), (2, 1)}), frozenset({(1, 1), (2, 0)})}
    assert nx_gsm.count_subgraph_monomorphisms(M, nx.MultiGraph([(0, 1)])) == 4


def test_directed_both_directions():
    G = nx.DiGraph([(0, 1), (1, 0), (1, 2)])
    H = nx.DiGraph([(0, 1)])
    ref = _set(iso.DiGraphMatcher(G, H).subgraph_isomorphisms_iter())
    assert _set(nx_gsm.subgraph_isomorphisms(G, H)) == ref == {frozenset({(1, 0), (2, 1)})}
    assert nx_gsm.count_subgraph_monomorphisms(G, H) == 3


def test_labels_and_callables(rng):
    G = nx.gnm_random_graph(12, 30, seed=3)
    H = nx.cycle_graph(4)
    for X in (G, H):
        for v in X:
            X.nodes[v]["c"] = rng.randrange(2)
        for u, v in X.edges:
            X[u][v]["w"] = rng.randrange(2)
    cases = [
        dict(node_match=iso.categorical_node_match("c", 0)),
        dict(edge_match=iso.categorical_edge_match("w", 0)),
        dict(node_match=lambda a, b: a["c"] >= b["c"], edge_match=lambda a, b: a["w"] <= b["w"]),
        dict(node_match=iso.numerical_node_match("c", 0.0)),
    ]
    for kw in cases:
        gm = iso.GraphMatcher(G, H, **kw)
        assert _set(nx_gsm.subgraph_monomorphisms(G, H, **kw)) == _set(
            gm.subgraph_monomorphisms_iter())
        assert _set(nx_gsm.subgraph_isomorphisms(G, H, **kw)) == _set(
            gm.subgraph_isomorphisms_iter())
    assert nx_gsm.count_subgraph_monomorphisms(G, H, node_label="c") == len(
        list(iso.GraphMatcher(G, H, node_match=iso.categorical_node_match("c", None))
             .subgraph_monomorphisms_iter()))


def test_unhashable_attribute_values_are_exact():
    G = nx.path_graph(4)
    H = nx.path_graph(2)
    for v in G:
        G.nodes[v]["tags"] = [v % 2]
    for v in H:
        H.nodes[v]["tags"] = [v]
    nm = iso.categorical_node_match("tags", None)
    ref = _set(iso.GraphMatcher(G, H, node_match=nm).subgraph_monomorphisms_iter())
    assert _set(nx_gsm.subgraph_monomorphisms(G, H, node_match=nm)) == ref


def test_empty_and_oversized_patterns():
    G = nx.path_graph(3)
    assert list(nx_gsm.subgraph_monomorphisms(G, nx.Graph())) == [{}]
    assert nx_gsm.count_subgraph_isomorphisms(G, nx.Graph()) == 1
    assert list(nx_gsm.subgraph_monomorphisms(G, nx.path_graph(5))) == []
    assert list(nx_gsm.isomorphisms(G, nx.Graph())) == []
    assert list(nx_gsm.isomorphisms(nx.Graph(), nx.Graph())) == [{}]


def test_disconnected_pattern():
    G = nx.path_graph(4)
    H = nx.Graph()
    H.add_nodes_from([0, 1])
    assert nx_gsm.count_subgraph_monomorphisms(G, H) == 12
    assert nx_gsm.count_subgraph_isomorphisms(G, H) == 6


def test_limit():
    G = nx.complete_graph(6)
    H = nx.path_graph(3)
    assert len(list(nx_gsm.subgraph_monomorphisms(G, H, limit=7))) == 7
    assert nx_gsm.count_subgraph_monomorphisms(G, H, limit=7) == 7
    assert nx_gsm.count_subgraph_monomorphisms(G, H, limit=10**9) == 120
    assert list(nx_gsm.subgraph_monomorphisms(G, H, limit=0)) == []
    assert nx_gsm.is_subgraph_monomorphic(G, H)
    assert not nx_gsm.is_subgraph_isomorphic(G, H)


def test_find_returns_matchset():
    ms = nx_gsm.find_subgraph_monomorphisms(nx.complete_graph(3), nx.path_graph(2))
    assert ms.count == 6 and ms.to_numpy().shape == (6, 2)
    assert {frozenset(m.items()) for m in ms} == _set(
        nx_gsm.subgraph_monomorphisms(nx.complete_graph(3), nx.path_graph(2)))
    df = ms.to_pandas() if _has_pandas() else None
    if df is not None:
        assert list(df.columns) == [0, 1] and len(df) == 6


def _has_pandas():
    try:
        import pandas  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize(
    "call, exc, msg",
    [
        (lambda: nx_gsm.count_subgraph_monomorphisms(nx.DiGraph(), nx.Graph()),
         nx.NetworkXError, "same directedness"),
        (lambda: nx_gsm.count_subgraph_monomorphisms({1: 2}, nx.Graph()), TypeError, "G must"),
        (lambda: nx_gsm.count_subgraph_monomorphisms(nx.Graph(), "H"), TypeError, "H must"),
        (lambda: list(nx_gsm.subgraph_monomorphisms(nx.Graph(), nx.Graph(), limit=-1)),
         ValueError, "non-negative"),
        (lambda: nx_gsm.count_subgraph_monomorphisms(nx.Graph(), nx.Graph(), limit=1.5),
         TypeError, "limit"),
        (lambda: nx_gsm.count_subgraph_monomorphisms(nx.Graph(), nx.Graph(), node_match=3),
         TypeError, "node_match"),
        (lambda: nx_gsm.count_subgraph_monomorphisms(nx.Graph(), nx.Graph(), engine="warp9"),
         ValueError, "unknown engine"),
        (lambda: nx_gsm.count_subgraph_monomorphisms(nx.path_graph(2), nx.path_graph(2),
                                                     node_label="c"),
         nx.NetworkXError, "node 0 has no attribute .c."),
    ],
)
def test_bad_input_errors(call, exc, msg):
    with pytest.raises(exc, match=msg):
        call()


def test_unhashable_strict_label_is_a_type_error():
    G = nx.path_graph(2)
    nx.set_node_attributes(G, {0: [1], 1: [2]}, "c")
    with pytest.raises(TypeError, match="unhashable 'c'"):
        nx_gsm.count_subgraph_monomorphisms(G, G, node_label="c")


def test_gpu_engine_without_gpu_is_a_clear_error():
    from nx_gsm.engines.gpu import device_reason

    if device_reason() is None:
        pytest.skip("a CUDA device is present: the error path is for machines without one")
    with pytest.raises(RuntimeError, match="not available"):
        nx_gsm.count_subgraph_monomorphisms(nx.path_graph(3), nx.path_graph(2), engine="gmatch")


def test_inputs_not_mutated():
    G = nx.MultiDiGraph([(0, 1, {"w": [1]}), (1, 2), (2, 2)], name="g")
    G.nodes[0]["c"] = {"deep": [1, 2]}
    H = nx.MultiDiGraph([(0, 1, {"w": [1]})])

    def state(*graphs):  # everything but NetworkX's cache slot (which holds the conversion token)
        return pickle.dumps([{k: v for k, v in X.__dict__.items() if k != "__networkx_cache__"}
                             for X in graphs])

    snap = state(G, H)
    kw = dict(node_match=lambda a, b: True, edge_match=lambda a, b: True)
    list(nx_gsm.subgraph_monomorphisms(G, H, **kw))
    nx_gsm.count_subgraph_isomorphisms(G, H, **kw)
    nx_gsm.find_subgraph_monomorphisms(G, H)
    assert state(G, H) == snap
    assert G.__networkx_cache__ == {"nx_gsm": []}  # a token, not a copy of the graph
    assert copy.deepcopy(G).graph == {"name": "g"}


def test_big_count_is_python_int():
    G = nx.complete_graph(12)
    c = nx_gsm.count_subgraph_monomorphisms(G, nx.path_graph(6))
    # an int subclass (partial False), exact: no NumPy integer and its overflow
    assert isinstance(c, int) and not c.partial and c == 12 * 11 * 10 * 9 * 8 * 7


def test_recognised_label_tables_equal_the_helper_itself():
    """compat_table's fast path for NetworkX's categorical helpers (keys grouped in one pass):
    its table equals calling the helper on every (data item, pattern item), with missing
    attributes (the default), NaN (not equal to itself), mixed types, several attributes, a
    multigraph's edge key-dicts, an unhashable value (the generic path) and no data items."""
    import random

    from nx_gsm.plan.labels import compat_table

    nan = float("nan")
    rnd = random.Random(3)
    values = [0, 1, 2, "a", 1.0, True, nan, None, (1, 2)]
    for trial in range(30):
        def item():
            d = {}
            if rnd.random() < 0.9:
                d["c"] = rnd.choice(values)
            if rnd.random() < 0.5:
                d["w"] = rnd.choice(values[:4])
            return d

        data = [item() for _ in range(rnd.randrange(0, 40))]
        pats = [item() for _ in range(rnd.randrange(1, 6))]
        if trial % 10 == 9:
            data.append({"c": [1]})  # unhashable: the generic path, still exact
        helpers = [iso.categorical_node_match("c", 7),
                   iso.categorical_node_match(["c", "w"], [None, 0])]
        for nm in helpers:
            dcls, ok = compat_table(nm, data, pats)
            assert dcls.shape == (len(data),)
            for p, it in enumerate(pats):
                assert [bool(ok[p, dcls[i]]) for i in range(len(data))] == \
                    [bool(nm(d, it)) for d in data], (trial, p)
        em = iso.categorical_multiedge_match("c", None)
        kd = [{j: item() for j in range(rnd.randrange(1, 3))} for _ in data[:10]]
        pk = [{0: item()} for _ in pats]
        dcls, ok = compat_table(em, kd, pk)
        for p, it in enumerate(pk):
            assert [bool(ok[p, dcls[i]]) for i in range(len(kd))] == [bool(em(d, it)) for d in kd]


def test_kept_label_classes_follow_every_edit():
    """compat_table with ``kept`` (the data graph's classes kept between patterns): after each
    in-place edit of the data items -- a new value, an equal value of another type, a NaN
    replaced by another NaN, an item added, an unhashable value -- the table still equals the
    helper itself, and an unchanged graph reuses the kept classes."""
    import random

    from nx_gsm.plan.labels import compat_table

    rnd = random.Random(5)
    nm = iso.categorical_node_match("c", None)
    data = [{"c": rnd.randrange(3)} for _ in range(30)]
    kept = {}
    for step in range(60):
        pats = [{"c": rnd.choice([0, 1, 2, 1.0, float("nan")])} for _ in range(3)]
        before = dict(kept)
        dcls, ok = compat_table(nm, data, pats, kept)
        for p, it in enumerate(pats):
            assert [bool(ok[p, dcls[i]]) for i in range(len(data))] == \
                [bool(nm(d, it)) for d in data], step
        if step % 7 == 6 and before:
            tag = next(iter(before))
            assert kept[tag] is before[tag]  # nothing edited since: the kept classes reused
            continue
        i = rnd.randrange(len(data))
        edit = step % 5
        if edit == 0:
            data[i]["c"] = rnd.randrange(4)
        elif edit == 1:
            data[i]["c"] = float(data[i]["c"]) if isinstance(data[i]["c"], int) else 1
        elif edit == 2:
            data[i]["c"] = float("nan")
        elif edit == 3:
            data.append({"c": rnd.randrange(3)})
        elif step % 10 == 4:
            data[i]["c"] = [1]  # unhashable: the generic path, then back
        else:
            data[i]["c"] = 2


def test_kept_label_classes_stay_out_of_pickles():
    import pickle

    from nx_gsm.interop.networkx import as_gsm

    G = nx.path_graph(50)
    nx.set_node_attributes(G, {v: v % 3 for v in G}, "c")
    H = nx.path_graph(3)
    nx.set_node_attributes(H, 1, "c")
    g = as_gsm(G)
    n = nx_gsm.count_subgraph_monomorphisms(g, H, node_label="c")
    assert "nx_gsm_node_classes" in g.__networkx_cache__  # kept for the next pattern
    g2 = pickle.loads(pickle.dumps(g))
    assert g2.__networkx_cache__ == {} and g.__networkx_cache__
    assert nx_gsm.count_subgraph_monomorphisms(g2, H, node_label="c") == n


def test_node_label_values_kept_only_where_the_graph_owns_its_dicts():
    """from_networkx(node_attrs=...) and the file readers make the node dicts for the graph
    alone, so a label's checked values are kept beside it (and left out of pickles); a
    conversion that references the NetworkX graph's dicts keeps nothing and sees edits."""
    import pickle

    from nx_gsm.interop.networkx import as_gsm

    G = nx.cycle_graph(12)
    nx.set_node_attributes(G, {v: v % 3 for v in G}, "c")
    H = nx.path_graph(3)
    nx.set_node_attributes(H, {0: 0, 1: 1, 2: 2}, "c")
    want = sum(1 for _ in iso.GraphMatcher(
        G, H, node_match=iso.categorical_node_match("c", None)).subgraph_monomorphisms_iter())
    owned = nx_gsm.from_networkx(G, node_attrs=["c"])
    assert owned.owns_node_data
    for _ in range(2):
        assert nx_gsm.count_subgraph_monomorphisms(owned, H, node_label="c") == want
    assert owned.__networkx_cache__["nx_gsm_node_labels"]["c"] == [v % 3 for v in range(12)]
    assert pickle.loads(pickle.dumps(owned)).__networkx_cache__ == {}
    with pytest.raises(nx.NetworkXError, match="no attribute 'w'"):
        nx_gsm.count_subgraph_monomorphisms(owned, H, node_label="w")  # not kept: asked again
    with pytest.raises(nx.NetworkXError, match="no attribute 'w'"):
        nx_gsm.count_subgraph_monomorphisms(owned, H, node_label="w")

    shared = as_gsm(G)
    assert not shared.owns_node_data and not nx_gsm.from_networkx(G).owns_node_data
    assert nx_gsm.count_subgraph_monomorphisms(shared, H, node_label="c") == want
    G.nodes[0]["c"] = 7  # an edit the shared conversion sees
    want2 = sum(1 for _ in iso.GraphMatcher(
        G, H, node_match=iso.categorical_node_match("c", None)).subgraph_monomorphisms_iter())
    assert want2 != want
    assert nx_gsm.count_subgraph_monomorphisms(shared, H, node_label="c") == want2
    assert "nx_gsm_node_labels" not in shared.__networkx_cache__


def test_conversions_that_own_their_dicts_index_labels_up_front():
    """A graph that owns its node dicts has a label's values and classes worked out when it is
    converted (the first query then reuses them); an attribute some node lacks, or with values
    that are not plain, is left to the call, which names the node."""
    from nx_gsm.plan.labels import NODE_CLASSES, NODE_LABELS

    G = nx.cycle_graph(9)
    nx.set_node_attributes(G, {v: "abc"[v % 3] for v in G}, "c")
    nx.set_node_attributes(G, {v: [v] for v in G}, "u")  # unhashable
    nx.set_node_attributes(G, {v: v for v in range(8)}, "part")  # node 8 lacks it
    g = nx_gsm.from_networkx(G, node_attrs=["c", "u", "part"])
    kept = g.__networkx_cache__
    assert kept[NODE_LABELS] == {"c": ["abc"[v % 3] for v in range(9)]}
    (classes,) = kept[NODE_CLASSES].values()
    assert classes[0] is kept[NODE_LABELS]["c"] and classes[2].tolist() == [0, 1, 2] * 3
    H = nx.path_graph(2)
    nx.set_node_attributes(H, {0: "a", 1: "b"}, "c")
    want = sum(1 for _ in iso.GraphMatcher(
        G, H, node_match=iso.categorical_node_match("c", None)).subgraph_monomorphisms_iter())
    assert nx_gsm.count_subgraph_monomorphisms(g, H, node_label="c") == want == 3
    assert len(kept[NODE_CLASSES]) == 1  # the query found the classes it would have made
    with pytest.raises(nx.NetworkXError, match="node 8 has no attribute 'part'"):
        nx_gsm.count_subgraph_monomorphisms(g, H, node_label="part")
    with pytest.raises(TypeError, match="unhashable 'u'"):
        nx_gsm.count_subgraph_monomorphisms(g, H, node_label="u")
    import numpy as np

    # the array conversions index their "label" the same way
    rows = [sorted({(v - 1) % 9, (v + 1) % 9}) for v in range(9)]  # the cycle, both directions
    c = nx_gsm.from_csr(np.arange(0, 19, 2), np.array(rows).ravel(),
                        node_labels=np.array(list("abc" * 3)))
    assert c.__networkx_cache__[NODE_LABELS]["label"] == list("abc" * 3)
    nx.set_node_attributes(H, {0: "a", 1: "b"}, "label")
    assert nx_gsm.count_subgraph_monomorphisms(c, H, node_label="label") == 3
