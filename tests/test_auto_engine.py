"""engine="auto": the CPU probe keeps small searches on the CPU; the cost model sends the rest to
gmatch (counts, big or deep enumerations) or a BFS engine (enumerations that fit).

The GPU engines are replaced by recording stand-ins here (CI has no GPU); the real engines run
the same choices in the GPU check."""

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms import isomorphism as iso

import nx_gsm
from nx_gsm.api import prepare
from nx_gsm.engines.auto import (BFS_MIN_OUTPUT, SMALL_LIMIT, SPACE_GATE, AutoEngine, choose,
                                space_entries)
from nx_gsm.engines.cpu import CpuEngine


class _Recording:
    def __init__(self, name, calls):
        self.name = name
        self.calls = calls
        self.cpu = CpuEngine()

    def count(self, plan, limit=None, budget=None):
        self.calls.append((self.name, "count", limit))
        return self.cpu.count(plan, limit)

    def iter_chunks(self, plan, chunk=4096, limit=None, budget=None):
        self.calls.append((self.name, "iter", limit))
        return self.cpu.iter_chunks(plan, chunk=chunk, limit=limit)


def _auto(budget=8 << 30, names=("gmatch", "gsi", "geneva")):
    calls = []
    eng = AutoEngine({n: _Recording(n, calls) for n in names})
    eng._budget = lambda: budget
    return eng, calls


def _plan(G, H, **kw):
    return prepare(G, H, "mono", **kw)[0]


def test_small_search_stays_on_cpu():
    eng, calls = _auto()
    assert eng.count(_plan(nx.complete_graph(6), nx.path_graph(3))) == 120
    small = _plan(nx.complete_graph(5), nx.path_graph(3))
    assert sum(c.shape[0] for c in eng.iter_chunks(small)) == 60
    assert calls == [] and eng.last_choice[0] == "cpu"


def test_big_count_goes_to_gmatch_and_is_exact():
    eng, calls = _auto()
    G, H = nx.complete_graph(16), nx.path_graph(6)
    assert eng.count(_plan(G, H)) == 16 * 15 * 14 * 13 * 12 * 11
    assert calls == [("gmatch", "count", None)]


def test_small_limits_stay_on_cpu():
    eng, calls = _auto()
    plan = _plan(nx.complete_graph(16), nx.path_graph(6))
    assert eng.count(plan, limit=10) == 10
    assert sum(c.shape[0] for c in eng.iter_chunks(plan, limit=SMALL_LIMIT)) == SMALL_LIMIT
    assert calls == []


def test_enumeration_goes_to_gmatch_unless_a_bfs_engine_wins():
    # 6-node unlabelled pattern: gmatch (the DFS beat both BFS engines on such queries)
    G, H = nx.complete_graph(16), nx.path_graph(6)
    eng, calls = _auto()
    rows = sum(c.shape[0] for c in eng.iter_chunks(_plan(G, H)))
    assert rows == 16 * 15 * 14 * 13 * 12 * 11
    assert calls == [("gmatch", "iter", None)], eng.last_choice
    # edge labels: GENEVA's interval-PCSR
    G = nx.complete_graph(20)
    for u, v in G.edges:
        G[u][v]["w"] = (u + v) % 2
    for u, v in H.edges:
        H[u][v]["w"] = 0
    em = iso.categorical_edge_match("w", None)
    eng, calls = _auto()
    list(eng.iter_chunks(_plan(G, H, edge_match=em)))
    assert calls == [("geneva", "iter", None)], eng.last_choice
    # >= BFS_MIN_OUTPUT rows expected: GSI (chosen, not run: 3.6e7 rows)
    big = _plan(nx.complete_graph(80), nx.path_graph(4))
    name, why, est = choose(big, "collect", ["gmatch", "gsi", "geneva"], 8 << 30)
    assert name == "gsi" and est["output_rows"] >= BFS_MIN_OUTPUT, why
    # ... but a count of it goes to gmatch, and a 1 MiB budget keeps its tables off the BFS
    assert choose(big, "count", ["gmatch", "gsi"], 8 << 30)[0] == "gmatch"
    assert choose(big, "collect", ["gmatch", "gsi"], 1 << 20)[0] == "gmatch"


def test_search_the_probe_cannot_finish_leaves_the_cpu():
    # 1.2e7 matches, ~4e5 steps: past PROBE_MAX
    plan = _plan(nx.complete_graph(60), nx.path_graph(4))
    eng, calls = _auto()
    assert eng.count(plan) == 60 * 59 * 58 * 57 and calls == [("gmatch", "count", None)]


def test_probe_goes_on_while_its_progress_projects_a_small_search(monkeypatch):
    from nx_gsm.engines import auto

    # ~1e4 steps (its centre, then per centre the last leaf's list once and a step per
    # middle leaf): past PROBE_STEPS
    plan = _plan(nx.complete_graph(70), nx.path_graph(3))
    P = auto.plan_arrays(plan)
    assert auto.probe(P, 3) == (70 * 69 * 68, None)
    eng, calls = _auto()
    assert eng.count(plan) == 70 * 69 * 68 and calls == []
    monkeypatch.setattr(auto, "PROBE_MAX", auto.PROBE_STEPS)
    assert auto.probe(P, 3) == (None, None)
    # a projection that stays small (share done stuck at 1/4) stops at PROBE_MAX: 2^11, 2^11,
    # 2^12, 2^13 steps; one that is large stops after the first PROBE_STEPS
    monkeypatch.setattr(auto, "PROBE_MAX", 1 << 14)
    real, steps = auto.run_search, []

    def counting(*a):
        steps.append(a[-1])
        return real(*a)

    big = auto.plan_arrays(_plan(nx.complete_graph(100), nx.path_graph(3)))  # ~2e4 steps
    monkeypatch.setattr(auto, "run_search", counting)
    monkeypatch.setattr(auto, "done_fraction", lambda stk, d: 0.25)
    assert auto.probe(big, 3) == (None, None) and steps == [2048, 2048, 4096, 8192]
    monkeypatch.setattr(auto, "done_fraction", lambda stk, d: 1e-6)
    steps.clear()
    assert auto.probe(big, 3) == (None, None) and steps == [2048]


def test_done_fraction_counts_finished_subtrees():
    from nx_gsm.engines.auto import done_fraction
    from nx_gsm.engines.cpu.kernels import CUR, HI, LO, STACK_ROWS

    stk = np.zeros((STACK_ROWS, 3), dtype=np.int64)
    stk[LO], stk[HI] = [0, 10, 0], [4, 20, 5]
    stk[CUR] = [2, 15, 3]  # root 1 of 4 open, its child 4 of 10 open, 3 of 5 examined
    assert done_fraction(stk, 2) == pytest.approx(1 / 4 + 4 / 40 + 3 / 200)
    assert done_fraction(stk, 0) == pytest.approx(2 / 4)


def test_large_candidate_space_skips_the_probe():
    plan = _plan(nx.complete_graph(500), nx.path_graph(3))  # 2 x 500 x 499 space entries
    assert space_entries(plan) > SPACE_GATE
    eng, calls = _auto()
    assert eng._pick(plan, "count", None) == ("gmatch", None, None)
    assert "_space" not in plan.__dict__  # neither a probe nor the estimate built it
    assert eng.count(plan) == 500 * 499 * 498
    assert calls == [("gmatch", "count", None)] and "candidate space" in eng.last_choice[1]
    small = _plan(nx.complete_graph(40), nx.path_graph(3))
    assert space_entries(small) == 2 * 40 * 39


def test_probe_rows_are_the_answer_of_a_small_enumeration():
    G, H = nx.gnp_random_graph(30, 0.3, seed=2), nx.path_graph(3)
    eng, calls = _auto()
    got = np.concatenate(list(eng.iter_chunks(_plan(G, H), chunk=7)))
    ref = np.concatenate(list(CpuEngine().iter_chunks(_plan(G, H))))
    assert calls == [] and eng.last_choice == ("cpu", "the CPU probe finished the search")
    assert sorted(map(tuple, got.tolist())) == sorted(map(tuple, ref.tolist()))
    assert sum(c.shape[0] for c in eng.iter_chunks(_plan(G, H), limit=SMALL_LIMIT + 1)) == \
        ref.shape[0]


def test_enumeration_too_deep_goes_to_gmatch():
    plan = _plan(nx.complete_graph(12), nx.path_graph(9))  # 9 > BFS_MAX_K nodes
    assert choose(plan, "collect", ["gmatch", "gsi"], 1 << 40)[0] == "gmatch"


def test_graph_past_the_device_budget_goes_to_the_partitioned_engine():
    G = nx.complete_graph(16)
    eng, calls = _auto(budget=1024)  # the graph's arrays alone exceed half of 1 KiB
    eng.engines["partitioned"] = _Recording("partitioned", calls)
    assert eng.count(_plan(G, nx.path_graph(6))) == 16 * 15 * 14 * 13 * 12 * 11
    assert calls == [("partitioned", "count", None)]
    assert "exceeds" in eng.last_choice[1]


def test_choice_without_gmatch_uses_what_is_there():
    plan = _plan(nx.complete_graph(16), nx.path_graph(6))
    assert choose(plan, "count", ["gsi"], 1 << 30)[0] == "gsi"
    assert choose(plan, "count", [], 1 << 30)[0] == "cpu"


@pytest.mark.parametrize("limit", [None, 5])
def test_explain_reports_the_choice_and_estimates(limit):
    e = nx_gsm.explain(nx.gnp_random_graph(200, 0.2, seed=1), nx.cycle_graph(5), limit=limit)
    assert e["engine"] == "cpu" and e["reason"]
    assert len(e["estimates"]["rows"]) == 5 and e["estimates"]["output_rows"] > 0
    assert set(e["alternatives"]) >= {"gmatch", "gsi", "geneva"}


def test_auto_is_cpu_without_a_gpu():
    from nx_gsm.engines import available_engines, get_engine

    if available_engines()["gmatch"] is not None:
        assert get_engine("auto").name == "cpu"
    assert nx_gsm.count_subgraph_monomorphisms(nx.complete_graph(5), nx.path_graph(3)) == 60
