"""Run-time splitting of the CPU engine's counting tasks (``nx_gsm.engines.cpu.parallel.split``).

With one search step per slot per round, every task that outlives its first round gives half of
its untried candidates away, level after level, so these tests split far more often than real
searches do; the counts must still equal VF2's (each subtree counted exactly once).
"""

from __future__ import annotations

import math
import random
import sys
from pathlib import Path

import networkx as nx
import numba
import numpy as np
import pytest

import nx_gsm
from nx_gsm.api import prepare
from nx_gsm.engines import cpu
from nx_gsm.engines.cpu import engine as cpu_engine
from nx_gsm.engines.base import Budget
from nx_gsm.engines.cpu import CpuEngine
from nx_gsm.testing import random_graph

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:  # conformance/ is a folder of the repo, not an installed package
    sys.path.insert(0, str(_ROOT))

import conformance  # noqa: E402
from conformance.oracle import MATCHERS, vf2_mappings  # noqa: E402

pytestmark = pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2,
                                reason="tasks are split only when two or more threads run")


@pytest.fixture
def force_split(monkeypatch):
    monkeypatch.setattr(cpu_engine, "_PROBE_STEPS", 1)
    monkeypatch.setattr(cpu_engine, "_SLOTS_PER_THREAD", 2)
    monkeypatch.setattr(cpu_engine, "_ROUND_STEPS", 2)
    old = numba.get_num_threads()
    numba.set_num_threads(2)
    yield
    numba.set_num_threads(old)


def _count(G, H, mode, **kw):
    fn = (nx_gsm.count_subgraph_monomorphisms if mode == "mono"
          else nx_gsm.count_subgraph_isomorphisms)
    return fn(G, H, engine="cpu", **kw)


@pytest.mark.parametrize("cls", sorted(MATCHERS))
def test_generated_cases_split(force_split, cls):
    # every label kind and shape of the quick conformance suite (self-loops, parallel edges,
    # callables, disconnected patterns)
    cases = [c for c in conformance.generate_cases(seed=0, quick=True)
             if c.cls == cls and c.mode in ("mono", "induced")]
    assert cases
    for c in cases:
        assert _count(c.G, c.H, c.mode, **c.gsm_kwargs()) == len(vf2_mappings(c)), c.describe()


def _random(cls, n, p, rng, labels):
    X = getattr(nx, cls)()
    X.add_nodes_from((v, {"c": rng.randrange(labels)}) for v in range(n))
    for u in range(n):
        for v in range(n):
            if (u < v or (X.is_directed() and u != v)) and rng.random() < p:
                for _ in range(1 + (X.is_multigraph() and rng.random() < 0.3)):
                    X.add_edge(u, v, w=rng.randrange(2))
        if rng.random() < 0.1:
            X.add_edge(u, u, w=0)
    return X


def _pattern(G, k, rng):
    # a connected piece of G (so that there are matches), relabelled 0..k-1
    nodes = [rng.randrange(G.number_of_nodes())]
    U = G.to_undirected(as_view=True)
    while len(nodes) < k:
        nbrs = sorted({w for x in nodes for w in U[x]} - set(nodes))
        if not nbrs:
            break
        nodes.append(rng.choice(nbrs))
    return nx.convert_node_labels_to_integers(G.subgraph(nodes).copy())


@pytest.mark.parametrize("mode", ["mono", "induced"])
@pytest.mark.parametrize("cls", sorted(MATCHERS))
def test_random_graphs_split_equal_vf2(force_split, cls, mode):
    rng = random.Random(f"{cls}-{mode}")
    for trial in range(4):
        G = _random(cls, 24, 0.22, rng, labels=2)
        H = _pattern(G, 5, rng)
        if trial % 2:
            kw = {"node_match": nx.isomorphism.categorical_node_match("c", None)}
        elif G.is_multigraph():
            kw = {"edge_match": nx.isomorphism.categorical_multiedge_match("w", None)}
        else:
            kw = {"edge_match": nx.isomorphism.categorical_edge_match("w", None)}
        M = MATCHERS[cls](G, H, **kw)
        it = M.subgraph_monomorphisms_iter() if mode == "mono" else M.subgraph_isomorphisms_iter()
        expected = sum(1 for _ in it)
        assert expected > 0
        assert _count(G, H, mode, **kw) == expected, (cls, mode, trial)


def _plan(G, H):
    plan, _, _ = prepare(G, H, "mono", engine=CpuEngine())
    return plan


def _counted_with_progress(fn):
    totals = []
    got = fn(Budget(progress=lambda found, done, total: totals.append(total)))
    return got, totals


def test_splitting_happens_and_matches_unsplit(force_split, monkeypatch):
    # 8 steps a slot per round: still splits at every level, in fewer rounds
    monkeypatch.setattr(cpu_engine, "_ROUND_STEPS", 16)
    G = nx.gnp_random_graph(40, 0.2, seed=3)
    plan = _plan(G, nx.cycle_graph(5))
    got, totals = _counted_with_progress(lambda b: CpuEngine().count(plan, budget=b))
    # one task (the probe's search) to start with: more are split-off tasks
    assert max(totals) > 1
    numba.set_num_threads(1)
    assert got == CpuEngine().count(plan) > 10**3


def test_count_from_one_prefix_is_split(force_split, monkeypatch):
    monkeypatch.setattr(cpu_engine, "_ROUND_STEPS", 16)
    G = nx.gnp_random_graph(30, 0.2, seed=5)
    plan = _plan(G, nx.path_graph(5))
    got, totals = _counted_with_progress(
        lambda b: CpuEngine().count_from(plan, np.zeros((1, 0), dtype=np.int32), budget=b))
    assert max(totals) > 1
    numba.set_num_threads(1)
    assert got == CpuEngine().count(plan)


def test_stopped_count_is_a_lower_bound(force_split, monkeypatch):
    monkeypatch.setattr(cpu_engine, "_ROUND_STEPS", 16)
    plan = _plan(nx.gnp_random_graph(40, 0.2, seed=3), nx.cycle_graph(5))
    rounds = []

    def stop_after_50(found, done, total):
        rounds.append(found)
        if len(rounds) == 50:
            budget.deadline = 0.0  # past: this very check stops the count

    budget = Budget(progress=stop_after_50)
    got = CpuEngine().count(plan, budget=budget)
    numba.set_num_threads(1)
    assert budget.partial and 0 < int(got) < CpuEngine().count(plan)


@pytest.mark.parametrize("cls", [nx.Graph, nx.DiGraph, nx.MultiGraph])
@pytest.mark.parametrize("n", [16, 90])
def test_expand_small_equals_expand_and_respects_cap(cls, n):
    """The one-thread level, the blocked parallel level (every block count, wider than the rows
    too) and host_levels on one and several threads give _expand's rows in _expand's order."""
    from nx_gsm.testing import random_graph

    rnd = random.Random(11)
    G = random_graph(rnd, cls, n, 0.35 if n == 16 else 0.08, n_labels=2)
    # a connected piece of G: at least one match in both modes
    nodes = list(nx.bfs_tree(G.to_undirected(as_view=True), 0))[:4]
    H = nx.convert_node_labels_to_integers(G.subgraph(nodes).copy())
    nm = nx.algorithms.isomorphism.categorical_node_match("c", None)
    for mode in ("mono", "induced"):
        plan, _, _ = prepare(G, H, mode, node_match=nm)
        P = cpu.plan_arrays(plan)
        rows = np.ascontiguousarray(
            plan.cand_flat[plan.cand_ptr[0]:plan.cand_ptr[1]].astype(np.int32)[:, None])
        for _ in range(plan.k - 1):
            want = cpu.expand(P, rows)
            got = cpu.expand_small(P, rows, want.shape[0])
            assert np.array_equal(got, want)
            # slack 0: blocks past twice their share of the cap are counted again (a level
            # that fits) or settle that it does not
            for blocks in (1, 2, 3, rows.shape[0] + 2):
                for slack in (0, 64):
                    wide, fits = cpu.expand_wide(P, rows, want.shape[0], blocks, slack)
                    assert fits and np.array_equal(wide, want)
            if want.shape[0]:
                assert cpu.expand_small(P, rows, want.shape[0] - 1) is None
                for blocks, slack in ((3, 64), (3, 0), (rows.shape[0] + 2, 0)):
                    assert not cpu.expand_wide(P, rows, want.shape[0] - 1, blocks, slack)[1]
            rows = want
        assert rows.shape[0] == CpuEngine().count(plan) > 0
        roots = np.ascontiguousarray(
            plan.cand_flat[plan.cand_ptr[0]:plan.cand_ptr[1]].astype(np.int32)[:, None])
        # every level on blocks of all threads (the threshold lowered), or on one thread
        for threads, wide in ((1, cpu.WIDE_ROWS), (4, 1)):
            every, levels = cpu.host_levels(P, roots, 10**6, plan.k, threads, wide)
            assert levels == plan.k - 1 and np.array_equal(every, rows)
            one, levels = cpu.host_levels(P, roots, 10**6, 1, threads, wide)
            assert levels == 1 and np.array_equal(one, cpu.expand(P, roots))
            small, levels = cpu.host_levels(P, roots, 2, plan.k, threads, wide)  # under the cap
            assert small.shape[0] < 2 or levels == 0
            # count_last: the same levels, the last one counted and not written; a frontier
            # whose last level passes the cap (or a level budget that stops short) is left
            front, levels, last = cpu.host_levels(P, roots, 10**6, plan.k, threads, wide,
                                                  count_last=True)
            assert levels == plan.k - 1 and last == rows.shape[0]
            assert front.shape[1] == plan.k - 1
            short, levels, last = cpu.host_levels(P, roots, 10**6, plan.k - 2, threads, wide,
                                                  count_last=True)
            assert last is None and levels == plan.k - 2 and short.shape[1] == plan.k - 1
            # from the last frontier: a cap the count reaches, and one it passes
            if 0 < front.shape[0] < rows.shape[0] - 1:
                for cap, want in ((rows.shape[0] + 1, rows.shape[0]), (rows.shape[0] - 1, None)):
                    _, levels, last = cpu.host_levels(P, front, cap, 1, threads, wide,
                                                      count_last=True)
                    assert last == want and levels == (want is not None)


@pytest.mark.parametrize("threads, wide", [(1, cpu.WIDE_ROWS), (4, 1)])
def test_host_levels_count_cap_bounds_the_counted_level_alone(threads, wide):
    """P4 into K8: levels of 8, 56 and 336 rows, then 1,680 matches. Under a cap of 400 rows
    the written levels fit and the counted last level does not -- unless ``count_cap`` lets
    it (a count writes nothing); on one thread and on blocks of several (the wide path)."""
    plan, _, _ = prepare(nx.complete_graph(8), nx.path_graph(4), "mono")
    P = cpu.plan_arrays(plan)
    roots = np.ascontiguousarray(
        plan.cand_flat[plan.cand_ptr[0]:plan.cand_ptr[1]].astype(np.int32)[:, None])
    front, levels, last = cpu.host_levels(P, roots, 400, plan.k, threads, wide,
                                          count_last=True)
    assert last is None and levels == 2 and front.shape == (336, 3)
    for count_cap, want in ((1680, 1680), (10**6, 1680), (1679, None)):
        front, levels, last = cpu.host_levels(P, roots, 400, plan.k, threads, wide,
                                              count_last=True, count_cap=count_cap)
        assert last == want and levels == 2 + (want is not None) and front.shape == (336, 3)


def test_host_levels_work_cap_stops_before_a_level():
    """P5 into K8 on one thread: the first level examines the 8 roots' 7 neighbours each (56
    candidates), the second 56 rows x 7 (392 more). A ``work_cap`` stops before the level
    once the levels so far examined that many candidates; 0 is no bound."""
    plan, _, _ = prepare(nx.complete_graph(8), nx.path_graph(5), "mono")
    P = cpu.plan_arrays(plan)
    roots = np.ascontiguousarray(
        plan.cand_flat[plan.cand_ptr[0]:plan.cand_ptr[1]].astype(np.int32)[:, None])
    for cap, levels_want in ((0, 4), (1, 1), (56, 1), (57, 2), (448, 2), (449, 3)):
        front, levels, last = cpu.host_levels(P, roots, 10**6, plan.k, 1, count_last=True,
                                              work_cap=cap)
        assert levels == levels_want, cap
        if levels_want == 4:
            assert last == math.perm(8, 5)
        else:
            assert last is None and front.shape == (math.perm(8, levels + 1), levels + 1)


@pytest.mark.parametrize("cls", [nx.Graph, nx.DiGraph, nx.MultiGraph, nx.MultiDiGraph])
def test_count_probe_is_the_count_or_none(cls):
    """``cpu.count_probe`` (gmatch's small searches): the exact count when the sequential
    search finishes within the steps, None when it does not; an empty plan is 0 steps."""
    rnd = random.Random(3)
    unfinished = 0
    for _ in range(12):
        G = random_graph(rnd, cls, 9, 0.5, n_labels=2)
        H = random_graph(rnd, cls, 4, 0.6, n_labels=2)
        for mode in ("mono", "induced"):
            plan, _, _ = prepare(G, H, mode, node_label="c")
            want = CpuEngine().count(plan)
            got = cpu.count_probe(plan, 1 << 20)
            assert got == want
            short = cpu.count_probe(plan, 2)
            assert short is None or short == want
            unfinished += short is None
    assert unfinished  # two steps do not finish every search
    plan, _, _ = prepare(nx.path_graph(3), nx.complete_graph(3), "mono")
    assert cpu.count_probe(plan, 1) == 0


def test_rounds_grow_while_a_count_goes_on(force_split, monkeypatch):
    # each round resumes every slot, and a resume makes its open depths' intersections again:
    # a long count's rounds double every few rounds, up to a cap, and the count stays exact
    monkeypatch.setattr(cpu_engine, "_ROUND_STEPS", 16)
    monkeypatch.setattr(cpu_engine, "_ROUND_GROWTH", 4)
    monkeypatch.setattr(cpu_engine, "_ROUND_GROW_EVERY", 3)
    steps = []
    launch = cpu_engine.launch

    def recording(fn, *args):
        if fn is cpu_engine.run_slots:
            steps.append(args[-1])
        return launch(fn, *args)

    monkeypatch.setattr(cpu_engine, "launch", recording)
    plan = _plan(nx.gnp_random_graph(40, 0.2, seed=3), nx.cycle_graph(5))
    got = CpuEngine().count(plan)
    assert len(steps) > 12
    # 16 steps a round over 2 slots a thread: 8 a slot, doubled every 3 rounds up to 32
    assert steps[:10] == [8, 8, 8, 16, 16, 16, 32, 32, 32, 32] and max(steps) == 32
    monkeypatch.setattr(cpu_engine, "launch", launch)
    numba.set_num_threads(1)
    assert got == CpuEngine().count(plan)


def test_a_block_out_of_work_ends_the_round_for_the_others():
    # two blocks: slot 0's task is done, so its block stops the round at once, and the other
    # block, whose slice (32M steps) would finish its 25M-step task, stops after one piece of it
    from nx_gsm.engines.cpu.kernels import DONE, NOT_STARTED, STACK_ROWS, used_array
    from nx_gsm.engines.cpu.parallel import PIECES, run_slots

    plan = _plan(nx.complete_graph(60), nx.path_graph(5))
    P, k = cpu_engine.plan_arrays(plan), plan.k
    full = 60 * 59 * 58 * 57 * 56
    steps = 32 * 10**6

    def one_round(blocks):
        states = np.array([[DONE], [NOT_STARTED]], dtype=np.int64)
        counts = np.zeros(2, dtype=np.int64)
        stop = np.zeros(1, dtype=np.int64)
        run_slots(P, np.array([0, 1]), np.zeros(2, dtype=np.int64), states,
                  np.empty((2, k), dtype=np.int32), np.empty((2, STACK_ROWS, k), dtype=np.int64),
                  used_array(plan.G.n, k, blocks), counts, stop, steps)
        assert stop[0] == 1 and counts[0] == 0
        return int(states[1, 0]), int(counts[1])

    old = numba.get_num_threads()
    numba.set_num_threads(2)
    try:
        state, got = one_round(2)
    finally:
        numba.set_num_threads(old)
    assert state != DONE and 0 < got < full
    # one block holds both slots: nothing stops it, and its slice finishes the task
    assert PIECES > 1 and one_round(1) == (DONE, full)
