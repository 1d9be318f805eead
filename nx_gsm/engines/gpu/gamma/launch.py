"""Host pieces of GAMMA's launches: kernel arguments kept between launches
(:class:`KernelArgs`) and a launch's device time (:class:`Clock`)."""

from __future__ import annotations

import time

import numpy as np

from ..common import Launches, kernel_array

__all__ = ["KernelArgs", "Clock"]


class KernelArgs:
    """Kernel arguments kept between launches, by name: wrapping a device array for Numba (or
    uploading a host table) costs tens of microseconds per argument and launch, a good part of
    a small batch's latency."""

    def __init__(self, xp):
        self.xp = xp
        self._hits = {}
        self.launch = Launches()

    def wrap(self, name, x):
        """``x`` (a host table or a device array) as a kernel argument, uploaded and wrapped
        once while ``x`` is the same object. In-place changes to a device array are seen; a
        replaced array (a grown PMA arena) is wrapped afresh."""
        hit = self._hits.get(name)
        if hit is None or hit[0] is not x:
            hit = self._hits[name] = (x, kernel_array(self.xp.asarray(x)))
        return hit[1]

    def staged(self, prefix, arrays):
        """The host arrays ``arrays`` (``(array, dtype)`` pairs) that change every launch, on the
        device: ``(views, args)``, each array's device view (its length) and its kernel argument
        (a region of at least that length: the kernels take the lengths as arguments). All of
        a prefix's arrays are regions of one kept device buffer, filled from a kept pinned host
        buffer by one asynchronous copy: a CuPy upload costs ~0.13 ms of the host's time per
        array on the card's host and a copy kernel per region ~30 us (profiled), this one
        copy tens of microseconds. Regions grow by powers of two (the buffers are laid out
        afresh then). Before the host buffer is written again, the copy that last read it is
        waited for (it queues behind whatever the device runs)."""
        xp = self.xp
        lens = [int(np.size(x)) for x, _ in arrays]
        dts = [np.dtype(dt) for _, dt in arrays]
        st = self._hits.get(("staged", prefix))
        if st is None or st["dts"] != dts or any(n > c for n, c in zip(lens, st["caps"])):
            caps = [1 << max(0, n - 1).bit_length() for n in lens]
            words = [-(-c * dt.itemsize // 8) for c, dt in zip(caps, dts)]
            offs = np.concatenate([[0], np.cumsum(words)]).astype(np.int64)
            total = max(1, int(offs[-1]))
            if xp is np:
                dev = host = np.zeros(total, dtype=np.int64)
            else:
                dev = xp.zeros(total, dtype=np.int64)
                mem = xp.cuda.alloc_pinned_memory(8 * total)
                host = np.frombuffer(mem, dtype=np.int64, count=total)
            regions = [(int(offs[i]), int(offs[i + 1])) for i in range(len(arrays))]
            st = {"dts": dts, "caps": caps, "offs": offs, "dev": dev, "host": host,
                  "hv": [host[a:b].view(dt) for (a, b), dt in zip(regions, dts)],
                  "dv": [dev[a:b].view(dt) for (a, b), dt in zip(regions, dts)],
                  "event": None}
            st["args"] = [kernel_array(v) for v in st["dv"]]
            self._hits[("staged", prefix)] = st
        if st["event"] is not None:
            st["event"].synchronize()
        end = 0
        for i, (x, _) in enumerate(arrays):
            if lens[i]:
                st["hv"][i][:lens[i]] = np.ravel(x)
                end = max(end, 8 * int(st["offs"][i]) + lens[i] * dts[i].itemsize)
        if xp is not np and end:
            st["dev"].data.copy_from_host_async(st["host"].ctypes.data, end)
            if st["event"] is None:
                st["event"] = xp.cuda.Event(block=False, disable_timing=True)
            st["event"].record()
        return [v[:n] for v, n in zip(st["dv"], lens)], st["args"]

    def buffer(self, name, shape, dtype):
        """(device array, kernel argument): a work buffer of at least ``shape`` (contents
        undefined; the kernels index it, never read its shape), grown when a launch needs more."""
        hit = self._hits.get(name)
        if hit is None or hit[0].dtype != dtype or len(hit[0].shape) != len(shape) or any(
                have < want for have, want in zip(hit[0].shape, shape)):
            x = self.xp.empty(shape, dtype=dtype)
            hit = self._hits[name] = (x, kernel_array(x))
        return hit


class Clock:
    """A kernel's time: CUDA events around its launch (device time, read once it is done), or
    the host's clock from launch to collection under the simulator."""

    def __init__(self, xp):
        self.xp, self.events = xp, None
        self.t0 = time.perf_counter()
        if xp is not np:
            self.events = (xp.cuda.Event(), xp.cuda.Event())
            self.events[0].record()

    def stop(self):
        if self.events is not None:
            self.events[1].record()

    def span(self, origin):
        """(start, end) in ms after the event ``origin`` (device clock), or None."""
        if self.events is None or origin is None:
            return None
        self.events[1].synchronize()
        return tuple(round(self.xp.cuda.get_elapsed_time(origin, e), 3) for e in self.events)

    def seconds(self):
        if self.events is None:
            return time.perf_counter() - self.t0
        self.events[1].synchronize()
        return self.xp.cuda.get_elapsed_time(*self.events) / 1e3
