"""Host-side bookkeeping of the GPU engines under Numba's CUDA simulator (run by
test_gpu_host_glue.py in a subprocess): the kept plan slots (``residency.PlanSlots``) hold every
plan array as given, through growth, row-width changes and back; gmatch's memory budget follows
its override and ``nx.config`` at once while reusing the free-memory read; exact sums."""

import os
import sys

assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", "run with NUMBA_ENABLE_CUDASIM=1"

import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402
from sim_runner import run_cases, sim_case  # noqa: E402

from nx_gsm.engines.gpu import common, device, residency  # noqa: E402
from nx_gsm.engines.gpu.gmatch import GMatchEngine  # noqa: E402


def fail(msg):
    raise AssertionError(msg)


class Owner:
    pass


@sim_case
def slots_round_trip():
    rng = np.random.default_rng(7)
    slots = residency.PlanSlots(np)
    shapes = [((5,), np.int32), ((3, 4), np.uint8), ((9,), np.int64), ((2, 7), np.int32)]
    for step in range(12):
        # grow, shrink and change the 2-D arrays' row widths between searches
        arrays = []
        for (shape, dt) in shapes:
            s = tuple(max(1, int(x * (1 + (step % 4)) + rng.integers(0, 3))) for x in shape)
            arrays.append(rng.integers(0, 100, size=s).astype(dt))
        owner = Owner()
        got = slots.place(arrays, owner)
        if got is None:
            fail("free slots refused")
        for a, v in zip(arrays, got):
            if v.dtype != a.dtype or v.ndim != a.ndim or v.shape[1:] != a.shape[1:]:
                fail(f"slot view {v.dtype} {v.shape} for an array {a.dtype} {a.shape}")
            if not np.array_equal(np.asarray(v)[: a.shape[0]], a):
                fail(f"step {step}: a slot does not hold its array {a.shape}")
        if slots.place(arrays, Owner()) is not None:
            fail("slots given to a second plan while the first lives")
        del owner
    if slots.layouts < 2:
        fail("growing arrays never laid the slots out again")


@sim_case
def budget_follows_settings():
    eng = GMatchEngine()
    free = device.free_and_total()[0]
    base = eng._budget()
    if base != device.memory_budget(None, free=free):
        fail(f"budget {base} is not the free memory's share")
    eng.memory_budget = 4 << 20
    if eng._budget() != 4 << 20:
        fail("an engine's override did not apply at once")
    eng.memory_budget = None
    nx.config.backends.gsm.device_memory_budget = 3 << 20
    try:
        if eng._budget() != 3 << 20:
            fail("nx.config's device_memory_budget did not apply at once")
    finally:
        nx.config.backends.gsm.device_memory_budget = None
    if eng._budget() != base:
        fail("the budget did not return to the free memory's share")


@sim_case
def exact_sums():
    big = np.full(5, 2**62, dtype=np.int64)  # the int64 sum would overflow
    if common.exact_sum(big) != 5 * 2**62:
        fail("overflowing sum not exact")
    small = np.arange(1000, dtype=np.int64)
    if common.exact_sum(small) != 999 * 1000 // 2 or common.exact_sum(small[:0]) != 0:
        fail("small sums wrong")
    if common.exact_sum([3, 4]) != 7:
        fail("a list is not summed")


if __name__ == "__main__":
    sys.exit(run_cases())
