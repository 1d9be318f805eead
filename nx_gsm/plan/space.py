"""The candidate space: per driver edge, the candidate-to-candidate adjacency (CFL / DP-iso's CS).

For every driver slot ``t`` of the plan (depth d, earlier depth j, direction), with
``w = order[j]`` and ``u = order[d]``, and every candidate x of w, the space lists the candidates v
of u that x reaches through an edge compatible with the pattern edge (direction, multiplicity,
edge label), sorted. During the search, depth d then iterates ``CS[t][m[j]]`` instead of the whole
adjacency row of ``m[j]``: on labelled graphs a row is mostly other labels, and scanning it was
most of the search time (a hub row of 300 neighbours holding a handful of candidates).

Layout: ``cidx[w, x]`` = position of x in w's sorted candidate list (-1 if not a candidate);
slot t's rows start at ``row_off[t]`` in ``ptr``, so x's list is
``val[ptr[row_off[t] + cidx[w, x]] : ptr[row_off[t] + cidx[w, x] + 1]]``. The device reads the
same position from ``rank`` (32x smaller than cidx: its upload was most of a small search's
plan upload): ``rank[w, x >> 5]`` holds the candidate bits of w for nodes ``32 * (x >> 5)`` on
(bit ``x & 31``) and the number of w's candidates below them, so ``cidx[w, x]`` is that number
plus the candidate bits below bit ``x & 31``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numba
import numpy as np
from numba import njit, prange

from .. import kernel_cache  # noqa: F401  (sets Numba's cache folder before @njit runs)
from .filter import edge_fits
from ..threads import launch

__all__ = ["CandidateSpace", "build_space", "space_visits"]


@dataclass
class CandidateSpace:
    cidx: np.ndarray  # int32, k x n
    row_off: np.ndarray  # int64, one per driver slot
    ptr: np.ndarray  # int64
    val: np.ndarray  # int32
    rank: np.ndarray  # uint32, k x ceil(n / 32) x 2 (candidate bits, candidates below)
    cand: np.ndarray  # int32, each pattern node's candidates ascending, one list after another
    cand_off: np.ndarray  # int64, k + 1: pattern node u's list starts at cand_off[u]

    @property
    def nbytes(self):
        return self.cidx.nbytes + self.row_off.nbytes + self.ptr.nbytes + self.val.nbytes + \
            self.rank.nbytes + self.cand.nbytes + self.cand_off.nbytes


@njit(cache=True)
def _cand_lists(bits, n):
    """Each pattern node's candidates, ascending, one list after another (flat, offsets),
    ``cidx``: a candidate's position in its list, -1 elsewhere, and ``rank`` (see above), from
    the plan's packed candidate bits (``bits[u, b]`` bit i: node 8b + i, the packbits
    "little" order): a byte at a time, so the few candidates of a labelled pattern node cost
    a byte's test each, not one per data node (~40 us of a small plan's ~100 us build)."""
    k = bits.shape[0]
    nb = min(bits.shape[1], (n + 7) // 8)  # (an empty matrix's bits are one zero byte)
    off = np.zeros(k + 1, dtype=np.int64)
    for u in range(k):
        c = 0
        for b in range(nb):
            x = np.int64(bits[u, b])
            while x:
                x &= x - 1
                c += 1
        off[u + 1] = off[u] + c
    flat = np.empty(off[k], dtype=np.int32)
    cidx = np.full((k, n), -1, dtype=np.int32)
    rank = np.zeros((k, (n + 31) // 32, 2), dtype=np.uint32)
    for u in range(k):
        c = 0
        for b in range(nb):
            if b & 3 == 0:
                rank[u, b >> 2, 1] = c
            x = np.int64(bits[u, b])
            if x == 0:
                continue
            rank[u, b >> 2, 0] |= np.uint32(x) << np.uint32(8 * (b & 3))
            i = 0
            while x:
                if x & 1:
                    v = 8 * b + i
                    cidx[u, v] = c
                    flat[off[u] + c] = v
                    c += 1
                x >>= 1
                i += 1
    return flat, off, cidx, rank


@njit(cache=True)
def _rows(order, drv_ptr, drv_j, drv_dir, cand_flat, cand_off, ptr_o, ptr_i):
    """Per driver slot its rows' start (one row per candidate of the driving pattern node);
    per row its slot and its driving candidate; and the adjacency entries a scan of the rows
    reads (their driving candidates' degrees)."""
    n_slots = drv_j.size
    row_off = np.zeros(n_slots, dtype=np.int64)
    rows = 0
    for d in range(order.size):
        for t in range(drv_ptr[d], drv_ptr[d + 1]):
            w = order[drv_j[t]]
            row_off[t] = rows
            rows += cand_off[w + 1] - cand_off[w]
    row_t = np.empty(rows, dtype=np.int32)
    row_x = np.empty(rows, dtype=np.int32)
    visits = 0
    for d in range(order.size):
        for t in range(drv_ptr[d], drv_ptr[d + 1]):
            w = order[drv_j[t]]
            ptr_g = ptr_o if drv_dir[t] == 0 else ptr_i
            r = row_off[t]
            for i in range(cand_off[w], cand_off[w + 1]):
                x = cand_flat[i]
                row_t[r] = t
                row_x[r] = x
                visits += ptr_g[x + 1] - ptr_g[x]
                r += 1
    return row_off, row_t, row_x, visits


@njit(cache=True)
def _scan_rows(r0, r1, row_t, row_x, slot_u, slot_need, slot_pe, slot_dir, cand_bits, ptr_o,
               idx_o, mult_o, cls_o, ptr_i, idx_i, mult_i, cls_i, eok, has_el, check_mult, mono,
               ptr, val, write):
    """Rows ``r0:r1``: row r's candidates (the data neighbours of its driving candidate that
    are candidates of the driven pattern node through a fitting edge) counted into
    ``ptr[r + 1]``, or, with ``write``, written to ``val[ptr[r]:ptr[r + 1]]``.

    Without multiplicities or edge labels to check, a neighbour's candidate bit is added, not
    branched on (a kept neighbour is a coin toss the branch predictor loses: 3.3x faster on a
    yeast 8-node plan), and every neighbour written until the row's list is full."""
    simple = not (check_mult or has_el)
    for r in range(r0, r1):
        t = row_t[r]
        x = row_x[r]
        u, need, pe = slot_u[t], slot_need[t], slot_pe[t]
        if slot_dir[t] == 0:
            ptr_g, idx_g, mult_g, cls_g = ptr_o, idx_o, mult_o, cls_o
        else:
            ptr_g, idx_g, mult_g, cls_g = ptr_i, idx_i, mult_i, cls_i
        bits = cand_bits[u]
        n = 0
        base = ptr[r]
        room = ptr[r + 1] - base if write else 0
        for e in range(ptr_g[x], ptr_g[x + 1]):
            if write and n == room:
                break
            v = idx_g[e]
            keep = (bits[v >> 3] >> (v & 7)) & 1
            if not simple and keep:
                keep = edge_fits(mult_g, cls_g, e, need, pe, eok, check_mult, mono, has_el)
            if write:
                if simple:
                    val[base + n] = v
                elif keep:
                    val[base + n] = v
            n += keep
        if not write:
            ptr[r + 1] = n


@njit(cache=True, parallel=True)
def _scan_parallel(chunks, row_t, row_x, slot_u, slot_need, slot_pe, slot_dir, cand_bits,
                   ptr_o, idx_o, mult_o, cls_o, ptr_i, idx_i, mult_i, cls_i, eok, has_el,
                   check_mult, mono, ptr, val, write):
    """:func:`_scan_rows` over the rows in ``chunks`` blocks of rows, one thread each."""
    n = row_t.size
    step = (n + chunks - 1) // chunks
    for c in prange(chunks):
        _scan_rows(min(n, c * step), min(n, (c + 1) * step), row_t, row_x, slot_u, slot_need,
                   slot_pe, slot_dir, cand_bits, ptr_o, idx_o, mult_o, cls_o, ptr_i, idx_i,
                   mult_i, cls_i, eok, has_el, check_mult, mono, ptr, val, write)


@njit(cache=True)
def _scan_serial(row_t, row_x, slot_u, slot_need, slot_pe, slot_dir, cand_bits, ptr_o, idx_o,
                 mult_o, cls_o, ptr_i, idx_i, mult_i, cls_i, eok, has_el, check_mult, mono):
    """Both scans of :func:`_scan_rows` on one thread in one compiled call: a small plan's
    space is built in tens of microseconds, of which two calls from Python with their two
    dozen arguments each were a third."""
    n = row_t.size
    ptr = np.zeros(n + 1, dtype=np.int64)
    val = np.empty(0, dtype=np.int32)
    _scan_rows(0, n, row_t, row_x, slot_u, slot_need, slot_pe, slot_dir, cand_bits, ptr_o,
               idx_o, mult_o, cls_o, ptr_i, idx_i, mult_i, cls_i, eok, has_el, check_mult, mono,
               ptr, val, False)
    for r in range(n):
        ptr[r + 1] += ptr[r]
    val = np.empty(ptr[n], dtype=np.int32)
    _scan_rows(0, n, row_t, row_x, slot_u, slot_need, slot_pe, slot_dir, cand_bits, ptr_o,
               idx_o, mult_o, cls_o, ptr_i, idx_i, mult_i, cls_i, eok, has_el, check_mult, mono,
               ptr, val, True)
    return ptr, val


def build_space(plan):
    """The CandidateSpace of a plan (NumPy + Numba; cost ~ sum of candidate degrees).

    Built once per plan object and kept on it: the planner's probe and estimate, the CPU engine
    and gmatch's output sizing all read it, and a plan is never changed in place (``reorder``
    and the partitioned engine make new plans, which build their own).
    """
    cached = plan.__dict__.get("_space")
    if cached is None:
        cached = plan.__dict__["_space"] = _build_space(plan)
    return cached


def space_visits(plan):
    """The adjacency entries :func:`build_space` reads for ``plan`` (kept on the plan): per
    driver slot, the out- (or in-) degrees of the driving pattern node's candidates."""
    got = plan.__dict__.get("_space_visits")
    if got is None:
        G = plan.G
        got = plan.__dict__["_space_visits"] = int(_visits(
            plan.cand.view(np.uint8), plan.order, plan.drv_j, plan.drv_dir, G.indptr,
            G.in_indptr))
    return got


@njit(cache=True)
def _visits(cand, order, drv_j, drv_dir, ptr_o, ptr_i):
    k, n = cand.shape
    deg = np.zeros((k, 2), dtype=np.int64)  # per pattern node: its candidates' out, in degrees
    for u in range(k):
        for v in range(n):
            if cand[u, v]:
                deg[u, 0] += ptr_o[v + 1] - ptr_o[v]
                deg[u, 1] += ptr_i[v + 1] - ptr_i[v]
    total = 0
    for t in range(drv_j.size):
        total += deg[order[drv_j[t]], drv_dir[t]]
    return total


# a build that reads fewer adjacency entries than this runs on one thread: a parallel region
# costs ~10-20 us to start, about what one thread reads in 20,000 entries
PARALLEL_VISITS = 1 << 15


def _build_space(plan, parallel_visits=None):
    """Every row's list in two scans of the rows' adjacency (count, then write); the rows
    split over the threads when a scan reads ``parallel_visits`` entries or more (default
    :data:`PARALLEL_VISITS`)."""
    G, H = plan.G, plan.H
    cand_flat, cand_off, cidx, rank = _cand_lists(plan.cand_bits, plan.cand.shape[1])
    row_off, row_t, row_x, visits = _rows(plan.order, plan.drv_ptr, plan.drv_j, plan.drv_dir,
                                          cand_flat, cand_off, G.indptr, G.in_indptr)
    plan.__dict__.setdefault("_space_visits", int(visits))  # (space_visits, for free)
    depth = np.repeat(np.arange(plan.k, dtype=np.int64), np.diff(plan.drv_ptr))
    slot_u = plan.order[depth].astype(np.int64)
    slot_need = H.mult[plan.drv_pe].astype(np.int64)
    has_el = plan.has_elabels
    out_cls = plan.eclass
    in_cls = (plan.eclass[G.in_pos] if G.directed else plan.eclass) if has_el else plan.eclass
    args = (row_t, row_x, slot_u, slot_need, plan.drv_pe, plan.drv_dir, plan.cand_bits,
            G.indptr, G.indices, G.mult, out_cls, G.in_indptr, G.in_indices, G.in_mult, in_cls,
            plan.eok, has_el, bool(G.multigraph or H.multigraph), plan.mono)
    n_rows = row_t.size
    cut = PARALLEL_VISITS if parallel_visits is None else parallel_visits
    threads = numba.get_num_threads()
    chunks = min(n_rows, 4 * threads) if visits >= cut and threads > 1 else 0
    if chunks <= 1:
        ptr, val = _scan_serial(*args)
        return CandidateSpace(cidx=cidx, row_off=row_off, ptr=ptr, val=val, rank=rank,
                          cand=cand_flat, cand_off=cand_off)
    ptr = np.zeros(n_rows + 1, dtype=np.int64)
    val = np.empty(0, dtype=np.int32)
    for write in (False, True):
        if chunks > 1:
            launch(_scan_parallel, chunks, *args, ptr, val, write)
        else:
            _scan_rows(0, n_rows, *args, ptr, val, write)
        if not write:
            np.cumsum(ptr, out=ptr)
            val = np.empty(int(ptr[-1]), dtype=np.int32)
    return CandidateSpace(cidx=cidx, row_off=row_off, ptr=ptr, val=val, rank=rank,
                          cand=cand_flat, cand_off=cand_off)
