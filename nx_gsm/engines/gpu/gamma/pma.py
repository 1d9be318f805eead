"""GAMMA's dynamic graph on the device (Sec. V-C, GPMA): :class:`RowPMA`, sorted adjacency rows
with gaps in one arena, updated in batches by array operations or by two merge kernels."""

from __future__ import annotations

import numpy as np
from numba import cuda, njit

from ....kernel_cache import cached_kernel  # (also sets Numba's cache folder before @njit runs)
from ..common import kernel_array, to_host
from ..device import is_simulator
from .launch import KernelArgs

__all__ = ["RowPMA"]

_SIM = is_simulator()
_MERGE_THREADS = 4 if _SIM else 128  # threads per row in RowPMA's merge kernel


def _slack(n, xp):
    """Capacity of a segment holding ``n`` entries: room for ~25% growth (at least 2)."""
    return n + xp.maximum(2, n // 4)


def _counts(ids, n, xp):
    """How often each of ``0..n-1`` occurs in ``ids`` (int64; ``ids`` may be empty)."""
    if ids.size == 0:
        return xp.zeros(n, dtype=np.int64)
    return xp.bincount(ids, minlength=n).astype(np.int64)[:n]


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
        self._args = KernelArgs(xp)
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


@cached_kernel
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


@cached_kernel
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
