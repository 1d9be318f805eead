"""Timeouts, partial results, progress callbacks (the search runs in slices)."""

import time

import networkx as nx
import pytest

import nx_gsm
from nx_gsm.engines.base import Budget, Count, PartialCount

BIG_G = nx.complete_graph(60)
BIG_H = nx.path_graph(9)  # 60!/51! ~ 1.3e15 monomorphisms: never finishes


@pytest.fixture(scope="module", autouse=True)
def warm():
    nx_gsm.count_subgraph_monomorphisms(BIG_G, BIG_H, timeout=0.2)
    list(nx_gsm.subgraph_monomorphisms(BIG_G, BIG_H, timeout=0.2))


def test_count_timeout_returns_partial_within_a_second():
    t = time.monotonic()
    c = nx_gsm.count_subgraph_monomorphisms(BIG_G, BIG_H, timeout=1.0)
    elapsed = time.monotonic() - t
    assert isinstance(c, PartialCount) and c.partial and c > 0
    assert elapsed < 2.0, elapsed


def test_iterator_timeout_marks_partial():
    it = nx_gsm.subgraph_monomorphisms(BIG_G, BIG_H, timeout=0.5)
    t = time.monotonic()
    n = sum(1 for _ in it)
    assert time.monotonic() - t < 1.5
    assert it.partial and it.reason == "timeout" and n == it.count > 0


def test_complete_runs_are_not_partial():
    it = nx_gsm.subgraph_monomorphisms(nx.complete_graph(5), nx.path_graph(3), timeout=30)
    assert len(list(it)) == 60 and not it.partial
    c = nx_gsm.count_subgraph_monomorphisms(nx.complete_graph(5), nx.path_graph(3), timeout=30)
    assert type(c) is Count and not c.partial and c.reason is None and c == 60


def test_find_timeout_partial_matchset():
    ms = nx_gsm.find_subgraph_monomorphisms(BIG_G, BIG_H, timeout=0.3)
    assert ms.partial and ms.count > 0


def test_progress_callback_sees_growing_counts():
    seen = []
    nx_gsm.count_subgraph_monomorphisms(BIG_G, BIG_H, timeout=0.5,
                                        progress=lambda f, d, t: seen.append((f, d, t)))
    assert seen and seen[-1][0] >= seen[0][0] and seen[-1][2] > 0


@pytest.mark.parametrize("bad, exc", [(-1, ValueError), ("5", TypeError), (True, TypeError)])
def test_bad_timeout(bad, exc):
    with pytest.raises(exc):
        Budget(bad)
