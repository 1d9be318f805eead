"""Ctrl-C and progress: one rule for counts, finds and iterators, and a progress total that is
fixed before the search starts.

Ctrl-C is simulated by a progress callback that raises KeyboardInterrupt (the callback runs
between the engine's slices, where a real SIGINT lands too) and, once per form, by a real SIGINT
sent to a child process. At the end, two small things a user trips on: GraphMatcher's
core_1/core_2 after a successful test, and to_cudf() without cuDF.
"""

from __future__ import annotations

import json
import pickle
import signal
import subprocess
import sys
import textwrap

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms.isomorphism import GraphMatcher

import nx_gsm
from nx_gsm.engines import cpu
from nx_gsm.engines.cpu import engine as cpu_engine
from nx_gsm.engines.base import UNLIMITED, Budget, Count, PartialCount

BIG_G = nx.complete_graph(60)
BIG_H = nx.path_graph(9)  # ~1.3e15 monomorphisms: never finishes within a test

SMALL_G = nx.gnp_random_graph(30, 0.3, seed=7)
SMALL_H = nx.cycle_graph(4)


def vf2_count(G, H):
    return sum(1 for _ in GraphMatcher(G, H).subgraph_monomorphisms_iter())


@pytest.fixture(scope="module")
def small_count():
    return vf2_count(SMALL_G, SMALL_H)


@pytest.fixture
def many_slices(monkeypatch):
    """Small searches go through the task window and the sliced iterator in many rounds, so
    they report progress many times (the defaults finish them in one probe or slice)."""
    monkeypatch.setattr(cpu_engine, "_PROBE_STEPS", 16)
    monkeypatch.setattr(cpu_engine, "_ROUND_STEPS", 64)
    monkeypatch.setattr(cpu_engine, "SLICE_STEPS", 64)


def ctrl_c_after(n):
    calls = []

    def cb(found, done, total):
        calls.append((found, done, total))
        if len(calls) == n:
            raise KeyboardInterrupt

    return cb, calls


def root_candidates(G, H):
    plan, _, _ = nx_gsm.api.prepare(G, H, "mono")
    return int(plan.cand_ptr[1] - plan.cand_ptr[0])


# -- count results ----------------------------------------------------------------------------
def test_complete_count_is_an_exact_int_with_partial_false(small_count):
    c = nx_gsm.count_subgraph_monomorphisms(SMALL_G, SMALL_H)
    assert isinstance(c, Count) and c.partial is False and c.reason is None
    assert c == small_count and hash(c) == hash(small_count)
    assert json.dumps({"n": c}) == json.dumps({"n": small_count})
    assert type(c + 1) is int and type(c * 2) is int and type(-c) is int
    assert str(c) == repr(c) == str(small_count)
    back = pickle.loads(pickle.dumps(c))
    assert back == small_count and back.partial is False


def test_partial_count_keeps_its_reason_through_pickle_and_json():
    c = PartialCount(12, "timeout")
    back = pickle.loads(pickle.dumps(c))
    assert type(back) is PartialCount and back.reason == "timeout" and back == 12
    assert json.dumps([c]) == "[12]" and f"{c}" == "12" and type(c + 0) is int


def test_timeout_count_says_timeout():
    c = nx_gsm.count_subgraph_monomorphisms(BIG_G, BIG_H, timeout=0.2)
    assert isinstance(c, PartialCount) and c.partial and c.reason == "timeout" and c > 0


# -- Ctrl-C without timeout=: KeyboardInterrupt reaches the caller ----------------------------
@pytest.mark.parametrize("limit", [None, 10**15])  # the parallel count, the first-k search
def test_ctrl_c_count_raises_without_timeout(limit):
    cb, calls = ctrl_c_after(2)
    with pytest.raises(KeyboardInterrupt):
        nx_gsm.count_subgraph_monomorphisms(BIG_G, BIG_H, limit=limit, progress=cb)
    assert len(calls) == 2


def test_ctrl_c_list_of_iterator_raises_without_timeout():
    cb, calls = ctrl_c_after(2)
    it = nx_gsm.subgraph_monomorphisms(BIG_G, BIG_H, progress=cb)
    with pytest.raises(KeyboardInterrupt):
        list(it)  # never an incomplete list returned as if complete
    assert len(calls) == 2
    assert list(it) == []  # and the iterator is over


def test_ctrl_c_find_and_frames_raise_without_timeout():
    cb, _ = ctrl_c_after(2)
    with pytest.raises(KeyboardInterrupt):
        nx_gsm.find_subgraph_monomorphisms(BIG_G, BIG_H, progress=cb)
    cb, _ = ctrl_c_after(2)
    with pytest.raises(KeyboardInterrupt):
        list(nx_gsm.match_frames(BIG_G, BIG_H, rows_per_frame=10**9, progress=cb))


def test_ctrl_c_inside_the_engine_raises_without_timeout(monkeypatch):
    """An interrupt the engine catches (it lands in compiled code) still reaches the caller."""
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cpu_engine, "run_search", interrupted)
    with pytest.raises(KeyboardInterrupt):
        list(nx_gsm.subgraph_monomorphisms(BIG_G, BIG_H))
    with pytest.raises(KeyboardInterrupt):
        nx_gsm.count_subgraph_monomorphisms(BIG_G, BIG_H, limit=5)
    # an engine used on its own, under the shared default budget, raises too and leaves that
    # budget unmarked for every later search
    plan, _, _ = nx_gsm.api.prepare(BIG_G, BIG_H, "mono")
    with pytest.raises(KeyboardInterrupt):
        list(cpu.CpuEngine().iter_chunks(plan))
    assert not UNLIMITED.partial and UNLIMITED.reason is None


# -- Ctrl-C with timeout=: a partial result, reason "interrupted" -----------------------------
@pytest.mark.parametrize("limit", [None, 10**15])
@pytest.mark.parametrize("timeout", [60, float("inf")])
def test_ctrl_c_count_with_timeout_is_partial(limit, timeout):
    cb, calls = ctrl_c_after(3)
    c = nx_gsm.count_subgraph_monomorphisms(BIG_G, BIG_H, limit=limit, timeout=timeout,
                                            progress=cb)
    assert isinstance(c, PartialCount) and c.partial and c.reason == "interrupted"
    # a lower bound: at least what the last report had found
    assert c >= calls[-1][0] > 0


def test_ctrl_c_iterator_and_find_with_timeout_are_partial():
    cb, calls = ctrl_c_after(3)
    it = nx_gsm.subgraph_monomorphisms(BIG_G, BIG_H, timeout=60, progress=cb)
    rows = list(it)
    assert it.partial and it.reason == "interrupted" and len(rows) == it.count > 0
    # the mappings it did return are real monomorphisms
    for m in rows[:50]:
        inv = {h: g for g, h in m.items()}
        assert all(BIG_G.has_edge(inv[a], inv[b]) for a, b in BIG_H.edges)
    cb, _ = ctrl_c_after(3)
    ms = nx_gsm.find_subgraph_monomorphisms(BIG_G, BIG_H, timeout=60, progress=cb)
    assert ms.partial and ms.count > 0


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is POSIX")
@pytest.mark.parametrize("timeout", [None, "float('inf')"])
def test_sigint_during_list_of_iterator(timeout):
    """A real Ctrl-C: list(...) raises KeyboardInterrupt, or with timeout= ends partial."""
    code = textwrap.dedent(f"""
        import signal, sys
        signal.signal(signal.SIGINT, signal.default_int_handler)
        import networkx as nx, nx_gsm
        said = []
        def started(found, done, total):
            if not said:
                said.append(1)
                print("started", flush=True)
        it = nx_gsm.subgraph_monomorphisms(nx.complete_graph(60), nx.path_graph(9),
                                           timeout={timeout}, progress=started)
        try:
            rows = list(it)
        except KeyboardInterrupt:
            print("KeyboardInterrupt", it.count, flush=True)
            sys.exit(0)
        print("returned", len(rows), it.partial, it.reason, flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "started"
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, err
    words = out.split()
    if timeout is None:
        assert words[0] == "KeyboardInterrupt", out
    else:
        assert words[0] == "returned" and int(words[1]) > 0, out
        assert words[2:] == ["True", "interrupted"], out


# -- progress ---------------------------------------------------------------------------------
def test_count_progress_total_is_fixed_and_done_reaches_it(many_slices, small_count):
    seen = []
    c = nx_gsm.count_subgraph_monomorphisms(SMALL_G, SMALL_H,
                                            progress=lambda *a: seen.append(a))
    assert c == small_count and not c.partial
    assert len(seen) > 3  # reported while it ran, not only at the end
    totals = {t for _, _, t in seen}
    assert totals == {root_candidates(SMALL_G, SMALL_H)}
    done = [d for _, d, _ in seen]
    assert done == sorted(done) and done[0] < done[-1] == seen[0][2]
    found = [f for f, _, _ in seen]
    assert found == sorted(found) and found[-1] == small_count


def test_iterator_progress_moves(many_slices, small_count):
    seen = []
    it = nx_gsm.subgraph_monomorphisms(SMALL_G, SMALL_H, progress=lambda *a: seen.append(a))
    assert sum(1 for _ in it) == small_count and not it.partial
    assert len(seen) > 3
    assert {t for _, _, t in seen} == {root_candidates(SMALL_G, SMALL_H)}
    done = [d for _, d, _ in seen]
    assert done == sorted(done) and 0 < done[len(done) // 2] and done[-1] == seen[0][2]
    assert seen[-1][0] == small_count


def test_prefix_task_progress_counts_prefix_rows(many_slices):
    """count_from's units are its prefix rows: a fixed total, ``done`` never decreasing."""
    plan, _, _ = nx_gsm.api.prepare(SMALL_G, SMALL_H, "mono")
    prefixes = cpu.expand(cpu.plan_arrays(plan), np.zeros((1, 0), dtype=np.int32))
    seen = []
    got = cpu.CpuEngine().count_from(plan, prefixes,
                                     budget=Budget(progress=lambda *a: seen.append(a)))
    assert got == cpu.CpuEngine().count(plan)
    assert seen and {t for _, _, t in seen} == {prefixes.shape[0]}
    done = [d for _, d, _ in seen]
    assert done == sorted(done) and done[-1] <= prefixes.shape[0]


def test_budget_scales_other_units_to_the_fixed_total():
    seen = []
    b = Budget(progress=lambda *a: seen.append(a))
    b.set_total(100)
    b.keep_going(5, 1, 4)    # a quarter, in an engine's own units
    b.keep_going(6, 1, 10)   # a smaller fraction later: done never goes back
    b.keep_going(7, 3)       # no total: units unknown, done stays
    b.keep_going(8, 10, 10)
    assert seen == [(5, 25, 100), (6, 25, 100), (7, 25, 100), (8, 100, 100)]


def test_progress_true_shows_a_bar_that_reaches_its_total(many_slices, monkeypatch,
                                                           small_count):
    import tqdm.auto

    bars = []

    class Recorder(tqdm.auto.tqdm):
        def __init__(self, *a, **kw):
            super().__init__(*a, **kw)
            bars.append(self)

        def close(self):
            self.final = (self.total, self.n)
            super().close()

    monkeypatch.setattr(tqdm.auto, "tqdm", Recorder)
    c = nx_gsm.count_subgraph_monomorphisms(SMALL_G, SMALL_H, progress=True)
    assert c == small_count
    total = root_candidates(SMALL_G, SMALL_H)
    assert len(bars) == 1 and bars[0].final == (total, total)
    list(nx_gsm.subgraph_monomorphisms(SMALL_G, SMALL_H, progress=True))
    assert len(bars) == 2 and bars[1].final == (total, total)


# -- small things: GraphMatcher's core_1/core_2, to_cudf without cuDF -------------------------
@pytest.mark.parametrize("G, H, method, iterator", [
    (nx.cycle_graph(4), nx.path_graph(3), "subgraph_is_isomorphic",
     "subgraph_isomorphisms_iter"),
    (nx.complete_graph(4), nx.path_graph(3), "subgraph_is_isomorphic",
     "subgraph_isomorphisms_iter"),
    (nx.complete_graph(4), nx.path_graph(3), "subgraph_is_monomorphic",
     "subgraph_monomorphisms_iter"),
    (nx.cycle_graph(5), nx.cycle_graph(5), "is_isomorphic", "isomorphisms_iter"),
    (nx.cycle_graph(5), nx.path_graph(5), "is_isomorphic", "isomorphisms_iter"),
])
def test_graph_matcher_cores_hold_the_mapping_found(G, H, method, iterator):
    """As NetworkX's VF2 leaves them: after a successful ``is_*`` call core_1/core_2 hold the
    mapping found (both ways) and ``mapping`` equals it; after a failed one, or once an
    iterator is exhausted, the cores are empty and ``mapping`` keeps the last mapping."""
    ref, ours = GraphMatcher(G, H), nx_gsm.GraphMatcher(G, H)
    answer = getattr(ref, method)()
    assert getattr(ours, method)() is answer
    vf2 = [dict(m) for m in getattr(GraphMatcher(G, H), iterator)()]
    assert bool(ref.core_1) is answer and bool(ours.core_1) is answer
    if answer:
        assert ours.core_1 in vf2 and ours.mapping == ours.core_1
        assert ours.core_2 == {h: g for g, h in ours.core_1.items()}
    else:
        assert ours.core_1 == ours.core_2 == ref.core_2 == {}
    got = list(getattr(ours, iterator)())
    assert ours.core_1 == ours.core_2 == {}
    assert ours.mapping == (got[-1] if got else {})
    list(getattr(ref, iterator)())
    assert ref.core_1 == ref.core_2 == {}


def test_to_cudf_without_cudf_says_what_to_install(monkeypatch):
    ms = nx_gsm.find_subgraph_monomorphisms(nx.path_graph(3), nx.path_graph(2))
    monkeypatch.setitem(sys.modules, "cudf", None)  # import cudf raises ImportError
    with pytest.raises(ImportError, match="cudf.*RAPIDS"):
        ms.to_cudf()
