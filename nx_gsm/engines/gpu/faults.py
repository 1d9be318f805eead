"""Device faults: what counts as one, and a test hook that injects them at named sites.

A GPU engine that meets a device fault (out of memory, a failed launch, a CUDA runtime or driver
error) never passes it to the user: it frees what it holds, retries once with half the memory
budget when the fault was an out-of-memory, and otherwise finishes the search on the CPU engine
(for an enumeration already under way, from exactly the partial matches it had not yet emitted).
The tests prove this by injecting faults at every allocation site and at the kernel launch
(``tests/test_gpu_faults_sim.py`` under the simulator in CI, ``gpu/tests/test_faults.py`` on the
card with CuPy's memory-pool statistics as the leak check)::

    from nx_gsm.engines.gpu import faults
    with faults.inject("dfs_buffers", "oom"):
        n = nx_gsm.count_subgraph_monomorphisms(G, H, engine="gmatch")  # still exact
"""

from __future__ import annotations

import contextlib
import threading

__all__ = ["SITES", "InjectedOutOfMemory", "InjectedLaunchError", "inject", "point",
           "device_errors", "is_oom", "hits", "release_device_memory"]

#: where the engines allocate device memory or launch kernels
SITES = ("graph_upload", "plan_upload", "bfs", "dfs_buffers", "output", "launch")


class InjectedOutOfMemory(MemoryError):
    """Raised by :func:`point` at an armed site: stands for a device allocation failure."""


class InjectedLaunchError(RuntimeError):
    """Raised by :func:`point` at an armed site: stands for a failed kernel launch."""


_lock = threading.Lock()
_armed = {}  # site -> [kind, shots left, hits to skip first]
hits = {}  # site -> times the site was reached (so a test can tell a fault really fired)


@contextlib.contextmanager
def inject(site, kind="oom", times=1, skip=0):
    """Arm ``site`` to fail ``times`` times (after ``skip`` passes) while the block runs.

    ``kind`` is ``"oom"`` (:class:`InjectedOutOfMemory`) or ``"launch"``
    (:class:`InjectedLaunchError`). ``times=None`` fails every time.
    """
    if site not in SITES:
        raise ValueError(f"unknown fault site {site!r}; sites: {', '.join(SITES)}")
    if kind not in ("oom", "launch"):
        raise ValueError(f"unknown fault kind {kind!r}; use 'oom' or 'launch'")
    with _lock:
        _armed[site] = [kind, times, int(skip)]
        hits[site] = 0
    try:
        yield
    finally:
        with _lock:
            _armed.pop(site, None)


def point(site):
    """Mark a fault site; raises the injected fault when the site is armed (cheap otherwise)."""
    if not _armed:
        return
    with _lock:
        hits[site] = hits.get(site, 0) + 1
        arm = _armed.get(site)
        if arm is None:
            return
        if arm[2] > 0:
            arm[2] -= 1
            return
        if arm[1] is not None:
            if arm[1] <= 0:
                return
            arm[1] -= 1
        kind = arm[0]
    if kind == "oom":
        raise InjectedOutOfMemory(f"injected device out-of-memory at {site}")
    raise InjectedLaunchError(f"injected kernel launch failure at {site}")


def device_errors():
    """The exception classes that mean "the device failed", not "the input is wrong"."""
    errs = [MemoryError, InjectedLaunchError]
    try:
        import cupy

        errs += [cupy.cuda.memory.OutOfMemoryError, cupy.cuda.runtime.CUDARuntimeError,
                 cupy.cuda.driver.CUDADriverError]
    except Exception:  # no CuPy (simulator, CPU machines)
        pass
    try:
        from numba.cuda.cudadrv import driver

        errs += [driver.CudaAPIError, driver.CudaDriverError, driver.LinkerError]
    except Exception:
        pass
    try:
        from numba.cuda.cudadrv.error import CudaSupportError

        errs.append(CudaSupportError)
    except Exception:
        pass
    return tuple(errs)


def is_oom(exc):
    """True for an out-of-memory fault (worth a retry with a smaller budget)."""
    if isinstance(exc, MemoryError):
        return True
    name = type(exc).__name__
    return name == "OutOfMemoryError" or "OUT_OF_MEMORY" in str(exc).upper()


def release_device_memory():
    """Return CuPy's cached blocks to the driver (after a fault, before retrying)."""
    try:
        import cupy

        cupy.get_default_memory_pool().free_all_blocks()
        cupy.get_default_pinned_memory_pool().free_all_blocks()
    except Exception:
        pass
