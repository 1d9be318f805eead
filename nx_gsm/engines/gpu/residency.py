"""The data graph and the plan on the device: the graph's arrays as the kernels take them (kept
per data graph by the engines' graph cache), its adjacency bitmap, and a plan's arrays in kept
device slots (:class:`PlanSlots`) or arrays of their own (:class:`DevPlan`).
"""

from __future__ import annotations

import itertools
import os
import weakref

import numpy as np

from . import injection
from .common import kernel_array, pow2, upload_mixed


def kernel_adjacency(G, put, xp=np):
    """(indptr, indices, mult, in_indptr, in_indices) of ``G`` as the kernels take them, each
    made by ``put(array)`` from a non-empty contiguous ``xp`` array of the kernels' dtype (no
    copy where ``G``'s array already is one); an undirected graph's in-arrays are its
    out-arrays."""
    def a(x, dtype):
        x = xp.ascontiguousarray(x, dtype=dtype)
        return put(x if x.size else xp.zeros(1, dtype=dtype))

    indptr, indices, mult = a(G.indptr, np.int64), a(G.indices, np.int32), a(G.mult, np.int32)
    if G.directed:
        return indptr, indices, mult, a(G.in_indptr, np.int64), a(G.in_indices, np.int32)
    return indptr, indices, mult, indptr, indices


def graph_to_device(G, xp):
    """(indptr, indices, mult, in_indptr, in_indices) of ``G`` on the device."""
    if getattr(G, "on_device", False):  # a DeviceGraph: its arrays are used in place
        return kernel_adjacency(G, kernel_array, xp)
    return kernel_adjacency(G, lambda x: kernel_array(xp.asarray(x)))


def device_adjacency(G, xp, budget):
    """``G``'s adjacency bitmap as a kernel array (:func:`formats.adjacency_bits`, built where
    ``G``'s arrays are), or None: for graphs whose every entry has multiplicity 1 (the bit is
    the multiplicity) and whose bitmap fits :data:`formats.ADJ_BITS_BYTES` and a sixteenth of
    the memory budget."""
    from .formats import ADJ_BITS_BYTES, adjacency_bits

    n = int(G.n)
    if n == 0 or n * ((n + 7) // 8) > min(ADJ_BITS_BYTES, budget // 16):
        return None
    if G.indices.size and int(G.mult.max()) > 1:
        return None
    injection.point("graph_upload")
    if getattr(G, "on_device", False):
        return kernel_array(adjacency_bits(G.indptr, G.indices, n, xp))
    return kernel_array(xp.asarray(adjacency_bits(G.indptr, G.indices, n)))


def cached_graph_arrays(cache, G, xp, on_dead=None):
    """``G``'s adjacency on the device and the cache to keep: ``cache`` is ``(weakref to G,
    arrays)`` or None, reused when it holds ``G`` (queries over one data graph upload it once);
    ``on_dead``: the new weak reference's callback."""
    if cache is not None and cache[0]() is G:
        return cache[1], cache
    injection.point("graph_upload")
    arrs = graph_to_device(G, xp)
    try:
        return arrs, (weakref.ref(G, on_dead), arrs)
    except TypeError:  # a graph object without weak references: not cached
        return arrs, None


# the serial numbers of PlanSlots layouts, unique in the process; and the largest packed plan
# a plan keeps a copy of (past it the bytes' copy, not the packing, is the upload's host time)
_LAYOUTS = itertools.count()
IMAGE_BYTES = 1 << 22


class PlanSlots:
    """Kept device homes for the plan arrays of successive searches (gmatch keeps one per
    thread, :func:`faults.thread_cache`).

    A search used to upload its 15 plan arrays as new device arrays: one packed copy, then a
    Numba wrap of each (~25 us on the card's host) and, at each launch site's first launch of
    the plan, every one of them marshalled again (~8 us each). Here each
    array lives at a fixed offset of one kept device buffer as a view of a capacity shape made
    once: a search packs its arrays into a kept (pinned) host buffer, copies them with one
    ``cudaMemcpyAsync`` (the next search's packing first waits for that copy's event), and the
    kept launches find the same objects as last time. Kernels read only
    what the plan's ``k``, pointer arrays and counts address, never the capacity tails.

    One plan holds the slots at a time (a weak reference to its :class:`DevPlan`): a plan made
    while the holder lives -- an iterator not yet exhausted -- is given None (its own arrays).
    The copy is ordered after every kernel already launched on the legacy default stream
    (where the engines launch and CuPy runs), so it never overwrites a plan still being read.
    """

    def __init__(self, xp):
        self.xp = xp
        self._holder = None
        # [offset, capacity bytes, view shape, kernel array, typed host view] per plan array
        self._slots = []
        self._dev = self._host = None
        self.layouts = 0  # device buffers made (tests: a search that fits makes none)
        self._no_cut = self._no_adj = None
        self._last = 0  # the slot at the largest offset
        self._copied = None  # an event after the last copy out of the host buffer
        self._serial = None  # this layout's number in _LAYOUTS
        self.image_hits = 0  # placings from a plan's kept image (tests)
        # the kept image whose bytes the device buffer holds now (kernels never write a plan's
        # arrays): placing it again needs no copy at all
        self._resident = None
        self.resident_hits = 0  # placings that found their image on the device (tests)

    def no_cut(self):
        """A kept empty kernel array (``DevPlan.cut_part`` without DUPREMOVE)."""
        if self._no_cut is None:
            self._no_cut = kernel_array(self.xp.zeros(0, dtype=np.int32))
        return self._no_cut

    def no_adj(self):
        """A kept empty adjacency bitmap (``DevPlan.adj``: the kernels' binary search)."""
        if self._no_adj is None:
            self._no_adj = kernel_array(self.xp.zeros((0, 1), dtype=np.uint8))
        return self._no_adj

    def _claim(self):
        """False while another owner holds the slots; else True, once the last plan's copy
        out of the host buffer (which it reads until done) has finished."""
        if self._holder is not None and self._holder() is not None:
            return False
        if self._copied is not None:
            self._copied.synchronize()
        return True

    def place_kept(self, owner, keep, key):
        """:meth:`place` from a plan's kept image (``keep``: its ``__dict__``) without its
        arrays: the kernel arrays, or None where there is no image for this layout and these
        views (or another owner holds the slots). Tried before the plan's arrays are even
        gathered: their 19 contiguity checks were ~12 us of a small search's host time."""
        image = keep.get("_slot_image")
        slots = self._slots
        # (image[2]: the views' shapes, no other plan's since)
        if image is None or image[0] != (self._serial, key) or \
                image[2] != [sl[2] for sl in slots] or not self._claim():
            return None
        self.image_hits += 1
        if self._resident is image[1]:
            # the last search's plan again (a count repeated, the next chunk of its rows):
            # its bytes are on the device already -- ~10-15 us of the host's copy, upload
            # call and event record saved on the card's host
            self._holder = weakref.ref(owner)
            self.resident_hits += 1
            return [sl[3] for sl in slots]
        end = image[1].size
        self._host[:end] = image[1]
        self._upload(end, owner)
        self._resident = image[1]
        return [sl[3] for sl in slots]

    def place(self, arrays, owner, keep=None, key=None):
        """Kernel arrays holding ``arrays`` (contiguous, non-empty NumPy arrays) for ``owner``,
        or None while another owner holds the slots.

        ``keep`` (a plan's ``__dict__``) keeps the packed bytes of these arrays and their
        views' shapes under ``key`` (what else decides the arrays: the plan's are never
        changed): the next placing of the same arrays in the same layout and views is one copy
        of them into the pinned buffer, then the upload as always (the per-array packing was
        ~40 us of a small search's host time on the card's host). The image
        itself is tried by :meth:`place_kept`, before the caller gathers ``arrays``."""
        if not self._claim():
            return None
        slots = self._slots
        if len(arrays) != len(slots):
            self._layout(arrays)
            slots = self._slots
        # one pass, one test and one NumPy copy per array (into the slot's typed host view): a
        # plan's 19 arrays took ~4 NumPy calls each (~90 us of a small search), and later four
        # tests and a running end each (~60 us in all on the card's host)
        i = 0
        while i < len(arrays):
            a, sl = arrays[i], slots[i]
            if a.nbytes > sl[1] or a.dtype != sl[4].dtype or a.shape[1:] != sl[2][1:]:
                if a.nbytes > sl[1] or a.dtype != sl[4].dtype or a.ndim != len(sl[2]):
                    self._layout(arrays)
                    slots, i = self._slots, 0
                    continue
                sl[2] = self._shape(a, sl[1])  # another row width: a new view
                sl[3] = self._view(sl[0], a.dtype, sl[2])
            sl[4][: a.size] = a.reshape(-1)
            i += 1
        # the last slot's start plus its array's bytes: every other slot ends before its start
        end = slots[self._last][0] + arrays[self._last].nbytes
        self._upload(end, owner)
        self._resident = None
        if keep is not None and end <= IMAGE_BYTES:
            keep["_slot_image"] = ((self._serial, key), self._host[:end].copy(),
                                   [sl[2] for sl in slots])
            self._resident = keep["_slot_image"][1]
        return [sl[3] for sl in slots]

    def _upload(self, end, owner):
        if self.xp is np:
            self._dev[:end] = self._host[:end]
        else:  # ordered before the kernels that read it on the legacy stream; not waited for
            rt = self.xp.cuda.runtime
            rt.memcpyAsync(self._dev.data.ptr, self._host.ctypes.data, end,
                           rt.memcpyHostToDevice, 0)
            if self._copied is None:
                self._copied = self.xp.cuda.Event(block=False, disable_timing=True)
            self._copied.record(self.xp.cuda.Stream.null)
        self._holder = weakref.ref(owner)

    @staticmethod
    def _shape(a, cap):
        """The view shape of a slot of ``cap`` bytes for arrays like ``a``: as many rows of
        ``a``'s width as fit."""
        return (cap // (a.nbytes // max(a.shape[0], 1)),) + a.shape[1:]

    def _view(self, off, dtype, shape):
        n = int(np.prod(shape)) * np.dtype(dtype).itemsize
        return kernel_array(self._dev[off : off + n].view(dtype).reshape(shape))

    def _layout(self, arrays):
        """Device and host buffers for ``arrays``, each slot a power of two of bytes at least
        as large as before; the largest slots last, so a copy stops at the last used byte."""
        old = self._slots if len(self._slots) == len(arrays) else [None] * len(arrays)
        caps = [max(pow2(max(a.nbytes, 256)), sl[1] if sl is not None else 0)
                for a, sl in zip(arrays, old)]
        offs, total = [0] * len(arrays), 0
        for i in sorted(range(len(arrays)), key=lambda i: caps[i]):
            offs[i] = total
            total += caps[i]
        self._dev = self.xp.empty(total, dtype=np.uint8)
        self._resident = None
        if self.xp is np:
            self._host = np.empty(total, dtype=np.uint8)
        else:  # page-locked: the copy goes straight to the device, not through a staging copy
            self._pinned = self.xp.cuda.alloc_pinned_memory(total)
            self._host = np.frombuffer(self._pinned, dtype=np.uint8, count=total)
        self._last = max(range(len(arrays)), key=lambda i: offs[i])
        # (a kept image names the layout it was packed for; the pid: a forked child's are
        # its own)
        self._serial = (os.getpid(), next(_LAYOUTS))
        self._slots = []
        for a, off, cap in zip(arrays, offs, caps):
            shape = self._shape(a, cap)
            host = self._host[off : off + cap].view(a.dtype)
            self._slots.append([off, cap, shape, self._view(off, a.dtype, shape), host])
        self.layouts += 1


class DevPlan:
    """The plan's arrays on the device (padded so no kernel argument is empty); in ``slots``
    (:class:`PlanSlots`) where given and free."""

    def __init__(self, plan, xp, garrs, cut_part=None, slots=None, space=None, adj=None):
        G = plan.G
        self.k = plan.k
        self.use_cs = int(space is not None)
        placed = None
        if slots is not None:
            placed = slots.place_kept(self, plan.__dict__, self.use_cs)
        if placed is None:
            placed = self._place(plan, xp, slots, space)
        (self.order, self.cand_bits, self.cand_ptr, self.cand_flat, self.chk_ptr, self.chk_j,
         self.chk_out, self.chk_in, self.chk_peo, self.chk_pei, self.drv_ptr, self.drv_j,
         self.drv_dir, self.eclass, self.eok, self.crank, self.row_off, self.sptr,
         self.sval) = placed
        self.indptr, self.indices, self.mult, self.in_indptr, self.in_indices = garrs
        # the data graph's adjacency bitmap (:meth:`faults.Recovery._adjacency`), which holds
        # multiplicities but no edge positions: without it, or with edge labels (their classes
        # are read at the edge's position), an empty one -- the kernels' binary search
        if adj is None or plan.has_elabels:
            adj = slots.no_adj() if slots is not None else \
                kernel_array(xp.zeros((0, 1), dtype=np.uint8))
        self.adj = adj
        # part id per data node for gmatch's DUPREMOVE filter (dup_ok); size 0 turns it off
        # (the slots' kept empty array where there are slots: no upload, nothing re-marshalled)
        if cut_part is None and slots is not None:
            self.cut_part = slots.no_cut()
        else:
            cut = np.zeros(0, dtype=np.int32) if cut_part is None else \
                np.ascontiguousarray(cut_part, dtype=np.int32)
            self.cut_part = kernel_array(xp.asarray(cut))
        # int32 stack offsets suffice unless 32 local candidate sets could overflow them; a
        # local set is drawn from an out- or an in-row (drv_dir) or a depth's candidate list
        # (kept on the plan, whose arrays never change)
        got = plan.__dict__.get("_dev_bounds")
        if got is None:
            cptr = plan.cand_ptr.tolist()  # (k + 1 entries: lists beat an np.diff here)
            longest = max(G.max_degree(), max((b - a for a, b in zip(cptr, cptr[1:])),
                                              default=0))
            got = (longest, bool(G.indices.size >= 2**31 - 1 or plan.cand_flat.size >= 2**31 - 1
                                 or 32 * longest >= 2**31 - 1))
            if isinstance(plan.cand_ptr, np.ndarray):
                plan.__dict__["_dev_bounds"] = got
        self.longest = got[0]  # bounds every local candidate set
        self.wide = got[1] or (space is not None and space.val.size >= 2**31 - 1)
        self.has_el = int(bool(plan.has_elabels))
        self.mono = int(bool(plan.mono))
        self.directed = int(bool(G.directed))

    def _place(self, plan, xp, slots, space):
        """The plan's arrays in ``slots`` (their kept image, where a search left one, is
        tried before this), else as arrays of their own."""
        def h(x, dtype):
            if not isinstance(x, np.ndarray):  # already on the device (a device-resident plan)
                return x if x.size else xp.zeros((1,) * max(x.ndim, 1), dtype=dtype)
            x = np.ascontiguousarray(x, dtype=dtype)
            if x.size == 0:
                x = np.zeros((1,) * max(x.ndim, 1), dtype=dtype)
            return x

        # without edge labels the kernels never read eclass: pass one element, not |E|
        eclass = plan.eclass if plan.has_elabels else np.zeros(1, dtype=np.int32)
        host = [h(plan.order, np.int32), h(plan.cand_bits, np.uint8), h(plan.cand_ptr, np.int64),
                h(plan.cand_flat, np.int32), h(plan.chk_ptr, np.int32), h(plan.chk_j, np.int32),
                h(plan.chk_out, np.int32), h(plan.chk_in, np.int32), h(plan.chk_peo, np.int32),
                h(plan.chk_pei, np.int32), h(plan.drv_ptr, np.int32), h(plan.drv_j, np.int32),
                h(plan.drv_dir, np.int32), h(eclass, np.int32), h(plan.eok, np.uint8)]
        # the candidate space (:mod:`nx_gsm.plan.space`) where the engine gives one, else
        # 1-element stand-ins the kernels never read (``use_cs`` 0)
        host += [h(space.rank, np.uint32), h(space.row_off, np.int64), h(space.ptr, np.int64),
                 h(space.val, np.int32)] if space is not None else \
            [np.zeros((1, 1, 2), dtype=np.uint32), np.zeros(1, dtype=np.int64),
             np.zeros(2, dtype=np.int64), np.zeros(1, dtype=np.int32)]
        placed = None
        if slots is not None and all(isinstance(x, np.ndarray) for x in host):
            placed = slots.place(host, self, plan.__dict__, self.use_cs)
        return placed or upload_mixed(host, xp)

    def check_args(self):
        return (self.order, self.cand_bits, self.cand_flat, self.chk_ptr, self.chk_j,
                self.chk_out, self.chk_in, self.chk_peo, self.chk_pei, self.indptr, self.indices,
                self.mult, self.adj, self.in_indices, self.eclass, self.eok, self.has_el,
                self.mono, self.directed)

    def dfs_args(self):
        return (self.order, self.cand_bits, self.cand_ptr, self.cand_flat, self.chk_ptr,
                self.chk_j, self.chk_out, self.chk_in, self.chk_peo, self.chk_pei, self.drv_ptr,
                self.drv_j, self.drv_dir, self.indptr, self.indices, self.mult, self.adj,
                self.in_indptr, self.in_indices, *self.space_args(), self.eclass, self.eok,
                self.has_el, self.mono, self.directed, self.k, self.cut_part)

    def space_args(self):
        return (self.crank, self.row_off, self.sptr, self.sval, self.use_cs)
