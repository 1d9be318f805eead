"""The planner's stages against plain-Python definitions: the candidate filter (both ways of
walking a rule's candidates), the candidate space, and the per-depth checks and drivers.

Each stage was rewritten for speed (compiled passes and list lookups instead of numpy scalars);
these tests hold them to the definitions in the modules' docstrings on random graphs of every
class, so a fast path cannot drift from what the search engines rely on.
"""

import random

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms import isomorphism as iso

import nx_gsm
from nx_gsm.plan import filter as flt
from nx_gsm.api import prepare
from nx_gsm.plan import planner
from nx_gsm.plan.space import _build_space, space_visits

CLASSES = [nx.Graph, nx.DiGraph, nx.MultiGraph, nx.MultiDiGraph]


def _random_case(seed):
    rng = random.Random(seed)
    cls = CLASSES[seed % 4]
    labels = rng.choice([1, 2, 5])  # one label: dense candidate rows; five: sparse ones

    def graph(n, m):
        X = cls()
        X.add_nodes_from((i, {"l": rng.randrange(labels)}) for i in range(n))
        for _ in range(m):
            u, v = rng.randrange(n), rng.randrange(n)
            for _ in range(rng.choice([1, 1, 2, 3]) if X.is_multigraph() else 1):
                X.add_edge(u, v)  # parallel edges: multiplicities for the checks
        return X

    n = rng.randint(5, 40)
    G = graph(n, rng.randint(n, 4 * n))
    k = rng.randint(2, 6)
    H = graph(k, rng.randint(k - 1, 2 * k))
    mode = rng.choice(["mono", "induced"])
    nm = iso.categorical_node_match("l", None) if rng.random() < 0.8 else None
    g, h = nx_gsm.from_networkx(G), nx_gsm.from_networkx(H)
    return g, h, mode, nm


def _rows(x, v, incoming):
    ptr, idx, mult = (x.in_indptr, x.in_indices, x.in_mult) if incoming else \
        (x.indptr, x.indices, x.mult)
    return [(int(idx[e]), int(mult[e])) for e in range(ptr[v], ptr[v + 1])]


def _mult_ok(have, need, mode, multi):
    if not multi:
        return True
    return have >= need if mode == "mono" else have == need


def _naive_candidates(g, h, mode, node_ok):
    """Label table, LDF and arc consistency to the fixpoint, by the module's definition."""
    k, n = h.n, g.n
    dg, dh = g.out_degree(), h.out_degree()
    ig, ih = g.in_degree(), h.in_degree()
    cand = np.ones((k, n), dtype=bool) if node_ok is None else node_ok.copy()
    for u in range(k):
        for v in range(n):
            ok = dg[v] >= dh[u] and (not g.directed or ig[v] >= ih[u])
            ok = ok and (g.loops[v] >= h.loops[u] if mode == "mono" else g.loops[v] == h.loops[u])
            cand[u, v] &= ok
    multi = g.multigraph or h.multigraph
    rules = []
    for u in range(k):
        for pe in range(h.indptr[u], h.indptr[u + 1]):
            w = int(h.indices[pe])
            rules.append((u, w, int(h.mult[pe]), False))
            if g.directed:
                rules.append((w, u, int(h.mult[pe]), True))
    changed = True
    while changed:
        changed = False
        for u, w, need, incoming in rules:
            for v in range(n):
                if cand[u, v] and not any(cand[w, x] and _mult_ok(m, need, mode, multi)
                                          for x, m in _rows(g, v, incoming)):
                    cand[u, v] = False
                    changed = True
    return cand


def _node_ok(g, h, nm):
    """The label rule as a matrix, and as the planner hands it over (classes, or None)."""
    node_cls = planner._node_tables(g, h, nm, None, None)
    return (None if node_cls is None else flt.label_matrix(node_cls)), node_cls


@pytest.mark.parametrize("seed", range(60))
def test_candidates_are_the_arc_consistent_fixpoint(seed):
    g, h, mode, nm = _random_case(seed)
    node_ok, node_cls = _node_ok(g, h, nm)
    want = _naive_candidates(g, h, mode, node_ok)
    assert (flt.candidates(g, h, mode, node_ok) == want).all()
    assert (flt.candidates(g, h, mode, node_cls=node_cls) == want).all()
    # the counts the filter keeps (the planner's order reads them) are the matrix's
    for rounds in (None, 0, 1):
        cand, counts = flt.candidates(g, h, mode, node_cls=node_cls, max_rounds=rounds,
                                      with_counts=True)
        assert counts.tolist() == cand.sum(axis=1).tolist()


@pytest.mark.parametrize("seed", range(30))
@pytest.mark.parametrize("rounds", [1, 2, 50])
def test_refine_walks_lists_and_rows_alike(seed, rounds):
    """The candidate lists (sparse rows) and the full scan make the same drops in every round,
    so a capped number of rounds ends in the same matrix too."""
    g, h, mode, nm = _random_case(seed)
    local = flt.candidates(g, h, mode, _node_ok(g, h, nm)[0], max_rounds=0)
    out = []
    for lists in (False, True):
        c = local.copy()
        flt._refine(c.view(np.uint8), h.indptr, h.indices, g.directed, h.mult.astype(np.int32),
                    g.indptr, g.indices, g.mult, g.in_indptr, g.in_indices, g.in_mult,
                    np.zeros(1, np.int32), np.zeros(1, np.int32), np.ones((1, 1), np.uint8),
                    False, bool(g.multigraph or h.multigraph), mode == "mono", rounds, lists,
                    local.sum(axis=1), np.zeros(0, np.int32), np.zeros(h.n + 1, np.int64))
        out.append(c)
    assert (out[0] == out[1]).all()


@pytest.mark.parametrize("seed", [s for s in range(80)
                                  if not CLASSES[s % 4].is_multigraph(None)])
def test_support_marks_reach_the_scans_fixpoint(seed):
    """Where any edge supports a pattern edge (simple graphs, no edge labels), the filter
    refines by support marks (``_refine_marks``); it must end in the same candidate sets and
    counts as the rule-by-rule scan (``_refine``), with its lists taken from the class pass,
    built from the matrix, or not used."""
    g, h, mode, nm = _random_case(seed)
    node_ok, node_cls = _node_ok(g, h, nm)
    local = flt.candidates(g, h, mode, node_ok, max_rounds=0)
    want = local.copy()
    flt._refine(want.view(np.uint8), h.indptr, h.indices, g.directed, h.mult.astype(np.int32),
                g.indptr, g.indices, g.mult, g.in_indptr, g.in_indices, g.in_mult,
                np.zeros(1, np.int32), np.zeros(1, np.int32), np.ones((1, 1), np.uint8), False,
                False, mode == "mono", 100, False, local.sum(axis=1), np.zeros(0, np.int32),
                np.zeros(h.n + 1, np.int64))
    for lists in (False, True):
        c, counts = local.copy(), local.sum(axis=1)
        flt._refine_marks(c.view(np.uint8), h.indptr, h.indices, h.in_indptr, h.in_indices,
                          g.directed, g.indptr, g.indices, g.in_indptr, g.in_indices, 100, lists,
                          counts, np.zeros(0, np.int32), np.zeros(h.n + 1, np.int64))
        assert (c == want).all() and counts.tolist() == want.sum(axis=1).tolist()
    if node_cls is not None:  # the lists the class pass hands over
        cand, counts = flt.candidates(g, h, mode, node_cls=node_cls, with_counts=True)
        assert (cand == want).all() and counts.tolist() == want.sum(axis=1).tolist()


def test_candidate_space_rank_past_one_word():
    """``rank`` on 200 nodes in 3 labels (7 words a pattern node, bit 31 set in some): the
    candidates below a word and the bits in it give every candidate's ``cidx``."""
    rnd = np.random.default_rng(4)
    G = nx.gnm_random_graph(200, 600, seed=4)
    nx.set_node_attributes(G, {v: int(rnd.integers(3)) for v in G}, "c")
    H = nx.path_graph(4)
    nx.set_node_attributes(H, {0: 0, 1: 1, 2: 2, 3: 0}, "c")
    plan = prepare(G, H, "mono", node_label="c")[0]
    cs = _build_space(plan)
    assert cs.rank.shape == (4, 7, 2) and (cs.rank[:, :, 0] >> 31).any()
    for u in range(plan.k):
        for v in range(200):
            word, below = int(cs.rank[u, v >> 5, 0]), int(cs.rank[u, v >> 5, 1])
            assert (word >> (v & 31)) & 1 == plan.cand[u, v]
            if plan.cand[u, v]:
                assert below + bin(word & ((1 << (v & 31)) - 1)).count("1") == cs.cidx[u, v]


@pytest.mark.parametrize("seed", range(60))
@pytest.mark.parametrize("parallel", [False, True])
def test_candidate_space_lists_every_driver_row(seed, parallel):
    """Every row's list, its scans on one thread or split over the threads (``parallel``:
    whatever the number of entries read), and the entries a build reads."""
    g, h, mode, nm = _random_case(seed)
    plan = planner.make_plan(g, h, mode, node_match=nm)
    cs = _build_space(plan, parallel_visits=0 if parallel else 1 << 62)
    deg = (np.diff(g.indptr), np.diff(g.in_indptr))
    assert space_visits(plan) == sum(
        int(deg[int(plan.drv_dir[t])][plan.cand[int(plan.order[int(plan.drv_j[t])])]].sum())
        for t in range(plan.drv_j.size))
    multi = g.multigraph or h.multigraph
    for u in range(plan.k):
        cands = np.flatnonzero(plan.cand[u])
        assert (cs.cidx[u, cands] == np.arange(cands.size)).all()
        assert (np.delete(cs.cidx[u], cands) == -1).all()
        # the device's rank: a node's candidate bit, and a candidate's position (cidx)
        x = np.arange(plan.cand.shape[1])
        words = cs.rank[u, x >> 5, 0].astype(np.int64)
        assert cs.rank.shape == (plan.k, (x.size + 31) // 32, 2)
        assert (((words >> (x & 31)) & 1) == plan.cand[u]).all()
        for v in cands.tolist():
            below = int(cs.rank[u, v >> 5, 0]) & ((1 << (v & 31)) - 1)
            assert int(cs.rank[u, v >> 5, 1]) + bin(below).count("1") == cs.cidx[u, v]
    depth_of_slot = np.repeat(np.arange(plan.k), np.diff(plan.drv_ptr))
    for t in range(plan.drv_j.size):
        w, u = int(plan.order[plan.drv_j[t]]), int(plan.order[depth_of_slot[t]])
        need = int(h.mult[plan.drv_pe[t]])
        for i, x in enumerate(np.flatnonzero(plan.cand[w])):
            want = sorted(v for v, m in _rows(g, x, plan.drv_dir[t] == 1)
                          if plan.cand[u, v] and _mult_ok(m, need, mode, multi))
            r = cs.row_off[t] + i
            assert cs.val[cs.ptr[r]:cs.ptr[r + 1]].tolist() == want


@pytest.mark.parametrize("seed", range(60))
def test_depth_checks_and_drivers(seed):
    g, h, mode, nm = _random_case(seed)
    plan = planner.make_plan(g, h, mode, node_match=nm)
    order = plan.order.tolist()
    for d, u in enumerate(order):
        checks, drivers = [], []
        for j, w in enumerate(order[:d]):
            peo = h.edge_position(w, u)
            pei = h.edge_position(u, w) if h.directed else peo
            out = int(h.mult[peo]) if peo >= 0 else 0
            inn = int(h.mult[pei]) if pei >= 0 else 0
            if out or inn or mode != "mono":
                checks.append((j, out, inn, peo, pei))
            if out:
                drivers.append((j, 0, peo))
            if h.directed and inn:
                drivers.append((j, 1, pei))
        c = slice(plan.chk_ptr[d], plan.chk_ptr[d + 1])
        assert list(zip(plan.chk_j[c].tolist(), plan.chk_out[c].tolist(),
                        plan.chk_in[c].tolist(), plan.chk_peo[c].tolist(),
                        plan.chk_pei[c].tolist())) == checks
        s = slice(plan.drv_ptr[d], plan.drv_ptr[d + 1])
        assert list(zip(plan.drv_j[s].tolist(), plan.drv_dir[s].tolist(),
                        plan.drv_pe[s].tolist())) == drivers
        flat = plan.cand_flat[plan.cand_ptr[d]:plan.cand_ptr[d + 1]].tolist()
        assert flat == (np.flatnonzero(plan.cand[u]).tolist() if not drivers else [])


def test_plan_pickle_leaves_the_device_image_behind():
    """A plan's packed device image (gmatch's kept slots) names a layout of this process: a
    pickle drops it and keeps everything else, the kept candidate space too."""
    import pickle

    from nx_gsm.plan.space import build_space

    plan = prepare(nx.cycle_graph(6), nx.path_graph(3), "mono")[0]
    build_space(plan)
    plan.__dict__["_slot_image"] = ("layout", np.zeros(4, np.uint8), [])
    back = pickle.loads(pickle.dumps(plan))
    assert "_slot_image" not in back.__dict__ and "_slot_image" in plan.__dict__
    assert "_space" in back.__dict__ and (back.cand == plan.cand).all()
    assert back.k == plan.k and back.mode == plan.mode


def _greedy_order_by_definition(h, cand_counts):
    """The matching order's rule (``nx_gsm.plan.order``) written out on Python sets."""
    from nx_gsm.plan.order import undirected_neighbours

    k, nb = h.n, undirected_neighbours(h)
    deg = [float(len(x)) for x in nb]
    counts = [float(c) for c in cand_counts]
    placed, back, order = [False] * k, [0] * k, []
    while len(order) < k:
        frontier = [u for u in range(k) if not placed[u] and back[u] > 0]
        if frontier:
            u = min(frontier, key=lambda x: (-back[x], counts[x], -deg[x], x))
        else:
            u = min((x for x in range(k) if not placed[x]),
                    key=lambda x: (counts[x] / max(deg[x], 1.0), -deg[x], x))
        placed[u] = True
        order.append(u)
        for w in nb[u]:
            back[w] += 1
    return order


@pytest.mark.parametrize("seed", range(40))
def test_matching_order_is_the_greedy_rule(seed):
    """Ties everywhere (few distinct counts), several components, self-loops, every graph
    class: the compiled order is the rule's, node for node."""
    from nx_gsm.interop.networkx import as_gsm
    from nx_gsm.plan.order import matching_order

    rng = random.Random(seed)
    for t in range(25):
        n = rng.randint(0, 11)
        cls = rng.choice([nx.Graph, nx.DiGraph, nx.MultiGraph, nx.MultiDiGraph])
        X = cls(nx.gnp_random_graph(n, rng.random(), seed=1000 * seed + t,
                                    directed=cls in (nx.DiGraph, nx.MultiDiGraph)))
        if n and rng.random() < 0.3:
            X.add_edge(0, 0)
        h = as_gsm(X, node_attrs=False, edge_attrs=False)
        counts = [rng.choice([0, 1, 2, 3, 5, 8]) for _ in range(n)]
        assert matching_order(h, counts, "greedy").tolist() == \
            _greedy_order_by_definition(h, counts)


@pytest.mark.parametrize("seed", range(30))
def test_label_pass_by_class_equals_the_full_pass(seed):
    """The label/degree pass over the accepted classes' members (``_local_classes``) against
    the pass over every data node: pattern nodes accepting several classes or none (callable
    matches), every mode including exact degrees, directed graphs, self-loops."""
    rng = np.random.default_rng(seed)
    for t in range(10):
        g, h, _, _ = _random_case(1000 * seed + t)
        n_cls = int(rng.integers(1, 6))
        dcls = rng.integers(0, n_cls, g.n).astype(np.int32)
        ok = (rng.random((h.n, n_cls)) < rng.choice([0.2, 0.5, 0.9])).astype(np.uint8)
        for mode in ("mono", "induced", "iso"):
            out = []
            for fn, cand in ((flt._local, np.empty((h.n, g.n), np.uint8)),
                             (flt._local_classes, np.zeros((h.n, g.n), np.uint8))):
                counts = np.zeros(h.n, dtype=np.int64)
                fn(cand, True, dcls, ok, g.indptr, h.indptr, g.in_indptr, h.in_indptr, g.loops,
                   h.loops, mode == "iso", g.directed, mode == "mono", counts)
                out.append((cand, counts))
            assert (out[0][0] == out[1][0]).all() and (out[0][1] == out[1][1]).all()
