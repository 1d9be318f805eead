"""Injected device faults in the GPU engines, under Numba's CUDA simulator (CI, no GPU needed):
one test per engine (a case of ``tests/gpu_sim_fault_cases.py``, each in its own child process)."""

import pytest
from sim_runner import sim_cases

pytestmark = pytest.mark.sim  # minutes under the simulator: `.ci/run` runs them


@pytest.mark.parametrize("case", sim_cases("gpu_sim_fault_cases.py"))
def test_engine_recovers_from_injected_device_faults(case):
    case.check()


def test_fault_hook_rejects_unknown_sites():
    from nx_gsm.engines.gpu import faults

    with pytest.raises(ValueError, match="unknown fault site"):
        with faults.inject("nowhere"):
            pass
    with pytest.raises(ValueError, match="unknown fault kind"):
        with faults.inject("bfs", "meteor"):
            pass


def test_device_caches_are_per_thread_shared_and_dropped_with_their_graph():
    import gc
    import threading

    from nx_gsm.engines.gpu import clear_device_caches, faults

    class Engine(faults.Recovery):
        name = "test"
        _device_caches = ("_gcache", "_kept")
        _kept = faults.thread_cache("test_kept")

        def __init__(self):
            self._faults = []

    class Graph:  # any weakly referenceable graph object
        pass

    clear_device_caches()
    a, b = Engine(), Engine()
    a._kept = "launches"
    assert b._kept == "launches"  # one thread's engine objects share it
    seen = []
    t = threading.Thread(target=lambda: seen.append((Engine()._kept, Engine()._gcache)))
    t.start()
    t.join()
    assert seen == [(None, None)]  # another thread has its own
    G = Graph()
    a.adopt_graph(G, ["device arrays"])
    assert b._gcache[0]() is G and b._gcache[1] == ("device arrays",)
    del G
    gc.collect()
    assert b._gcache is None  # the graph died: its arrays are not kept for the next one
    b._recover(RuntimeError("a device fault"))
    assert a._kept is None  # a fault drops what the thread's engines keep
    a._kept = "again"
    clear_device_caches()
    assert b._kept is None
