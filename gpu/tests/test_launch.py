"""Kept launches (``common._Launches``): after Numba's first launch, a call site's later launches
reuse the marshalled arguments and call the driver directly. Real card only (the simulator has
no driver launch)."""

import numpy as np
import pytest
from numba import cuda

from nx_gsm.engines.gpu.common import _Launches, _kernel_array

cp = pytest.importorskip("cupy")


@cuda.jit
def _axpy(out, x, y, a, n):
    i = cuda.grid(1)
    if i < n:
        out[i] = a * x[i] + y[i]


def _arr(v, dt=np.int64):
    return _kernel_array(cp.asarray(np.asarray(v, dtype=dt)))


def test_kept_launches_equal_numba_launches():
    launch = _Launches()
    rng = np.random.default_rng(1)
    out = _arr(np.zeros(1000))
    x, y = _arr(rng.integers(0, 99, 1000)), _arr(rng.integers(0, 99, 1000))
    xs, ys = x.copy_to_host(), y.copy_to_host()
    for step in range(6):
        a = int(step) - 2
        n = 1000 - 100 * step
        if step == 3:  # new array objects: re-marshalled, still kept
            y = _arr(rng.integers(0, 99, 1000))
            ys = y.copy_to_host()
        launch("s", _axpy, -(-n // 128), 128, out, x, y, a, n)
        got = out.copy_to_host()
        assert got[:n].tolist() == (a * xs[:n] + ys[:n]).tolist(), step
    assert launch.kept == 5  # every launch after Numba's first


def test_other_types_and_sites_go_through_numba():
    launch = _Launches()
    out = _arr(np.zeros(8))
    x, y = _arr(np.arange(8)), _arr(np.ones(8))
    launch("s", _axpy, 1, 32, out, x, y, 2, 8)
    # an int32 array where the kept kernel takes int64: Numba's launch (and its own compile)
    out32, x32, y32 = (_arr(v, np.int32) for v in (np.zeros(8), np.arange(8), np.ones(8)))
    launch("s", _axpy, 1, 32, out32, x32, y32, 3, 8)
    assert out32.copy_to_host().tolist() == [3 * i + 1 for i in range(8)]
    assert launch.kept == 0
    # a float scalar where an int was kept: Numba's launch
    launch("s", _axpy, 1, 32, out32, x32, y32, 2, 8)
    launch("s", _axpy, 1, 32, out32, x32, y32, 1.0, 8)
    assert launch.kept == 1
    launch("t", _axpy, 1, 32, out, x, y, 5, 8)  # another site: its own first launch
    launch("t", _axpy, 1, 32, out, x, y, 4, 8)
    assert out.copy_to_host().tolist() == [4 * i + 1 for i in range(8)]
    assert launch.kept == 2
