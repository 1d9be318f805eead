"""Kept launches (``common.Launches``): after Numba's first launch, a call site's later launches
reuse the marshalled arguments and call the driver directly. Real card only (the simulator has
no driver launch)."""

import functools

import numpy as np
import pytest

from nx_gsm.engines.gpu.common import Launches, kernel_array

pytestmark = pytest.mark.gpu  # the card: tests/conftest.py skips it without a device


@functools.cache
def _kernel():
    # defined on first use: collecting this file on a machine without CUDA must not need it
    from numba import cuda

    @cuda.jit
    def axpy(out, x, y, a, n):
        i = cuda.grid(1)
        if i < n:
            out[i] = a * x[i] + y[i]

    return axpy


def _arr(v, dt=np.int64):
    import cupy as cp

    return kernel_array(cp.asarray(np.asarray(v, dtype=dt)))


def test_kept_launches_equal_numba_launches():
    _axpy = _kernel()
    launch = Launches()
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
    _axpy = _kernel()
    launch = Launches()
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


def test_cupy_arrays_marshalled_without_numba():
    """CuPy arrays straight in: new objects each launch (views at an offset included) take the
    kept path's own marshalling, checked against Numba's at the site's first launch; a strided
    view (another Numba layout than the compiled one) goes through Numba's launch."""
    import cupy as cp

    _axpy = _kernel()
    launch = Launches()
    rng = np.random.default_rng(2)
    out = cp.zeros(1000, dtype=np.int64)
    x = cp.asarray(rng.integers(0, 99, 1000))
    y = cp.asarray(rng.integers(0, 99, 1000))
    launch("c", _axpy, 8, 128, out, x, y, 1, 1000)
    site = next(iter(launch._sites.values()))
    assert all(f is not None for f in site.fast[:3])  # the three arrays: fast-marshalled
    for step, off in enumerate((0, 100, 37)):
        xv, yv, ov = x[off:], y[off:], out[off:]  # new objects, other pointers and shapes
        n = 1000 - off
        launch("c", _axpy, 8, 128, ov, xv, yv, step + 2, n)
        assert (ov.get() == (step + 2) * xv.get() + yv.get()).all(), step
    assert launch.kept == 3
    xs = x[::2]  # strided: layout "A", not the compiled "C"
    o2 = cp.zeros(500, dtype=np.int64)
    launch("c", _axpy, 4, 128, o2, xs, y[:500], 3, 500)
    assert (o2.get() == 3 * xs.get() + y[:500].get()).all()
    assert launch.kept == 3
