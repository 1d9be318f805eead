"""IncrementalMatcher: net change per batch against NetworkX VF2 before/after, batch semantics,
order invariance, composition, atomic failures, sync, DataFrame inputs."""

import random

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms import isomorphism as iso

import nx_gsm
from nx_gsm.incremental import BatchError, IncrementalMatcher

CLASSES = [nx.Graph, nx.DiGraph, nx.MultiGraph, nx.MultiDiGraph]
VF2 = {nx.Graph: iso.GraphMatcher, nx.DiGraph: iso.DiGraphMatcher,
       nx.MultiGraph: iso.MultiGraphMatcher, nx.MultiDiGraph: iso.MultiDiGraphMatcher}
# random (graph, pattern, two batches) cases per graph class and search path; each case mixes
# mono/induced and labelled/unlabelled at random (4 x 2 x 250 = 2000 cases, 4000 batches)
CASES_PER_CLASS = 250
# the two search paths: local regions around the changed pairs, or the whole graph
PATHS = {"local": "always", "full": "never"}


def _set(it):
    out = [frozenset(m.items()) for m in it]
    assert len(out) == len(set(out)), "a mapping was reported twice"
    return set(out)


def oracle(G, H, induced, nm=None, em=None):
    gm = VF2[type(G)](G, H, node_match=nm, edge_match=em)
    it = gm.subgraph_isomorphisms_iter() if induced else gm.subgraph_monomorphisms_iter()
    return _set(it)


def snapshot(G, keys=True):
    """What matters about a graph (nodes, attrs, edges with keys and attrs), order-free."""
    nodes = sorted((repr(n), repr(sorted(d.items()))) for n, d in G.nodes(data=True))
    if G.is_multigraph():
        edges = [(u, v, k if keys else None, d) for u, v, k, d in G.edges(keys=True, data=True)]
    else:
        edges = [(u, v, None, d) for u, v, d in G.edges(data=True)]
    if not G.is_directed():
        edges = [(min(u, v), max(u, v), k, d) for u, v, k, d in edges]
    edges = sorted(repr((u, v, k, sorted(d.items()))) for u, v, k, d in edges)
    return type(G), nodes, edges


# -- random cases -------------------------------------------------------------------------------
def random_graph(rng, cls, n, m, labels, loops=0.4):
    G = cls()
    for v in range(n):
        G.add_node(v, **({"l": rng.randrange(2)} if labels else {}))
    for _ in range(m):
        u, v = rng.randrange(n), rng.randrange(n)
        if u == v and rng.random() > loops:
            continue
        if not G.is_multigraph() and G.has_edge(u, v):
            continue
        G.add_edge(u, v, **({"w": rng.randrange(2)} if labels else {}))
    return G


def matchers(rng, cls, labels):
    if not labels:
        return None, None
    if rng.random() < 0.5:
        nm = iso.categorical_node_match("l", None)
        em = (iso.categorical_multiedge_match("w", None) if cls().is_multigraph()
              else iso.categorical_edge_match("w", None))
    else:  # arbitrary callables (the planner's class-based path)
        def nm(a, b):
            return a.get("l") == b.get("l")

        if cls().is_multigraph():
            def em(a, b):
                return sorted(d.get("w", -1) for d in a.values()) >= \
                    sorted(d.get("w", -1) for d in b.values())
        else:
            def em(a, b):
                return a.get("w") == b.get("w")
    if rng.random() < 0.3:
        em = None
    elif rng.random() < 0.3:
        nm = None
    return nm, em


def random_batch(rng, G, labels, fresh):
    """A valid batch (lists of rows) for G; ``fresh`` yields new node ids."""
    multi, directed = G.is_multigraph(), G.is_directed()
    attrs = (lambda: {"w": rng.randrange(2)}) if labels else (lambda: {})

    def canon(u, v):
        return (u, v) if directed else frozenset((u, v))

    nodes, delete_nodes = [], []
    live = list(G)
    if live and rng.random() < 0.15:
        delete_nodes.append(rng.choice(live))
        live = [v for v in live if v not in delete_nodes]
    if rng.random() < 0.3:
        n = next(fresh)
        nodes.append((n, {"l": rng.randrange(2)}) if labels else n)
        live.append(n)
    if not labels and rng.random() < 0.2:
        live.append(next(fresh))  # created implicitly by an inserted edge (or left out)
    ins, dels = [], []
    if multi:
        edges = list(G.edges(keys=True))
        rng.shuffle(edges)
        for u, v, k in edges[:rng.randint(0, 3)]:
            if not directed and rng.random() < 0.5:
                u, v = v, u
            if rng.random() < 0.5:
                dels.append((u, v, k))
                if u not in delete_nodes and v not in delete_nodes and rng.random() < 0.3:
                    ins.append((u, v, k, attrs()))  # replace this parallel edge
            else:
                dels.append((u, v))
        for i in range(rng.randint(0, 3)):
            u, v = rng.choice(live), rng.choice(live)
            r = rng.random()
            if r < 0.3:
                ins.append((u, v, f"x{next(fresh)}", attrs()))
            elif r < 0.6:
                ins.append((u, v))
            else:
                ins.append((u, v, attrs()))
        if rng.random() < 0.1:
            u, v = rng.choice(live), rng.choice(live)
            k = f"c{next(fresh)}"
            ins.append((u, v, k, attrs()))
            dels.append((u, v, k))
    else:
        edges = list(G.edges())
        rng.shuffle(edges)
        used = set()
        for u, v in edges[:rng.randint(0, 3)]:
            if not directed and rng.random() < 0.5:
                u, v = v, u
            dels.append((u, v))
            used.add(canon(u, v))
            if u not in delete_nodes and v not in delete_nodes and rng.random() < 0.3:
                ins.append((u, v, attrs()))  # replace: new attributes
        for _ in range(rng.randint(0, 4)):
            u, v = rng.choice(live), rng.choice(live)
            if u == v and rng.random() < 0.5:
                continue
            if canon(u, v) in used or G.has_edge(u, v):
                continue
            used.add(canon(u, v))
            if rng.random() < 0.15:  # inserted and deleted: cancels out
                dels.append((v, u) if not directed and rng.random() < 0.5 else (u, v))
                ins.append((u, v))
            else:
                ins.append((u, v, attrs()) if rng.random() < 0.7 else (u, v))
    rng.shuffle(ins)
    rng.shuffle(dels)
    return dict(insert=ins, delete=dels, nodes=nodes, delete_nodes=delete_nodes)


def ref_apply(G, insert, delete, nodes, delete_nodes):
    """The documented batch semantics, sequentially with plain NetworkX calls."""
    G2 = G.copy()
    multi, directed = G.is_multigraph(), G.is_directed()

    def canon(u, v):
        return (u, v) if directed else frozenset((u, v))

    if multi:
        keyed_del = {(canon(*r[:2]), r[2]) for r in delete if len(r) >= 3}
        for r in delete:
            if len(r) >= 3 and G.has_edge(*r[:3]):
                G2.remove_edge(*r[:3])
        for r in delete:
            if len(r) == 2:
                G2.remove_edge(*r)  # NetworkX removes the most recently added parallel edge
    else:
        dset = {canon(*r[:2]) for r in delete}
        for r in delete:
            if G.has_edge(*r[:2]):
                G2.remove_edge(*r[:2])
    G2.remove_nodes_from(delete_nodes)
    G2.add_nodes_from(nodes)
    for r in insert:
        G2.add_nodes_from(r[:2])
    if multi:
        for r in insert:
            if len(r) == 4 or (len(r) == 3 and not isinstance(r[2], dict)):
                u, v, k = r[:3]
                if not G.has_edge(u, v, k) and (canon(u, v), k) in keyed_del:
                    continue
                G2.add_edge(u, v, k, **(r[3] if len(r) == 4 else {}))
        for r in insert:
            if len(r) == 2 or (len(r) == 3 and isinstance(r[2], dict)):
                G2.add_edge(r[0], r[1], **(r[2] if len(r) == 3 else {}))
    else:
        for r in insert:
            u, v = r[:2]
            if not G.has_edge(u, v) and canon(u, v) in dset:
                continue
            G2.add_edge(u, v, **(r[2] if len(r) == 3 else {}))
    return G2


def random_case(rng, cls):
    labels = rng.random() < 0.5
    induced = rng.random() < 0.5
    n = rng.randint(3, 7)
    G = random_graph(rng, cls, n, rng.randint(n // 2, 3 * n), labels)
    k = rng.randint(1, 4)
    H = random_graph(rng, cls, k, rng.randint(k // 2, k + 1), labels, loops=0.15)
    nm, em = matchers(rng, cls, labels)
    return G, H, induced, nm, em, labels


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_random_batches_match_vf2_difference(cls, path):
    rng = random.Random(20240611 + CLASSES.index(cls) + 10 * list(PATHS).index(path))
    fresh = iter(range(100, 10**9))
    stats = {"added": 0, "removed": 0, "induced": 0, "labels": 0}
    for case in range(CASES_PER_CLASS):
        G, H, induced, nm, em, labels = random_case(rng, cls)
        G_user = snapshot(G)
        m = IncrementalMatcher(G, H, induced=induced, node_match=nm, edge_match=em)
        m._local = PATHS[path]
        track = case % 10 == 0
        before = oracle(G, H, induced, nm, em)
        if track:
            assert m.count() == len(before)
        cur = G
        for step in range(2):
            batch = random_batch(rng, cur, labels, fresh)
            d = m.apply(**batch)
            nxt = ref_apply(cur, **batch)
            assert snapshot(m.graph) == snapshot(nxt), (case, step, batch)
            after = oracle(nxt, H, induced, nm, em)
            ctx = (case, step, induced, labels, batch)
            assert _set(d.added) == after - before, ctx
            assert _set(d.removed) == before - after, ctx
            assert d.num_added == len(d.added) and d.num_removed == len(d.removed)
            if track:
                assert m.count() == len(after) == d.count, ctx
            stats["added"] += d.num_added
            stats["removed"] += d.num_removed
            cur, before = nxt, after
        stats["induced"] += induced
        stats["labels"] += labels
        assert snapshot(G) == G_user  # sync=False never mutates the user's graph
    # the generator must exercise both directions of change, both modes, both label settings
    assert stats["added"] > 100 and stats["removed"] > 100, stats
    assert 0.3 * CASES_PER_CLASS < stats["induced"] < 0.7 * CASES_PER_CLASS
    assert 0.3 * CASES_PER_CLASS < stats["labels"] < 0.7 * CASES_PER_CLASS


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_order_invariance_and_composition(cls):
    rng = random.Random(777 + CLASSES.index(cls))
    fresh = iter(range(100, 10**9))
    for case in range(40):
        G, H, induced, nm, em, labels = random_case(rng, cls)
        batch = random_batch(rng, G, labels, fresh)
        base = IncrementalMatcher(G, H, induced=induced, node_match=nm, edge_match=em)
        d = base.apply(**batch)
        A, R = _set(d.added), _set(d.removed)
        # shuffled rows give the same net change
        for _ in range(2):
            b2 = {k: rng.sample(v, len(v)) for k, v in batch.items()}
            d2 = IncrementalMatcher(G, H, induced=induced, node_match=nm,
                                    edge_match=em).apply(**b2)
            assert (_set(d2.added), _set(d2.removed)) == (A, R), (case, batch, b2)
        # pure insert/delete batches split in two sequential batches compose to the same net
        # change: net+ = (A1 - R2) | (A2 - R1), net- = (R1 - A2) | (R2 - A1)
        ins = [r for r in batch["insert"] if all(x in G for x in r[:2])]
        if cls().is_multigraph():
            ins = [r for r in ins if len(r) == 2 or isinstance(r[2], dict)]  # keyless inserts
        else:
            dk = {frozenset(r[:2]) if not G.is_directed() else tuple(r[:2])
                  for r in batch["delete"]}
            ins = [r for r in ins if (frozenset(r[:2]) if not G.is_directed()
                                      else tuple(r[:2])) not in dk]
        dels = [r for r in batch["delete"] if G.has_edge(*r[:3 if len(r) > 2 else 2])]
        if cls().is_multigraph():
            dels = [r for r in dels if len(r) == 3]  # keyed deletes
        whole = {"insert": ins, "delete": dels}
        m1 = IncrementalMatcher(G, H, induced=induced, node_match=nm, edge_match=em)
        dw = m1.apply(**whole)
        cut_i, cut_d = rng.randint(0, len(ins)), rng.randint(0, len(dels))
        m2 = IncrementalMatcher(G, H, induced=induced, node_match=nm, edge_match=em)
        d1 = m2.apply(insert=ins[:cut_i], delete=dels[:cut_d])
        d2 = m2.apply(insert=ins[cut_i:], delete=dels[cut_d:])
        A1, R1, A2, R2 = map(_set, (d1.added, d1.removed, d2.added, d2.removed))
        assert _set(dw.added) == (A1 - R2) | (A2 - R1)
        assert _set(dw.removed) == (R1 - A2) | (R2 - A1)
        assert snapshot(m1.graph, keys=False) == snapshot(m2.graph, keys=False)


def validated_batch(rng, cls, fresh):
    """A random case's graph, a CPU-path matcher on it, a random batch and the matcher's
    validated form of that batch."""
    G, H, induced, nm, em, labels = random_case(rng, cls)
    m = IncrementalMatcher(G, H, engine="cpu")
    batch = random_batch(rng, G, labels, fresh)
    b = m._normalise(batch["insert"], batch["delete"], batch["nodes"], batch["delete_nodes"],
                     "source", "target", None, True)
    return G, m, batch, b


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_pair_states_equal_the_graphs_before_and_after(cls):
    """The pair states GAMMA reads off a batch (no G_after built) are G_before's and G_after's
    datum on every touched pair, key order included, and G_before's data are left untouched;
    the changed pairs (``changes``, on simple graphs read off the deletions and insertions)
    are the touched pairs whose datum differs, with both multiplicities."""
    from nx_gsm.incremental.values import datum as _datum, mult as _mult, same as _same

    rng = random.Random(4242 + CLASSES.index(cls))
    fresh = iter(range(100, 10**9))
    seen = changed = 0
    for case in range(60):
        G, m, batch, b = validated_batch(rng, cls, fresh)
        G_before = snapshot(m._G)
        before, after = b.pair_states(m._G, m._pair)
        G1 = ref_apply(G, **batch)
        assert set(after) == set(before) == set(b.touched)
        for p, (u, v) in b.touched.items():
            assert before[p] == _datum(G, u, v), (case, p)
            want = _datum(G1, u, v) if u in G1 and v in G1 else None
            assert after[p] == want, (case, p, after[p], want)
            if want is not None and cls().is_multigraph():
                assert list(after[p]) == list(want), (case, p)
            seen += 1
        ch = b.changes(m._G, m._pair)
        got = {m._pair(u, v): (m0, m1, d1) for u, v, m0, m1, d1 in ch}
        assert len(got) == len(ch)
        want = {p: (_mult(G, u, v), _mult(G1, u, v) if u in G1 and v in G1 else 0, after[p])
                for p, (u, v) in b.touched.items() if not _same(before[p], after[p])}
        assert got == want, case
        changed += bool(got)
        assert snapshot(m._G) == G_before
    assert seen > 100 and changed > 30


@pytest.mark.parametrize("cls", [nx.Graph, nx.DiGraph])
def test_plain_graph_batches_apply_like_networkx_calls(cls):
    """On a plain Graph / DiGraph the batch goes straight into the adjacency dicts: the result
    equals the batch applied with NetworkX calls (self-loops, deletions of inserted edges, node
    insertions and deletions), each edge's data is one dict shared by both of its entries, and
    the same batch on a subclass (NetworkX's own calls) agrees."""
    class Sub(cls):
        pass

    rng = random.Random(77 + (cls is nx.DiGraph))
    fresh = iter(range(100, 10**9))
    for case in range(60):
        G, m, batch, b = validated_batch(rng, cls, fresh)
        plain, sub = G.copy(), Sub(G)
        b.apply_to(plain)
        b.apply_to(sub)
        want = snapshot(ref_apply(G, **batch))
        assert snapshot(plain) == want == snapshot(cls(sub)), case
        pred = plain._pred if plain.is_directed() else plain._adj
        assert all(pred[v][u] is d for u, nb in plain._adj.items() for v, d in nb.items())
        assert sum(map(len, pred.values())) == sum(map(len, plain._adj.values()))  # none stale


def plain_pairs(rng, G):
    """A valid batch of plain pairs on ``G``: (insertions, deletions, every absent pair)."""
    nodes = list(G)
    dele = rng.sample(list(G.edges()), rng.randint(0, G.number_of_edges()))
    free = [(u, v) for u in nodes for v in nodes if not G.has_edge(u, v)]
    ins = rng.sample(free, rng.randint(0, min(len(free), 6)))
    if not G.is_directed():  # one orientation per pair
        ins = list({frozenset(e): e for e in ins}.values())
    return ins, dele, free


@pytest.mark.parametrize("cls", [nx.Graph, nx.DiGraph])
def test_plain_pair_batches_resolve_like_the_general_path(cls, monkeypatch):
    """Batches of plain ``(u, v)`` rows between existing nodes (lists, tuples, int arrays; node
    keys ints or strings; self-loops) take the whole-list fast path, which gives the general
    path's batch; anything else it hands over: new endpoints, a pair in both lists, repeats,
    missing or present edges, other rows -- the general path then names the error."""
    rng = random.Random(5 + (cls is nx.DiGraph))
    taken = 0
    for case in range(80):
        G = random_graph(rng, cls, rng.randint(2, 12), rng.randint(0, 30), labels=False)
        if case % 2:
            G = nx.relabel_nodes(G, {v: f"n{v}" for v in G})
        m = IncrementalMatcher(G, nx.path_graph(2, create_using=cls), engine="cpu")
        edges, nodes = list(G.edges()), list(G)
        ins, dele, free = plain_pairs(rng, G)
        if rng.random() < 0.3:
            ins = tuple(ins)
        fast = m._pairs_batch(ins, dele)
        assert fast is not None and fast.pairs is not None, case
        taken += 1
        with monkeypatch.context() as mp:
            mp.setattr(IncrementalMatcher, "_pairs_batch", lambda self, *a: None)
            slow = m._normalise(ins, dele, None, None, "source", "target", None, True)
        assert fast.del_edges == slow.del_edges and fast.add_edges == slow.add_edges, case
        assert list(fast.touched.items()) == list(slow.touched.items()), case
        assert not (fast.replaced or slow.replaced or fast.new_nodes or fast.gone_nodes)
        assert fast.changes(m._G, m._pair) == slow.changes(m._G, m._pair)
        if not case % 2:  # integer keys: arrays and two-column frames take the same path
            import pandas as pd

            for conv in (lambda r: np.array(r, dtype=np.int64).reshape(-1, 2),
                         lambda r: np.array(r, dtype=np.uint32).reshape(-1, 2),
                         lambda r: pd.DataFrame(r, columns=["s", "t"], dtype=np.int64)):
                b = m._pairs_batch(conv(ins), conv(dele), ("s", "t", None, True))
                assert b is not None and b.pairs == (list(ins), dele), case
                assert b.ends.dtype == np.int64 and b.ends.tolist() == \
                    [list(e) for e in dele + list(ins)]
                assert all(type(x) is int for r in b.pairs[0] + b.pairs[1] for x in r)
            # not plain: attribute columns when inserting, an edge key, a missing value, ids
            # past int64; deletions ignore attribute columns
            dfi = pd.DataFrame(list(ins), columns=["s", "t"], dtype=np.int64)
            dfd = pd.DataFrame(dele, columns=["s", "t"], dtype=np.int64)
            if ins:
                assert m._pairs_batch(dfi.assign(w=1.0), None, ("s", "t", None, True)) is None
                assert m._pairs_batch(dfi.assign(w=1.0), None, ("s", "t", None, None)) \
                    is not None
                assert m._pairs_batch(dfi, None, ("s", "t", "k", True)) is None
                gap = dfi.astype("Int64").reindex(range(len(ins) + 1))
                assert m._pairs_batch(gap, None, ("s", "t", None, True)) is None
            assert m._pairs_batch(None, dfd.assign(w=1.0), ("s", "t", None, True)) is not None
            huge = np.array([[1 << 63, 0]], dtype=np.uint64)
            assert m._pairs_batch(huge, None) is None
        # handed over
        others = [([(nodes[0], nodes[-1], {})] + list(ins), dele)]
        if edges:
            u, v = edges[0]
            others += [([(u, v)], []), ([], dele + [edges[0]] if edges[0] in dele else
                                        [edges[0], edges[0]]), ([(u, v)], [(u, v)])]
        if free:
            others += [([], [free[0]]), ([free[0], free[0]], [])]  # missing; a repeat
            if not G.is_directed() and free[0][0] != free[0][1]:  # a repeat, turned round
                others.append(([free[0], free[0][::-1]], []))
        if edges and not G.is_directed() and edges[0][0] != edges[0][1]:
            others.append(([], [edges[0], edges[0][::-1]]))
        others += [([(nodes[0], "new")], []), ([(nodes[0], [1])], []), ([(nodes[0],)], [])]
        for i, d in others:
            assert m._pairs_batch(i, d) is None, (case, i, d)
    assert taken == 80
    m = IncrementalMatcher(nx.path_graph(4, create_using=cls), nx.path_graph(2, create_using=cls))
    with pytest.raises(BatchError, match=r"delete\[1\]: edge \(0, 1\) is given twice"):
        m.apply(delete=[(0, 1), (0, 1)])
    with pytest.raises(BatchError, match=r"insert\[0\]: edge \(0, 1\) is already in the graph"):
        m.apply(insert=[(0, 1)])
    with pytest.raises(BatchError, match=r"delete\[0\]: edge \(0, 2\) is not in the graph"):
        m.apply(delete=[(0, 2)])
    with pytest.raises(BatchError, match="not hashable"):
        m.apply(insert=[(0, [2])])
    d = m.apply(insert=[(0, 9)])  # a new node: the general path
    assert d.num_added == (1 if cls is nx.DiGraph else 2) and 9 in m.graph


@pytest.mark.parametrize("cls", [nx.Graph, nx.DiGraph])
def test_frame_and_array_batches_take_the_plain_path(cls, monkeypatch):
    """Batches given as two-column integer DataFrames or (m, 2) arrays give what the same rows
    as tuples give -- results, counts, errors (named by the general path) and graphs -- and
    valid ones take the whole-list path (no per-row general normalisation)."""
    import pandas as pd

    rng = random.Random(41 + (cls is nx.DiGraph))
    general = []
    real = IncrementalMatcher._normalise

    def spy(self, *a, **k):
        b = real(self, *a, **k)
        general.append(type(b).__name__ == "_Batch")
        return b

    monkeypatch.setattr(IncrementalMatcher, "_normalise", spy)
    H = nx.path_graph(3, create_using=cls)
    for conv in (lambda r: pd.DataFrame(r, columns=["source", "target"], dtype=np.int64),
                 lambda r: np.array(r, dtype=np.int64).reshape(-1, 2)):
        G = random_graph(rng, cls, 14, 30, labels=False)
        ms = [IncrementalMatcher(G, H, engine="cpu") for _ in range(2)]
        for step in range(6):
            ins, dele, free = plain_pairs(rng, ms[0].graph)
            if step == 3 and free:
                dele = dele + [free[0]]  # a missing edge: an error on both
            out = []
            for m, rows in zip(ms, ((ins, dele), (conv(ins), conv(dele)))):
                general.clear()
                try:
                    r = m.apply(insert=rows[0], delete=rows[1])
                except BatchError as exc:
                    out.append(str(exc))
                    continue
                assert general == [False], general  # the plain path, at once
                out.append((sorted(map(sorted, (d.items() for d in r.added))),
                            sorted(map(sorted, (d.items() for d in r.removed))), m.count()))
            assert out[0] == out[1], (step, out)
            assert snapshot(ms[0].graph) == snapshot(ms[1].graph)


@pytest.mark.parametrize("cls", [nx.Graph, nx.DiGraph])
def test_plain_pair_batches_apply_and_undo(cls):
    """What GAMMA's matcher does while the device searches: a batch of plain pairs applied to
    the plain graph equals NetworkX's calls, and taking it back restores every edge with its
    very data dict (self-loops included)."""
    rng = random.Random(11 + (cls is nx.DiGraph))
    for case in range(60):
        G = random_graph(rng, cls, rng.randint(2, 12), rng.randint(0, 30), labels=True)
        m = IncrementalMatcher(G, nx.path_graph(2, create_using=cls), engine="cpu")
        ins, dele, _ = plain_pairs(rng, G)
        b = m._pairs_batch(ins, dele)
        assert b is not None, case
        H = G.copy()
        data = {e: H.edges[e] for e in H.edges}
        gone = b.apply_undoable(H)
        want = G.copy()
        want.remove_edges_from(dele)
        want.add_edges_from(ins)
        assert snapshot(H) == snapshot(want), case
        b.undo(H, gone)
        assert snapshot(H) == snapshot(G), case
        assert all(H.edges[e] is d for e, d in data.items()), case
        pred = H._pred if H.is_directed() else H._adj
        assert all(pred[v][u] is d for u, nb in H._adj.items() for v, d in nb.items())


def test_apply_restores_the_garbage_collector():
    """apply holds Python's cyclic GC off during a batch and gives back the state it found,
    after a good batch, a rejected one, and when the caller had it off already."""
    import gc

    m = IncrementalMatcher(nx.path_graph(4), nx.path_graph(3))
    assert gc.isenabled()
    m.apply(insert=[(0, 3)])
    assert gc.isenabled()
    with pytest.raises(BatchError):
        m.apply(delete=[(0, 2)])
    assert gc.isenabled()
    gc.disable()
    try:
        m.apply(delete=[(0, 3)])
        assert not gc.isenabled()
    finally:
        gc.enable()


# -- known answers ------------------------------------------------------------------------------
def test_triangle_inserted_at_once_gives_six_mappings_once():
    m = IncrementalMatcher(nx.empty_graph(3), nx.complete_graph(3))
    d = m.apply(insert=[(0, 1), (1, 2), (2, 0)])
    assert d.num_added == 6 and d.num_removed == 0 and len(_set(d.added)) == 6
    assert m.count() == 6
    d = m.apply(delete=[(0, 1), (1, 2), (0, 2)])
    assert d.num_removed == 6 and m.count() == 0


def test_added_and_removed_are_read_only_sequences_of_dicts():
    """``added``/``removed`` are MatchLists: len without building dicts, each read a fresh dict
    (mutating it changes nothing kept), indexing and slicing, equality with lists, repr."""
    import pickle

    from nx_gsm.incremental import MatchList

    G = nx.path_graph(5)
    H = nx.path_graph(3)
    m = IncrementalMatcher(G, H)
    d = m.apply(insert=[(4, 0)], delete=[(1, 2)])
    ref_a, ref_r = _set(d.added), _set(d.removed)
    for ml, ref in ((d.added, ref_a), (d.removed, ref_r)):
        assert isinstance(ml, MatchList) and len(ml) == len(ref) > 0
        got = list(ml)
        assert all(type(x) is dict for x in got) and _set(got) == ref
        assert ml == got and ml == tuple(got) and got == ml and ml != got[::-1] + [{}]
        assert ml[0] == got[0] and ml[-1] == got[-1] and ml[1:] == got[1:]
        ml[0].clear()  # a fresh dict each time: the result does not change
        assert ml[0] == got[0] and pickle.loads(pickle.dumps(ml)) == got
        with pytest.raises(TypeError):
            hash(ml)
    assert repr(d.added).startswith("MatchList([{")
    assert repr(MatchList([(0,)] * 9, ("a",))) == "<MatchList of 9 mappings>"
    e = m.apply()
    assert list(e.added) == [] and e.removed == [] and e.num_added == 0


def test_induced_insertion_destroys_and_deletion_creates():
    P3 = nx.path_graph(3)
    m = IncrementalMatcher(nx.path_graph(3), P3, induced=True)
    assert m.count() == 2
    d = m.apply(insert=[(0, 2)])  # the path becomes a triangle: no induced P3 left
    assert (d.num_added, d.num_removed, m.count()) == (0, 2, 0)
    d = m.apply(delete=[(0, 1)])  # 1-2-0 is an induced path again
    assert (d.num_added, d.num_removed, m.count()) == (2, 0, 2)
    assert _set(d.added) == {frozenset({(1, 0), (2, 1), (0, 2)}),
                             frozenset({(1, 2), (2, 1), (0, 0)})}


def test_edge_attribute_replacement():
    G = nx.Graph([(0, 1, {"w": 1}), (1, 2, {"w": 1})])
    H = nx.Graph([("a", "b", {"w": 2})])
    em = iso.categorical_edge_match("w", None)
    m = IncrementalMatcher(G, H, edge_match=em)
    assert m.count() == 0
    d = m.apply(delete=[(1, 0)], insert=[(0, 1, {"w": 2})])
    assert _set(d.added) == {frozenset({(0, "a"), (1, "b")}), frozenset({(0, "b"), (1, "a")})}
    assert m.graph[0][1] == {"w": 2} and m.count() == 2
    # the same attributes again: a net-zero replacement
    d = m.apply(delete=[(0, 1)], insert=[(0, 1, {"w": 2})])
    assert d.num_added == d.num_removed == 0 and m.count() == 2


def test_multigraph_parallel_edges_and_keys():
    G = nx.MultiGraph([(0, 1), (1, 2)])
    H = nx.MultiGraph([("a", "b"), ("a", "b")])
    m = IncrementalMatcher(G, H)
    assert m.count() == 0
    d = m.apply(insert=[(0, 1)])  # a second parallel edge gets key 1
    assert d.num_added == 2 and sorted(m.graph[0][1]) == [0, 1]
    d = m.apply(delete=[(1, 0)])  # keyless: removes the most recently added (key 1)
    assert d.num_removed == 2 and list(m.graph[0][1]) == [0]
    d = m.apply(insert=[(0, 1, "k", {"w": 1}), (0, 1, "j")], delete=[(0, 1, "j")])
    assert d.num_added == 2 and set(m.graph[0][1]) == {0, "k"}
    with pytest.raises(BatchError, match=r"only 0 parallel edges are left"):
        m.apply(delete=[(0, 1, 0), (0, 1, "k"), (0, 1)])


def test_self_loops():
    for cls in CLASSES:
        H = cls([("a", "a"), ("a", "b")])
        G = cls([(0, 1), (1, 2)])
        for induced in (False, True):
            m = IncrementalMatcher(G, H, induced=induced)
            d = m.apply(insert=[(1, 1)])
            exp = oracle(m.graph, H, induced) - oracle(G, H, induced)
            assert _set(d.added) == exp and exp
            d = m.apply(delete=[(1, 1)])
            assert _set(d.removed) == exp and d.num_added == 0


def test_isolated_pattern_nodes_and_node_updates():
    H = nx.Graph([("a", "b")])
    H.add_node("z")  # maps anywhere
    for induced in (False, True):
        G = nx.path_graph(3)
        m = IncrementalMatcher(G, H, induced=induced)
        c = m.count()
        assert c == (4 if not induced else 0)
        d = m.apply(nodes=[7])  # z -> 7 with either orientation of any edge
        assert d.num_added == 4 and d.num_removed == 0 and m.count() == c + 4
        G1 = m.graph.copy()
        d = m.apply(delete_nodes=[7, 0])
        M1, M2 = oracle(G1, H, induced), oracle(m.graph.copy(), H, induced)
        assert _set(d.removed) == M1 - M2 and _set(d.added) == M2 - M1 and d.num_removed
        assert m.count() == len(M2)
    # a single-node pattern with labels: node insertions and deletions
    H = nx.Graph()
    H.add_node("x", l=1)
    nm = iso.categorical_node_match("l", None)
    m = IncrementalMatcher(nx.Graph(), H, node_match=nm)
    d = m.apply(nodes=[(1, {"l": 1}), (2, {"l": 0})])
    assert _set(d.added) == {frozenset({(1, "x")})}
    d = m.apply(delete_nodes=[1])
    assert _set(d.removed) == {frozenset({(1, "x")})} and m.count() == 0


def test_empty_pattern_and_empty_batch():
    m = IncrementalMatcher(nx.path_graph(3), nx.Graph())
    assert m.count() == 1 and list(m.matches()) == [{}]
    d = m.apply(insert=[(0, 2)])
    assert d.num_added == d.num_removed == 0 and m.count() == 1
    m = IncrementalMatcher(nx.path_graph(3), nx.path_graph(2))
    d = m.apply()
    assert (d.added, d.removed, d.count) == ([], [], None)
    assert m.count() == 4 and m.apply(insert=[]).count == 4


def test_docstring_example_and_matches():
    m = nx_gsm.IncrementalMatcher(nx.path_graph(3), nx.complete_graph(3))
    assert m.count() == 0
    d = m.apply(insert=[(0, 2)])
    assert (d.num_added, d.num_removed, m.count()) == (6, 0, 6)
    assert _set(m.matches()) == oracle(m.graph, nx.complete_graph(3), False)
    d = m.apply(delete=[(0, 1)], insert=[(0, 3), (1, 3)])
    assert (d.num_added, d.num_removed, m.count()) == (0, 6, 0)
    assert repr(d) == "<BatchResult +0 -6>"


# -- validation and atomicity -------------------------------------------------------------------
def _state(m):
    return snapshot(m.graph), m._count


BAD = {
    nx.Graph: [
        (dict(delete=[(0, 5)]), r"delete\[0\].*not in the graph"),
        (dict(delete=[(0, 2)]), r"delete\[0\]: edge \(0, 2\) is not in the graph"),
        (dict(insert=[(0, 1)]), r"insert\[0\].*already in the graph"),
        (dict(insert=[(0, 2), (2, 0)]), r"insert\[1\].*given twice"),
        (dict(delete=[(0, 1), (1, 0)]), r"delete\[1\].*given twice"),
        (dict(insert=[(0,)]), r"insert\[0\]: an edge tuple has 2 to 3 items"),
        (dict(insert=[(0, 2, 5)]), r"insert\[0\]: edge attributes must be a dict"),
        (dict(insert=["ab"]), r"insert\[0\]: expected an edge tuple"),
        (dict(insert=[(0, None)]), r"insert\[0\]: None cannot be a node"),
        (dict(insert=[(0, [1])]), r"insert\[0\]: node \[1\] is not hashable"),
        (dict(insert=[(0, 2, "k", {})]), r"insert\[0\]: an edge tuple has 2 to 3 items"),
        (dict(insert=5), r"insert: expected a list"),
        (dict(nodes=[0]), r"nodes\[0\]: node 0 already exists"),
        (dict(nodes=[9, 9]), r"nodes\[1\]: node 9 is given twice"),
        (dict(delete_nodes=[9]), r"delete_nodes\[0\]: node 9 is not in the graph"),
        (dict(delete_nodes=[2], insert=[(2, 0)]), r"insert\[0\]: node 2 is deleted"),
        # a valid part before the bad row must not be applied either
        (dict(insert=[(0, 2), (3, 4)], delete=[(1, 2), (9, 9)]), r"delete\[1\]"),
    ],
    nx.MultiGraph: [
        (dict(delete=[(0, 1, 5)]), r"delete\[0\]: edge \(0, 1, 5\) is not in the graph"),
        (dict(insert=[(0, 1, 0)]), r"insert\[0\]: edge \(0, 1, 0\) is already in the graph"),
        (dict(insert=[(0, 2, "a"), (2, 0, "a")]), r"insert\[1\].*given twice"),
        (dict(delete=[(0, 1), (0, 1)]), r"deleted 2 times without keys"),
        (dict(delete=[(0, 2)]), r"delete\[0\].*is not in the graph"),
        (dict(insert=[(0, 2, [1], {})]), r"edge key \[1\] is not hashable"),
        (dict(insert=[(0, 2, "k", 5)]), r"edge attributes must be a dict"),
    ],
}


@pytest.mark.parametrize("cls", [nx.Graph, nx.MultiGraph], ids=lambda c: c.__name__)
def test_bad_batches_raise_and_leave_state_unchanged(cls):
    G = cls([(0, 1), (1, 2)])
    user = snapshot(G)
    for sync in (False, True):
        m = IncrementalMatcher(G, nx.path_graph(3, create_using=cls), sync=sync)
        m.count()
        for kwargs, msg in BAD[cls]:
            st = _state(m)
            with pytest.raises(BatchError, match=msg) as ei:
                m.apply(**kwargs)
            assert isinstance(ei.value, ValueError) and isinstance(ei.value, nx.NetworkXError)
            assert _state(m) == st, kwargs
            assert snapshot(G) == user
        # still usable and exact afterwards
        d = m.apply(insert=[(2, 3)])
        assert m.count() == len(oracle(m.graph, nx.path_graph(3, create_using=cls), False))
        assert d.num_added > 0
        if sync:
            assert snapshot(G) == snapshot(m.graph)
            G.remove_edge(2, 3)
            G.remove_node(3)
        assert snapshot(G) == user


def test_unknown_node_needs_attributes_with_node_match():
    nm = iso.categorical_node_match("l", None)
    G = nx.Graph()
    G.add_nodes_from([(0, {"l": 1}), (1, {"l": 1})])
    H = nx.Graph([("a", "b")])
    H.nodes["a"]["l"] = H.nodes["b"]["l"] = 1
    m = IncrementalMatcher(G, H, node_match=nm)
    st = _state(m)
    with pytest.raises(BatchError, match=r"insert\[1\]: node 5 is not in the graph and "
                                         r"node_match needs its attributes"):
        m.apply(insert=[(0, 1), (0, 5)])
    assert _state(m) == st
    d = m.apply(insert=[(0, 1), (0, 5)], nodes=[(5, {"l": 1})])
    assert d.num_added == 4 and m.graph.nodes[5] == {"l": 1}
    # without node_match unknown endpoints are created with no attributes
    m = IncrementalMatcher(nx.Graph([(0, 1)]), nx.path_graph(2))
    d = m.apply(insert=[(1, "new")])
    assert d.num_added == 2 and m.graph.nodes["new"] == {}


def test_callable_failure_mid_batch_leaves_state_unchanged():
    calls = {"fail": False}

    def nm(a, b):
        if calls["fail"] and a.get("l") == "boom":
            raise RuntimeError("boom")
        return a.get("l") == b.get("l")

    G = nx.Graph()
    G.add_nodes_from([(0, {"l": 1}), (1, {"l": 1})])
    H = nx.Graph([("a", "b")])
    H.nodes["a"]["l"] = H.nodes["b"]["l"] = 1
    m = IncrementalMatcher(G, H, node_match=nm)
    m.count()
    st = _state(m)
    calls["fail"] = True
    with pytest.raises(RuntimeError, match="boom"):
        m.apply(insert=[(0, 1), (1, 2)], nodes=[(2, {"l": "boom"})])
    assert _state(m) == st
    calls["fail"] = False
    d = m.apply(insert=[(0, 1)])
    assert d.num_added == 2 and m.count() == 2


def test_sync_mutates_user_graph_and_default_does_not():
    for cls in CLASSES:
        G = cls([(0, 1), (1, 2)])
        H = nx.path_graph(2, create_using=cls)
        m = IncrementalMatcher(G, H, sync=True)
        m.apply(insert=[(2, 3, {"w": 1})], delete=[(0, 1)], nodes=[(9, {"l": 2})])
        assert snapshot(G) == snapshot(m.graph)
        assert G.nodes[9] == {"l": 2} and 3 in G
        m.apply(delete_nodes=[9], insert=[(3, 0), (3, 0)] if G.is_multigraph() else [(3, 0)])
        assert snapshot(G) == snapshot(m.graph)
        # the attribute dicts are the user graph's own, not shared with the matcher's copy
        assert G.nodes[3] is not m.graph.nodes[3]
        G2 = cls([(0, 1), (1, 2)])
        before = snapshot(G2)
        m2 = IncrementalMatcher(G2, H)
        m2.apply(insert=[(2, 3)], delete=[(0, 1)])
        assert snapshot(G2) == before and snapshot(m2.graph) != before
        with pytest.raises(nx.NetworkXError, match="frozen"):
            IncrementalMatcher(nx.freeze(cls()), H, sync=True)
        with pytest.raises(nx.NetworkXError, match="(?i)frozen"):
            m.graph.add_edge(5, 6)  # the graph view is read-only


# -- inputs -------------------------------------------------------------------------------------
pd = pytest.importorskip("pandas")


class FakeCudf:
    """Stands in for a cudf.DataFrame: only ``to_pandas()`` is used."""

    def __init__(self, df):
        self._df = df

    def to_pandas(self):
        return self._df


def frame_wrappers():
    """A pandas frame as itself, as a cudf stand-in and (where installed) as an Arrow table."""
    wrappers = [lambda x: x, FakeCudf]
    try:
        import pyarrow as pa

        wrappers.append(lambda x: pa.Table.from_pandas(x, preserve_index=False))
    except ImportError:
        pass
    return wrappers


def test_dataframes_pandas_and_cudf():
    G = nx.DiGraph()
    G.add_edge(0, 1, w=1)
    H = nx.DiGraph([("a", "b", {"w": 2})])
    em = iso.categorical_edge_match("w", None)
    ins = pd.DataFrame({"source": [1, 2], "target": [2, 0], "w": [2, 1]})
    dels = pd.DataFrame({"source": [0], "target": [1]})
    for wrap in frame_wrappers():
        m = IncrementalMatcher(G, H, edge_match=em)
        d = m.apply(insert=wrap(ins), delete=wrap(dels))
        assert _set(d.added) == {frozenset({(1, "a"), (2, "b")})}
        assert m.graph[1][2] == {"w": 2} and not m.graph.has_edge(0, 1)
    # NetworkX's naming: source=, target=, edge_attr=
    df = pd.DataFrame({"from": [1], "to": [0], "w": [2], "junk": ["x"]})
    m = IncrementalMatcher(G, H, edge_match=em)
    m.apply(insert=df, source="from", target="to", edge_attr="w")
    assert m.graph[1][0] == {"w": 2}
    m.apply(insert=df.assign(**{"from": [2]}), source="from", target="to", edge_attr=None)
    assert m.graph[2][0] == {}
    with pytest.raises(BatchError, match=r"no source column 'source'"):
        m.apply(insert=df)
    with pytest.raises(BatchError, match=r"no edge attribute column 'nope'"):
        m.apply(insert=df, source="from", target="to", edge_attr=["nope"])


def test_dataframe_edge_keys_multigraph():
    G = nx.MultiGraph([(0, 1, "a", {"w": 1}), (0, 1, "b", {"w": 2})])
    H = nx.MultiGraph([("x", "y", {"w": 2})])
    em = iso.categorical_multiedge_match("w", None)
    m = IncrementalMatcher(G, H, edge_match=em)
    assert m.count() == 0
    dels = pd.DataFrame({"s": [1], "t": [0], "k": ["a"]})
    d = m.apply(delete=FakeCudf(dels), source="s", target="t", edge_key="k")
    assert d.num_added == 2 and list(m.graph[0][1]) == ["b"]
    ins = pd.DataFrame({"s": [2], "t": [0], "k": ["z"], "w": [2]})
    d = m.apply(insert=ins, source="s", target="t", edge_key="k")
    assert d.num_added == 2 and m.graph[0][2] == {"z": {"w": 2}}


def test_pattern_and_graph_inputs_are_copied():
    G, H = nx.path_graph(3), nx.path_graph(2)
    m = IncrementalMatcher(G, H)
    H.add_edge(1, 2)
    G.add_edge(0, 2)
    assert m.count() == 4 and m.pattern.number_of_edges() == 1
    with pytest.raises(TypeError, match="G must be a NetworkX graph"):
        IncrementalMatcher(nx_gsm.from_networkx(G), H)
    with pytest.raises(nx.NetworkXError, match="same directedness"):
        IncrementalMatcher(G, nx.DiGraph())
    with pytest.raises(TypeError, match="node_match must be callable"):
        IncrementalMatcher(G, H, node_match=1)
    with pytest.raises(ValueError, match="unknown engine"):
        IncrementalMatcher(G, H, engine="nope")


# -- the local path ---------------------------------------------------------------------------
def test_local_regions_follow_new_connections(monkeypatch):
    """A match that uses two inserted edges whose regions only meet in G_after."""
    import nx_gsm.incremental.matcher as inc

    G = nx.path_graph(10)
    G.add_node(20)
    H = nx.path_graph(4)
    for local in ("always", "auto"):
        m = IncrementalMatcher(G, H, engine="cpu")  # the CPU path's regions (auto: GAMMA on a GPU)
        m._local = local
        sizes = []
        real = inc.from_networkx
        monkeypatch.setattr(inc, "from_networkx",
                            lambda X, **kw: sizes.append(len(X)) or real(X, **kw))
        d = m.apply(insert=[(0, 9), (9, 20)])
        monkeypatch.undo()
        exp = oracle(m.graph, H, False) - oracle(G, H, False)
        assert _set(d.added) == exp and frozenset({(1, 0), (0, 1), (9, 2), (20, 3)}) in exp
        assert d.num_removed == 0
        assert max(sizes) < len(G)  # only regions were converted, never the whole graph


def test_auto_path_on_a_larger_graph():
    rng = random.Random(5)
    G = nx.gnm_random_graph(300, 1500, seed=3)
    for v in G:
        G.nodes[v]["l"] = rng.randrange(2)
    H = nx.Graph([(0, 1), (1, 2), (2, 0), (2, 3)])
    for v in H:
        H.nodes[v]["l"] = v % 2
    nm = iso.categorical_node_match("l", None)
    for induced in (False, True):
        m = IncrementalMatcher(G, H, induced=induced, node_match=nm)
        assert m.count() == len(oracle(G, H, induced, nm))
        cur = G
        for step in range(3):
            dels = rng.sample(sorted(cur.edges()), 25)
            ins = set()
            while len(ins) < 25:
                u, v = rng.sample(sorted(cur), 2)
                if not cur.has_edge(u, v) and (v, u) not in ins:
                    ins.add((u, v))
            new = 1000 + step
            ins |= {(new, u) for u in rng.sample(sorted(cur), 4)}
            batch = dict(insert=sorted(ins), delete=dels, nodes=[(new, {"l": 0})],
                         delete_nodes=[rng.choice(sorted({u for e in ins for u in e} - {new}))])
            batch["insert"] = [e for e in batch["insert"] if batch["delete_nodes"][0] not in e]
            d = m.apply(**batch)
            assert m._g is None  # the local path: G was never copied or converted as a whole
            nxt = ref_apply(cur, **batch)
            b, a = oracle(cur, H, induced, nm), oracle(nxt, H, induced, nm)
            assert _set(d.added) == a - b and _set(d.removed) == b - a
            assert d.num_added and d.num_removed
            assert m.count() == len(a)
            cur = nxt


def test_other_row_containers():
    np = pytest.importorskip("numpy")
    m = IncrementalMatcher(nx.path_graph(3), nx.path_graph(2))
    d = m.apply(insert=np.array([[0, 2], [2, 3]]), delete=iter([(0, 1)]),
                delete_nodes=pd.Series([], dtype=object))
    assert m.graph.has_edge(2, 3) and not m.graph.has_edge(0, 1)
    assert all(type(v) is int for v in m.graph)  # NumPy scalars became Python ints
    assert d.num_added == 4 and d.num_removed == 2
    d = m.apply(delete_nodes=FakeCudf(pd.Series([3])))  # a cudf Series goes through to_pandas
    assert 3 not in m.graph and d.num_removed == 2


def test_node_frames():
    """``nodes=`` takes a node DataFrame (``node_key`` column, ``node_attr`` columns) and
    ``delete_nodes=`` a Series or a frame's node column; pandas, cudf-like and Arrow inputs."""
    nm = iso.categorical_node_match("l", None)
    H = nx.Graph([("a", "b")])
    H.nodes["a"]["l"], H.nodes["b"]["l"] = 1, 2
    G = nx.Graph()
    G.add_node(0, l=1)
    for wrap in frame_wrappers():
        m = IncrementalMatcher(G, H, node_match=nm)
        nodes = pd.DataFrame({"node": [5, 6], "l": [2, 1], "junk": ["x", "y"]})
        d = m.apply(insert=[(0, 5), (5, 6)], nodes=wrap(nodes), node_attr="l")
        assert _set(d.added) == {frozenset({(0, "a"), (5, "b")}), frozenset({(6, "a"), (5, "b")})}
        assert m.graph.nodes[5] == {"l": 2} and type(next(iter(m.graph.nodes[6].values()))) \
            is int  # Python scalars, as from an edge frame
        d = m.apply(delete_nodes=wrap(pd.DataFrame({"node": [6], "l": [0]})))
        assert _set(d.removed) == {frozenset({(6, "a"), (5, "b")})} and 6 not in m.graph
    # every other column by default; node_key= names the column; None: no attributes
    m = IncrementalMatcher(G, nx.Graph([("a", "b")]))
    m.apply(nodes=pd.DataFrame({"id": [7], "l": [3], "w": [1.5]}), node_key="id")
    assert m.graph.nodes[7] == {"l": 3, "w": 1.5}
    m.apply(nodes=pd.DataFrame({"id": [8], "l": [3]}), node_key="id", node_attr=None)
    assert m.graph.nodes[8] == {}
    m.apply(delete_nodes=pd.Index([7, 8]))
    assert 7 not in m.graph and 8 not in m.graph
    before = nx.to_dict_of_dicts(m.graph), dict(m.graph.nodes(data=True))
    for kw, msg in ((dict(nodes=pd.DataFrame({"n": [9]})), r"nodes: the DataFrame has no node "
                     r"column 'node' \(columns: \['n'\]\); name it with node_key="),
                    (dict(nodes=pd.DataFrame({"node": [9]}), node_attr=["l"]),
                     r"nodes: the DataFrame has no node attribute column 'l'"),
                    (dict(nodes=pd.DataFrame({"node": [0]})), r"nodes\[0\]: node 0 already exists"),
                    (dict(delete_nodes=pd.DataFrame({"node": [9]})),
                     r"delete_nodes\[0\]: node 9 is not in the graph")):
        with pytest.raises(BatchError, match=msg):
            m.apply(**kw)
    assert (nx.to_dict_of_dicts(m.graph), dict(m.graph.nodes(data=True))) == before


def test_incremental_benchmark_variants_side_by_side(monkeypatch):
    """benchmarks.incremental on a small labelled graph: each batch applied to a side-by-side
    variant (the CPU path here; GAMMA's on the card) gives the same delta sizes, and the
    recount follows the graph."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from benchmarks import incremental as bench

    def small(root=None, labels=5, seed=0):
        G = nx.gnp_random_graph(60, 0.2, seed=3)
        nx.set_node_attributes(G, {v: v % 2 for v in G}, "l")
        return G

    monkeypatch.setattr(bench, "load_github", small)
    rows = bench.run("cpu", ["dense"], [0.02], 2, 0, 60, 60, variants=["cpu"], log=lambda s: None)
    assert len(rows) == 2
    again = bench.run("cpu", ["dense"], [0.02], 3, 0, 60, 60, log=lambda s: None,
                      recount_first=True, warm=0)
    assert [r.get("recount_reused", False) for r in again] == [False, True, True]
    assert again[1]["recount_s"] == again[0]["recount_s"] and again[0]["recount"] > 0
    # a stream run: applies back to back, then each after-graph recounted in a second pass:
    # the same counts as recounting between the applies
    streamed = bench.run("cpu", ["dense"], [0.02], 3, 0, 60, 60, log=lambda s: None,
                         stream=True)
    between = bench.run("cpu", ["dense"], [0.02], 3, 0, 60, 60, log=lambda s: None)
    assert [r["recount"] for r in streamed] == [r["recount"] for r in between]
    assert [(r["added"], r["removed"]) for r in streamed] == \
        [(r["added"], r["removed"]) for r in between]
    assert all(r["recount_after_stream"] and r["speedup"] > 0 for r in streamed)
    assert len({r["recount"] for r in streamed}) > 1  # the graphs differ batch to batch
    for r in rows:
        v = r["variants"]["cpu"]
        assert v["exact"] and (v["added"], v["removed"]) == (r["added"], r["removed"])
        assert r["added"] + r["removed"] > 0 and r["recount_complete"]
    # a quick recount runs twice (the faster time counts), a slower one once
    import nx_gsm.api

    calls, prepare = [], nx_gsm.api.prepare
    monkeypatch.setattr(nx_gsm.api, "prepare", lambda *a, **k: calls.append(1) or prepare(*a, **k))
    G = small()
    H = bench.cut_pattern(G, "dense")
    engine = bench._static_engine("cpu")
    once = bench.recount(G, H, engine, 60)
    twice = bench.recount(G, H, engine, 60, repeat_under=60)
    assert len(calls) == 3 and once[1:] == twice[1:] and once[1] > 0
    bench.recount(G, H, engine, 60, repeat_under=0)
    assert len(calls) == 4
    # each timing converts the graph (a plain graph's kept conversion is not reused)
    import nx_gsm.interop.networkx as conv

    made, from_nx = [], conv.from_networkx
    monkeypatch.setattr(conv, "from_networkx", lambda *a, **k: made.append(1) or from_nx(*a, **k))
    bench.recount(G, H, engine, 60, repeat_under=60)
    assert len(made) == 2


def test_incremental_benchmark_tree_is_the_one_with_fewest_homomorphisms():
    """benchmarks.incremental's tree pattern: ``tree_homs`` equals a brute-force count of
    labelled homomorphisms (so bounds the monomorphisms), and ``cut_pattern`` returns a tree
    with the fewest of them among its tries."""
    import itertools
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from benchmarks import incremental as bench

    G = nx.gnp_random_graph(14, 0.3, seed=5)
    nx.set_node_attributes(G, {v: v % 3 for v in G}, "l")
    homs = bench.tree_homs(G)
    for seed in range(4):
        T = bench.cut_pattern(G, "tree", k=4, seed=seed, tree_tries=1)
        assert nx.is_tree(T) and len(T) == 4
        brute = sum(all(G.nodes[f[u]]["l"] == T.nodes[u]["l"] for u in T) and
                    all(G.has_edge(f[a], f[b]) for a, b in T.edges())
                    for f in (dict(zip(T, img)) for img in itertools.product(G, repeat=4)))
        mono = sum(1 for _ in iso.GraphMatcher(
            G, T, node_match=iso.categorical_node_match("l", None)).subgraph_monomorphisms_iter())
        assert homs(T) == brute >= mono
    best = bench.cut_pattern(G, "tree", k=4, seed=9, tree_tries=6)
    rng = np.random.default_rng(9)
    tries = [bench.cut_pattern(G, "tree", k=4, seed=int(rng.integers(1 << 31)), tree_tries=1)
             for _ in range(6)]
    assert homs(best) == min(map(homs, tries))


@pytest.mark.parametrize("cls", [nx.Graph, nx.DiGraph])
def test_edge_index_checks_and_follows_plain_id_rows(cls):
    """The edge index that checks GAMMA's plain id rows: a row set is accepted exactly when the
    graph's own test accepts it (deletions present, insertions absent, endpoints nodes; self-loops
    and ids with gaps included), and its keys after a batch are those of the edited graph."""
    from nx_gsm.incremental.batch import EdgeIndex as _EdgeIndex
    from nx_gsm.incremental.inputs import row_ends as _row_ends

    rng = random.Random(21 + (cls is nx.DiGraph))
    for case in range(80):
        G = random_graph(rng, cls, rng.randint(1, 12), rng.randint(0, 30), labels=False)
        if case % 3 == 0 and len(G) > 2:
            G.remove_node(rng.choice(list(G)))  # an id that is no longer a node
        idx = _EdgeIndex(G)
        ins, dele, free = plain_pairs(rng, G)
        ends = _row_ends(ins, dele)
        assert idx.check(ends, len(dele)), case
        H = G.copy()
        H.remove_edges_from(dele)
        H.add_edges_from(ins)
        assert idx.updated(ends, len(dele)).tolist() == _EdgeIndex(H).keys.tolist(), case
        # one bad row makes the set fail: a missing edge deleted, a present one inserted, a
        # row at an id that is not a node, a row twice (either orientation when undirected)
        bad = []
        if free:
            bad.append((ins, dele + [rng.choice(free)]))
        if dele:
            bad.append((ins + [dele[0]], dele[1:]))
            u, v = dele[-1]
            bad.append((ins, dele + [(u, v) if cls is nx.DiGraph else (v, u)]))
        if ins:
            bad.append((ins + [ins[0]], dele))
        gone = idx.n + 3 if case % 2 else next((i for i in range(idx.n) if i not in G), -1)
        bad.append((ins + [(next(iter(G)), gone)], dele))
        for bi, bd in bad:
            assert not idx.check(_row_ends(bi, bd), len(bd)), (case, bi, bd)


def test_pending_id_batches_reach_the_graph_when_read():
    """GAMMA's plain id batches edit the matcher's graph only when something reads it: every
    reader (``graph``, the CPU path, ``count``) sees the batches applied in order."""
    G = nx.path_graph(6)
    m = IncrementalMatcher(G, nx.path_graph(3), engine="cpu")
    want = G.copy()
    for ins, dele in (([(0, 2), (3, 5)], [(1, 2)]), ([(1, 2)], [(0, 2), (4, 5)])):
        m._pending.append((np.array(dele + ins, dtype=np.int64), len(dele)))
        want.remove_edges_from(dele)
        want.add_edges_from(ins)
    assert m._graph.number_of_edges() == 5  # nothing applied yet
    assert snapshot(m.graph) == snapshot(want) and not m._pending
    assert all(type(u) is int and type(v) is int for u, v in m.graph.edges())
    m.apply(insert=[(0, 5)], delete=[(0, 1)])
    want.remove_edge(0, 1)
    want.add_edge(0, 5)
    assert snapshot(m.graph) == snapshot(want)
    assert m.count() == sum(1 for _ in iso.GraphMatcher(want, nx.path_graph(3))
                            .subgraph_monomorphisms_iter())


def test_lazy_id_batches_commit_check_and_catch_up(monkeypatch):
    """The lazy commit on its own (GAMMA's condition forced on the CPU path): id rows checked by
    the edge index wait for the graph, an invalid batch is named and changes nothing, and once
    more than ``_PENDING_MAX`` rows wait the graph catches up at the commit."""
    from nx_gsm.incremental import matcher as incremental

    monkeypatch.setattr(incremental, "_PENDING_MAX", 3)
    monkeypatch.setattr(IncrementalMatcher, "_lazy_rows", lambda self, b: b.ends is not None)
    G, H = nx.cycle_graph(8), nx.path_graph(3)
    m = IncrementalMatcher(G, H, engine="cpu")
    ref = IncrementalMatcher(G, H, engine="cpu")
    m.count()
    ref.count()
    d, r = m.apply(insert=[(0, 2)], delete=[(1, 2)]), ref.apply(insert=[(0, 2)], delete=[(1, 2)])
    assert len(m._pending) == 1 and m._graph.has_edge(1, 2)  # 2 rows wait
    assert (d.num_added, d.num_removed, m.count()) == (r.num_added, r.num_removed, ref.count())
    with pytest.raises(BatchError, match="not in the graph"):
        m.apply(delete=[(1, 2)])  # deleted by the waiting batch (the general path names it)
    assert snapshot(m.graph) == snapshot(ref.graph) and m.count() == ref.count()
    b = dict(insert=[(0, 4), (2, 6)], delete=[(3, 4), (0, 1)])
    d, r = m.apply(**b), ref.apply(**b)
    assert not m._pending  # 4 rows waited: caught up at the commit
    assert snapshot(m._graph) == snapshot(ref.graph)
    assert (d.num_added, d.num_removed, m.count()) == (r.num_added, r.num_removed, ref.count())


@pytest.mark.parametrize("cls", [nx.Graph, nx.DiGraph])
def test_edge_index_follows_every_kind_of_batch(cls, monkeypatch):
    """The edge index is kept, not rebuilt, across batches of every kind (plain id rows, edges
    with attributes, new nodes past the ids, deleted nodes, replaced edges): after each batch it
    equals an index built afresh from the matcher's graph; a key that is not an id drops it."""
    from nx_gsm.incremental.batch import EdgeIndex as _EdgeIndex

    monkeypatch.setattr(IncrementalMatcher, "_lazy_rows", lambda self, b: b.ends is not None)
    rng = random.Random(31 + (cls is nx.DiGraph))
    for case in range(12):
        G = random_graph(rng, cls, 10, 25, labels=False)
        m = IncrementalMatcher(G, nx.path_graph(2, create_using=cls), engine="cpu")
        m.apply(insert=[], delete=[next(iter(G.edges()))])  # plain rows: the index is built
        assert m._eidx is not None
        for step in range(8):
            H = m.graph
            ins, dele, free = plain_pairs(rng, H)
            kind = step % 4
            if kind == 0:  # plain id rows
                m.apply(insert=ins, delete=dele)
            elif kind == 1:  # attributes, a replaced edge
                keep = [e for e in H.edges() if e not in dele[:2]][:1]
                m.apply(insert=[(u, v, {"w": step}) for u, v in ins + keep],
                        delete=dele[:2] + keep)
            elif kind == 2:  # a node past the ids, edges to it
                n = max(H) + 1 + rng.randrange(3)
                m.apply(nodes=[n], insert=[(n, u) for u in rng.sample(list(H), 2)])
            else:  # a node deleted (its id stays a gap)
                m.apply(delete_nodes=[rng.choice(list(H))])
            fresh, kept = _EdgeIndex(m.graph), m._eidx  # (their widths n may differ)
            assert [divmod(k, kept.n) for k in kept.keys.tolist()] == \
                [divmod(k, fresh.n) for k in fresh.keys.tolist()], (case, step)
            assert np.flatnonzero(kept.node).tolist() == np.flatnonzero(fresh.node).tolist()
        m.apply(nodes=["x"])
        assert m._eidx is None
