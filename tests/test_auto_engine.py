"""engine="auto": the CPU probe keeps small searches on the CPU; the rest go to the GPU engine.

The GPU engine is replaced by a recording stand-in here (CI has no GPU); the real pairing runs
in the GPU check."""

import networkx as nx

import nx_gsm
from nx_gsm.api import prepare
from nx_gsm.engines.auto import SMALL_LIMIT, AutoEngine
from nx_gsm.engines.cpu import CpuEngine


class _RecordingGpu:
    name = "fake-gpu"

    def __init__(self):
        self.calls = []
        self.cpu = CpuEngine()

    def count(self, plan, limit=None, budget=None):
        self.calls.append(("count", limit))
        return self.cpu.count(plan, limit)

    def iter_chunks(self, plan, chunk=4096, limit=None, budget=None):
        self.calls.append(("iter", limit))
        return self.cpu.iter_chunks(plan, chunk=chunk, limit=limit)


def _plan(G, H):
    return prepare(G, H, "mono")[0]


def test_small_search_stays_on_cpu():
    gpu = _RecordingGpu()
    eng = AutoEngine(gpu)
    assert eng.count(_plan(nx.complete_graph(6), nx.path_graph(3))) == 120
    assert gpu.calls == [] and eng.last_choice[0] == "cpu"


def test_big_search_goes_to_gpu_and_is_exact():
    gpu = _RecordingGpu()
    eng = AutoEngine(gpu)
    G, H = nx.complete_graph(16), nx.path_graph(6)
    assert eng.count(_plan(G, H)) == 16 * 15 * 14 * 13 * 12 * 11
    assert gpu.calls == [("count", None)] and eng.last_choice[0] == "fake-gpu"


def test_small_limits_stay_on_cpu_big_enumerations_go_to_gpu():
    gpu = _RecordingGpu()
    eng = AutoEngine(gpu)
    plan = _plan(nx.complete_graph(16), nx.path_graph(6))
    assert eng.count(plan, limit=10) == 10
    assert sum(c.shape[0] for c in eng.iter_chunks(plan, limit=SMALL_LIMIT)) == SMALL_LIMIT
    assert gpu.calls == []
    small = _plan(nx.complete_graph(5), nx.path_graph(3))
    assert sum(c.shape[0] for c in eng.iter_chunks(small)) == 60
    assert gpu.calls == [("iter", None)]


def test_auto_is_cpu_without_a_gpu():
    from nx_gsm.engines import available_engines, get_engine

    if available_engines()["gmatch"] is not None:
        assert get_engine("auto").name == "cpu"
    assert nx_gsm.count_subgraph_monomorphisms(nx.complete_graph(5), nx.path_graph(3)) == 60
