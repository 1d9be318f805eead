"""Device faults: what counts as one, how an engine recovers, and (from :mod:`.injection`) the
test hook that injects them at named sites.

A GPU engine that meets a device fault (out of memory, a failed launch, a CUDA runtime or driver
error) never passes it to the user: it frees what it holds, retries once with half the memory
budget when the fault was an out-of-memory, and otherwise finishes the search on the CPU engine.
:class:`Recovery` is that policy, shared by gmatch, gsi and geneva. An enumeration never meets a
fault after it has emitted rows it cannot account for: gmatch streams batches whose device work is
complete and hands exactly the unemitted partial matches to the CPU; gsi and geneva hold a search's
rows on the host until its device work is complete (``hold=True``). GAMMA finishes a faulted batch
on the incremental matcher's CPU path and reloads its device graph before the next batch.
The tests prove this by injecting faults at every allocation site and at the kernel launch
(``tests/test_gpu_faults_sim.py`` under the simulator in CI, ``tests/test_card_faults.py`` on the
card with CuPy's memory-pool statistics as the leak check)::

    from nx_gsm.engines.gpu import faults
    with faults.inject("dfs_buffers", "oom"):
        n = nx_gsm.count_subgraph_monomorphisms(G, H, engine="gmatch")  # still exact
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
import weakref

from .injection import SITES, InjectedLaunchError, InjectedOutOfMemory, hits, inject, point

__all__ = ["SITES", "InjectedOutOfMemory", "InjectedLaunchError", "inject", "point",
           "device_errors", "is_oom", "hits", "release_device_memory", "Recovery",
           "clear_device_caches"]

log = logging.getLogger("nx_gsm.gpu")


@functools.cache
def device_errors():
    """The exception classes that mean "the device failed", not "the input is wrong" (looked
    up once: without CuPy each failed import searched the path again, ~90 us a search)."""
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


class _PerThread(threading.local):
    def __init__(self):
        self.caches = {}


_PER_THREAD = _PerThread()


def thread_cache(name):
    """A GPU engine attribute kept per thread and shared by every engine object of the thread.

    The API makes an engine object per call, so caches held by the object -- the data graph on
    the device, kept launches, the kept plan slots and buffers -- were made again on every
    call (~0.7 ms of a yeast-16 count on the card). Shared per thread they
    outlive the object; per thread, because an engine's launches and caches are not made for
    two threads at once. :meth:`Recovery._recover` sets them to None after a fault (the
    thread's engines then make them again); :func:`clear_device_caches` drops them."""
    def get(self):
        return _PER_THREAD.caches.get(name)

    def put(self, value):
        _PER_THREAD.caches[name] = value

    return property(get, put, doc=f"per-thread device cache {name!r} (faults.thread_cache)")


def clear_device_caches():
    """Drop this thread's device caches (the data graph, kept launches, plan slots and
    buffers) and give the memory pools' free blocks back to the device."""
    _PER_THREAD.caches.clear()
    release_device_memory()


def _forget_graph(store, key="graph"):
    """Weak-reference callback: the cached graph died, so its device arrays (``store[key]``)
    go too (they are the cache's alone) instead of waiting for the next graph."""
    def dead(ref):
        got = store.get(key)
        if got is not None and got[0] is ref:
            store.pop(key, None)
    return dead


class Recovery:
    """The device-fault policy of a GPU engine (mixed into gmatch, gsi and geneva).

    The engine provides ``name``, ``memory_budget`` (bytes or None), a ``_device_caches``
    tuple naming the attributes that hold device uploads (dropped after a fault: a failed device
    may have left them unusable) and ``_fallback(plan)`` (the engine to run a plan this one
    cannot, or None). Empty plans, fallback plans and non-positive limits are settled here,
    before any device work, so the engines' ``_count``/``_iter`` only ever see real searches.
    ``last_stats["recovered"]`` says how a faulted run ended and ``last_stats["faults"]`` lists
    the faults met, as strings. The data graph's device arrays (``_gcache``) are kept here too.
    """

    _device_caches = ("_gcache", "_acache")
    _gcache = thread_cache("graph")  # (weak reference to the data graph, its device arrays)
    _acache = thread_cache("adjbits")  # (weak reference to the data graph, its bitmap or None)

    def _graph_arrays(self, G):
        """``G``'s adjacency on the device, uploaded once per data graph and thread (kept in
        ``_gcache``, shared by the thread's GPU engines)."""
        from .residency import cached_graph_arrays

        arrs, self._gcache = cached_graph_arrays(self._gcache, G, self.xp,
                                                 _forget_graph(_PER_THREAD.caches))
        return arrs

    def _adjacency(self, G):
        """``G``'s adjacency bitmap on the device (``residency.device_adjacency``), or None where
        it has none; made once per data graph and thread, like :meth:`_graph_arrays`."""
        from .residency import device_adjacency
        from .device import memory_budget

        got = self._acache
        if got is not None and got[0]() is G:
            return got[1]
        adj = device_adjacency(G, self.xp, memory_budget(self.memory_budget))
        try:
            self._acache = (weakref.ref(G, _forget_graph(_PER_THREAD.caches, "adjbits")), adj)
        except TypeError:  # a graph object without weak references: not cached
            pass
        return adj

    def adopt_graph(self, G, arrays):
        """Take ``arrays`` (kernel-ready, as ``residency.graph_to_device`` makes them) as ``G``'s
        device adjacency: the partitioned engine uploads the next part while one is searched."""
        self._gcache = (weakref.ref(G, _forget_graph(_PER_THREAD.caches)), tuple(arrays))

    def _recover(self, exc):
        """After a device fault: drop what this engine holds on the device and note it; True
        when the fault was an out-of-memory (worth one retry with half the budget)."""
        for attr in self._device_caches:
            setattr(self, attr, None)
        release_device_memory()
        what = f"{type(exc).__name__}: {exc}"
        self._faults.append(what)
        # a string, not the exception: a log record that kept the exception would keep its
        # traceback's frames, and with them device arrays, alive in any handler that stores records
        log.warning("%s: device fault (%s); recovering", self.name, what)
        return is_oom(exc)

    @contextlib.contextmanager
    def _halved_budget(self):
        from .device import memory_budget

        old = self.memory_budget
        self.memory_budget = max(1 << 20, memory_budget(old) // 2)
        try:
            yield
        finally:
            self.memory_budget = old

    def _note_recovery(self, how):
        self.last_stats["faults"] = list(self._faults)
        self.last_stats["recovered"] = how

    def _count_recovering(self, run, plan, limit, budget):
        """``run(plan, limit, budget)`` on the device; after a fault, once more with half the
        memory budget (out-of-memory only), then the CPU engine."""
        if plan.empty:
            return 0
        fb = self._fallback(plan)
        if fb is not None:
            return fb.count(plan, limit, budget=budget)
        if limit is not None and limit <= 0:
            return 0
        self._faults = []
        errs = device_errors()
        try:
            return run(plan, limit, budget)
        except errs as exc:
            oom = self._recover(exc)
        # retried outside the handler: the first fault's traceback (and the device arrays its
        # frames hold) is gone by now, so the retry has that memory back
        if oom:
            release_device_memory()
            try:
                with self._halved_budget():
                    got = run(plan, limit, budget)
                self._note_recovery("retried on the device with half the memory budget")
                return got
            except errs as exc:
                self._recover(exc)
        from ..cpu import CpuEngine

        got = CpuEngine().count(plan, limit, budget=budget)
        self._note_recovery("counted on the CPU engine")
        return got

    def _iter_recovering(self, run, plan, chunk, limit, budget, hold):
        """Rows of ``run(plan, chunk, limit, budget)`` (host arrays), recovered as in
        :meth:`_count_recovering`.

        With ``hold`` the rows are kept on the host until the device search is complete, so a
        fault never follows an emitted row and the retry or the CPU engine starts from nothing.
        Without it ``run`` must itself finish any fault met after its first row (gmatch's
        batches); a fault that still escapes after rows were emitted is a bug and is raised.
        """
        if plan.empty:
            return
        fb = self._fallback(plan)
        if fb is not None:
            yield from fb.iter_chunks(plan, chunk=chunk, limit=limit, budget=budget)
            return
        if limit is not None and limit <= 0:
            return
        self._faults = []
        errs = device_errors()
        emitted = 0
        oom = False
        try:
            if hold:
                held = list(run(plan, chunk, limit, budget))
                self.last_stats["held_rows"] = int(sum(r.shape[0] for r in held))
                yield from held
                return
            for rows in run(plan, chunk, limit, budget):
                emitted += rows.shape[0]
                yield rows
            return
        except errs as exc:
            if emitted:
                raise
            oom = self._recover(exc)
        if oom:
            release_device_memory()
            try:
                with self._halved_budget():
                    held = list(run(plan, chunk, limit, budget))
                self._note_recovery("retried on the device with half the memory budget")
                yield from held
                return
            except errs as exc:
                self._recover(exc)
        from ..cpu import CpuEngine

        self._note_recovery("enumerated on the CPU engine")
        yield from CpuEngine().iter_chunks(plan, chunk=chunk, limit=limit, budget=budget)
