"""GAMMA: batch-dynamic subgraph matching on the GPU (the device side of ``IncrementalMatcher``).

Implements GAMMA (Qiu et al., *GPU-Accelerated Batch-Dynamic Subgraph Matching*, ICDE 2024,
arXiv:2401.17018) over node ids:

* **Dynamic graph (Sec. V-C, GPMA).** :class:`RowPMA` keeps every vertex's sorted adjacency row in
  a segment of one arena with free slots (gaps) at the segment's end; a batch of insertions and
  deletions is merged into the touched segments with array operations (NumPy or CuPy), a segment
  that overflows moves to the arena's end with doubled capacity, and the arena is re-spread when
  half of it is garbage (the PMA's rebalancing). Rows stay contiguous and sorted, so the kernels
  binary-search them as CSR rows (GPMA's global key array would need every search to skip gaps).
* **Vertex encoding and candidate table (Sec. IV-B).** A vertex's code is its node-label bits
  (``node_match`` against each pattern node), its distinct out-/in-degree saturated at the
  pattern's maximum (the digest's thermometer code: saturation keeps the filter sound) and its
  self-loop; the candidate table ``ct[v]`` holds one bit per pattern node. Each batch recomputes
  the code only of the vertices it touches and uploads the rows whose code changed.
* **Warp per updated edge (Sec. IV-C, Alg. 1 with the digest's corrections).** Each task is an
  updated data pair seeded onto an ordered pattern pair (both orientations), a self-loop, or a
  new/deleted node seeded onto an isolated pattern node. A warp runs the DFS of its task: at each
  depth its 32 lanes test the shortest backward-neighbour row in parallel with the exact
  NetworkX-semantics test (candidate bit, injectivity, multiplicities ``>=``/``==``, edge labels,
  as ``common.feasible``) and ballot-compact the survivors into the warp's level buffer; the
  last depth writes the matches. Negatives run on the old graph, then the batch is applied, then
  positives run on the new graph.
* **Each match once (end of Sec. IV-C, fixed as in the digest A2.6).** The updated items (changed
  pairs, then new/deleted nodes) are totally ordered; a task of rank ``r`` rejects a candidate
  whose newly checked pairs (the pairs its checks actually constrain), self-loop or node is an
  updated item of rank ``< r``, so each match is produced only from its smallest updated item.
* **Scheduling and work stealing (Sec. V-A).** Warps take tasks from an atomic counter, heaviest
  seeds (degree product) first; once it is drained, an idle warp steals the tail half of the
  untaken candidates at a busy warp's shallowest level, with the partial match above it, from
  the per-warp level pointers the block keeps in shared memory (the digest's A2.8 protocol:
  a per-warp lock, atomic reads since Numba has no ``volatile``). Between blocks, a busy warp
  that sees idle warps donates the same unit through a global ring (gMatch Sec. 4.3's queue).
* **Coalesced search (Sec. V-B, the digest's k = 0 case).** Seeded pattern pairs are grouped
  into orbits of the pattern's label-preserving automorphisms; only a representative per orbit
  is searched, the other members' matches are its matches composed with the automorphism, and
  counts weigh the representative's matches by the orbit size.

Exactness: ``added``/``removed`` equal the CPU path's (``nx_gsm.incremental``), which equals the
difference of VF2's results (tests/test_gpu_gamma_sim.py, gpu/tests/test_gamma.py).
"""

from __future__ import annotations

import logging
import os
import time

import numpy as np
from numba import cuda, int32, int64, njit

from ... import kernel_cache  # noqa: F401  (sets Numba's cache folder before @njit runs)
from ...plan.planner import depth_arrays
from ..registry import capabilities_of
from . import faults
from .common import (Launches, ballot, to_host, kernel_array, pause, ring_take, sim_reset,
                     wsync)
from .device import array_module, device_reason, is_simulator

__all__ = ["RowPMA", "GammaDelta", "gamma_reason", "KMAX"]

log = logging.getLogger("nx_gsm.gpu")

_SIM = is_simulator()

KMAX = 16  # deepest pattern the kernel's per-lane arrays hold
EMAX = 63  # most pattern edge entries an int64 label mask holds
_WPB = 4 if _SIM else 16  # warps per block (the simulator runs each as 32 threads)
# seed splitting: a pair seed whose larger endpoint degree is d becomes min(d // split_row,
# _SPLIT_MAX) tasks
_SPLIT_ROW = 32  # (256 or 64 left a tree's 1% batch ~1.5x slower, SMs idle 2/3 of it)
_SPLIT_MAX = 512
_NORANK = np.iinfo(np.int64).max
_MERGE_THREADS = 4 if _SIM else 128  # threads per row in RowPMA's merge kernel
# RowPMA rows here are sorted by key (class of the neighbour << 32) | neighbour id; a pattern
# node whose candidate classes are not one run of class ids reads [0, _ALLKEYS): whole rows
_ALLKEYS = 1 << 62
# the delta kernel's control words: task counter, matches, steals within a block, then the
# donation ring (GAMMA's stealing carried across blocks as gMatch's Sec. 4.3 queue): claims,
# reservations, busy warps (relative: each warp counts itself once it starts), idle warps,
# donations, slices given; ring slot s's ready word (the generation written there) is
# ctl[_C_RDY + s]
_C_TASK, _C_MATCH, _C_STEAL, _C_HEAD, _C_TAIL, _C_BUSY, _C_IDLE, _C_DON, _C_SLC, _C_RDY = range(10)
# a busy warp looks for idle warps every (_POLL + 1) levels it makes (GitHub tree pattern,
# 1% batches: every level 1.6-1.9x faster than no donation, every 4th 1.45x, 16th 1.15x, 64th 1.0x;
# dense: no difference)
_POLL = 0
# counting, the last depth of a leaf is made for a chunk of the level above once it has at least
# this many entries left, 0: never (same batches: tree 1% apply 0.061-0.063 s from 1,
# 0.063-0.067 from 4, 0.065-0.069 from 8, 0.069-0.077 from 16, 0.089-0.092 never; the dense
# pattern's 1% apply 0.6-1.3 ms slower from any threshold than never)
_BATCH_MIN = 1
# a candidate row of at least 2 * _SLICE_MIN entries is offered in slices of >= _SLICE_MIN to
# idle warps before its warp scans it (0: never); see _offer_slices (GitHub 1%, same
# batches: tree 52/42/53 ms at 256 against 58/48/54 never, 56/49/58 from 64, 59/47/50 from 1024;
# the dense pattern gives no slice at 256 and the same times from 64)
_SLICE_MIN = 256


def _loop_datum(G, x):
    """The datum ``edge_match`` sees for ``x``'s self-loop in ``G``, None without one."""
    nb = (G._succ if G.is_directed() else G._adj).get(x)
    return None if nb is None else nb.get(x)


def gamma_reason():
    """None if the GAMMA engine can run here (a CUDA device, or Numba's simulator), else why not."""
    if _SIM:
        return None
    return device_reason()


# ---------------------------------------------------------------------------------------------
# the dynamic graph on the device
# ---------------------------------------------------------------------------------------------
def _slack(n, xp):
    """Capacity of a segment holding ``n`` entries: room for ~25% growth (at least 2)."""
    return n + xp.maximum(2, n // 4)


def _counts(ids, n, xp):
    """How often each of ``0..n-1`` occurs in ``ids`` (int64; ``ids`` may be empty)."""
    if ids.size == 0:
        return xp.zeros(n, dtype=np.int64)
    return xp.bincount(ids, minlength=n).astype(np.int64)[:n]


class _KernelArgs:
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


class RowPMA:
    """Sorted adjacency rows with gaps in one arena, updated in batches (GPMA, GAMMA Sec. V-C).

    Row ``v`` occupies ``adj[start[v] : start[v] + length[v]]`` (no duplicates) inside a
    segment of ``cap[v]`` slots, sorted by each entry's ``akey`` (a one-to-one function of the
    neighbour, by default its id: GAMMA's kernel puts the neighbour's label class in the high
    bits, so that the neighbours of one class are one run); ``mult`` and ``emask`` are
    per-entry values (multiplicity and edge-label bits). All arrays live in ``xp`` (NumPy or
    CuPy).

    Parameters
    ----------
    n : int
        Number of rows (vertices).
    src, dst, mult, emask : arrays
        The entries (any order, ``(src, dst)`` unique).
    xp : module, optional
        ``numpy`` (default) or ``cupy``.
    key : array, optional
        Each entry's sort key (int64; default ``dst``).

    Examples
    --------
    >>> import numpy as np
    >>> p = RowPMA(3, np.array([0, 0]), np.array([2, 1]), np.array([1, 1]), np.zeros(2))
    >>> p.update(np.array([0, 1]), np.array([1, 0]), np.array([0, 3]), np.zeros(2))
    >>> [p.row(v) for v in range(3)]
    [[2], [0], []]
    """

    def __init__(self, n, src, dst, mult, emask, xp=np, key=None, merge=None):
        self.xp = xp
        # "kernel": batches merged by _pma_find/_pma_merge (the device's way: a few launches
        # instead of a sort of every touched row); "sort": array operations (NumPy without a GPU)
        self.merge = merge or ("kernel" if _SIM or xp is not np else "sort")
        self._args = _KernelArgs(xp)
        # the kernel merge's host copies of every row's start, length and capacity
        self.hstart, self.hlength, self.hcap = (np.zeros(0, dtype=np.int64) for _ in range(3))
        self.n = 0
        self.start = xp.zeros(0, dtype=np.int64)
        self.length = xp.zeros(0, dtype=np.int32)
        self.cap = xp.zeros(0, dtype=np.int64)
        self.adj = xp.zeros(1, dtype=np.int32)
        self.mult = xp.zeros(1, dtype=np.int32)
        self.emask = xp.zeros(1, dtype=np.int64)
        self.akey = xp.zeros(1, dtype=np.int64)
        self.used = 0
        self.relocations = 0
        self.rebuilds = 0
        self.add_rows(n)
        self._layout(*self._sorted(xp.asarray(src, dtype=np.int64), xp.asarray(dst, dtype=np.int32),
                                   xp.asarray(mult, dtype=np.int32),
                                   xp.asarray(emask, dtype=np.int64),
                                   xp.asarray(dst if key is None else key, dtype=np.int64)))

    def _sorted(self, s, d, m, e, kk):
        o = self.xp.lexsort(self.xp.stack([kk, s]))
        return s[o], d[o], m[o], e[o], kk[o]

    def add_rows(self, extra):
        """Append ``extra`` empty rows (new vertices)."""
        xp = self.xp
        if extra <= 0:
            return
        self.start = xp.concatenate([self.start, xp.zeros(extra, dtype=np.int64)])
        self.length = xp.concatenate([self.length, xp.zeros(extra, dtype=np.int32)])
        self.cap = xp.concatenate([self.cap, xp.zeros(extra, dtype=np.int64)])
        self.n += extra
        if self.merge == "kernel":
            z = np.zeros(extra, dtype=np.int64)
            self.hstart, self.hlength, self.hcap = (np.concatenate([h, z]) for h in
                                                    (self.hstart, self.hlength, self.hcap))

    def _mirror(self):
        """Read the host copies of the rows' starts, lengths and capacities (the kernel merge
        plans on them without reading the device) after a layout."""
        if self.merge == "kernel":
            self.hstart, self.hlength, self.hcap = (np.array(to_host(x), dtype=np.int64)
                                                    for x in (self.start, self.length, self.cap))

    def _layout(self, s, d, m, e, kk):
        """Lay every row out afresh with slack (the initial build and the PMA re-spread)."""
        xp = self.xp
        lens = _counts(s, self.n, xp)
        cap = xp.where(lens > 0, _slack(lens, xp), 0)
        start = xp.cumsum(cap) - cap
        total = int(cap.sum())
        size = max(1, total + total // 4)
        adj = xp.zeros(size, dtype=np.int32)
        mult = xp.zeros(size, dtype=np.int32)
        emask = xp.zeros(size, dtype=np.int64)
        akey = xp.zeros(size, dtype=np.int64)
        first = xp.cumsum(lens) - lens
        pos = start[s] + xp.arange(s.size, dtype=np.int64) - first[s]
        adj[pos], mult[pos], emask[pos], akey[pos] = d, m, e, kk
        self.adj, self.mult, self.emask, self.akey = adj, mult, emask, akey
        self.start, self.length, self.cap = start, lens.astype(np.int32), cap
        self.used = total
        self.live = int(s.size)  # entries in rows
        self.maxlen = int(lens.max()) if lens.size else 0  # see max_length
        self._mirror()

    def _gather(self, rows):
        """Entries ``(src, dst, mult, emask, key)`` of ``rows`` (sorted row ids)."""
        xp = self.xp
        lens = self.length[rows].astype(np.int64)
        ends = xp.cumsum(lens)
        total = int(ends[-1]) if rows.size else 0
        # the row of each gathered entry (CuPy's repeat takes no array of counts)
        rid = xp.searchsorted(ends, xp.arange(total, dtype=np.int64), side="right")
        first = ends - lens
        pos = self.start[rows][rid] + xp.arange(rid.size, dtype=np.int64) - first[rid]
        return rows[rid], self.adj[pos], self.mult[pos], self.emask[pos], self.akey[pos]

    def update(self, src, dst, mult, emask, key=None, present=None):
        """Set entries ``(src[i], dst[i])`` (sort key ``key[i]``, by default ``dst[i]``) to
        ``mult[i]`` / ``emask[i]``; ``mult`` 0 deletes. ``present`` (host booleans, optional):
        whether each entry exists before, where the caller knows it -- the kernel merge then
        reads nothing back, so the update queues behind whatever the device runs (GAMMA's
        before-side search) instead of waiting for it.

        The touched rows are merged with the updates (later wins), written back in place when
        they fit their segment, else moved to the arena's end with twice the room (the PMA's upper
        density bound); a sparse arena is re-spread (its lower bound).
        """
        xp = self.xp
        if len(src) == 0:
            return
        if self.merge == "kernel":
            return self._update_kernel(src, dst, mult, emask, key, present)
        src = xp.asarray(src, dtype=np.int64)
        dst = xp.asarray(dst, dtype=np.int32)
        rows = xp.unique(src)
        es, ed, em, ee, ek = self._gather(rows)
        s = xp.concatenate([es, src])
        d = xp.concatenate([ed, dst])
        m = xp.concatenate([em, xp.asarray(mult, dtype=np.int32)])
        e = xp.concatenate([ee, xp.asarray(emask, dtype=np.int64)])
        kk = xp.concatenate([ek, xp.asarray(dst if key is None else key, dtype=np.int64)])
        flag = xp.concatenate([xp.zeros(es.size, dtype=np.int8), xp.ones(src.size, dtype=np.int8)])
        o = xp.lexsort(xp.stack([flag, kk, s]))
        s, d, m, e, kk = s[o], d[o], m[o], e[o], kk[o]
        last = xp.ones(s.size, dtype=bool)
        last[:-1] = (s[1:] != s[:-1]) | (kk[1:] != kk[:-1])
        keep = last & (m > 0)
        s, d, m, e, kk = s[keep], d[keep], m[keep], e[keep], kk[keep]
        ridx = xp.searchsorted(rows, s)
        newlen = _counts(ridx, rows.size, xp)
        start = self.start[rows]
        cap = self.cap[rows]
        grow = newlen > cap
        ngrow = int(grow.sum())
        if ngrow:
            newcap = xp.where(grow, 2 * _slack(newlen, xp), cap)
            add = xp.where(grow, newcap, 0)
            need = int(add.sum())
            if self.used + need > self.adj.size:
                self._grow_arena(self.used + need)
            start = xp.where(grow, self.used + xp.cumsum(add) - add, start)
            self.used += need
            cap = newcap
            self.relocations += ngrow
        first = xp.cumsum(newlen) - newlen
        pos = start[ridx] + xp.arange(s.size, dtype=np.int64) - first[ridx]
        self.adj[pos], self.mult[pos], self.emask[pos], self.akey[pos] = d, m, e, kk
        self.start[rows], self.length[rows], self.cap[rows] = start, newlen.astype(np.int32), cap
        self.live = int(self.length.sum(dtype=np.int64))
        self.maxlen = max(self.maxlen, int(newlen.max()))
        self._respread(self.live)

    def _respread(self, live):
        """The PMA's lower density bound: once ``live`` entries fill under a quarter of the used
        arena (deletions, segments left behind by moves), lay it out afresh."""
        if self.used > 1024 and 4 * live < self.used:
            self._layout(*self._gather(self.xp.arange(self.n, dtype=np.int64)))
            self.rebuilds += 1

    def _arg(self, name):
        """Member array ``name`` as a kernel argument."""
        return self._args.wrap(name, getattr(self, name))

    def _update_kernel(self, src, dst, mult, emask, key, present=None):
        """:meth:`update` by two kernels and host planning: the updates, deduplicated and sorted
        by (row, key) on the host, go up in one array; ``_pma_find`` places each in its row and
        tells insertion from replacement (one read back); the host, which mirrors every row's
        start, length and capacity, lays out the new lengths (a row that outgrows its segment
        moves to the arena's end) and sends one array per row; ``_pma_merge`` writes every
        touched row afresh, a block per row. A handful of transfers and two launches: array
        operations cost tens of microseconds each on the device, whatever their size."""
        src, dst, mult, emask = map(_on_host, (src, dst, mult, emask))
        key = dst if key is None else _on_host(key)
        known = present is not None
        present = np.asarray(present, dtype=np.bool_) if known else np.zeros(0, dtype=np.bool_)
        # per update (sorted, deduplicated): row index, key, dst, mult, emask; the rows, where
        # each starts in the updates, and the kinds where presence is known
        upd, rows, first, kind = _pma_plan_updates(_row_order(src, key), src, key, dst, mult,
                                                   emask, present, known)
        r, u = rows.size, upd.shape[1]
        (_, _, upd_v), (rows_a, uoff_a, _) = self._args.staged("u.", [
            (rows, np.int64), (first, np.int64), (upd, np.int64)])
        upd_a = kernel_array(upd_v.reshape(5, u))
        work, work_a = self._args.buffer("work", (4, u), np.int64)  # place, kind, ins/del before
        launch = self._args.launch
        launch("find", _pma_find, -(-u // _MERGE_THREADS), _MERGE_THREADS, rows_a, upd_a,
               self._arg("start"), self._arg("length"), self._arg("akey"), work_a)
        if not known:
            kind = to_host(work[1, :u])  # (waits for the device)
        # the rows' new lengths and places (one that outgrows its segment moves to the arena's
        # end with twice the room) and where each one's entries go in the scratch copy
        per_row, add, grown, held, dlen, maxlen = _pma_plan_rows(
            rows, first, kind, self.hstart, self.hlength, self.hcap, self.used)
        if add:
            if self.used + add > self.adj.size:
                self._grow_arena(self.used + add)
            self.used += add
            self.relocations += grown
        (per_row_v,), _ = self._args.staged("r.", [(per_row, np.int64)])
        scratch = self._args.buffer("scratch", (4, max(1, held)), np.int64)[1]
        launch("merge", _pma_merge, r, _MERGE_THREADS, rows_a, uoff_a, upd_a, work_a,
               kernel_array(per_row_v.reshape(4, r)), self._arg("start"), self._arg("length"),
               self._arg("cap"), self._arg("adj"), self._arg("mult"), self._arg("emask"),
               self._arg("akey"), scratch)
        start, newlen, cap = per_row[0], per_row[1], per_row[2]
        self.hstart[rows], self.hlength[rows], self.hcap[rows] = start, newlen, cap
        self.live += dlen
        self.maxlen = max(self.maxlen, maxlen)
        self._respread(self.live)

    def _grow_arena(self, need):
        xp = self.xp
        size = max(need, 2 * self.adj.size)
        for name in ("adj", "mult", "emask", "akey"):
            old = getattr(self, name)
            new = xp.zeros(size, dtype=old.dtype)
            new[: old.size] = old
            setattr(self, name, new)

    def row(self, v):
        """Row ``v`` as a Python list (tests)."""
        a = int(self.start[v])
        return [int(x) for x in self.adj[a : a + int(self.length[v])].tolist()]

    def max_length(self):
        """An upper bound on the longest row (exact after a re-layout; a row that shrank may
        still count with its old length): what the kernels' per-warp row buffers must hold,
        known without a device read."""
        return self.maxlen


class _Clock:
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


def _row_order(src, key):
    """The stable order of updates by (row, key). One int64 sort key where (row, key's high and
    low 32 bits) fit, sorted without the stable sort's cost when no two are equal (the common
    case: a batch updates each entry once); NumPy's lexsort otherwise (~8x slower on 5,780
    updates)."""
    if src.size and int(key.min()) >= 0:
        hi, lo = key >> 32, key & 0xFFFFFFFF
        a, b, c = int(src.max()) + 1, int(hi.max()) + 1, int(lo.max()) + 1
        if int(src.min()) >= 0 and a * b * c < 1 << 63:
            comb = (src * b + hi) * c + lo
            o = np.argsort(comb)
            if not (comb[o[1:]] == comb[o[:-1]]).any():
                return o
            return np.argsort(comb, kind="stable")
    return np.lexsort((key, src))


@njit(cache=True)
def _pma_plan_updates(o, src, key, dst, mult, emask, present, known):
    """The PMA update's updates in ``o``'s order (by row, then key; stable), the last of equal
    (row, key) kept: ``(upd, rows, first, kind)`` -- ``upd`` rows: row index, key, dst, mult,
    emask; ``first[b]`` where row ``b``'s updates start (and the end last); ``kind`` as
    ``_pma_find`` tells it (0 absent and deleted, 1 inserted, 2 deleted, 3 replaced) where the
    caller knows each entry's presence before (``known``), else zeros. One pass in place of ~20
    NumPy calls on a batch's few thousand updates (their call overhead, not their work, was
    the cost; the sort stays NumPy's, which is faster than Numba's)."""
    n = o.size
    keep = np.empty(n, np.int64)
    u = 0
    for i in range(n):
        j = o[i]
        if i + 1 < n:
            k = o[i + 1]
            if src[k] == src[j] and key[k] == key[j]:
                continue  # a later update of the same entry wins
        keep[u] = j
        u += 1
    upd = np.empty((5, u), np.int64)
    kind = np.zeros(u, np.int64)
    rows = np.empty(u, np.int64)
    first = np.empty(u + 1, np.int64)
    r = 0
    for t in range(u):
        j = keep[t]
        if t == 0 or src[j] != src[keep[t - 1]]:
            rows[r] = src[j]
            first[r] = t
            r += 1
        upd[0, t] = r - 1
        upd[1, t] = key[j]
        upd[2, t] = dst[j]
        upd[3, t] = mult[j]
        upd[4, t] = emask[j]
        if known:
            kind[t] = (3 if present[j] else 1) if mult[j] > 0 else (2 if present[j] else 0)
    first[r] = u
    return upd, rows[:r], first[:r + 1], kind


@njit(cache=True)
def _pma_plan_rows(rows, first, kind, hstart, hlength, hcap, used):
    """Each touched row's new start, length, capacity and place in the scratch copy (a ``(4,
    r)`` array), from the updates' kinds and the host's copies of the rows' layout: a row that
    outgrows its segment moves to the arena's end (from ``used`` on) with twice its slack.
    Also the room added at the end, the rows moved, the entries held before, the change in
    entries and the longest new row."""
    r = rows.size
    per_row = np.empty((4, r), np.int64)
    add = 0
    grown = 0
    held = 0
    dsum = 0
    maxlen = 0
    for b in range(r):
        v = rows[b]
        d = 0
        for t in range(first[b], first[b + 1]):
            if kind[t] == 1:
                d += 1
            elif kind[t] == 2:
                d -= 1
        old = hlength[v]
        nl = old + d
        st = hstart[v]
        cp = hcap[v]
        if nl > cp:
            cp = 2 * (nl + max(2, nl // 4))  # 2 * _slack(nl)
            st = used + add
            add += cp
            grown += 1
        per_row[0, b] = st
        per_row[1, b] = nl
        per_row[2, b] = cp
        per_row[3, b] = held
        held += old
        dsum += d
        maxlen = max(maxlen, nl)
    return per_row, add, grown, held, dsum, maxlen


def _on_host(a):
    """An int64 NumPy copy of ``a`` (a device array is read back)."""
    return np.asarray(a.get() if hasattr(a, "__cuda_array_interface__") else a, dtype=np.int64)


# ---------------------------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------------------------
@cuda.jit
def _pma_find(rows, upd, start, length, akey, work):
    """GPMA's batch update (GAMMA Sec. V-C), step 1, a thread per update ``i`` (sorted by row,
    then key): its place in its row's sorted keys (``work[0]``: lower bound) and its kind
    (``work[1]``: 1 insert, 2 delete, 3 replace, 0 deleting a missing entry)."""
    i = cuda.grid(1)
    if i >= upd.shape[1]:
        return
    r = upd[0, i]
    lo = start[rows[r]]
    n = length[rows[r]]
    k = upd[1, i]
    a = 0
    b = n
    while a < b:
        mid = (a + b) // 2
        if akey[lo + mid] < k:
            a = mid + 1
        else:
            b = mid
    found = a < n and akey[lo + a] == k
    kind = 0
    if upd[3, i] > 0:
        kind = 3 if found else 1
    elif found:
        kind = 2
    work[0, i] = a
    work[1, i] = kind


@cuda.jit(device=True)
def _before(work, c, a1, j, kind):
    """Updates of kind ``kind`` among the row's updates before ``j`` (``work[c]`` holds the
    count before each update; ``a1`` ends the row's updates)."""
    if j < a1:
        return work[c, j]
    return work[c, a1 - 1] + (1 if work[1, a1 - 1] == kind else 0)


@cuda.jit
def _pma_merge(rows, uoff, upd, work, per_row, start, length, cap, adj, mult, emask, akey,
               scratch):
    """GPMA's batch update, step 2, a block per touched row: the row is copied aside, then each
    surviving old entry and each insertion is written at its merged place (its index plus the
    insertions before it minus the deletions before it) from the row's new start on -- its own
    segment, or a fresh one at the arena's end when it outgrew its slack. ``per_row`` holds
    each row's new start, length and capacity and its place in ``scratch``."""
    r = cuda.blockIdx.x
    t0 = cuda.threadIdx.x
    nt = cuda.blockDim.x
    v = rows[r]
    lo = start[v]
    n = length[v]
    a0 = uoff[r]
    a1 = uoff[r + 1]
    so = per_row[3, r]
    if t0 == 0:  # a row has few updates: counted serially
        ci = 0
        cd = 0
        for i in range(a0, a1):
            work[2, i] = ci
            work[3, i] = cd
            if work[1, i] == 1:
                ci += 1
            elif work[1, i] == 2:
                cd += 1
    for t in range(t0, n, nt):
        scratch[0, so + t] = adj[lo + t]
        scratch[1, so + t] = mult[lo + t]
        scratch[2, so + t] = emask[lo + t]
        scratch[3, so + t] = akey[lo + t]
    cuda.syncthreads()
    d0 = per_row[0, r]
    if t0 == 0:  # every thread has read the old start and length
        start[v] = d0
        length[v] = per_row[1, r]
        cap[v] = per_row[2, r]
    for t in range(t0, n, nt):
        a = a0  # j: the first update placed after entry t
        b = a1
        while a < b:
            mid = (a + b) // 2
            if work[0, mid] <= t:
                a = mid + 1
            else:
                b = mid
        j = a
        a = a0  # jl: the first update placed at or after entry t
        while a < b:
            mid = (a + b) // 2
            if work[0, mid] < t:
                a = mid + 1
            else:
                b = mid
        jl = a
        kind = 0  # an update that found entry t is the last one placed at t
        if j > a0 and work[0, j - 1] == t:
            kind = work[1, j - 1]
        if kind == 2:
            continue
        p = d0 + t + _before(work, 2, a1, j, 1) - _before(work, 3, a1, jl, 2)
        if kind == 3:
            adj[p] = upd[2, j - 1]
            mult[p] = upd[3, j - 1]
            emask[p] = upd[4, j - 1]
            akey[p] = upd[1, j - 1]
        else:
            adj[p] = scratch[0, so + t]
            mult[p] = scratch[1, so + t]
            emask[p] = scratch[2, so + t]
            akey[p] = scratch[3, so + t]
    for i in range(a0 + t0, a1, nt):
        if work[1, i] == 1:
            p = d0 + work[0, i] + work[2, i] - work[3, i]
            adj[p] = upd[2, i]
            mult[p] = upd[3, i]
            emask[p] = upd[4, i]
            akey[p] = upd[1, i]


@cuda.jit(device=True)
def _dfind(rstart, rlen, akey, x, y):
    """Binary search for the entry of sort key ``y`` in row ``x`` of a :class:`RowPMA`
    (position or -1)."""
    lo = rstart[x]
    hi = lo + rlen[x]
    while lo < hi:
        mid = (lo + hi) >> 1
        t = akey[mid]
        if t < y:
            lo = mid + 1
        elif t > y:
            hi = mid
        else:
            return mid
    return lo * 0 - 1


@cuda.jit(device=True)
def _lower(akey, lo, hi, y):
    """The first position in ``akey[lo:hi]`` (sorted) whose key is >= ``y``."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if akey[mid] < y:
            lo = mid + 1
        else:
            hi = mid
    return lo


@cuda.jit(device=True)
def _span(rstart, rlen, akey, x, narrow, klo, khi):
    """(first position, length) of row ``x``, or with ``narrow`` of its run of sort keys in
    ``[klo, khi)``."""
    a = rstart[x]
    b = int64(rlen[x])
    if narrow:
        e0 = _lower(akey, a, a + b, klo)
        b = _lower(akey, e0, a + b, khi) - e0
        a = e0
    return a, b


@cuda.jit(device=True)
def _rank(mkeys, mranks, key, tr):
    """Rank of the updated item ``key`` = ``a * nn + b``, or a huge value if it is not one:
    a binary search in ``a``'s run of the sorted keys, ``tr = trange[a]`` (see :func:`_ok`)."""
    lo = (tr >> 32) - 1
    hi = tr & 0xFFFFFFFF
    while lo < hi:
        mid = (lo + hi) >> 1
        t = mkeys[mid]
        if t < key:
            lo = mid + 1
        elif t > key:
            hi = mid
        else:
            return mranks[mid]
    return mranks[0] * 0 + 0x7FFFFFFFFFFFFFFF


@cuda.jit(device=True)
def _ok(d, v, m, rank, bo, bc, order_t, chk_ptr, chk_j, chk_out, chk_in, chk_peo, chk_pei,
        loop_used, ct, rstart, rlen, akey, amult, aemask, vcls, trange, mkeys, mranks, nn, has_el,
        mono, directed, jd, ed):
    """GAMMA's candidate test (Alg. 1 GenCandidates with the digest's fixes) for ``v`` at depth
    ``d``: candidate-table bit, injectivity, the plan's multiplicity and edge-label checks against
    earlier depths (as ``common.feasible``), then the smallest-updated-item rule (A2.6).

    ``v`` drawn from the out-row of ``m[jd]`` at position ``ed`` (``jd`` -1: not so) has its
    entry there: that check reads it instead of searching the row again.

    ``trange[a]`` is 0 for a vertex no updated item touches, else ``(lo + 1) << 32 | hi``: the
    updated items' keys ``a * nn + b`` are ``mkeys[lo:hi]``, so a rank lookup searches a
    vertex's few keys, not all of them."""
    u = order_t[bo + d]
    if (ct[v] >> u) & 1 == 0:
        return False
    for j in range(d):
        if m[j] == v:
            return False
    c0 = chk_ptr[bc + d]
    c1 = chk_ptr[bc + d + 1]
    for c in range(c0, c1):
        x = m[chk_j[c]]
        if chk_j[c] == jd:
            e = ed
        else:  # (v's class is read only here: a tree's candidates never need it)
            e = _dfind(rstart, rlen, akey, x, (int64(vcls[v]) << 32) | v)
        have = 0
        if e >= 0:
            have = amult[e]
        need = chk_out[c]
        if mono != 0:
            if have < need:
                return False
        elif have != need:
            return False
        if has_el != 0 and need > 0:
            if (aemask[e] >> chk_peo[c]) & 1 == 0:
                return False
        if directed != 0:
            e = _dfind(rstart, rlen, akey, v, (int64(vcls[x]) << 32) | x)
            have = 0
            if e >= 0:
                have = amult[e]
            need = chk_in[c]
            if mono != 0:
                if have < need:
                    return False
            elif have != need:
                return False
            if has_el != 0 and need > 0:
                if (aemask[e] >> chk_pei[c]) & 1 == 0:
                    return False
    # each match once, from its smallest updated item: reject v if a pair, loop or node this
    # depth newly constrains is an updated item ranked before the task's own
    tv = trange[v]
    if tv == 0:
        return True
    vv = int64(v)
    if loop_used[u] != 0 and _rank(mkeys, mranks, vv * nn + vv, tv) < rank:
        return False
    if _rank(mkeys, mranks, vv * nn + nn - 1, tv) < rank:
        return False
    for c in range(c0, c1):
        x = int64(m[chk_j[c]])
        tx = trange[x]
        if tx == 0:
            continue
        if (mono == 0 or chk_out[c] > 0) and _rank(mkeys, mranks, x * nn + vv, tx) < rank:
            return False
        if directed != 0 and (mono == 0 or chk_in[c] > 0):
            if _rank(mkeys, mranks, vv * nn + x, tv) < rank:
                return False
    return True


@cuda.jit(device=True)
def _emit(out, out_tab, r, m, d, bo, tab, order_t, out_cap):
    """Write the match ``m[0..d]`` as row ``r`` of ``out`` (columns by pattern node id) and the
    order table it came from (the host applies that table's orbit permutations)."""
    if r < out_cap:
        for j in range(d + 1):
            out[r, order_t[bo + j]] = m[j]
        out_tab[r] = tab


@cuda.jit(device=True)
def _lock(S_lock, w, on):
    """Take warp ``w``'s lock; ``on == 0`` (stealing off: no thief) skips it."""
    if on != 0:
        while cuda.atomic.cas(S_lock, w, int32(0), int32(1)) != 0:
            pause(32)
        cuda.threadfence_block()


@cuda.jit(device=True)
def _unlock(S_lock, w, on):
    if on != 0:
        cuda.threadfence_block()
        cuda.atomic.exch(S_lock, w, int32(0))


@cuda.jit(device=True)
def _peek(S, w, j):
    """Another warp's shared-memory word (an atomic read: Numba has no ``volatile``)."""
    return cuda.atomic.add(S, (w, j), 0)


@cuda.jit(device=True)
def _group(first, n, t):
    """The last ``g < n`` with ``first[g] <= t`` (``first`` non-decreasing): the seed group
    holding task ``t``, or the entry of a counted chunk holding candidate ``t``."""
    lo = 0
    hi = n
    while hi - lo > 1:
        mid = (lo + hi) >> 1
        if first[mid] <= t:
            lo = mid
        else:
            hi = mid
    return lo


@cuda.jit(device=True)
def _tail_half(S_p, S_end, w, lo, hi):
    """Warp ``w``'s shallowest level in ``[lo, hi)`` with >= 2 untaken entries and the tail half
    of them: (level, first entry, entries), level -1 if none. The caller holds ``w``'s lock
    (GAMMA Sec. V-A's steal unit, the digest's A2.8), so the entries stay untaken."""
    for lv in range(lo, hi):
        pp = _peek(S_p, w, lv)
        ee = _peek(S_end, w, lv)
        if ee - pp >= 2:
            take = (ee - pp) // 2
            return lv, ee - take, take
    return -1, 0, 0


@cuda.jit(device=True)
def _find_victim(wib, k, S_lock, S_p, S_end, S_busy, B):
    """GAMMA Sec. V-A active stealing (the digest's A2.8 protocol), run by lane 0 of an idle
    warp: the first other warp of the block (scanning from the next one) with >= 2 untaken
    entries at some level; returns with that warp's lock held and ``B[wib, 0..3]`` = (victim,
    level, first stolen entry, entries) (:func:`_tail_half`). Returns 1 if so, 0 if nothing is
    stealable now but some warp is busy, -1 if no other warp of the block is busy (the thief
    may leave)."""
    busy = 0
    for i in range(1, _WPB):
        v = (wib + i) % _WPB
        if cuda.atomic.add(S_busy, v, 0) == 0:
            continue
        busy = 1
        hit = -1
        for lv in range(k - 1):  # unlocked peek first: locks are the victim's hot path
            if _peek(S_end, v, lv) - _peek(S_p, v, lv) >= 2:
                hit = lv
                break
        if hit < 0:
            continue
        _lock(S_lock, v, 1)
        lv, first, take = _tail_half(S_p, S_end, v, 0, k - 1)
        if lv >= 0:
            B[wib, 0] = v
            B[wib, 1] = lv
            B[wib, 2] = first
            B[wib, 3] = take
            return 1
        _unlock(S_lock, v, 1)
    if busy == 0:
        return -1
    return 0


@cuda.jit(device=True)
def _claim(ctl, q_cap):
    """Lane 0 of an idle warp (counted idle and not busy): claim the oldest donated unit of the
    ring (:func:`common.ring_take`). Returns its slot (the warp then counts as busy and its
    donor has written the slot), -1 if none now, -2 if the kernel's work is done."""
    h = ring_take(ctl, _C_HEAD, _C_TAIL, _C_BUSY, _C_IDLE, ctl, _C_RDY, q_cap)
    if h >= 0:
        return h % q_cap
    return h


@cuda.jit(device=True)
def _donate(ctl, q_cap, wib, base, d, lk, S_lock, S_p, S_end, B):
    """Lane 0 of a busy warp, with warps idle somewhere in the grid and fewer units waiting in
    the ring than idle warps: reserve a ring slot and give up the tail half of the untaken
    entries at the warp's shallowest level with >= 2 of them (:func:`_tail_half`, as a thief in
    its block would take them; GAMMA Sec. V-A's stealing, across blocks). Returns the slot, with
    ``B[wib, 0..3]`` = (generation, level, first entry given, entries), or -1."""
    idle = cuda.atomic.add(ctl, _C_IDLE, 0)
    if idle <= 0:
        return -1
    hd = cuda.atomic.add(ctl, _C_HEAD, 0)
    tl = cuda.atomic.add(ctl, _C_TAIL, 0)
    if tl - hd >= idle or tl - hd >= q_cap:
        return -1
    _lock(S_lock, wib, lk)  # a thief of the block may be lowering S_end
    lv, first, take = _tail_half(S_p, S_end, wib, base, d + 1)
    if lv < 0 or cuda.atomic.cas(ctl, _C_TAIL, tl, tl + 1) != tl:
        _unlock(S_lock, wib, lk)
        return -1
    S_end[wib, lv] = first
    _unlock(S_lock, wib, lk)
    s = tl % q_cap
    while cuda.atomic.add(ctl, _C_RDY + s, 0) != 0:  # its last unit's claimer is still reading
        pause(32)
    cuda.threadfence()
    B[wib, 0] = tl + 1
    B[wib, 1] = lv
    B[wib, 2] = first
    B[wib, 3] = take
    return s


@cuda.jit(device=True)
def _offer_slices(ctl, q_cap, q_meta, q_m, m, d, rank, tab, i_lo, i_hi, slice_min):
    """Lane 0 of a busy warp about to make depth ``d`` from entries ``[i_lo, i_hi)`` of its
    candidate row: while warps are idle in the grid, fewer units wait in the ring than idle
    warps and the range holds >= 2 x ``slice_min`` entries, give a slice of its end (an equal
    share for each idle warp waiting, at least ``slice_min``) as a range unit of the donation
    ring (``q_meta`` = rank, table, depth, -1, first entry, end; ``q_m`` = the partial match
    above). Its claimer makes depth ``d`` for that slice as its first level. GAMMA Sec. V-A's
    stealing at the grain of a row: a warp scans a row whole before any of its level can be
    stolen or donated (GitHub 1%: the tree's batches 1,300-4,700 slices and ~5%
    faster; the dense pattern's rows are all shorter than 512). Reservations are
    ``_donate``'s (the donor is busy while it holds one), so the ring's termination rule
    holds. Returns the end of the range the donor keeps."""
    given = 0
    for _ in range(64):
        if i_hi - i_lo < 2 * slice_min:
            break
        idle = cuda.atomic.add(ctl, _C_IDLE, 0)
        hd = cuda.atomic.add(ctl, _C_HEAD, 0)
        tl = cuda.atomic.add(ctl, _C_TAIL, 0)
        want = idle - (tl - hd)
        if want <= 0 or tl - hd >= q_cap:
            break
        if cuda.atomic.cas(ctl, _C_TAIL, tl, tl + 1) != tl:
            continue
        s = max(int64(slice_min), (i_hi - i_lo) // (want + 1))
        q = tl % q_cap
        while cuda.atomic.add(ctl, _C_RDY + q, 0) != 0:  # its last unit's claimer is reading
            pause(32)
        cuda.threadfence()
        q_meta[q, 0] = rank
        q_meta[q, 1] = tab
        q_meta[q, 2] = d
        q_meta[q, 3] = -1
        q_meta[q, 4] = i_hi - s
        q_meta[q, 5] = i_hi
        for j in range(d):
            q_m[q, j] = m[j]
        cuda.threadfence()
        cuda.atomic.exch(ctl, _C_RDY + q, tl + 1)
        i_hi -= s
        given += 1
    if given > 0:
        cuda.atomic.add(ctl, _C_SLC, given)
    return i_hi


@cuda.jit(device=True)
def _drive(d, m, bo, bc, order_t, drv_ptr, drv_j, drv_dir, ukey, rstart, rlen, akey, irstart,
           irlen, iakey, narrow_row, n_nodes):
    """The row depth ``d``'s candidates are drawn from given ``m[0..d-1]`` (GAMMA Alg. 1's
    GenCandidates): the shortest backward-neighbour row, as (first position, length, kind,
    depth whose out-row it is or -1); kind 0: every node (no backward neighbour), 1: an
    out-row, 2: an in-row. Rows are sorted by (class, id): only the classes that may match the
    depth's pattern node are read (rows of at most ``narrow_row`` entries, one warp round by
    default, are read whole)."""
    t0 = drv_ptr[bc + d]
    t1 = drv_ptr[bc + d + 1]
    lo = int64(0)
    n = int64(n_nodes)
    kind = 0
    jd = -1
    u = order_t[bo + d]
    klo = ukey[2 * u]
    khi = ukey[2 * u + 1]
    narrow = klo > 0 or khi < _ALLKEYS
    for q in range(t0, t1):
        x = m[drv_j[q]]
        if drv_dir[q] == 0:
            a, b = _span(rstart, rlen, akey, x, narrow and rlen[x] > narrow_row, klo, khi)
            kd = 1
        else:
            a, b = _span(irstart, irlen, iakey, x, narrow and irlen[x] > narrow_row, klo, khi)
            kd = 2
        if q == t0 or b < n:
            lo = a
            n = b
            kind = kd
            jd = -1
            if kd == 1:
                jd = drv_j[q]
    return lo, n, kind, jd


@cuda.jit
def _delta_kernel(n_tasks, n_groups, g_first, g_rank, g_x, g_y, g_toff, g_parts, tlist, tab_wt, k,
                  order_t, chk_ptr, chk_j, chk_out, chk_in, chk_peo, chk_pei, drv_ptr, drv_j,
                  drv_dir, loop_used, ct,
                  rstart, rlen, adj, akey, amult, aemask, irstart, irlen, iadj, iakey, vcls, ukey,
                  narrow_row, trange, mkeys, mranks,
                  nn, n_nodes, has_el, mono, directed, cbuf, out, out_tab, out_cap, ctl, steal,
                  q_meta, q_m, q_ent, q_cap, poll, batch_min, slice_min):
    """GAMMA Alg. 1 (WBM) with the digest's corrections: one warp per task (an updated item
    seeded onto a pattern pair, loop or isolated node), warp-cooperative candidate generation
    per depth (lanes split the shortest backward-neighbour row, ballot compaction into the
    warp's level buffer ``cbuf``), depth-first over the levels. ``ctl[_C_TASK]`` hands out
    tasks, ``ctl[_C_MATCH]`` counts matches (rows past ``out_cap`` are counted, not written;
    with ``out_cap == 0`` each match counts ``tab_wt`` of its order table: the size of its
    pattern pair's automorphism orbit, Sec. V-B, and each warp adds its count once, when it
    stops), ``ctl[_C_STEAL]`` counts steals (the other words: ``_C_*``).

    Work stealing (Sec. V-A, ``steal & 1``): each warp's level pointers ``S_p``/``S_end``, its
    partial match ``S_m`` and task ``S_task`` sit in shared memory behind a per-warp lock; once
    the task counter is drained, an idle warp takes the tail half of the untaken entries at a
    busy warp's shallowest level with >= 2 of them, with the partial match above it, and
    searches them as its own work (levels below the stolen one are the victim's).

    Donation across blocks (``steal & 2``; a block's warps can only steal from each other, and
    blocks finish unevenly): a busy warp that sees idle warps in the grid (every ``poll + 1``
    levels it makes, ``poll`` = 2**j - 1) moves the same tail half, with its partial match,
    rank and order table, into a slot of a global ring (``q_meta`` = rank, table, level,
    entries; ``q_m``; ``q_ent``) which an idle warp of any block claims (:func:`_donate`,
    :func:`_claim`). Before a warp scans a candidate row of >= 2 x ``slice_min`` entries
    (``slice_min`` > 0), it offers slices of the row's end to idle warps through the same ring
    (:func:`_offer_slices`): a long row no longer waits for one warp's scan before it can be
    shared.

    Tasks come in seed groups (:meth:`GammaDelta._seeds`): group ``g`` seeds the updated item
    ``(g_x[g], g_y[g])`` onto each order table ``tlist[g_toff[g] + i]``, each of them split
    into ``g_parts[g]`` tasks; its tasks are ``g_first[g] .. g_first[g + 1] - 1``, found from
    the counter by binary search, so the host never writes a row per task.

    Counting (``out_cap == 0``) with a last pattern node of one backward neighbour, the last
    depth is made for a chunk of up to 32 entries of the level above at once, once that level
    has ``batch_min`` (> 0) untaken entries (gMatch Sec. 4.2's batch exploration): each lane
    finds one entry's row, and the warp's rounds run over all of their candidates, so rows
    shorter than a warp no longer leave lanes idle (without it Nsight Compute saw 15.5 of 32
    lanes active on the tree pattern's 1% batches).

    Split seeds (light load balancing in the manner of gMatch): the ``part``-th of ``parts``
    tasks of a seed keeps only that contiguous slice of the candidate row at the task's first
    generated level, so a hub update's search is spread over ``parts`` tasks (and blocks) up
    front."""
    lane = cuda.threadIdx.x % 32
    wib = cuda.threadIdx.x // 32
    gw = cuda.blockIdx.x * _WPB + wib
    B = cuda.shared.array((_WPB, 6), int64)  # lane 0's broadcasts
    S_m = cuda.shared.array((_WPB, KMAX), int32)
    S_p = cuda.shared.array((_WPB, KMAX), int32)
    S_end = cuda.shared.array((_WPB, KMAX), int32)
    S_task = cuda.shared.array((_WPB, 2), int64)
    S_lock = cuda.shared.array(_WPB, int32)
    S_busy = cuda.shared.array(_WPB, int32)
    # a chunk of last-but-one-level entries counted together: entry, row start, offset of its
    # candidates (one more: their total), row kind * 32 + driving depth + 1
    S_r = cuda.shared.array((_WPB, 32), int32)
    S_lo = cuda.shared.array((_WPB, 32), int64)
    S_off = cuda.shared.array((_WPB, 33), int64)
    S_kj = cuda.shared.array((_WPB, 32), int32)
    m = cuda.local.array(KMAX, int32)
    below = (1 << lane) - 1
    if lane == 0:
        S_lock[wib] = 0
        S_busy[wib] = 1
        for j in range(KMAX):
            S_p[wib, j] = 0
            S_end[wib, j] = 0
    cuda.syncthreads()
    if lane == 0 and steal & 2:
        cuda.atomic.add(ctl, _C_BUSY, 1)
    lk = steal & 1  # the per-warp lock guards against thieves of the block only
    idle = False  # (lane 0) counted idle, not busy, in ctl
    gens = 0  # levels made (the donation poll's clock)
    drained = False
    ns_back = 64
    part = 0
    parts = 1
    r_lo = int64(0)  # a claimed slice of its first level's row: [r_lo, r_hi), r_hi < 0: none
    r_hi = int64(-1)
    # counting (out_cap == 0): the warp's matches, added to ctl[_C_MATCH] once when it stops --
    # an atomic per warp round on one address serialised the warps of a large count
    acc = int64(0)
    while True:
        t = n_tasks
        if not drained:
            # a persistent warp takes its next task from the global counter (the digest's A2.7)
            if lane == 0:
                B[wib, 0] = cuda.atomic.add(ctl, _C_TASK, 1)
            wsync()
            t = B[wib, 0]
            wsync()
            if t >= n_tasks:
                drained = True
        if t < n_tasks:
            g = _group(g_first, n_groups, t)
            rank = g_rank[g]
            parts = g_parts[g]
            o = t - g_first[g]
            tab = tlist[g_toff[g] + o // parts]
            part = o % parts
            bo = tab * k
            bc = tab * (k + 1)
            ok = _ok(0, g_x[g], m, rank, bo, bc, order_t, chk_ptr, chk_j, chk_out, chk_in,
                     chk_peo, chk_pei, loop_used, ct, rstart, rlen, akey, amult, aemask, vcls,
                     trange, mkeys, mranks, nn, has_el, mono, directed, -1, -1)
            m[0] = g_x[g]
            ns = 1
            if ok and g_y[g] >= 0:
                ok = _ok(1, g_y[g], m, rank, bo, bc, order_t, chk_ptr, chk_j, chk_out, chk_in,
                         chk_peo, chk_pei, loop_used, ct, rstart, rlen, akey, amult, aemask,
                         vcls, trange, mkeys, mranks, nn, has_el, mono, directed, -1, -1)
                m[1] = g_y[g]
                ns = 2
            if not ok:
                continue
            if ns == k:
                if out_cap == 0:
                    acc += tab_wt[tab]
                elif lane == 0:
                    _emit(out, out_tab, cuda.atomic.add(ctl, _C_MATCH, 1), m, k - 1, bo, tab,
                          order_t, out_cap)
                continue
            if lane == 0:  # the prefix thieves copy (no level of this warp is stealable yet)
                for j in range(ns):
                    cuda.atomic.exch(S_m, (wib, j), m[j])
                cuda.atomic.exch(S_task, (wib, 0), int64(rank))
                cuda.atomic.exch(S_task, (wib, 1), int64(tab))
            base = ns
            d = ns
            gen = True
        else:
            if steal == 0:
                break
            if lane == 0:
                if not idle:
                    cuda.atomic.exch(S_busy, wib, int32(0))
                    if steal & 2:
                        cuda.atomic.add(ctl, _C_IDLE, 1)
                        cuda.threadfence()
                        cuda.atomic.add(ctl, _C_BUSY, -1)
                        cuda.threadfence()
                    idle = True
                st = -1
                if lk != 0:
                    st = _find_victim(wib, k, S_lock, S_p, S_end, S_busy, B)
                if st == 1 and steal & 2:
                    # (the victim, whose lock is held, is busy until it takes its entries
                    # left: the grid's busy count never reads 0 in between)
                    cuda.atomic.add(ctl, _C_BUSY, 1)
                    cuda.atomic.add(ctl, _C_IDLE, -1)
                if st != 1 and steal & 2:
                    q = _claim(ctl, q_cap)
                    if q >= 0:
                        B[wib, 0] = q
                        st = 2
                    elif q == -2 or st == 0:
                        st = q + 1  # -1: leave; 0: wait (a warp of the block is busy)
                    else:
                        st = 0
                B[wib, 4] = st
            wsync()
            st = B[wib, 4]
            wsync()
            if st <= 0:
                if st < 0:
                    break
                if lane == 0:
                    pause(ns_back)
                if ns_back < 4096:
                    ns_back *= 2
                continue
            ns_back = 64
            rank_v = int64(0)
            tab_v = int64(0)
            if st == 1:
                v = B[wib, 0]
                lv = B[wib, 1]
                mid = B[wib, 2]
                take = B[wib, 3]
                vgw = cuda.blockIdx.x * _WPB + v
                for i in range(lane, take, 32):  # the victim's lock is held: copy its tail half
                    cbuf[gw, lv, i] = cbuf[vgw, lv, mid + i]
                cuda.threadfence_block()
                wsync()
                if lane == 0:
                    cuda.atomic.exch(S_end, (v, lv), int32(mid))
                    for j in range(lv):
                        S_m[wib, j] = _peek(S_m, v, j)
                    rank_v = _peek(S_task, v, 0)
                    tab_v = _peek(S_task, v, 1)
                    _unlock(S_lock, v, 1)
                    cuda.atomic.add(ctl, _C_STEAL, 1)
            else:  # a donated unit (its donor wrote the slot before its ready word)
                q = B[wib, 0]
                cuda.threadfence()
                lv = q_meta[q, 2]
                take = q_meta[q, 3]  # -1: a slice of depth lv's row, not entries
                r_lo = q_meta[q, 4]
                r_hi = q_meta[q, 5]
                for i in range(lane, take, 32):
                    cbuf[gw, lv, i] = q_ent[q, i]
                cuda.threadfence()
                wsync()
                if lane == 0:
                    for j in range(lv):
                        S_m[wib, j] = q_m[q, j]
                    rank_v = q_meta[q, 0]
                    tab_v = q_meta[q, 1]
                    cuda.threadfence()
                    cuda.atomic.exch(ctl, _C_RDY + q, int64(0))  # the slot is free again
            if lane == 0:
                idle = False
                _lock(S_lock, wib, lk)
                S_task[wib, 0] = rank_v
                S_task[wib, 1] = tab_v
                S_p[wib, lv] = 0
                S_end[wib, lv] = max(take, 0)
                cuda.atomic.exch(S_busy, wib, int32(1))
                _unlock(S_lock, wib, lk)
            wsync()
            for j in range(lv):
                m[j] = S_m[wib, j]
            parts = 1  # the stolen entries were split (if at all) when their level was made
            rank = S_task[wib, 0]
            tab = S_task[wib, 1]
            bo = tab * k
            bc = tab * (k + 1)
            wsync()
            base = lv
            d = lv
            gen = take < 0  # a slice: make depth lv from it
            if not gen:
                r_hi = -1
        while True:
            if not gen:
                if d == k - 1:  # the last depth writes its matches and keeps no buffer
                    d -= 1
                    if d < base:
                        break
                    continue
                # take the next untaken entry of level d (under the warp's lock: thieves lower
                # S_end), or backtrack. Counting, with a last pattern node of one backward
                # neighbour (a tree's leaf) and >= batch_min entries left, take a chunk of up to
                # 32 and make the last depth for all of them at once: their candidates from all
                # of their rows spread over the lanes (gMatch Sec. 4.2's batch exploration; one
                # entry's row alone is often shorter than a warp).
                if lane == 0:
                    _lock(S_lock, wib, lk)
                    pp = S_p[wib, d]
                    left = S_end[wib, d] - pp
                    r = -1
                    c = 0
                    if (batch_min > 0 and left >= batch_min and out_cap == 0 and d == k - 2
                            and chk_ptr[bc + k] - chk_ptr[bc + k - 1] == 1):
                        c = min(left, 32)
                        S_p[wib, d] = pp + c
                    elif left > 0:
                        r = cbuf[gw, d, pp]
                        S_p[wib, d] = pp + 1
                        S_m[wib, d] = r
                    _unlock(S_lock, wib, lk)
                    B[wib, 0] = r
                    B[wib, 1] = pp
                    B[wib, 2] = c
                wsync()
                r = B[wib, 0]
                pp = B[wib, 1]
                c = B[wib, 2]
                wsync()
                if c > 0:
                    if lane < c:  # each lane the row of one entry (lanes keep their own m)
                        r = cbuf[gw, d, pp + lane]
                        m[d] = r
                        a, b, kd, jdl = _drive(d + 1, m, bo, bc, order_t, drv_ptr, drv_j,
                                               drv_dir, ukey, rstart, rlen, akey, irstart,
                                               irlen, iakey, narrow_row, n_nodes)
                        S_r[wib, lane] = r
                        S_lo[wib, lane] = a
                        S_off[wib, lane] = b
                        S_kj[wib, lane] = kd * 32 + jdl + 1
                    wsync()
                    if lane == 0:  # row lengths -> offsets into the entries' candidates
                        tot = int64(0)
                        for i in range(c):
                            b = S_off[wib, i]
                            S_off[wib, i] = tot
                            tot += b
                        S_off[wib, c] = tot
                    wsync()
                    tot = S_off[wib, c]
                    wt = tab_wt[tab]
                    for f0 in range(0, tot, 32):
                        f = f0 + lane
                        good = False
                        if f < tot:
                            i = _group(S_off[wib], c, f)  # the entry whose candidates hold f
                            m[d] = S_r[wib, i]
                            j = S_lo[wib, i] + f - S_off[wib, i]
                            kd = S_kj[wib, i] // 32
                            v = j
                            if kd == 1:
                                v = adj[j]
                            elif kd == 2:
                                v = iadj[j]
                            good = _ok(d + 1, v, m, rank, bo, bc, order_t, chk_ptr, chk_j,
                                       chk_out, chk_in, chk_peo, chk_pei, loop_used, ct, rstart,
                                       rlen, akey, amult, aemask, vcls, trange, mkeys, mranks, nn,
                                       has_el, mono, directed, S_kj[wib, i] % 32 - 1, j)
                        acc += cuda.popc(ballot(good)) * wt
                    wsync()  # every lane has read the entries before the next chunk's
                    continue
                if r >= 0:
                    m[d] = r
                    d += 1
                    gen = True
                else:
                    d -= 1
                    if d < base:
                        break
                continue
            gen = False
            # GenCandidates for depth d given m[0..d-1]
            wsync()  # every lane has read the level buffer before it is rewritten
            lo, n, kind, jd = _drive(d, m, bo, bc, order_t, drv_ptr, drv_j, drv_dir, ukey,
                                     rstart, rlen, akey, irstart, irlen, iakey, narrow_row,
                                     n_nodes)
            total = 0
            wt = 1
            if out_cap == 0:
                wt = tab_wt[tab]
            i_lo = int64(0)
            i_hi = n
            if parts > 1 and d == base:
                i_lo = n * part // parts
                i_hi = n * (part + 1) // parts
            if r_hi >= 0:  # a claimed slice (its first level, depth base)
                i_lo = r_lo
                i_hi = r_hi
                r_hi = -1
            if slice_min > 0 and steal & 2 and i_hi - i_lo >= 2 * slice_min:
                if lane == 0:
                    B[wib, 0] = _offer_slices(ctl, q_cap, q_meta, q_m, m, d, rank, tab, i_lo,
                                              i_hi, slice_min)
                wsync()
                i_hi = B[wib, 0]
                wsync()
            for i0 in range(i_lo, i_hi, 32):
                i = i0 + lane
                v = -1
                good = False
                if i < i_hi:
                    if kind == 0:
                        v = i
                    elif kind == 1:
                        v = adj[lo + i]
                    else:
                        v = iadj[lo + i]
                    good = _ok(d, v, m, rank, bo, bc, order_t, chk_ptr, chk_j, chk_out, chk_in,
                               chk_peo, chk_pei, loop_used, ct, rstart, rlen, akey, amult, aemask,
                               vcls, trange, mkeys, mranks, nn, has_el, mono, directed, jd,
                               lo + i)
                mask = ballot(good)
                c = cuda.popc(mask)
                if c == 0:
                    continue
                pos = cuda.popc(mask & below)
                if d == k - 1 and out_cap == 0:
                    acc += c * wt
                elif d == k - 1:
                    if lane == 0:
                        B[wib, 0] = cuda.atomic.add(ctl, _C_MATCH, c * wt)
                    wsync()
                    if good:
                        m[d] = v
                        _emit(out, out_tab, B[wib, 0] + pos, m, d, bo, tab, order_t, out_cap)
                    wsync()
                else:
                    if good:
                        cbuf[gw, d, total + pos] = v
                    total += c
            if d < k - 1:
                cuda.threadfence_block()
                wsync()
                if lane == 0:  # publish the level (it was exhausted: no thief reads it now)
                    _lock(S_lock, wib, lk)
                    S_p[wib, d] = 0
                    S_end[wib, d] = total
                    _unlock(S_lock, wib, lk)
                    q = -1
                    if steal & 2:
                        gens += 1
                        if (gens & poll) == 0:
                            q = _donate(ctl, q_cap, wib, base, d, lk, S_lock, S_p, S_end, B)
                            if q >= 0:
                                q_meta[q, 0] = rank
                                q_meta[q, 1] = tab
                                q_meta[q, 2] = B[wib, 1]
                                q_meta[q, 3] = B[wib, 3]
                                for j in range(B[wib, 1]):
                                    q_m[q, j] = m[j]
                    B[wib, 5] = q
                wsync()
                q = B[wib, 5]
                if q >= 0:  # the warp's lanes copy the given entries, then the slot is ready
                    lv = B[wib, 1]
                    mid = B[wib, 2]
                    for i in range(lane, B[wib, 3], 32):
                        q_ent[q, i] = cbuf[gw, lv, mid + i]
                    cuda.threadfence()
                    wsync()
                    if lane == 0:
                        cuda.atomic.exch(ctl, _C_RDY + q, B[wib, 0])
                        cuda.atomic.add(ctl, _C_DON, 1)
            wsync()
    if lane == 0 and acc > 0:
        cuda.atomic.add(ctl, _C_MATCH, acc)


# ---------------------------------------------------------------------------------------------
# host side
# ---------------------------------------------------------------------------------------------
class GammaDelta:
    """The GAMMA engine of an :class:`~nx_gsm.incremental.IncrementalMatcher`: the data graph on
    the device and the batch delta search.

    Parameters
    ----------
    problem : DeltaProblem
        The pattern, its label tables, the mode, the match functions and the matcher's graph
        (read, never changed).
    warps : int, optional
        Upper bound on resident warps (default: enough for the device).
    out_capacity : int, optional
        Initial output rows (grown and re-run when a batch has more).
    steal : bool, optional
        Intra-block work stealing (default on; ``NX_GSM_GAMMA_STEAL=0`` turns it off).
    donate : bool, optional
        Work donation between blocks through a global ring, once the task counter is drained
        (default on; ``NX_GSM_GAMMA_DONATE=0`` turns it off). The answers are the same either
        way.
    split : bool, optional
        Seeds at hubs split into slices of their first candidate row (default on;
        ``NX_GSM_GAMMA_SPLIT=0`` turns it off). The answers are the same either way.
    coalesce : bool, optional
        Coalesced search over automorphic pattern pairs (default on;
        ``NX_GSM_GAMMA_COALESCE=0`` turns it off). The answers are the same either way.

    The attributes ``poll`` (the donation poll every ``poll + 1`` levels), ``batch_min``
    (counting, a leaf's last depth made for a chunk of the level above once it has this many
    entries left; 0: never) and ``slice_min`` (a candidate row of at least twice this many
    entries offered in slices to idle warps, with donation on; 0: never) tune the kernel; the
    answers are the same for any value.

    Device faults (out of memory, a failed launch) are not atomic on the device -- the graph
    update may stop half-way -- so :meth:`delta` drops the device graph and re-raises, and the
    matcher finishes that batch on its CPU path, exactly as without the fault. The device graph
    is reloaded from the matcher's graph before the next batch (``last_stats["recovered"]``).

    Examples
    --------
    >>> m = nx_gsm.IncrementalMatcher(G, H, engine="gamma")   # doctest: +SKIP
    >>> m.apply(insert=[(0, 5)]).num_added                     # doctest: +SKIP
    """

    name = "gamma"
    capabilities = capabilities_of("gamma")

    def __init__(self, problem, warps=None, out_capacity=1 << 16, steal=None, coalesce=None,
                 split=None, donate=None):
        reason = gamma_reason()
        if reason is not None:
            raise RuntimeError(f"engine 'gamma' is not available: {reason}")
        h = problem.pattern
        k = h.n
        if k > KMAX:
            raise ValueError(f"engine 'gamma' supports patterns of at most {KMAX} nodes, got {k}")
        if problem.edge_match is not None and h.indices.size > EMAX:
            raise ValueError(f"engine 'gamma' supports edge_match on patterns of at most {EMAX} "
                             f"edge entries, got {h.indices.size}")
        self.xp = np if _SIM else array_module()
        self.k = k
        self.warps = warps
        self.out_capacity = int(out_capacity)
        env = os.environ.get
        self.steal = bool(steal if steal is not None else env("NX_GSM_GAMMA_STEAL", "1") != "0")
        self.donate = bool(donate if donate is not None
                           else env("NX_GSM_GAMMA_DONATE", "1") != "0")
        self.poll = _POLL
        self.batch_min = _BATCH_MIN
        self.slice_min = _SLICE_MIN
        self.coalesce = bool(coalesce if coalesce is not None
                             else env("NX_GSM_GAMMA_COALESCE", "1") != "0")
        self.split = bool(split if split is not None else env("NX_GSM_GAMMA_SPLIT", "1") != "0")
        self.split_row = _SPLIT_ROW
        self.narrow_row = 32  # rows longer than this are narrowed to a pattern node's classes
        self._orbit_key = None
        self.problem = problem
        self.directed = problem.directed
        self.mono = 0 if problem.induced else 1
        self.node_match = problem.node_match
        self.edge_match = problem.edge_match
        self.last_stats = {}
        self._origin = None  # the current batch's start on the device clock (a CUDA event)
        self._args = None  # kernel arguments kept between launches (_load)
        self._pattern(problem)
        self._stale = True
        try:
            self._load(problem.graph())
        except faults.device_errors() as exc:
            self._fault(exc)

    # -- pattern tables ---------------------------------------------------------------------
    def _pattern(self, problem):
        h, k = problem.pattern, self.k
        self.hkeys = h.node_keys
        self.hdata = list(problem.node_data)
        hl = np.asarray(h.loops, dtype=np.int64)
        self.hloop = hl
        # pattern out-entries (edge-label bit positions, H's out-CSR order)
        self.hentries = list(problem.edge_data)
        self.hloopdata = list(problem.loop_data)
        # classes of equal pattern edge data (-1: no edge), which coalesced search keeps
        self.hecls, self.hlcls = problem.edge_classes, problem.loop_classes
        # saturated distinct out-/in-degree bounds of the vertex code
        self.hout = np.diff(h.indptr).astype(np.int64)
        self.hin = (np.diff(h.in_indptr) if self.directed else self.hout).astype(np.int64)
        self.dsat = int(max(self.hout.max(initial=0), self.hin.max(initial=0)))
        self.loop_used = ((hl > 0) | (self.mono == 0)).astype(np.int32)
        self.isolated = np.array(sorted(problem.isolated), dtype=np.int64)
        # seeds: ordered pattern pairs whose check is not trivial, with their matching order
        hm = problem.multiplicity
        self.hm = hm
        adj = (hm + hm.T) > 0
        pairs = [(a, b) for a in range(k) for b in range(k) if a != b
                 and (self.mono == 0 or hm[a, b] > 0)]
        self.pairs = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        tabs = {}
        orders = []
        for a, b in [(a, -1) for a in range(k)] + pairs:
            order = [a] if b < 0 else [a, b]
            rest = [u for u in range(k) if u not in order]
            while rest:  # connected greedy order: most backward neighbours, then degree
                u = max(rest, key=lambda w: (int(adj[w, order].sum()), int(adj[w].sum()), -w))
                order.append(u)
                rest.remove(u)
            tabs[a, b] = len(orders)
            orders.append(order)
        self.tab = tabs
        chk = {n: [] for n in ("chk_j", "chk_out", "chk_in", "chk_peo", "chk_pei", "drv_j",
                               "drv_dir")}
        chk_ptr, drv_ptr = [], []
        nodrv = np.zeros(len(orders), dtype=bool)
        empty = np.zeros((k, 0), dtype=bool)
        for t, order in enumerate(orders):
            arr = depth_arrays(h, empty, np.asarray(order), problem.mode)
            chk_ptr.extend((arr["chk_ptr"] + len(chk["chk_j"])).tolist())
            drv_ptr.extend((arr["drv_ptr"] + len(chk["drv_j"])).tolist())
            nodrv[t] = bool((np.diff(arr["drv_ptr"])[1 + (t >= k):] == 0).any())
            for n in chk:
                chk[n].extend(arr[n].tolist())
        self.nodrv = nodrv
        self.tab_wt = np.ones(len(orders), dtype=np.int64)
        self.perms = {}
        self._set_reps(self.pairs)
        i32 = lambda x: np.asarray(x if len(x) else [0], dtype=np.int32)  # noqa: E731
        self.ptabs = dict(order_t=i32([u for o in orders for u in o]), chk_ptr=i32(chk_ptr),
                          drv_ptr=i32(drv_ptr), **{n: i32(v) for n, v in chk.items()})

    # -- coalesced search (GAMMA Sec. V-B, the digest's k = 0 case) -----------------------------
    def _orbits(self):
        """Group the seeded pattern pairs into orbits of the pattern's automorphisms that keep
        every node's candidate column (``nbits``: the node-label part of the vertex code, on the
        current graph), loops and multiplicities; only one representative per orbit is searched,
        the rest come from its matches by the automorphism (``_unfold``), and a count weighs the
        representative's matches by the orbit's size. Every filter of the search is invariant
        under such an automorphism, as the digest's A2.10 requires; with ``edge_match`` the
        automorphisms also keep each pattern edge's and loop's data (equal attribute dicts get
        equal ``edge_match`` answers from a callable that reads the attributes' values, as
        NetworkX's matchers do). Off with ``coalesce=False``."""
        k = self.k
        full = (1 << k) - 1
        if self.node_match is None or not self.nbits.size or bool(np.all(self.nbits == full)):
            color = np.zeros(k, dtype=np.int64)
        else:
            cols = [np.packbits(((self.nbits >> a) & 1).astype(np.uint8)).tobytes()
                    for a in range(k)]
            first = {}
            color = np.array([first.setdefault(c, len(first)) for c in cols], dtype=np.int64)
        key = tuple(color.tolist())
        if key == self._orbit_key:
            return
        self._orbit_key = key
        wt = np.ones_like(self.tab_wt)
        perms = {}
        pairs = [tuple(p) for p in self.pairs.tolist()]
        reps = []
        if not self.coalesce or len(pairs) < 2:
            reps = pairs
        else:
            import networkx as nx
            from networkx.algorithms import isomorphism as iso

            hm = self.hm if self.directed else np.maximum(self.hm, self.hm.T)
            ec, lc = self.hecls, self.hlcls
            X = nx.DiGraph()
            X.add_nodes_from((a, {"c": (int(color[a]), int(self.hloop[a]), int(lc[a]))})
                             for a in range(k))
            X.add_edges_from((a, b, {"m": (int(hm[a, b]), int(ec[a, b]))}) for a in range(k)
                             for b in range(k) if hm[a, b] > 0)
            outd, ind = (hm > 0).sum(axis=1), (hm > 0).sum(axis=0)

            def inv(a, b):
                return (X.nodes[a]["c"], X.nodes[b]["c"], int(hm[a, b]), int(hm[b, a]),
                        int(ec[a, b]), int(ec[b, a]), int(outd[a]), int(ind[a]), int(outd[b]),
                        int(ind[b]))

            def marked(a, b):
                Y = X.copy()
                Y.nodes[a]["s"], Y.nodes[b]["s"] = 1, 2
                return Y

            def nm(x, y):
                return x["c"] == y["c"] and x.get("s") == y.get("s")

            def em(x, y):
                return x["m"] == y["m"]

            deadline = time.perf_counter() + 0.5  # a cap for big patterns: then fewer orbits
            for P in pairs:
                hit = None
                if time.perf_counter() < deadline:
                    for R in reps:
                        if inv(*R) != inv(*P):
                            continue
                        M = iso.DiGraphMatcher(marked(*R), marked(*P), node_match=nm,
                                               edge_match=em)
                        if M.is_isomorphic():
                            hit = R, np.array([M.mapping[u] for u in range(k)], dtype=np.int64)
                            break
                if hit is None:
                    reps.append(P)
                else:
                    t = self.tab[hit[0]]
                    perms.setdefault(t, []).append(hit[1])
                    wt[t] += 1
        self.tab_wt = wt
        self.perms = perms
        self._set_reps(reps)

    def _set_reps(self, reps):
        """The pattern pairs searched, with their order tables' ids (the seeds of _tasks)."""
        self.rep_pairs = np.array(reps, dtype=np.int64).reshape(-1, 2)
        self.rep_tabs = np.array([self.tab[int(a), int(b)] for a, b in self.rep_pairs],
                                 dtype=np.int64)

    # -- vertex codes and the candidate table (GAMMA Sec. IV-B) ------------------------------
    def _node_bits(self, datas):
        """Node-label part of the code: bit u set iff node_match(data, H node u)."""
        full = (1 << self.k) - 1
        if self.node_match is None:
            return np.full(len(datas), full, dtype=np.int64)
        from ...plan.labels import compat_table

        dcls, ok = compat_table(self.node_match, list(datas), self.hdata)
        w = (ok.astype(np.int64) << np.arange(self.k, dtype=np.int64)[:, None]).sum(axis=0)
        return w[dcls] if len(datas) else np.zeros(0, dtype=np.int64)

    def _codes(self, ids, loopdata):
        """Candidate-table rows of vertices ``ids`` from their current code parts."""
        k = self.k
        out = np.minimum(self.odeg[ids], self.dsat)
        inn = np.minimum(self.ideg[ids], self.dsat)
        lm = self.loopm[ids]
        ok = ((out[:, None] >= self.hout[None, :]) & (inn[:, None] >= self.hin[None, :]))
        if self.mono:
            ok &= lm[:, None] >= self.hloop[None, :]
        else:
            ok &= lm[:, None] == self.hloop[None, :]
        if self.edge_match is not None:
            for i, ld in enumerate(loopdata):
                for a in range(k):
                    if self.hloop[a] and ok[i, a]:
                        ok[i, a] = bool(self.edge_match(ld, self.hloopdata[a]))
        bits = ok.astype(np.int64) @ (np.int64(1) << np.arange(k, dtype=np.int64))
        return bits & self.nbits[ids] & self.alive[ids]

    def _class_ids(self, nbits):
        """Label classes of vertices with node-label codes ``nbits`` (equal codes, one class; a
        code not seen before gets the next id)."""
        cl = self._classes
        codes, inv = np.unique(nbits, return_inverse=True)
        return np.array([cl.setdefault(b, len(cl)) for b in codes.tolist()],
                        dtype=np.int64)[inv.reshape(-1)]

    def _class_runs(self):
        """The class run each pattern node reads over the classes seen so far (``ukey``: key
        bounds per node, see the kernel's row narrowing)."""
        cl = self._classes
        ukey = np.zeros(2 * self.k, dtype=np.int64)
        for u in range(self.k):
            cs = sorted(c for b, c in cl.items() if (b >> u) & 1)
            if len(cs) == len(cl) or (cs and cs[-1] - cs[0] + 1 != len(cs)):
                ukey[2 * u + 1] = _ALLKEYS  # every class, or not one run: whole rows
            elif cs:
                ukey[2 * u], ukey[2 * u + 1] = cs[0] << 32, (cs[-1] + 1) << 32
        return ukey

    def _key(self, ids):
        """RowPMA sort keys of neighbours ``ids``: class in the high bits, then the id."""
        return (self.vcls[ids] << 32) | ids

    def _emasks(self, datas):
        """Edge-label bits of data edges: bit p iff edge_match(datum, H out-entry p)."""
        if self.edge_match is None or not len(datas):
            return np.zeros(len(datas), dtype=np.int64)
        from ...plan.labels import compat_table

        dcls, ok = compat_table(self.edge_match, list(datas), self.hentries)
        w = (ok.astype(np.int64) << np.arange(len(self.hentries), dtype=np.int64)[:, None])
        return w.sum(axis=0)[dcls]

    # -- initial load ---------------------------------------------------------------------
    def _load(self, G):
        xp = self.xp
        self._args = _KernelArgs(xp)
        faults.point("graph_upload")
        keys = list(G)
        self.keys = keys
        self.kid = {x: i for i, x in enumerate(keys)}
        n = len(keys)
        self.ident = all(type(x) is int and x == i for i, x in enumerate(keys))
        kid = self.kid
        succ = G._succ if self.directed else G._adj
        multi = G.is_multigraph()
        src, dst, mult, datas = [], [], [], []
        loopm = np.zeros(n, dtype=np.int64)
        loopdata = [None] * n
        for x, nb in succ.items():
            i = kid[x]
            for y, dd in nb.items():
                c = len(dd) if multi else 1
                if y == x:
                    loopm[i] = c
                    loopdata[i] = dd
                    continue
                src.append(i)
                dst.append(kid[y])
                mult.append(c)
                datas.append(dd)
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        em = self._emasks(datas)
        self.loopm = loopm
        self.nbits = self._node_bits([G._node[x] for x in keys])
        self._classes = {}
        self.vcls = self._class_ids(self.nbits)
        self.ukey = self._class_runs()
        self._orbit_key = None  # orbits are (re)computed from these bits before the next search
        self.alive = np.full(n, -1, dtype=np.int64)
        self.odeg = np.bincount(src, minlength=n).astype(np.int64)
        self.ideg = np.bincount(dst, minlength=n).astype(np.int64)
        self.out = RowPMA(n, src, dst, mult, em, xp, key=self._key(dst))
        self.inn = (RowPMA(n, dst, src, mult, np.zeros_like(em), xp, key=self._key(src))
                    if self.directed else None)
        ct = self._codes(np.arange(n), loopdata)
        self.ct_host = ct
        self.ct = xp.asarray(ct)
        self.trange = xp.zeros(n, dtype=np.int64)
        self.uploads = 0
        self._stale = False

    def reads_plain_ids(self):
        """Whether a batch of plain rows is read as node ids (:meth:`_plain_columns`): the
        device graph is loaded, its node keys are its ids and no ``edge_match`` needs the rows'
        data. The matcher then checks such rows against its edge index and edits its own graph
        only when it is next read."""
        return not self._stale and self.ident and self.edge_match is None

    def drop(self):
        """Forget the device graph (a batch was applied to it and then failed its check): the
        next batch reloads it from the matcher's graph."""
        self._stale = True

    def _fault(self, exc):
        """After a device fault: drop the device graph (it may be half-updated) so that the next
        batch reloads it from the matcher's graph, and note the fault."""
        self._stale = True
        self.out = self.inn = self.ct = self.trange = None
        self._args = None
        faults.release_device_memory()
        what = f"{type(exc).__name__}: {exc}"
        self.last_stats["faults"] = [what]
        self.last_stats["recovered"] = ("batch finished on the CPU path; the device graph is "
                                        "reloaded before the next batch")
        # a string, not the exception: a stored record would keep device arrays alive
        log.warning("gamma: device fault (%s); the CPU path finishes the batch", what)

    def _grow_nodes(self, new_keys):
        xp = self.xp
        for x in new_keys:
            self.ident = self.ident and type(x) is int and x == len(self.keys)
            self.kid[x] = len(self.keys)
            self.keys.append(x)
        e = len(new_keys)
        if not e:
            return
        z = np.zeros(e, dtype=np.int64)
        self.loopm = np.concatenate([self.loopm, z])
        self.odeg = np.concatenate([self.odeg, z])
        self.ideg = np.concatenate([self.ideg, z])
        self.alive = np.concatenate([self.alive, z])
        self.nbits = np.concatenate([self.nbits, z])
        self.ct_host = np.concatenate([self.ct_host, z])
        self.ct = xp.concatenate([self.ct, xp.zeros(e, dtype=np.int64)])
        self.trange = xp.concatenate([self.trange, xp.zeros(e, dtype=np.int64)])
        self.out.add_rows(e)
        if self.inn is not None:
            self.inn.add_rows(e)

    # -- one batch ------------------------------------------------------------------------
    def delta(self, batch, counts_only=False, during=None):
        """(matches of G_before, matches of G_after) that use an updated item, as tuples of G
        keys in the pattern's node order; the device graph moves to G_after on the way.

        With ``counts_only``, when no match can be valid on both sides (every changed pair or
        loop appears or disappears; in induced mode, changes multiplicity), the two sizes are
        returned instead, counted on the device without writing the matches.

        Every user callable runs before the device state changes, so an exception leaves the
        engine consistent with the matcher's (unchanged) graph. A device fault is re-raised after
        the device graph is dropped (the matcher's CPU path then finishes the batch).

        ``during`` (no arguments) is called once while the after-side search runs on the device
        (the asynchronous pipeline of GAMMA Sec. IV-A, on the host's side: the matcher brings its
        own graph up to date there); with ``counts_only`` the before-side search also runs while
        the host prepares the graph update.
        """
        self.last_stats = {}
        try:
            if self._stale:
                self._load(self.problem.graph())
            return self._delta(batch, counts_only, during)
        except faults.device_errors() as exc:
            self._fault(exc)
            raise

    def _delta(self, batch, counts_only, during=None):
        t_start = time.perf_counter()
        # the batch's timeline (stats "timeline_ms"): host marks, and the kernels' spans on the
        # device clock from an event recorded now (the stream is idle between batches)
        self._origin = None
        if self.xp is not np:
            self._origin = self.xp.cuda.Event()
            self._origin.record()
        marks = self.last_stats.setdefault("timeline_ms", {})

        def at(name):
            marks[name] = round(1e3 * (time.perf_counter() - t_start), 3)

        directed = self.directed
        new_keys = list(batch.new_nodes)
        nbits_new = self._node_bits([batch.new_nodes[x] for x in new_keys])
        cols = self._plain_columns(batch)
        # plain id rows not yet checked (see below)
        check = batch.check if getattr(batch, "pending", None) is not None else None
        if cols is None and check is not None:
            check()  # (the general columns read the graph: checked rows only)
            check = None
        # (read only where needed: the matcher's graph may have batches of id rows to catch up;
        # a batch of plain rows was checked when the matcher made it, or is checked below)
        G0 = self.problem.graph() if cols is None else None
        if cols is None:
            # (u, v, mult before, mult after, datum after) per changed pair
            changed = batch.changes(G0, self.problem.pair)
            em_all = np.zeros(len(changed), dtype=np.int64)
            live = [i for i, c in enumerate(changed) if c[3] > 0 and c[0] != c[1]]
            em_all[live] = self._emasks([changed[i][4] for i in live])
        # ---- no callables below this line ----
        uploads0 = self.uploads
        n_old = len(self.keys)
        self._grow_nodes(new_keys)
        self.nbits[n_old:] = nbits_new
        if new_keys:
            self.vcls = np.concatenate([self.vcls, self._class_ids(nbits_new)])
            self.ukey = self._class_runs()
        if new_keys or self._orbit_key is None:  # the orbits follow the node-label bits only
            self._orbits()
        kid = self.kid
        gone = np.array([kid[x] for x in batch.gone_nodes], dtype=np.int64)
        nn = len(self.keys) + 1
        if cols is None:
            cx = np.array([kid[c[0]] for c in changed], dtype=np.int64)
            cy = np.array([kid[c[1]] for c in changed], dtype=np.int64)
            m0 = np.array([c[2] for c in changed], dtype=np.int64)
            m1 = np.array([c[3] for c in changed], dtype=np.int64)
        else:
            cx, cy, m0, m1 = cols
            em_all = np.zeros(cx.size, dtype=np.int64)
        lo, hi = (cx, cy) if directed else (np.minimum(cx, cy), np.maximum(cx, cy))
        o = np.argsort(lo * nn + hi)
        cx, cy, m0, m1, em_all = cx[o], cy[o], m0[o], m1[o], em_all[o]
        prank = np.arange(cx.size, dtype=np.int64)
        newn = np.arange(n_old, len(self.keys), dtype=np.int64)
        use_nodes = self.isolated.size > 0
        gone_rank = cx.size + np.arange(gone.size, dtype=np.int64)
        new_rank = cx.size + gone.size + np.arange(newn.size, dtype=np.int64)
        # the updated items as sorted keys -> ranks (pairs in both orientations if undirected)
        keys = [cx * nn + cy]
        ranks = [prank]
        if not directed:
            keys.append(cy * nn + cx)
            ranks.append(prank)
        if use_nodes:
            keys += [gone * nn + nn - 1, newn * nn + nn - 1]
            ranks += [gone_rank, new_rank]
        mk = np.concatenate(keys)
        mr = np.concatenate(ranks)
        s = np.argsort(mk)  # (equal keys: a loop's two orientations, one rank)
        mk, mr = mk[s], mr[s]
        if mk.size == 0:
            mk, mr = np.full(1, -1, dtype=np.int64), np.zeros(1, dtype=np.int64)
        # a match using an updated item is then invalid on the other side: the sets are disjoint
        disjoint = bool(np.all(m0 != m1) if self.mono == 0 else np.all((m0 > 0) != (m1 > 0)))
        cap = 0 if counts_only and disjoint else None
        # each vertex an updated item touches: its run of keys in mk (see _ok; a new or deleted
        # node's run is empty unless isolated pattern nodes make nodes items)
        mark = np.zeros(len(self.keys), dtype=bool)
        for ids in (cx, cy, gone, newn):
            mark[ids] = True
        touched_ids = np.flatnonzero(mark)
        t_lo = np.searchsorted(mk, touched_ids * nn)
        t_hi = np.searchsorted(mk, (touched_ids + 1) * nn)
        self.trange[:] = 0
        if touched_ids.size:
            (at_ids, ranges), _ = self._args.staged("tr.", [
                (touched_ids, np.int64), (((t_lo + 1) << 32) | t_hi, np.int64)])
            self.trange[at_ids] = ranges
        mk_d, mr_d = self._args.staged("m.", [(mk, np.int64), (mr, np.int64)])[1]
        nn = int(nn)

        at("prepared")
        before = self._run(self._seeds(cx, cy, m0, prank, gone, gone_rank), mk_d, mr_d, nn,
                           cap, which=0)
        at("launched0")
        t_upd = -time.perf_counter()
        # ---- apply the batch to the device graph and the candidate table; the host's part
        # first, while the before-side search may still run (the device's part queues behind it)
        loop = cx == cy
        ex, ey, e1 = cx[~loop], cy[~loop], m1[~loop]
        e0, emk = m0[~loop], em_all[~loop]
        born = (e0 == 0) & (e1 > 0)
        died = (e0 > 0) & (e1 == 0)
        dlt = born.astype(np.int64) - died
        if directed:
            np.add.at(self.odeg, ex, dlt)
            np.add.at(self.ideg, ey, dlt)
        else:
            np.add.at(self.odeg, ex, dlt)
            np.add.at(self.odeg, ey, dlt)
            self.ideg = self.odeg
        self.loopm[cx[loop]] = m1[loop]
        self.alive[newn] = -1
        self.alive[gone] = 0
        # recompute codes of the touched vertices only; upload the rows that changed
        ids = np.zeros(0, dtype=np.int64)
        if touched_ids.size:
            ld = [None] * touched_ids.size
            if self.edge_match is not None:
                gone_set = set(batch.gone_nodes)
                loops1 = {c[0]: c[4] for c in changed if c[0] == c[1]}  # changed loops, after
                ld = []
                for i in touched_ids.tolist():
                    x = self.keys[i]
                    ld.append(loops1[x] if x in loops1 else
                              None if x in gone_set else _loop_datum(G0, x))
            codes = self._codes(touched_ids, ld)
            diff = codes != self.ct_host[touched_ids]
            ids = touched_ids[diff]
            self.ct_host[ids] = codes[diff]
        faults.point("graph_upload")
        # (each entry's presence before is known: no read back waits for the before side)
        had = e0 > 0
        if directed:
            self.out.update(ex, ey, e1, emk, key=self._key(ey), present=had)
            self.inn.update(ey, ex, e1, np.zeros_like(emk), key=self._key(ex), present=had)
        else:
            dst = np.concatenate([ey, ex])
            self.out.update(np.concatenate([ex, ey]), dst, np.concatenate([e1, e1]),
                            np.concatenate([emk, emk]), key=self._key(dst),
                            present=np.concatenate([had, had]))
        if ids.size:
            (at_ids, codes), _ = self._args.staged("ct.", [(ids, np.int64),
                                                          (self.ct_host[ids], np.int64)])
            self.ct[at_ids] = codes
            self.uploads += int(ids.size)
        t_upd += time.perf_counter()
        at("updated")
        after = self._run(self._seeds(cx, cy, m1, prank, newn, new_rank), mk_d, mr_d, nn, cap,
                          which=1)
        at("launched1")
        if check is not None:
            # plain id rows checked in the after-side search's shadow, off the batch's path
            # (~1.1 ms on the card's host, which was the critical path between the
            # launches); a batch that fails here drops the device graph it was applied to (the
            # next batch reloads it from the matcher's graph, which did not change)
            try:
                check()
            except BaseException:
                try:
                    before(), after()  # (their kernels still read the buffers about to go)
                finally:
                    self.drop()
                raise
            at("checked")
        if during is not None:
            during()
            at("during_done")
        before, after = before(), after()
        at("collected")
        st = self.last_stats
        st["update_s"] = t_upd  # graph + candidate-table update (between the two launches)
        st["changed"] = int(cx.size)
        st["ct_rows"] = int(self.uploads - uploads0)
        st["total_s"] = time.perf_counter() - t_start
        return before, after

    def _plain_columns(self, batch):
        """``(cx, cy, m0, m1)`` of a batch of plain ``(u, v)`` rows (``batch.pairs``, each
        deletion present and each insertion new once ``batch.check`` passes; ids past the
        tables give None, so an unchecked batch never makes the kernels read past them) on a
        graph whose node keys are its ids, read straight off the rows (no per-row dict
        lookups); None otherwise, or with ``edge_match`` (whose datum the general path
        reads)."""
        if batch.pairs is None or not self.ident or self.edge_match is not None:
            return None
        ends = batch.ends  # the rows' integer endpoints, deletions first
        if ends is None:
            return None
        n, dels = len(ends), len(batch.pairs[1])
        if n and (ends.min() < 0 or ends.max() >= len(self.keys)):
            return None  # not node ids of this graph (the kernels would read past the tables)
        m0 = np.zeros(n, dtype=np.int64)
        m0[:dels] = 1
        return ends[:, 0].copy(), ends[:, 1].copy(), m0, 1 - m0

    def _seeds(self, cx, cy, mult, prank, nodes, nrank):
        """Seed groups for one side, ``(rank, x, y, table list offset, tables)`` per group, and
        the table list: changed pairs present on this side (or any, in induced mode) onto every
        seeded pattern pair, loops onto each pattern node whose loop is checked, new/deleted
        nodes onto each isolated pattern node. None if there is nothing to search."""
        lists = (self.rep_tabs, np.flatnonzero(self.loop_used), self.isolated)
        off = np.cumsum([0] + [x.size for x in lists])
        loop = cx == cy
        pick = (~loop, loop) if self.mono == 0 else (~loop & (mult > 0), loop & (mult > 0))
        groups = []
        for j, (sel, y) in enumerate(((pick[0], cy), (pick[1], None))):  # pairs, then loops
            i = np.flatnonzero(sel)
            if i.size and lists[j].size:
                groups.append((prank[i], cx[i], np.full(i.size, -1) if y is None else y[i],
                               np.full(i.size, off[j]), np.full(i.size, lists[j].size)))
        if nodes.size and self.isolated.size:
            groups.append((nrank, nodes, np.full(nodes.size, -1), np.full(nodes.size, off[2]),
                           np.full(nodes.size, self.isolated.size)))
        if not groups:
            return None
        return [np.concatenate([g[c] for g in groups]) for c in range(5)], \
            np.concatenate(lists).astype(np.int32)

    def _run(self, seeds, mk, mr, nn, cap=None, which=0):
        """Run the delta kernel over the seed groups ``seeds`` (:meth:`_seeds`) on the device's
        current graph. Returns a function of no arguments giving the matches as a set of key
        tuples (pattern node order), or their number if ``cap`` is 0 (count only): a count is
        launched and not waited for until that function is called (the kernel then overlaps the
        host's next steps; anything queued on the device later runs after it), a set is
        collected at once (a full output buffer relaunches the search on the same graph).
        ``which`` (0 before, 1 after) keeps the two sides' control words apart."""
        if seeds is None:
            empty = set() if cap is None else 0
            return lambda: empty
        xp = self.xp
        (rank, tx, ty, toff, ntab), tlist = seeds
        # heaviest seeds first (a longest-processing-time order): the warps that draw the hub
        # updates start at once instead of holding the kernel's tail
        deg = self.odeg + (self.ideg if self.directed else 0) + 1
        o = np.argsort(-(deg[tx] * np.where(ty >= 0, deg[np.maximum(ty, 0)], 1)),
                       kind="stable")
        rank, tx, ty, toff, ntab = rank[o], tx[o], ty[o], toff[o], ntab[o]
        k = self.k
        # a pair seed at a hub is split into slices of its first candidate row (see the
        # kernel): the longest seeds no longer hold the kernel's tail on one block
        parts = np.ones(rank.size, dtype=np.int64)
        if self.split and k >= 3:
            hub = np.where(ty >= 0, np.maximum(deg[tx], deg[np.maximum(ty, 0)]), 0)
            parts = np.clip(hub // self.split_row, 1, _SPLIT_MAX)
        per = ntab * parts
        first = np.zeros(rank.size + 1, dtype=np.int64)
        np.cumsum(per, out=first[1:])
        n_tasks = int(first[-1])
        if parts.max(initial=1) > 1:
            st = self.last_stats
            st["split_tasks"] = st.get("split_tasks", 0) + n_tasks - int(ntab.sum())
        n_nodes = len(self.keys)
        count_only = cap == 0
        cap = max(self.out.max_length(), self.inn.max_length() if self.inn is not None else 0, 1)
        lists, at = np.unique(toff, return_index=True)  # the table lists searched
        if any(self.nodrv[tlist[a: a + n]].any() for a, n in zip(lists, ntab[at])):
            cap = max(cap, n_nodes)
        if _SIM:
            blocks = 1
        else:
            warps = self.warps or 4096
            warps = min(warps, max(1, (1 << 30) // (4 * k * cap)), max(n_tasks, _WPB))
            blocks = max(1, -(-warps // _WPB))
        nw = blocks * _WPB
        faults.point("dfs_buffers")
        cbuf = self._args.buffer("cbuf", (nw, max(k - 1, 1), cap), np.int32)
        # the donation ring: a slot per warp, at most ~64 MB of entries (none without donation)
        q_cap = max(1, min(nw, (1 << 24) // cap)) if self.donate else 1
        ctl_d, ctl = self._args.buffer(f"ctl{which}", (_C_RDY + q_cap,), np.int64)
        ring = [self._args.buffer(n, shape, dt)[1] for n, shape, dt in
                (("q_meta", (q_cap, 6), np.int64), ("q_m", (q_cap, KMAX), np.int32),
                 ("q_ent", (q_cap, cap), np.int32))]
        inn = self.inn if self.inn is not None else self.out
        a, arg = kernel_array, self._args.wrap
        faults.point("plan_upload")
        targs = self._args.staged(f"t{which}.", [
            (first, np.int64), (rank, np.int64), (tx, np.int32), (ty, np.int32),
            (toff, np.int32), (parts, np.int32), (tlist, np.int32)])[1]
        tables = [arg(n, self.ptabs[n]) for n in ("order_t", "chk_ptr", "chk_j", "chk_out",
                                                   "chk_in", "chk_peo", "chk_pei", "drv_ptr",
                                                   "drv_j", "drv_dir")]
        graph = [arg(f"{side}.{n}", getattr(pma, n)) for side, pma, names in
                 (("out", self.out, ("start", "length", "adj", "akey", "mult", "emask")),
                  ("in", inn, ("start", "length", "adj", "akey"))) for n in names]
        out_cap = 0 if count_only else self.out_capacity
        clocks = []
        while True:
            faults.point("output")
            if out_cap:
                out_d = xp.full((out_cap, k), -1, dtype=np.int32)
                tab_d = xp.zeros(out_cap, dtype=np.int32)
                out, out_tab = a(out_d), a(tab_d)
            else:  # counting: the kernel writes no rows
                out = self._args.buffer("out0", (1, k), np.int32)[1]
                out_tab = self._args.buffer("out_tab0", (1,), np.int32)[1]
            ctl_d.fill(0)
            sim_reset()
            faults.point("launch")
            clock = _Clock(xp)
            self._args.launch(
                f"delta{which}", _delta_kernel, blocks, _WPB * 32,
                n_tasks, rank.size, *targs, arg("tab_wt", self.tab_wt), k, *tables,
                arg("loop_used", self.loop_used), arg("ct", self.ct), *graph,
                arg("vcls", self.vcls), arg("ukey", self.ukey), self.narrow_row,
                arg("trange", self.trange), mk, mr, nn, n_nodes,
                int(self.edge_match is not None), self.mono, int(self.directed), cbuf[1],
                out, out_tab, out_cap, ctl,
                int(self.steal) | (2 if self.donate else 0), *ring, q_cap, self.poll,
                self.batch_min, self.slice_min)
            clock.stop()
            if count_only:
                return lambda: self._collect(ctl_d, n_tasks, nw, [clock])
            clocks.append(clock)
            c = to_host(ctl_d[:_C_RDY])  # (synchronises)
            total = int(c[_C_MATCH])
            if total <= out_cap:
                break
            out_cap = total  # relaunched with room for every row
            self.out_capacity = max(self.out_capacity, total)
        self._collect(ctl_d, n_tasks, nw, clocks, c)
        rows = to_host(out_d[:total])
        tabs = to_host(tab_d[:total])
        rows = self._unfold(rows, tabs)
        keys = self.keys
        if self.ident:  # node keys are the ids 0..n-1 (as read from an edge list)
            found = set(map(tuple, rows.tolist()))
        else:
            found = {tuple([keys[v] for v in r]) for r in rows.tolist()}
        return lambda: found

    def _collect(self, ctl, n_tasks, nw, clocks, c=None):
        """Wait for the delta kernel's last launch (``clocks``: every launch of this search);
        its number of matches, with the stats noted. ``c``: the control word, if already read
        (one read per search)."""
        faults.point("collect")
        if c is None:
            c = to_host(ctl[:_C_RDY])  # (synchronises)
        total = int(c[_C_MATCH])
        dt = sum(c.seconds() for c in clocks)
        st = self.last_stats
        st["tasks"] = st.get("tasks", 0) + int(n_tasks)
        st["matches"] = st.get("matches", 0) + total
        st["warps"] = nw
        st["steals"] = st.get("steals", 0) + int(c[_C_STEAL])
        st["donations"] = st.get("donations", 0) + int(c[_C_DON])
        st["slices"] = st.get("slices", 0) + int(c[_C_SLC])
        st["pairs_searched"] = f"{len(self.rep_pairs)} of {len(self.pairs)}"
        st["kernel_s"] = st.get("kernel_s", 0.0) + dt
        # (tasks, matches, seconds) per launch: the before-side search, then the after-side
        st.setdefault("launches", []).append((int(n_tasks), total, round(dt, 6)))
        span = clocks[-1].span(self._origin)
        if span is not None:
            st.setdefault("timeline_ms", {}).setdefault("kernels", []).append(span)
        return total

    def _unfold(self, rows, tabs):
        """The rows searched from an orbit's representative pattern pair, plus their images
        under each other member's automorphism (coalesced search, Sec. V-B): a match ``f`` seeded
        on ``(a, b)`` gives ``f o sigma^-1`` seeded on ``(sigma(a), sigma(b))``."""
        if not self.perms or not rows.shape[0]:
            return rows
        parts = [rows]
        for t, sigmas in self.perms.items():
            sel = rows[tabs == t]
            if not sel.shape[0]:
                continue
            for sigma in sigmas:
                img = np.empty_like(sel)
                img[:, sigma] = sel
                parts.append(img)
        return np.concatenate(parts)
