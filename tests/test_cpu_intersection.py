"""The CPU search's intersected local candidates (kernels._open): a depth with several drivers
iterates their lists' intersection in a per-search buffer, which a search paused between slices
or split into tasks makes again from the partial match. Paused after every few candidates, or
split across a task window, the search still finds exactly VF2's matches, whether the
intersection merges the candidate-space lists or ANDs their bit rows (``BIT_WORDS``)."""

import random

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms import isomorphism as iso

from nx_gsm.api import iter_mappings, prepare
from nx_gsm.engines.cpu import CpuEngine, engine, plan_arrays
from nx_gsm.engines.cpu.kernels import (BIT_WORDS, BUFFERED, DONE, KIND, NOT_STARTED,
                                        STACK_ROWS, bit_rows, search, used_array)
from nx_gsm.plan.space import build_space


@pytest.fixture(params=[0, BIT_WORDS], ids=["lists", "bits"])
def bit_words(request, monkeypatch):
    """The intersection's two forms: merged lists (0 words) and bit rows."""
    monkeypatch.setattr(engine, "BIT_WORDS", request.param)
    return request.param


def _case(seed):
    rng = random.Random(seed)
    directed = seed % 2 == 1
    G = nx.gnp_random_graph(rng.randint(12, 22), 0.35, seed=seed, directed=directed)
    for v in G:
        G.nodes[v]["l"] = rng.randrange(2)
    H = nx.gnp_random_graph(rng.randint(3, 5), 0.8, seed=seed + 1, directed=directed)
    H = H.subgraph(max(nx.weakly_connected_components(H) if directed else
                       nx.connected_components(H), key=len)).copy()
    for v in H:
        H.nodes[v]["l"] = rng.randrange(2)
    return G, H


def _vf2(G, H, mode):
    M = (iso.DiGraphMatcher if G.is_directed() else iso.GraphMatcher)(
        G, H, node_match=iso.categorical_node_match("l", None))
    it = M.subgraph_monomorphisms_iter() if mode == "mono" else M.subgraph_isomorphisms_iter()
    return sorted(tuple(sorted(m.items())) for m in it)


@pytest.mark.parametrize("seed", range(16))
@pytest.mark.parametrize("mode", ["mono", "induced"])
def test_sliced_and_split_searches_are_exact(seed, mode, bit_words):
    G, H = _case(seed)
    want = _vf2(G, H, mode)
    nm = iso.categorical_node_match("l", None)
    plan, _, _ = prepare(G, H, mode, node_match=nm)
    got = sorted(tuple(sorted(m.items())) for m in iter_mappings(plan, CpuEngine()))
    assert got == want
    if plan.empty or plan.k == 0:
        return
    P = plan_arrays(plan)
    k = plan.k
    for steps in (1, 2, 3, 7):
        # a count resumed after every few candidates: each resume remakes the open depths'
        # intersections, whose positions the paused stack still holds
        state = np.full(1, NOT_STARTED, dtype=np.int64)
        m = np.empty(k, dtype=np.int32)
        stk = np.empty((STACK_ROWS, k), dtype=np.int64)
        out = np.empty((1, k), dtype=np.int32)
        used = used_array(plan.G.n, k)
        total = 0
        while state[0] != DONE:
            total += int(search(P, 0, state, m, stk, used, out, 1 << 62, False, steps))
            assert total <= len(want)
            assert not used.any()  # left zero at every return, paused or done
        assert total == len(want), steps
        # and collected rows, a few at a time
        state[0] = NOT_STARTED
        rows = []
        while state[0] != DONE:
            got = int(search(P, 0, state, m, stk, used, np.empty((2, k), np.int32), 2, True,
                             steps))
            assert not used.any()
            rows.append(got)
        assert sum(rows) == len(want)
    # the window of split tasks (as on several threads), from a seed paused early
    seed_state = np.full(1, NOT_STARTED, dtype=np.int64)
    m = np.empty(k, dtype=np.int32)
    stk = np.empty((STACK_ROWS, k), dtype=np.int64)
    got = int(search(P, 0, seed_state, m, stk, used_array(plan.G.n, k),
                     np.empty((1, k), np.int32), 1 << 62, False, 2))
    if seed_state[0] != DONE:
        total = CpuEngine._count_tasks(P, k, np.zeros((0, 0), dtype=np.int32),
                                       _Unlimited(), 4, (seed_state, m, stk, got))
        assert total == len(want)


class _Unlimited:
    watched = False

    def keep_going(self, *_):
        return True

    def stop(self, *_):
        pass


def test_some_case_buffers_a_depth(bit_words):
    """The cases above reach the intersected kind (a depth with two drivers or more)."""
    G, H = nx.complete_graph(7), nx.complete_graph(4)
    plan, _, _ = prepare(G, H, "mono")
    P = plan_arrays(plan)
    state = np.full(1, NOT_STARTED, dtype=np.int64)
    stk = np.empty((STACK_ROWS, 4), dtype=np.int64)
    search(P, 0, state, np.empty(4, np.int32), stk, used_array(7, 4),
           np.empty((1, 4), np.int32), 1 << 62, False, 5)
    assert state[0] >= 2 and (stk[KIND, 2:state[0] + 1] == BUFFERED).all()
    assert CpuEngine().count(plan) == 7 * 6 * 5 * 4


@pytest.mark.slow  # compiles the search once more, for the wide table (~20 s)
def test_patterns_past_a_byte_of_depths():
    """From 255 pattern nodes the injectivity table takes int32 entries (a byte holds depths
    up to 254): the counts stay exact on both sides of the switch."""
    assert used_array(10, 254).dtype == np.uint8
    assert used_array(10, 255).dtype == np.int32
    G = nx.path_graph(300)
    for k in (254, 260):
        plan, _, _ = prepare(G, nx.path_graph(k), "mono")
        # a path of k nodes lies in a path of 300 at 301 - k offsets, both ways round
        assert CpuEngine().count(plan) == 2 * (301 - k)
        rows = np.concatenate(list(CpuEngine().iter_chunks(plan)))
        assert len({tuple(r) for r in rows.tolist()}) == 2 * (301 - k)


def test_bit_rows_hold_the_candidate_space_lists():
    """Every bit row of a depth with two drivers or more holds exactly its candidate-space
    list (bit c: the driven node's c-th candidate), over several words; depths with more
    candidates than ``max_words`` words, or fewer than two drivers, keep their lists."""
    G = nx.gnp_random_graph(300, 0.08, seed=3)
    plan, _, _ = prepare(G, nx.complete_graph(4), "mono")
    cs = build_space(plan)
    args = (plan.order, plan.drv_ptr, plan.drv_j, cs.row_off, cs.ptr, cs.val, cs.cidx,
            cs.cand_off)
    bw_n, bw_off, bw = bit_rows(*args, 8)
    drivers = np.diff(plan.drv_ptr)
    assert (bw_n[drivers < 2] == 0).all() and (bw_n[drivers >= 2] == 5).all()  # 300 nodes
    n_rows = cs.ptr.size - 1
    for d in np.flatnonzero(bw_n):
        u, nw = plan.order[d], bw_n[d]
        cands = cs.cand[cs.cand_off[u]:cs.cand_off[u + 1]]
        for t in range(plan.drv_ptr[d], plan.drv_ptr[d + 1]):
            end = cs.row_off[t + 1] if t + 1 < cs.row_off.size else n_rows
            for i, r in enumerate(range(cs.row_off[t], end)):
                words = bw[bw_off[t] + i * nw:bw_off[t] + (i + 1) * nw]
                bits = np.unpackbits(words.view(np.uint8), bitorder="little")
                assert cands[np.flatnonzero(bits)].tolist() == \
                    cs.val[cs.ptr[r]:cs.ptr[r + 1]].tolist()
    assert not bit_rows(*args, 4)[0].any()  # 300 candidates need 5 words


@pytest.mark.parametrize("mode", ["mono", "induced"])
def test_multiword_bit_rows_count_exactly(mode, monkeypatch):
    """Candidates past one 64-bit word: the count with bit rows equals the merged lists' and
    VF2's."""
    G = nx.gnp_random_graph(150, 0.12, seed=5)
    H = nx.Graph([(0, 1), (1, 2), (2, 0), (2, 3), (3, 0)])
    want = sum(1 for _ in (iso.GraphMatcher(G, H).subgraph_monomorphisms_iter() if mode == "mono"
                           else iso.GraphMatcher(G, H).subgraph_isomorphisms_iter()))
    plan, _, _ = prepare(G, H, mode)
    P = plan_arrays(plan)
    assert P[27].max() == 3  # 150 candidates: three words
    assert CpuEngine().count(plan) == want
    monkeypatch.setattr(engine, "BIT_WORDS", 0)
    plan, _, _ = prepare(G, H, mode)
    assert not plan_arrays(plan)[27].any()
    assert CpuEngine().count(plan) == want


def test_bit_rows_keep_lists_where_rows_outweigh_them():
    """A depth whose few candidates are reached from many driving candidates through short
    (here mostly empty) lists keeps its lists (the rows would take a word per driving
    candidate), and counts the same."""
    from nx_gsm.engines.cpu.kernels import BIT_SLACK
    from nx_gsm.plan.planner import reorder

    n = BIT_SLACK + 2000
    G = nx.cycle_graph(n)  # nodes labelled "b" in a long cycle, one "a" touching three of them
    nx.set_node_attributes(G, "b", "l")
    G.add_node("x", l="a")
    G.add_edges_from([("x", 0), ("x", 1), ("x", 2)])
    H = nx.Graph([(0, 1), (1, 2), (2, 0)])
    nx.set_node_attributes(H, {0: "b", 1: "b", 2: "a"}, "l")
    nm = iso.categorical_node_match("l", None)
    # (the label-and-degree filter: arc consistency would leave only the b's beside the a)
    plan, _, _ = prepare(G, H, "mono", node_match=nm, filter="ldf")
    plan = reorder(plan, np.array([0, 1, 2], dtype=np.int32))  # the "a" node last: two drivers
    cs = build_space(plan)
    assert np.diff(plan.drv_ptr)[2] == 2 and cs.cand_off[3] - cs.cand_off[2] == 1
    bw_n, _, bw = bit_rows(plan.order, plan.drv_ptr, plan.drv_j, cs.row_off, cs.ptr, cs.val,
                           cs.cidx, cs.cand_off, BIT_WORDS)
    assert not bw_n.any() and bw.size == 0
    want = sum(1 for _ in iso.GraphMatcher(G, H, node_match=nm).subgraph_monomorphisms_iter())
    assert CpuEngine().count(plan) == want == 4  # triangles 0-1-x and 1-2-x, both ways


# patterns whose last depth reaches each of the search's count shortcuts (kernels.search, at
# depth k-2): every driver above depth k-2 (a star's last leaf hangs on its centre), one driver
# at depth k-2 (a path), two drivers with depth k-2 one of them (a cycle), three or more (a
# clique: bit rows where the candidates fit them)
_SHAPES = {"star4": nx.star_graph(4), "path5": nx.path_graph(5), "cycle5": nx.cycle_graph(5),
           "k4": nx.complete_graph(4), "k5": nx.complete_graph(5),
           "tadpole": nx.Graph([(0, 1), (1, 2), (2, 0), (2, 3), (3, 4), (4, 1)])}


def _last_depth_kind(P):
    """Which count shortcut a plan's last depth takes (kernels.search)."""
    order, drv_ptr, drv_j, bw_n = P[0], P[10], P[11], P[27]
    k = order.size
    drivers = drv_j[drv_ptr[k - 1]:drv_ptr[k]]
    if drivers.size == 0 or drivers.max() < k - 2:
        return "above"
    if drivers.size == 1:
        return "one"
    return "bits" if bw_n[k - 1] else "pair" if drivers.size == 2 else "open"


def _shape_case(name, seed):
    rng = random.Random(seed)
    directed = seed % 2 == 1
    G = nx.gnp_random_graph(24, 0.35, seed=seed, directed=directed)
    H = _SHAPES[name]
    if directed:
        H = nx.DiGraph([(u, v) if rng.random() < 0.5 else (v, u) for u, v in H.edges])
    for X in (G, H):
        for v in X:
            X.nodes[v]["l"] = rng.randrange(2)
    return G, H


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("name", sorted(_SHAPES))
@pytest.mark.parametrize("mode", ["mono", "induced"])
def test_last_depth_counts_are_exact(name, seed, mode, bit_words):
    """A count's last depth is counted from depth k-2 without being opened: from a list kept
    while its drivers sit above (one binary search per candidate), its driver's list, two
    lists' intersection or the bit rows' AND. Exact against VF2 whole, with limits (which stop
    at exactly the limit) and paused after every few candidates."""
    G, H = _shape_case(name, seed)
    want = len(_vf2(G, H, mode))
    plan, _, _ = prepare(G, H, mode, node_match=iso.categorical_node_match("l", None))
    eng = CpuEngine()
    assert eng.count(plan) == want
    for limit in (1, want // 2 + 1, want + 1):
        assert eng.count(plan, limit=limit) == min(limit, want)
    if plan.empty or plan.k == 0:
        return
    P = plan_arrays(plan)
    k = plan.k
    for steps in (1, 3):
        state = np.full(1, NOT_STARTED, dtype=np.int64)
        m = np.empty(k, dtype=np.int32)
        stk = np.empty((STACK_ROWS, k), dtype=np.int64)
        used = used_array(plan.G.n, k)
        total = 0
        while state[0] != DONE:
            total += int(search(P, 0, state, m, stk, used, np.empty((1, k), np.int32), 1 << 62,
                                False, steps))
            assert not used.any()
        assert total == want, steps


def test_the_shapes_reach_every_last_depth_shortcut(bit_words):
    """The cases above reach each of the last depth's forms (bit rows only where they are on)."""
    seen = set()
    for name in _SHAPES:
        for seed in range(4):
            G, H = _shape_case(name, seed)
            plan, _, _ = prepare(G, H, "mono", node_match=iso.categorical_node_match("l", None))
            if not plan.empty and plan.k:
                seen.add(_last_depth_kind(plan_arrays(plan)))
    assert {"above", "one", "pair" if not bit_words else "bits"} <= seen, seen
