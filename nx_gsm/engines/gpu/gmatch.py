"""The gMatch engine: fine-grained, warp-batched DFS on the GPU (Numba CUDA, CuPy arrays).

Implements gMatch (*Fine-Grained and Hardware-Efficient Subgraph Matching on GPUs*, PVLDB 19(8),
2026) over a
:class:`~nx_gsm.plan.planner.MatchPlan`:

* **Initialisation phase (Sec. 4.3).** A BFS over the first levels of the search tree fills a task
  pool of partial matches (one launch per level: warps over each row's local candidates,
  ballot-reserved appends; levels launched in chains, their sizes read once a chain) until it
  holds about ``pool_target`` rows; if the BFS reaches the
  last depth the matches are already complete. Levels of at most ``HOST_BFS_ROWS`` rows are
  expanded on the host by the CPU engine's code (a GPU level still costs 0.1-0.3 ms of the
  host's time whatever its size), so a search whose levels all stay that small never
  reaches the device. A count does its device levels inside one cooperative launch instead
  (the fused kernel: levels separated by grid barriers, then the DFS below; host levels up to
  ``FUSED_HOST_ROWS`` first): 1.41x faster on yeast 16-vertex counts than a launch per level.
* **Fine-grained execution (Sec. 4.1) + warp-level batch exploration (Sec. 4.2, Alg. 2).** Each warp
  runs a DFS over its pool rows with a stack in shared memory of ``KMAX x 32`` entries (vertex,
  parent slot, local-candidate-set start/kind, running prefix of LC sizes): ``KMAX`` levels, never
  a function of the maximum degree. At level ``l`` the up-to-32 valid partial matches form one
  virtual task pool (the concatenation of their local candidate sets, each the shortest of
  the backward neighbours' lists: a list of the plan's candidate space -- the neighbours that
  are candidates of the depth's node through a fitting edge, CFL / DP-iso's structure, which
  the CPU engine reads too -- or, for a device-resident plan, a raw adjacency row); lane ``j``
  takes task ``base + j``, rebuilds its partial match by following parent links, checks one
  candidate, and a ballot compacts the valid ones into the next level.
* **Load balancing (Sec. 4.3, dynamic phase).** Warps take pool rows through an atomic counter;
  once the pool is empty, idle warps announce themselves (and back off exponentially) and busy
  warps donate up to half of their untouched entries at their shallowest level -- entries with
  at least two levels and 64 tasks below them, at most one per idle warp -- to a global ring
  (a ticket queue: each idle warp polls its own slot; slots carry generations; termination by
  a busy counter that donations join, see :func:`_fetch`), a simplified STMatch-style split as
  the paper describes. Measured against no donation (yeast 16-vertex counts): 0.31x the
  DFS time on dense_16_13, 0.65x on dense_16_8, 0.77x on sparse_16_17; up to 1.16x where the
  pool almost balances itself (sparse_16_7).

Semantics are exactly the CPU engine's (``nx_gsm.engines.cpu.kernels.consistent``): candidate bits, an
injectivity scan, and per earlier depth the multiplicity tests of ``chk_out``/``chk_in``
(``>=`` in mono mode, ``==`` in induced/iso mode) with edge-label classes through ``eok``.

Output: counts are kept per pool row (int64, summed exactly on the host as Python ints); the
collect path writes rows into a device buffer (atomic reservation); when the output may exceed
the buffer the pool is counted first, split into batches that fit (heavy rows re-expanded one
BFS level), and each batch is collected and streamed to the host.
"""

from __future__ import annotations

import logging
import math
import os
import time

import numba
import numpy as np
from numba import cuda, int8, int32, int64

from ...plan.space import build_space, space_visits
from ..base import UNLIMITED, PartialCount
# (at import: a function-level import is ~15 us a search)
from ..cpu import (check_chunk, check_prefixes, count_probe, host_levels, plan_arrays,
                   trivial_answer, trivial_rows)
from ..catalog import capabilities_of
from . import faults
from .common import (Launches, ballot, cand_at, dup_ok, exact_sum, feasible_from, to_host,
                     host_copy, kernel_array, local_cands, pause, pow2, quiet, sim_reset, wsync)
from .device import array_module, device_info, free_and_total, is_simulator, memory_budget
from .residency import DevPlan, PlanSlots

__all__ = ["GMatchEngine", "KMAX_LIMIT", "kernel_resources"]

log = logging.getLogger("nx_gsm.gpu")

_SIM = is_simulator()

# control block slots (int64)
# (each on its own 128-byte line: idle warps poll some of them while busy warps update others)
C_POOL, C_QHEAD, C_QTAIL, C_BUSY, C_IDLE, C_STOP, C_OUT, C_FOUND, C_DONATED, C_STOLEN = (
    16 * i for i in range(10))
N_CTL = 16 * 10
# the fused search's control block goes on (GMatchEngine._fused): its grid barrier, its pool's
# size, one size per BFS level, then one match count per warp
C_BAR, C_GEN, C_NPOOL, C_LEVELS = N_CTL, N_CTL + 16, N_CTL + 32, N_CTL + 48
C_COUNTS = C_LEVELS + 48
# the warps' counts summed by the fused kernel: the high and the low 32-bit halves apart, each
# sum exact in int64 for any number of warps a card holds (the host reads these, not the counts)
C_SUM_HI, C_SUM_LO = C_NPOOL + 3, C_NPOOL + 4
C_NARROW = C_NPOOL + 5  # 6 slots: where block 0's narrow levels left the search

# host BFS levels (see GMatchEngine._host_prefix) while a level holds at most this many rows,
# on all host threads from cpu.WIDE_ROWS rows on; a count's last level is counted on the host
# up to HOST_COUNT_ROWS matches (it writes no rows). Two bounds because the counted last
# levels gain up to 16,384 rows while written levels past 4,096 lose (4,096 / 16,384 took 0.92x
# the time of 16,384 for both on 35 yeast-16 queries, 0.95x on the 108 of the VF2 suite)
HOST_BFS_ROWS = 4096
HOST_COUNT_ROWS = 16384
# rows a GPU BFS level writes before it is sized exactly and run again (gmatch._expand)
LEVEL_ROWS = 1 << 20
BFS_CHAIN = 4  # the most GPU BFS levels launched before their sizes are read (gmatch._chain)
# a count's fused search (GMatchEngine._fused): host levels while they hold fewer rows than
# this (the one-thread levels of cpu.kernels.narrow_levels), then every other level and the DFS in
# one cooperative launch, its levels in a kept buffer of FUSED_BUF_INTS int32 (at most an
# eighth of the memory budget), by stack depth (KMAX). 64, not 256, because the host's part
# of a search is cheap (0.90x the time on 35 yeast-16 queries, both orders of an interleaved
# A/B); 16-level stacks from the roots (0.93x the time of 64 on 34 yeast-16
# queries, though the 4 the host finishes in 0.06-0.34 ms take 1.2-5x longer); 8 and 32 not
# measured from the roots
FUSED_HOST_ROWS = {8: 64, 16: 0, 32: 64}
# ... except a count whose candidate space holds at most SMALL_SPACE entries per pattern node (a
# search of a few thousand partial matches at most on yeast: every level under 256 rows), whose
# host levels go to SMALL_HOST_ROWS rows, counting the last: the searches the host finishes in
# 0.06-0.25 ms took ~0.3 ms from the roots on the device (0.876x the time of the rule off on 34
# yeast-16 queries)
SMALL_SPACE = 6
SMALL_HOST_ROWS = 256
# ... after the CPU engine's sequential search (failing-set pruning) tried it for this many
# candidates: it finishes yeast-16's small searches in 200-1,000 steps and ~1.5x faster than
# the host's levels, which write every partial match of a level
SMALL_STEPS = 4096
FUSED_BUF_INTS = 1 << 22
# and its levels of fewer rows than this many per warp of a block run in block 0 alone, a
# block's barrier between them instead of a grid barrier (GMatchEngine's ``fused_narrow``: rows)
FUSED_NARROW = 4
# seconds a free-memory read stays the memory budget's cap (GMatchEngine._budget): a device
# fault from memory taken since is recovered like any other (faults.py)
FREE_TTL = 0.1
# and before the fused search, host levels only while they examined fewer candidates than this
# (0: no bound): a deep, narrow search's levels cost one host thread more than the device
HOST_WORK = 0
# the fused kernel's register cap per stack depth (KMAX): the DFS kernel's resident blocks
# per SM (ptxas for sm_90: fused 78-96 registers uncapped, the DFS 62; KMAX 8's 256-thread
# blocks are register-bound at 4 per SM from 64 registers, KMAX 16's shared-memory-bound at 7
# from 72; KMAX 32's 64-thread blocks fit 7 per SM uncapped)
FUSED_REGS = {8: 64, 16: 0, 32: 0}
KMAX_LIMIT = 32  # deepest stack the shared-memory layout supports (larger patterns use the CPU)
_BUCKETS = ((8, 8), (16, 4), (32, 2))  # (KMAX, warps per block): ~45 KB static shared per block
_INF = np.iinfo(np.int64).max
_UNREAD = object()  # (GMatchEngine._dev_plan: the candidate space not looked up yet)
# adjacency entries a candidate-space build may visit when gmatch builds it itself (~10 ms of
# one host thread); a larger one, on an unlabelled graph where it would prune little, is skipped
SPACE_VISITS = 1 << 23

# ---------------------------------------------------------------------------------------------
# BFS prefix (initialisation phase)
# ---------------------------------------------------------------------------------------------
_LEVEL_WPB = 8  # warps per block of the BFS level kernel


def _level_grid(n):
    """(warps per row, blocks) of a BFS level over ``n`` rows: enough warps per row to fill
    the card when the frontier is narrow (a heavy row split); one block under the simulator
    (the kernel strides over the rows)."""
    info = device_info()
    if info["simulator"]:
        return 1, 1
    g = max(1, min(32, 32 * (info["sm_count"] or 1) // n))
    return g, (n * g + _LEVEL_WPB - 1) // _LEVEL_WPB


@cuda.jit
def _bfs_level_kernel(rows, L, n0, ci, cap_in, target, small_from, gfix, sm, drv_ptr, drv_j,
                      drv_dir, in_indptr, cand_ptr, crank, row_off, sptr, sval, use_cs, order,
                      cand_bits, cand_flat, chk_ptr, chk_j, chk_out, chk_in, chk_peo, chk_pei,
                      indptr, indices, emult, adj, in_indices, eclass, eok, has_el, mono, directed,
                      cut_part, out, cap, cnt):
    """gMatch Sec. 4.3 (initialisation phase), one BFS level in one launch: the feasible
    extensions of the frontier ``rows`` (n, L) appended to ``out`` (cap, L+1).

    ``g`` warps share a row: its local candidate set (Sec. 4.1, drawn from the smallest
    backward-neighbour list) is read 32 candidates at a time, warp ``sub`` taking chunks
    ``sub, sub + g, ...``; a lane checks one candidate (and DUPREMOVE from depth 2 on, for a
    non-empty ``cut_part``) and a ballot reserves the warp's valid ones with one atomic on
    ``cnt[ci + 1]`` (Sec. 4.2's compaction). ``cnt[ci + 1]`` ends as the level's size even past
    ``cap``, where rows are no longer written, so the host can size the buffer and run it again.

    Levels launched back to back (``GMatchEngine._chain``) without the host reading a size in
    between: chain level ``ci`` reads its frontier's size from ``cnt[ci]`` (``n0`` for the
    first) and grid-strides over it, ``g`` from that size (``gfix`` 0; else ``gfix``); it does
    nothing but set ``cnt[ci + 1]`` to -1 when the BFS would have stopped before it -- an
    empty frontier, one past its buffer's ``cap_in`` rows (to be sized and run again), one of
    ``target`` rows, or one under 32 rows from chain level ``small_from`` on -- or a level
    before it did so.
    """
    B = cuda.shared.array(_LEVEL_WPB, int64)
    n = int64(n0)
    if ci > 0:
        n = cnt[ci]
    if n <= 0 or n > cap_in or n >= target or (ci >= small_from and n < 32):
        if cuda.grid(1) == 0:
            cnt[ci + 1] = -1
        return
    g = int64(gfix)
    if g == 0:
        g = max(1, min(32, 32 * sm // n))
    lane = cuda.threadIdx.x & 31
    wib = cuda.threadIdx.x >> 5
    gw = cuda.grid(1) >> 5
    below = (int64(1) << lane) - 1
    sub = gw % g
    groups = (cuda.gridsize(1) >> 5) // g
    first = gw // g
    if first >= groups:  # the grid's last warps, short of a whole group
        first = n
    for r in range(first, n, groups):
        m = rows[r]
        lo, c, kd = local_cands(L, m, drv_ptr, drv_j, drv_dir, indptr, in_indptr, cand_ptr,
                                order, crank, row_off, sptr, use_cs)
        for b in range(sub * 32, c, g * 32):
            i = b + lane
            good = False
            v = 0
            if i < c:
                v = cand_at(kd, lo + i, cand_flat, indices, in_indices, sval)
                good = feasible_from(L, v, m, kd, order, cand_bits, chk_ptr, chk_j, chk_out,
                                     chk_in, chk_peo, chk_pei, indptr, indices, emult, adj, eclass,
                                     eok, has_el, mono, directed)
                if good and L >= 2 and cut_part.shape[0] != 0:
                    good = dup_ok(L, v, m, cut_part, chk_ptr, chk_j, chk_out, chk_in)
            mask = ballot(good)
            if mask == 0:
                continue
            if lane == 0:
                B[wib] = cuda.atomic.add(cnt, ci + 1, cuda.popc(mask))
            wsync()
            if good:
                pos = B[wib] + cuda.popc(mask & below)
                if pos < cap:
                    for j in range(L):
                        out[pos, j] = m[j]
                    out[pos, L] = v
            wsync()


def _flag(x):
    return x if isinstance(x, bool) else str(x) != "0"


def _knob(value, name, default, conv=int):
    """A GMatchEngine parameter: ``value`` where given, else the environment's
    ``NX_GSM_GMATCH_<name>`` where set, else ``default``."""
    if value is None:
        value = os.environ.get("NX_GSM_GMATCH_" + name) or None
    return default if value is None else conv(value)


def _zero(a):
    """Zero a contiguous array: on the device one ``cudaMemsetAsync`` on the legacy default
    stream (ordered with the kernels and CuPy's work there; a CuPy ``fill`` is a kernel
    launch, ~10 us of the host's time more)."""
    if isinstance(a, np.ndarray):
        a.fill(0)
        return
    import cupy as cp

    cp.cuda.runtime.memsetAsync(a.data.ptr, 0, a.nbytes, 0)


def _ptr(a):
    """A Numba device array's device pointer."""
    return a.device_ctypes_pointer.value or 0


class _Staging:
    """Pinned host buffers: ``ctl`` (int64) and ``rows`` (int32), each at least the size
    asked and twice the last (``old``) when grown."""

    def __init__(self, xp, ctl_ints, row_ints, old=None):
        if old is not None:
            ctl_ints, row_ints = max(ctl_ints, 2 * old.ctl.size), max(row_ints, 2 * old.rows.size)
        self._mem = (xp.cuda.alloc_pinned_memory(8 * ctl_ints),
                     xp.cuda.alloc_pinned_memory(4 * row_ints))
        self.ctl = np.frombuffer(self._mem[0], dtype=np.int64, count=ctl_ints)
        self.rows = np.frombuffer(self._mem[1], dtype=np.int32, count=row_ints)


class _FusedSetup:
    """What a fused search's launch needs besides the plan and its rows (see
    :meth:`GMatchEngine._fused_setup`): the level buffer, the donation ring and the control
    block as kernel arrays, their device and pinned host addresses as ints, the launch site
    once looked up, and the control block's views that :meth:`GMatchEngine._wait` polls."""

    def __init__(self, key, k_buf, q_rows, q_len, q_org, both, q_ready, k_ctl, qpad, k_out, qc,
                 target, most_warps, stage):
        self.key, self.k_buf, self.both, self.k_ctl, self.qpad = key, k_buf, both, k_ctl, qpad
        self.q_rows, self.q_len, self.q_org, self.q_ready = q_rows, q_len, q_org, q_ready
        self.k_out, self.qc, self.target, self.most_warps = k_out, qc, target, most_warps
        self.stage = stage
        self.site = None
        self.tried = False
        self.blocks = 0
        if stage is not None:  # (a device's: ints, not the ~1-2 us attribute chains a launch)
            self.buf_ptr, self.ctl_ptr = _ptr(k_buf), _ptr(k_ctl)
            self.both_ptr = both.data.ptr
            self.rows_ptr = stage.rows.ctypes.data
            self.ctl_host_ptr = stage.ctl.ctypes.data

    def size(self, blocks, W):
        """The grid (``blocks`` of ``W`` warps): the bytes each launch zeroes (generations,
        control block, the used warps' counts) and the views :meth:`GMatchEngine._wait` reads."""
        self.blocks = blocks
        end = self.qpad + C_COUNTS + blocks * W
        self.zero_bytes = 8 * end
        self.ctl_view = self.both[self.qpad : self.qpad + C_COUNTS]
        self.counts_view = self.both[self.qpad + C_COUNTS : end]


# ---------------------------------------------------------------------------------------------
# DFS (fine-grained, warp-batched) with work donation
# ---------------------------------------------------------------------------------------------
@cuda.jit(device=True)
def _fetch(ctl, n_pool, steal, q_ready, q_cap):
    """gMatch Sec. 4.3: take the next pool row (atomic counter) or, once the pool is exhausted,
    a donated partial match; returns (source, index), source 0 = no work. Run by lane 0 only.

    The donation ring is a ticket queue: an idle warp takes the next ticket ``h`` (one atomic
    add on the head) and polls only its own slot ``h % q_cap`` until the donation numbered
    ``h`` is written there (generation ``h + 1``). Claims thus never contend; a ring claimed by
    compare-and-swap on a shared head (every idle warp racing for the same entry) handed out
    about one donation per microsecond: on yeast sparse_16_7 ~12 of 3,700 warps were busy for
    37 of the DFS's 46 ms while the ring drained.

    Termination: a donor adds its donations to the busy counter when it reserves them, so
    the counter stays positive from a reservation until its claimant has finished it. A
    waiter that reads zero therefore knows no donation for its ticket exists and, with no
    warp left to make one, none ever will.
    """
    t = cuda.atomic.add(ctl, C_POOL, 1)
    if t < n_pool:
        return 1, t
    if steal == 0:
        return 0, t
    h = cuda.atomic.add(ctl, C_QHEAD, 1)
    cuda.atomic.add(ctl, C_IDLE, 1)
    cuda.threadfence()
    cuda.atomic.add(ctl, C_BUSY, -1)
    cuda.threadfence()
    slot = h % q_cap
    ns = 64
    polls = 0
    while True:
        if cuda.atomic.add(q_ready, slot, 0) == h + 1:
            cuda.threadfence()
            cuda.atomic.add(ctl, C_IDLE, -1)
            cuda.atomic.add(ctl, C_STOLEN, 1)
            return 2, h
        polls += 1
        # the shared counters every few polls only: thousands of warps may be waiting
        if (polls & 3) == 0:
            if cuda.atomic.add(ctl, C_STOP, 0) != 0:
                return 0, t
            cuda.threadfence()
            if cuda.atomic.add(ctl, C_BUSY, 0) == 0:
                return 0, t
        pause(ns)
        if ns < 8192:
            ns *= 2


@cuda.jit(device=True)
def _grid_barrier(ctl, gen, slot, cell):
    """The ``gen``-th barrier of every block of a cooperative launch (all blocks resident, so
    spinning cannot deadlock); returns ``ctl[slot]`` as it is after the barrier.

    Each block's first thread counts its block in ``ctl[C_BAR]``; the last to arrive
    publishes ``gen`` in ``ctl[C_GEN]`` (another 128-byte line, so the waiting threads' polls
    do not queue in front of the arrivals), then each first thread reads ``ctl[slot]`` once
    for its block (``cell``, shared memory): every thread reading it with an atomic (118,000
    on the card) took ~85 us a level. The fences make every write before the
    barrier visible to every read after it."""
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        cuda.threadfence()
        if cuda.atomic.add(ctl, C_BAR, 1) == gen * cuda.gridDim.x - 1:
            cuda.atomic.exch(ctl, C_GEN, gen)
        else:
            while cuda.atomic.add(ctl, C_GEN, 0) < gen:
                pause(64)
        cuda.threadfence()
        cell[0] = cuda.atomic.add(ctl, slot, 0)
    cuda.syncthreads()
    return cell[0]


def _make_dfs_kernel(KMAX, W, wide):
    """Build the DFS kernel for stacks of ``KMAX`` levels and ``W`` warps per block.

    ``wide`` stores candidate-list offsets and task prefixes as int64 (graphs with >= 2**31
    adjacency entries or huge candidate lists); otherwise int32, which cuts the stack to 14 bytes
    per entry (shared memory is what limits resident warps).
    """
    IDX = int64 if wide else int32

    @cuda.jit(device=True)
    def run(order, cand_bits, cand_ptr, cand_flat, chk_ptr, chk_j, chk_out, chk_in, chk_peo,
            chk_pei, drv_ptr, drv_j, drv_dir, indptr, indices, emult, adj, in_indptr, in_indices,
            crank, row_off, sptr, sval, use_cs, eclass, eok, has_el, mono, directed, k, cut_part,
            pool, pool_off, pool_w, n_pool, ctl, q_rows, q_len, q_org, q_ready, q_cap,
            task_count, warp_slot0, collect, stop_at, out, cap, steal):
        """gMatch Sec. 4.1-4.3, Alg. 2: warp-level batch DFS over the task pool.

        The pool is flat: row ``r``'s ``pool_w`` entries start at ``pool_off + r * pool_w``.
        A warp adds the matches it counts to ``task_count[org]`` (``org``: the pool row the
        unit came from) or, with ``warp_slot0 >= 0``, to its own ``task_count[warp_slot0 +
        global warp]`` (the fused search, whose pool never reaches the host).

        A non-empty ``cut_part`` adds PBE's DUPREMOVE (``dup_ok``) from depth 2 on: the pool
        rows are then seeded cut pairs of the partitioned engine's cross search.

        Stack S[level][lane] in shared memory (|V(q)| x 32 per warp, Sec. 4.2/5.2); each round a
        warp validates up to 32 tasks of the virtual task pool of one level (lane j: task
        base + j), compacts the valid ones with a ballot and descends; on backtracking the next
        32 tasks of that level's pool (possibly from several partial matches) are taken.
        """
        S_v = cuda.shared.array((W, KMAX, 32), int32)
        S_par = cuda.shared.array((W, KMAX, 32), int8)
        S_kind = cuda.shared.array((W, KMAX, 32), int8)
        S_lo = cuda.shared.array((W, KMAX, 32), IDX)
        S_pre = cuda.shared.array((W, KMAX, 32), IDX)
        L_cnt = cuda.shared.array((W, KMAX), int32)
        L_base = cuda.shared.array((W, KMAX), int64)
        B = cuda.shared.array((W, 8), int64)
        m = cuda.local.array(KMAX, int32)

        tid = cuda.threadIdx.x
        lane = tid & 31
        w = tid >> 5
        lt_mask = (1 << lane) - 1
        if pool_w == k - 1 and (cuda.grid(1) >> 5) >= n_pool:
            # a pool one level above the matches: a unit is one round and never donates (an
            # entry needs two levels below it), so the warps past the pool's rows would only
            # wait for the search's end, thousands of them on the busy counter
            return
        if lane == 0:
            cuda.atomic.add(ctl, C_BUSY, 1)
        stopped = False
        while not stopped:
            # ---- fetch a unit: a pool row or a donated partial match (lane 0) ----
            if lane == 0:
                src, idx = _fetch(ctl, n_pool, steal, q_ready, q_cap)
                B[w, 0] = src
                if src == 1:
                    B[w, 1] = idx
                    B[w, 2] = pool_w
                    B[w, 3] = idx
                elif src == 2:
                    idx = idx % q_cap  # ring slot
                    B[w, 1] = idx
                    B[w, 2] = cuda.atomic.add(q_len, idx, 0)
                    B[w, 3] = cuda.atomic.add(q_org, idx, 0)
            wsync()
            src = B[w, 0]
            idx = B[w, 1]
            L = B[w, 2]
            org = B[w, 3]
            wsync()
            if src == 0:
                break
            if lane < L:
                if src == 1:
                    S_v[w, lane, 0] = pool[pool_off + idx * pool_w + lane]
                else:
                    S_v[w, lane, 0] = cuda.atomic.add(q_rows, (idx, lane), 0)
                S_par[w, lane, 0] = 0
                L_cnt[w, lane] = 1
                L_base[w, lane] = 0
            wsync()
            if lane == 0:
                if src == 2:  # every lane has read the slot: hand it back to the ring
                    cuda.threadfence()
                    cuda.atomic.exch(q_ready, idx, 0)
                for j in range(L):
                    m[j] = S_v[w, j, 0]
                lo0, n0, kd0 = local_cands(L, m, drv_ptr, drv_j, drv_dir, indptr, in_indptr,
                                           cand_ptr, order, crank, row_off, sptr, use_cs)
                S_lo[w, L - 1, 0] = lo0
                S_kind[w, L - 1, 0] = kd0
                S_pre[w, L - 1, 0] = n0
            bottom = L - 1
            lvl = bottom
            found = 0
            rounds = 0
            while lvl >= bottom:
                wsync()
                rounds += 1
                if (rounds & 15) == 0:
                    # ---- stop check and work donation (Sec. 4.3 dynamic phase) ----
                    if lane == 0:
                        B[w, 4] = cuda.atomic.add(ctl, C_STOP, 0)
                        dn = 0
                        if steal != 0 and B[w, 4] == 0 and (rounds & 63) == 0:
                            dn = cuda.atomic.add(ctl, C_IDLE, 0)  # warps waiting for work
                        B[w, 5] = dn
                    wsync()
                    stp = B[w, 4]
                    dn = B[w, 5]
                    if stp != 0:
                        stopped = True
                        break
                    if dn > 0:
                        # shallowest level with entries none of whose tasks were issued
                        s = -1
                        p0 = 0
                        nd = 0
                        # (only entries with at least two levels below them, and at least 64
                        # untouched tasks: smaller units cost more to move than to finish)
                        for lv in range(bottom, lvl + 1):
                            if s < 0 and lv <= k - 3:
                                c = L_cnt[w, lv]
                                bs = L_base[w, lv]
                                f = 0
                                ex = 0
                                while f < c:
                                    ex = 0
                                    if f > 0:
                                        ex = S_pre[w, lv, f - 1]
                                    if ex >= bs:
                                        break
                                    f += 1
                                u = c - f
                                if u > 0 and S_pre[w, lv, c - 1] - ex < 64:
                                    u = 0
                                want = u // 2
                                if lv < lvl and u >= 1 and want == 0:
                                    want = 1
                                if want > dn:
                                    want = dn
                                if want > 0:
                                    s = lv
                                    nd = want
                                    p0 = c - want
                        if s >= 0:
                            if lane == 0:
                                # reserve ring slots whose previous occupants' tickets
                                # are taken (so they will be read)
                                got = 0
                                slot0 = 0
                                while True:
                                    hd = cuda.atomic.add(ctl, C_QHEAD, 0)
                                    slot0 = cuda.atomic.add(ctl, C_QTAIL, 0)
                                    got = nd
                                    room = q_cap - (slot0 - hd)
                                    if got > room:
                                        got = room
                                    if got <= 0:
                                        got = 0
                                        break
                                    old = cuda.atomic.cas(ctl, C_QTAIL, slot0, slot0 + got)
                                    if old == slot0:
                                        # busy on behalf of the claimants (see _fetch)
                                        cuda.atomic.add(ctl, C_BUSY, got)
                                        cuda.threadfence()
                                        break
                                B[w, 6] = slot0
                                B[w, 7] = got
                            wsync()
                            slot0 = B[w, 6]
                            got = B[w, 7]
                            if got > 0:
                                p0 = L_cnt[w, s] - got
                                if lane < got:
                                    e = p0 + lane
                                    for t in range(s, -1, -1):
                                        m[t] = S_v[w, t, e]
                                        e = S_par[w, t, e]
                                    gen = slot0 + lane
                                    slot = gen % q_cap
                                    # wait until the slot's previous ticket holder has read
                                    # it (holders leave a stopped search without reading)
                                    free = True
                                    while cuda.atomic.add(q_ready, slot, 0) != 0:
                                        if cuda.atomic.add(ctl, C_STOP, 0) != 0:
                                            free = False
                                            break
                                        pause(32)
                                    if free:
                                        for t in range(s + 1):
                                            q_rows[slot, t] = m[t]
                                        q_len[slot] = s + 1
                                        q_org[slot] = org
                                        cuda.threadfence()
                                        cuda.atomic.exch(q_ready, slot, gen + 1)
                                wsync()
                                if lane == 0:
                                    L_cnt[w, s] = p0
                                    cuda.atomic.add(ctl, C_DONATED, got)
                            wsync()
                # ---- one round at level lvl: tasks base .. base+31 of its virtual task pool ----
                cnt = L_cnt[w, lvl]
                base = L_base[w, lvl]
                end = S_pre[w, lvl, cnt - 1]
                if base >= end:
                    lvl -= 1
                    continue
                q = base + lane
                valid = False
                v = 0
                p = 0
                if q < end:
                    a = 0
                    b = cnt - 1
                    while a < b:
                        mid = (a + b) >> 1
                        if S_pre[w, lvl, mid] > q:
                            b = mid
                        else:
                            a = mid + 1
                    p = a
                    first = 0
                    if p > 0:
                        first = S_pre[w, lvl, p - 1]
                    kd = S_kind[w, lvl, p]
                    v = cand_at(kd, S_lo[w, lvl, p] + (q - first), cand_flat, indices,
                                in_indices, sval)
                    e = p
                    for t in range(lvl, -1, -1):
                        m[t] = S_v[w, t, e]
                        e = S_par[w, t, e]
                    valid = feasible_from(lvl + 1, v, m, kd, order, cand_bits, chk_ptr, chk_j,
                                          chk_out, chk_in, chk_peo, chk_pei, indptr, indices,
                                          emult, adj, eclass, eok, has_el, mono, directed)
                    if valid and lvl >= 1 and cut_part.shape[0] != 0:
                        valid = dup_ok(lvl + 1, v, m, cut_part, chk_ptr, chk_j, chk_out,
                                       chk_in)
                mask = ballot(valid)
                nv = cuda.popc(mask)
                take = end - base
                if take > 32:
                    take = 32
                wsync()
                if lane == 0:
                    L_base[w, lvl] = base + take
                d = lvl + 1
                if d == k - 1:
                    if nv > 0:
                        if collect != 0:
                            if lane == 0:
                                s0 = cuda.atomic.add(ctl, C_OUT, nv)
                                B[w, 4] = s0
                                if s0 + nv > cap or s0 + nv >= stop_at:
                                    cuda.atomic.exch(ctl, C_STOP, 1)
                            wsync()
                            s0 = B[w, 4]
                            if valid:
                                r = s0 + cuda.popc(mask & lt_mask)
                                if r < cap:
                                    for t in range(d):
                                        out[r, t] = m[t]
                                    out[r, d] = v
                        else:
                            found += nv
                            if stop_at < _INF:
                                if lane == 0:
                                    old = cuda.atomic.add(ctl, C_FOUND, nv)
                                    if old + nv >= stop_at:
                                        cuda.atomic.exch(ctl, C_STOP, 1)
                elif nv > 0:
                    if valid:
                        s1 = cuda.popc(mask & lt_mask)
                        m[d] = v
                        lo2, n2, kd2 = local_cands(d + 1, m, drv_ptr, drv_j, drv_dir, indptr,
                                                   in_indptr, cand_ptr, order, crank, row_off,
                                                   sptr, use_cs)
                        S_v[w, d, s1] = v
                        S_par[w, d, s1] = p
                        S_lo[w, d, s1] = lo2
                        S_kind[w, d, s1] = kd2
                        S_pre[w, d, s1] = n2
                    if lane == 0:
                        L_cnt[w, d] = nv
                        L_base[w, d] = 0
                    wsync()
                    if lane == 0:
                        acc = S_pre[w, d, 0]
                        for s2 in range(1, nv):
                            acc += S_pre[w, d, s2]
                            S_pre[w, d, s2] = acc
                    lvl = d
            if lane == 0 and found > 0:
                slot = org
                if warp_slot0 >= 0:
                    slot = warp_slot0 + (cuda.grid(1) >> 5)
                cuda.atomic.add(task_count, slot, found)
            wsync()

    @cuda.jit(device=True)
    def level(src, off, n, L, buf, woff, room, ctl, slot, gw, nw, drv_ptr, drv_j, drv_dir,
              in_indptr, cand_ptr, crank, row_off, sptr, sval, use_cs, order, cand_bits,
              cand_flat, chk_ptr, chk_j, chk_out, chk_in, chk_peo, chk_pei, indptr, indices,
              emult, adj, in_indices, eclass, eok, has_el, mono, directed, cut_part):
        """One BFS level of the fused search, :func:`_bfs_level_kernel`'s work over ``nw``
        warps (this one ``gw``: the whole grid, or one block for a narrow level): the
        feasible extensions of the ``n`` flat rows of ``L`` entries at ``src[off:]`` appended
        to ``buf[woff:]`` (rows of ``L + 1``, at most ``room``), ``ctl[slot]`` counting them
        all (past ``room`` too). A row's local candidate set is split over ``g`` warps when
        the frontier is narrower than the warps.

        Written out, not shared with the level kernel through a device function: sharing one
        took the fused kernel from 80 to 90 registers (6 to 5 resident blocks per SM for
        16-level stacks), and whether that costs time is not measured yet."""
        Bl = cuda.shared.array(W, int64)
        m = cuda.local.array(KMAX, int32)
        lane = cuda.threadIdx.x & 31
        wib = cuda.threadIdx.x >> 5
        below = (int64(1) << lane) - 1
        g = nw // n
        if g < 1:
            g = 1
        if g > 32:
            g = 32
        sub = gw % g
        groups = nw // g
        first = gw // g
        if first >= groups:  # the grid's last warps, short of a whole group
            first = n
        for r in range(first, n, groups):
            base = off + r * L
            for j in range(L):
                m[j] = src[base + j]
            lo, c, kd = local_cands(L, m, drv_ptr, drv_j, drv_dir, indptr, in_indptr,
                                    cand_ptr, order, crank, row_off, sptr, use_cs)
            for b in range(sub * 32, c, g * 32):
                i = b + lane
                good = False
                v = 0
                if i < c:
                    v = cand_at(kd, lo + i, cand_flat, indices, in_indices, sval)
                    good = feasible_from(L, v, m, kd, order, cand_bits, chk_ptr, chk_j,
                                         chk_out, chk_in, chk_peo, chk_pei, indptr, indices,
                                         emult, adj, eclass, eok, has_el, mono, directed)
                    if good and L >= 2 and cut_part.shape[0] != 0:
                        good = dup_ok(L, v, m, cut_part, chk_ptr, chk_j, chk_out, chk_in)
                mask = ballot(good)
                if mask == 0:
                    continue
                if lane == 0:
                    Bl[wib] = cuda.atomic.add(ctl, slot, cuda.popc(mask))
                wsync()
                if good:
                    pos = Bl[wib] + cuda.popc(mask & below)
                    if pos < room:
                        o = woff + pos * (L + 1)
                        for j in range(L):
                            buf[o + j] = m[j]
                        buf[o + L] = v
                wsync()

    @cuda.jit
    def dfs(order, cand_bits, cand_ptr, cand_flat, chk_ptr, chk_j, chk_out, chk_in, chk_peo,
            chk_pei, drv_ptr, drv_j, drv_dir, indptr, indices, emult, adj, in_indptr, in_indices,
            crank, row_off, sptr, sval, use_cs, eclass, eok, has_el, mono, directed, k, cut_part,
            pool, pool_w, n_pool, ctl, q_rows, q_len, q_org, q_ready, q_cap, task_count, collect,
            stop_at, out, cap, steal):
        """The DFS over a pool made before the launch (flat rows of ``pool_w`` entries)."""
        run(order, cand_bits, cand_ptr, cand_flat, chk_ptr, chk_j, chk_out, chk_in, chk_peo,
            chk_pei, drv_ptr, drv_j, drv_dir, indptr, indices, emult, adj, in_indptr, in_indices,
            crank, row_off, sptr, sval, use_cs, eclass, eok, has_el, mono, directed, k, cut_part,
            pool, 0, pool_w, n_pool, ctl, q_rows, q_len, q_org, q_ready, q_cap, task_count, -1,
            collect, stop_at, out, cap, steal)

    return dfs, run, level


def _make_fused_kernel(KMAX, W, run, level, regs):
    """The fused count kernel over :func:`_make_dfs_kernel`'s DFS (``run``) and BFS level
    (``level``), its registers capped at ``regs`` (0: none; see :data:`FUSED_REGS`)."""
    jit_kw = {"max_registers": int(regs)} if regs and not _SIM else {}

    @cuda.jit(**jit_kw)
    def fused(order, cand_bits, cand_ptr, cand_flat, chk_ptr, chk_j, chk_out, chk_in, chk_peo,
              chk_pei, drv_ptr, drv_j, drv_dir, indptr, indices, emult, adj, in_indptr, in_indices,
              crank, row_off, sptr, sval, use_cs, eclass, eok, has_el, mono, directed, k, cut_part,
              n0, L0, buf, buf_cap, target, most, ctl, q_rows, q_len, q_org, q_ready, q_cap,
              stop_at, out, steal, narrow):
        """A whole count in one cooperative launch: gMatch Sec. 4.3's initialisation phase
        (at most ``most`` BFS levels from the host's rows, ``n0`` flat rows of ``L0``
        entries at the start of ``buf``, until ``target`` rows, depth ``k - 1`` or a level
        past ``buf``), the levels separated by grid barriers instead of launches, then the
        DFS (Sec. 4.1-4.3) over the last level.

        A GPU level launched from the host costs 0.1-0.3 ms of the host's time whatever its
        size; here one costs a grid barrier. Level ``i``'s size is
        ``ctl[C_LEVELS + i]``; each level's rows start on a fresh 128-byte line of ``buf``,
        after every line read before, so no SM can hold a stale copy of them in its L1 (the
        rows are read with plain loads). Counts go to ``ctl[C_COUNTS + global warp]``; the
        pool's size, depth and whether a level overflowed to ``ctl[C_NPOOL:C_NPOOL + 3]`` (the
        size for the host's progress reads); the counts' sum to ``ctl[C_SUM_HI]`` and
        ``ctl[C_SUM_LO]`` (their high and low 32-bit halves).
        """
        # (one buffer for the host's rows and every level: a loop over two arrays kept both
        # in registers, 94 against 78 for the levels alone under ptxas for sm_90)
        cell = cuda.shared.array(1, int64)
        nar = cuda.shared.array(6, int64)
        tid = cuda.threadIdx.x
        off = int64(0)
        n = int64(n0)
        L = int64(L0)
        woff = (n * L + 31) // 32 * 32
        lv = int64(0)
        over = int64(0)
        gen = 0
        # levels of fewer than ``narrow`` rows first run in block 0 alone (phase 1), a block's
        # barrier between them, not the grid's (a deep search from one root starts with
        # several); then one grid barrier, after which every block takes their end from
        # ctl[C_NARROW:] and the levels go on over the grid (phase 0). The narrow phase took
        # the KMAX-16 kernel from 80 to 96 registers, with one call of ``level`` as with two
        # (24 -> 20 resident warps per SM)
        phase = 1 if 0 < n < narrow and L < k - 1 and lv < most else 0
        while True:
            solo = phase == 1
            while (cuda.blockIdx.x == 0 or not solo) and over == 0 and L < k - 1 and \
                    0 < n < target and lv < most and (n < narrow or not solo):
                room = (buf_cap - woff) // (L + 1)
                if room <= 0:
                    break
                gw = cuda.grid(1) >> 5
                nw = cuda.gridsize(1) >> 5
                if solo:
                    gw = tid >> 5
                    nw = cuda.blockDim.x >> 5
                level(buf, off, n, L, buf, woff, room, ctl, C_LEVELS + lv, gw, nw, drv_ptr,
                      drv_j, drv_dir, in_indptr, cand_ptr, crank, row_off, sptr, sval, use_cs,
                      order, cand_bits, cand_flat, chk_ptr, chk_j, chk_out, chk_in, chk_peo,
                      chk_pei, indptr, indices, emult, adj, in_indices, eclass, eok, has_el, mono,
                      directed, cut_part)
                lv += 1
                if solo:
                    cuda.syncthreads()
                    if tid == 0:
                        cell[0] = cuda.atomic.add(ctl, C_LEVELS + lv - 1, 0)
                    cuda.syncthreads()
                    size = cell[0]
                else:
                    gen += 1
                    size = _grid_barrier(ctl, gen, C_LEVELS + lv - 1, cell)
                if size > room:  # past the buffer: the DFS starts from the level before
                    over = 1
                    break
                off = woff
                n = size
                L += 1
                woff += (size * L + 31) // 32 * 32
            if not solo:
                break
            if cuda.blockIdx.x == 0 and tid == 0:
                ctl[C_NARROW] = off
                ctl[C_NARROW + 1] = n
                ctl[C_NARROW + 2] = L
                ctl[C_NARROW + 3] = woff
                ctl[C_NARROW + 4] = lv
                ctl[C_NARROW + 5] = over
            gen += 1
            _grid_barrier(ctl, gen, C_NARROW, cell)
            if tid < 6:
                nar[tid] = cuda.atomic.add(ctl, C_NARROW + tid, 0)
            cuda.syncthreads()
            off = nar[0]
            n = nar[1]
            L = nar[2]
            woff = nar[3]
            lv = nar[4]
            over = nar[5]
            phase = 0
        if cuda.grid(1) == 0:
            ctl[C_NPOOL] = n
            ctl[C_NPOOL + 1] = L
            ctl[C_NPOOL + 2] = over
        run(order, cand_bits, cand_ptr, cand_flat, chk_ptr, chk_j, chk_out, chk_in, chk_peo,
            chk_pei, drv_ptr, drv_j, drv_dir, indptr, indices, emult, adj, in_indptr, in_indices,
            crank, row_off, sptr, sval, use_cs, eclass, eok, has_el, mono, directed, k, cut_part,
            buf, off, L, n, ctl, q_rows, q_len, q_org, q_ready, q_cap, ctl, C_COUNTS, 0,
            stop_at, out, 0, steal)
        # the block's warp counts summed in shared memory, then two atomics a block: the host
        # reads the control block alone, not ~8,000 counts
        red = cuda.shared.array(2, int64)
        if tid == 0:
            red[0] = 0
            red[1] = 0
        cuda.syncthreads()
        if (tid & 31) == 0:
            v = cuda.atomic.add(ctl, C_COUNTS + (cuda.grid(1) >> 5), 0)
            if v != 0:
                cuda.atomic.add(red, 0, v >> 32)
                cuda.atomic.add(red, 1, v & 0xFFFFFFFF)
        cuda.syncthreads()
        if tid == 0 and (red[0] != 0 or red[1] != 0):
            cuda.atomic.add(ctl, C_SUM_HI, red[0])
            cuda.atomic.add(ctl, C_SUM_LO, red[1])

    return fused


_KERNELS = {}


_FUSED = {}


def _kernels(KMAX, W, wide):
    key = (KMAX, W, bool(wide))
    if key not in _KERNELS:
        _KERNELS[key] = _make_dfs_kernel(KMAX, W, bool(wide))
    return _KERNELS[key]


def _dfs_kernel(KMAX, W, wide):
    return _kernels(KMAX, W, wide)[0]


def _fused_kernel(KMAX, W, wide, regs):
    key = (KMAX, W, bool(wide), int(regs))
    if key not in _FUSED:
        _, run, level = _kernels(KMAX, W, wide)
        _FUSED[key] = _make_fused_kernel(KMAX, W, run, level, regs)
    return _FUSED[key]


def _bucket(k):
    for KMAX, W in _BUCKETS:
        if k <= KMAX:
            return KMAX, W
    return None


def kernel_resources():
    """Registers / shared / local memory per compiled kernel (after they ran once)."""
    out = {}
    items = [("bfs_level", _bfs_level_kernel)]
    items += [(f"dfs_k{K}_w{W}{'_wide' if wide else ''}", kerns[0])
              for (K, W, wide), kerns in _KERNELS.items()]
    items += [(f"fused_k{K}_w{W}{'_wide' if wide else ''}_r{r}", kern)
              for (K, W, wide, r), kern in _FUSED.items()]
    for name, kern in items:
        try:
            regs = kern.get_regs_per_thread()
            smem = kern.get_shared_mem_per_block()
            local = kern.get_local_mem_per_thread()
            maxt = kern.get_max_threads_per_block()
        except Exception as exc:  # not compiled yet, or the simulator
            out[name] = {"error": str(exc)}
            continue

        def one(x):
            return list(x.values())[0] if isinstance(x, dict) and x else x

        if isinstance(regs, dict) and not regs:
            out[name] = {"error": "not compiled in this process"}
            continue
        out[name] = {"registers": one(regs), "shared_bytes": one(smem),
                     "local_bytes": one(local), "max_threads_per_block": one(maxt)}
    return out


class GMatchEngine(faults.Recovery):
    """gMatch on the GPU: ``count(plan, limit, budget)`` and ``iter_chunks(plan, chunk, limit,
    budget)`` (the engine protocol of :mod:`nx_gsm.engines`; ``budget`` carries the API's timeout,
    progress and Ctrl-C, which stop a running kernel through its stop flag).

    Parameters (all optional):

    * ``pool_target``: rows for the BFS prefix (default: 8 per resident warp);
    * ``bfs_levels``: the most BFS levels (default: until the target, or until a frontier stays
      under 32 rows after 4 levels);
    * ``host_rows``: BFS levels of at most this many rows run on the host (default
      :data:`HOST_BFS_ROWS`; 0: every level on the GPU);
    * ``bfs_chain``: GPU BFS levels launched before their sizes are read (default
      :data:`BFS_CHAIN`; 1: a read after every level);
    * ``host_count_rows``: a count's last level is counted on the host up to this many
      matches (default :data:`HOST_COUNT_ROWS`, never fewer than ``host_rows``; it writes no
      rows, so it may go past them; without host levels, ``host_rows=0``, none is counted);
    * ``out_capacity``: rows of the device output buffer (default from the memory budget, at most
      256 MB); larger outputs are counted per pool row and collected in batches that fit;
    * ``steal``: work donation between warps (default True); ``queue_capacity``: ring slots;
    * ``memory_budget``: bytes (default: ``nx.config.backends.gsm.device_memory_budget`` or 80% of
      the free device memory);
    * ``blocks``: grid size override;
    * ``time_limit``: seconds per DFS launch, after which the kernel is stopped and
      ``TimeoutError`` raised (for benchmarks);
    * ``candidate_space``: local candidate sets from the plan's candidate space (default True;
      False: raw adjacency rows, as device-resident plans always use);
    * ``fused``: a count runs its device levels and its DFS in one cooperative launch
      (default True; see :meth:`_fused`), after host levels of fewer than
      ``fused_host_rows`` rows (default :data:`FUSED_HOST_ROWS` by stack depth, never more than
      ``host_rows``: ``host_rows=0`` starts it from the roots); False: BFS levels
      launched from the host (``host_rows``, ``bfs_chain``), then the DFS, as collects do;
      ``fused_regs``: the fused kernel's register cap (default :data:`FUSED_REGS`; 0: none);
      ``host_work``: those host levels stop once they examined this many candidates
      (default :data:`HOST_WORK`; 0: no bound); ``fused_narrow``: the fused search's levels
      of fewer rows than this run in one block, without grid barriers (default
      :data:`FUSED_NARROW` per warp of a block; 0: none); ``small_space``: a count whose
      candidate space holds at most this many entries per pattern node is the CPU engine's
      sequential search's (up to :data:`SMALL_STEPS` candidates), else keeps its levels on
      the host to :data:`SMALL_HOST_ROWS` rows (default :data:`SMALL_SPACE`; 0: never);
    * ``adjacency_bits``: a simple data graph of at most ~11,500 nodes without edge labels
      has its edges tested through a bitmap, one load a test, instead of a binary search of
      the row (default True; see :func:`~nx_gsm.engines.gpu.formats.adjacency_bits`);

    ``NX_GSM_GMATCH_POOL_TARGET``, ``NX_GSM_GMATCH_STEAL`` (0/1), ``NX_GSM_GMATCH_HOST_ROWS``,
    ``NX_GSM_GMATCH_HOST_COUNT_ROWS``, ``NX_GSM_GMATCH_BFS_CHAIN``, ``NX_GSM_GMATCH_SPACE``
    (0/1), ``NX_GSM_GMATCH_FUSED`` (0/1), ``NX_GSM_GMATCH_FUSED_HOST_ROWS``,
    ``NX_GSM_GMATCH_FUSED_REGS``, ``NX_GSM_GMATCH_FUSED_NARROW``,
    ``NX_GSM_GMATCH_SMALL_SPACE``, ``NX_GSM_GMATCH_HOST_WORK``, ``NX_GSM_GMATCH_ADJ_BITS`` (0/1)
    and ``NX_GSM_GMATCH_TIME_LIMIT``
    set the defaults of the corresponding parameters (for
    harnesses that pick engines by name).
    Patterns deeper than :data:`KMAX_LIMIT` run on the CPU engine (logged). ``last_stats`` holds
    the last run's pool size, grid, donations and timings.
    """

    name = "gmatch"
    capabilities = capabilities_of("gmatch")
    # dropped after a device fault (faults.Recovery)
    _device_caches = ("_gcache", "_acache", "_qbufs", "_kept", "_slots", "_bufs", "_free_memo",
                      "_fused_memo")
    # per thread, shared by the thread's gmatch engines (faults.thread_cache)
    _qbufs = faults.thread_cache("gmatch_ring")  # the donation ring (_queue)
    _kept = faults.thread_cache("gmatch_launches")  # kept launches (common.Launches)
    _slots = faults.thread_cache("gmatch_plan")  # kept plan arrays (residency.PlanSlots)
    _bufs = faults.thread_cache("gmatch_buffers")  # kept small device arrays (_buf)
    _pinned = faults.thread_cache("gmatch_staging")  # the fused search's pinned buffers (_stage)
    _waits = faults.thread_cache("gmatch_wait")  # _wait's event and side stream
    _fused_memo = faults.thread_cache("gmatch_fused")  # the fused search's setup (_fused_setup)
    # (time, free bytes): _budget's last free-memory read, for the API's engine per call too
    _free_memo = faults.thread_cache("gmatch_free")

    def __init__(self, *, pool_target=None, bfs_levels=None, out_capacity=None, steal=None,
                 queue_capacity=1 << 15, memory_budget=None, blocks=None, time_limit=None,
                 host_rows=None, candidate_space=None, host_count_rows=None, bfs_chain=None,
                 fused=None, fused_host_rows=None, fused_regs=None, host_work=None,
                 fused_narrow=None, small_space=None, adjacency_bits=None):
        self.xp = array_module()
        # NX_GSM_GMATCH_* knobs let test harnesses reach engines by name
        pool_target = _knob(pool_target, "POOL_TARGET", None)
        self.host_rows = _knob(host_rows, "HOST_ROWS", HOST_BFS_ROWS)
        self.host_count_rows = _knob(host_count_rows, "HOST_COUNT_ROWS", HOST_COUNT_ROWS)
        self.bfs_chain = _knob(bfs_chain, "BFS_CHAIN", BFS_CHAIN)
        if self.bfs_chain < 1:
            raise ValueError(f"bfs_chain must be at least 1, got {self.bfs_chain}")
        steal = _knob(steal, "STEAL", True, _flag)
        self.candidate_space = _knob(candidate_space, "SPACE", True, _flag)
        self.fused = _knob(fused, "FUSED", True, _flag)
        self.fused_host_rows = _knob(fused_host_rows, "FUSED_HOST_ROWS", None)
        self.host_work = _knob(host_work, "HOST_WORK", HOST_WORK)
        self.fused_narrow = _knob(fused_narrow, "FUSED_NARROW", None)
        self.fused_regs = _knob(fused_regs, "FUSED_REGS", None)
        self.small_space = _knob(small_space, "SMALL_SPACE", SMALL_SPACE)
        self.adjacency_bits = _knob(adjacency_bits, "ADJ_BITS", True, _flag)
        time_limit = _knob(time_limit, "TIME_LIMIT", None, float)
        self.pool_target = pool_target
        self.bfs_levels = None if bfs_levels is None else int(bfs_levels)
        self.out_capacity = out_capacity
        self.steal = bool(steal)
        self.queue_capacity = int(queue_capacity)
        self.memory_budget = memory_budget
        self.blocks = blocks
        self.time_limit = time_limit
        self.last_stats = {}
        self._faults = []
        self._plan = None

    # -- helpers --------------------------------------------------------------------------------
    def _budget(self):
        # the free-memory read (cudaMemGetInfo, ~35 us of the card's host; a search reads the
        # budget 2-3 times) is kept for FREE_TTL s; the override and the configured budget are
        # read each time, so a change to either applies at once
        now = time.perf_counter()
        memo = self._free_memo
        if memo is None or now - memo[0] > FREE_TTL:
            memo = self._free_memo = (now, free_and_total()[0])
        return memory_budget(self.memory_budget, free=memo[1])

    def _fallback(self, plan):
        if plan.k > KMAX_LIMIT:
            reason = (f"pattern has {plan.k} nodes; gmatch's shared-memory stack holds at most "
                      f"{KMAX_LIMIT} levels")
            log.warning("gmatch: falling back to the CPU engine: %s", reason)
            self.last_stats = {"fallback": reason}
            from ..cpu import CpuEngine

            return CpuEngine()
        return None

    _grid_cache = {}

    def _grid(self, kern, W):
        if self.blocks is not None:
            return int(self.blocks)
        key = id(kern)
        if key not in self._grid_cache:
            self._grid_cache[key] = self._grid_uncached(kern, W)
        return self._grid_cache[key]

    def _grid_uncached(self, kern, W):
        info = device_info()
        if info["simulator"]:
            return 1
        sm = info["sm_count"] or 1
        per_sm = 4
        try:
            regs = kern.get_regs_per_thread()
            regs = list(regs.values())[0] if isinstance(regs, dict) else regs
            smem = kern.get_shared_mem_per_block()
            smem = list(smem.values())[0] if isinstance(smem, dict) else smem
            nthreads = 32 * W
            by_regs = info["regs_per_sm"] // max(1, ((regs + 7) // 8 * 8) * nthreads)
            by_smem = info["smem_per_sm"] // max(1, smem + 1024)
            by_thr = info["max_threads_per_sm"] // nthreads
            per_sm = max(1, min(by_regs, by_smem, by_thr, 32))
        except Exception:
            pass
        return sm * per_sm

    def _default_pool_target(self, W):
        if self.pool_target is not None:
            return int(self.pool_target)
        info = device_info()
        if info["simulator"]:
            return 8
        sm = info["sm_count"] or 1
        return 8 * sm * 16  # ~8 rows per resident warp (about 16 warps per SM)

    # -- BFS prefix -----------------------------------------------------------------------------
    def _expand(self, dp, rows, L, cap=None):
        """One BFS level: frontier rows (n, L) -> feasible rows (n', L+1), or None if too big.

        One launch of :func:`_bfs_level_kernel` and one read of the level's size: a level used
        to be two launches, a prefix sum, a compaction and two host reads (~1 ms on the card).
        The output buffer holds every row when ``n`` times the longest local
        candidate set fits :data:`LEVEL_ROWS` (or ``cap`` rows where given: a size already
        known); a level past it runs again into a buffer of its exact size, or is refused when
        that would take more than a quarter of the budget."""
        xp = self.xp
        n = int(rows.shape[0])
        faults.point("bfs")
        if n == 0:
            return xp.zeros((0, L + 1), dtype=np.int32)
        room = self._budget() // 4 // (4 * (L + 1))
        if cap is None:
            cap = min(n * max(dp.longest, 1), room, LEVEL_ROWS)
        elif cap > room:
            return None
        g, blocks = _level_grid(n)
        for _ in range(2):
            out = xp.empty((max(cap, 1), L + 1), dtype=np.int32)
            cnt, k_cnt = self._buf("level_count", 2, np.int64)
            self._level_launch(dp, blocks, rows, L, n, 0, n, _INF, _INF, g, 0, out, cap, k_cnt)
            size = int(cnt[1])
            if size <= cap:
                return out[:size]
            if size > room:
                return None
            cap = size
        raise AssertionError("unreachable: the second run's buffer holds the level")

    def _level_launch(self, dp, blocks, rows, L, n0, ci, cap_in, target, small_from, g, sm,
                      out, cap, k_cnt):
        # rows and out are CuPy arrays: the kept launch marshals them itself (a Numba wrap and
        # Numba's marshalling cost ~0.1 ms an array)
        sim_reset()
        self._launch("bfs_level", _bfs_level_kernel, blocks, 32 * _LEVEL_WPB, rows, L, n0, ci,
                     cap_in, target, small_from, g, sm, dp.drv_ptr, dp.drv_j, dp.drv_dir,
                     dp.in_indptr, dp.cand_ptr, *dp.space_args(), *dp.check_args(),
                     dp.cut_part, out, cap, k_cnt)

    def _chain(self, dp, rows, L, m, target, gpu_levels):
        """Up to ``m`` BFS levels from ``rows`` (n, L) launched back to back, their sizes read
        once at the end: a chain saves a synchronisation and the host's steps around it, ~0.1
        ms a level after the first on the card. A level reads its
        frontier's size on the device and does nothing where :meth:`_bfs`' loop would have
        stopped before it (see :func:`_bfs_level_kernel`), so the result is that loop's.
        Each level's buffer holds its frontier's buffer times the longest local candidate
        set, at most :data:`LEVEL_ROWS` rows and a ``4 m``-th of the budget; a level past its
        buffer is sized and run again alone (:meth:`_expand`), or ends the BFS when it would
        take more than a quarter of the budget.

        Returns (rows, levels done, whether the BFS stops here)."""
        xp = self.xp
        n = int(rows.shape[0])
        faults.point("bfs")
        budget = self._budget()
        info = device_info()
        sim = info["simulator"]
        sm = 0 if sim else int(info["sm_count"] or 1)
        blocks = 1 if sim else 4 * sm  # a resident wave of the level kernel (32 warps per SM)
        cnt, k_cnt = self._buf("level_count", m + 1, np.int64)
        src, cap_in, outs, caps = rows, n, [], []
        for j in range(m):
            cap = min(cap_in * max(dp.longest, 1), budget // (4 * m) // (4 * (L + j + 1)),
                      LEVEL_ROWS)
            if cap <= 0:
                break
            out = xp.empty((cap, L + j + 1), dtype=np.int32)
            self._level_launch(dp, blocks, src, L + j, n, j, cap_in, target, 4 - gpu_levels,
                               1 if sim else 0, sm, out, cap, k_cnt)
            outs.append(out)
            caps.append(cap)
            src, cap_in = out, cap
        sizes = host_copy(cnt[: len(outs) + 1])
        for j, out in enumerate(outs):
            size = int(sizes[j + 1])
            if size < 0:
                return rows, j, False
            if size > caps[j]:
                nxt = self._expand(dp, rows, L + j, cap=size)
                return (rows, j, True) if nxt is None else (nxt, j + 1, False)
            rows = out[:size]
        return rows, len(outs), not outs

    def _host_prefix(self, plan, roots, target, count=False, host_rows=None, work_cap=0):
        """The first BFS levels on the host while they stay under ``host_rows`` rows (and
        ``target``): a GPU level costs 0.1-0.3 ms of the host's time whatever its size,
        the CPU engine's expansion ~0.3 us per row on one thread (levels
        of ``cpu.WIDE_ROWS`` rows and more use every host thread).
        Returns host rows, their depth, the levels done and, with ``count``, the number of
        matches when the host counted the last level (else None; ``host_levels``'
        ``count_last``: its rows are never written); device-resident plans start on the
        device."""
        if not isinstance(plan.cand_flat, np.ndarray) or getattr(plan.G, "on_device", False):
            return roots.reshape(-1, 1), 1, 0, None
        rows = np.ascontiguousarray(roots, dtype=np.int32).reshape(-1, 1)
        cap = min(self.host_rows if host_rows is None else host_rows, target)
        most = plan.k if self.bfs_levels is None else self.bfs_levels
        if plan.k < 2 or not 0 < rows.shape[0] < cap or most < 1:
            return rows, 1, 0, None
        count_cap = max(cap, self.host_count_rows)
        got = host_levels(plan_arrays(plan), rows, cap, most, numba.get_num_threads(),
                          count_last=count, count_cap=count_cap, work_cap=work_cap)
        rows, levels, last = got if count else got + (None,)
        if last is not None:
            return None, plan.k, levels, last
        return np.ascontiguousarray(rows), 1 + levels, levels, None

    def _bfs(self, dp, roots, target, L=1, levels=0, growth=None):
        """Initialisation phase: expand ``roots`` (rows of depth ``L``, after ``levels`` levels)
        until ``target`` rows, the last depth, or the budget; a frontier that stays under 32
        rows after 4 GPU levels (a small search) goes to the DFS as it is.

        Levels run in chains (:meth:`_chain`) as long as the levels to ``target`` predicted
        from ``growth`` (rows per row per level so far, where known) plus one, at most
        ``bfs_chain``: a level that would not run costs a launch, one too few a chain."""
        xp = self.xp
        rows = xp.ascontiguousarray(xp.asarray(roots), dtype=np.int32).reshape(-1, L)
        gpu_levels = chains = 0
        while L < dp.k and rows.shape[0] and rows.shape[0] < target:
            most = dp.k - L
            if self.bfs_levels is not None:
                most = min(most, self.bfs_levels - levels)
            if most <= 0 or (gpu_levels >= 4 and rows.shape[0] < 32):
                break
            n = int(rows.shape[0])
            m = self.bfs_chain
            if growth is not None and growth > 1.0:
                m = min(m, 2 + int(math.log(target / n) / math.log(growth)))
            rows, done, stop = self._chain(dp, rows, L, max(1, min(m, most)), target,
                                           gpu_levels)
            chains += 1
            L += done
            levels += done
            gpu_levels += done
            if stop or done == 0:
                break
            if rows.shape[0]:
                growth = (rows.shape[0] / n) ** (1.0 / done)
        self.last_stats.update(gpu_levels=gpu_levels, chains=chains)
        return rows, L

    # -- DFS ------------------------------------------------------------------------------------
    def _dfs(self, dp, pool, collect=False, stop_at=None, cap=0, budget=UNLIMITED):
        """Run the DFS kernel over ``pool`` (n, L) rows.

        Returns ``(ctl, task_count, out, stopped)``: the control block and the per-row counts on
        the host, the output buffer on the device, and why the search was stopped early (None,
        or "budget" / "interrupted" when ``budget`` ended it; ``time_limit`` raises
        TimeoutError).
        """
        xp = self.xp
        KMAX, W = _bucket(dp.k)
        kern = _dfs_kernel(KMAX, W, dp.wide)
        n_pool, L = pool.shape
        faults.point("dfs_buffers")
        if n_pool == 0:
            pool = xp.zeros((1, L), dtype=np.int32)
        flat = pool.reshape(-1)  # (a view: the kernels read a pool as flat rows)
        ctl, k_ctl = self._buf("ctl", N_CTL, np.int64)
        qc = self.queue_capacity if self.steal else 1
        q_rows, q_len, q_org, q_ready = self._queue(qc, KMAX)
        task_count, k_tc = self._buf("task_count", max(n_pool, 1), np.int64)
        if collect:
            faults.point("output")
            # never read past the rows the kernel reserved, so not zero-filled (a 256 MB memset)
            out = xp.empty((max(cap, 1), dp.k), dtype=np.int32)
            k_out = kernel_array(out)
        else:  # not written without collect
            out, k_out = self._buf("no_output", (1, KMAX_LIMIT), np.int32, zero=False)
        stop = _INF if stop_at is None else int(stop_at)
        sim_reset()
        if _SIM:
            blocks = self.blocks or 1
        else:
            if not kern.overloads:
                # compile with a launch over an empty pool; the grid size needs its resources
                with quiet():
                    kern[1, 32 * W](*dp.dfs_args(), kernel_array(flat), L, 0,
                                    kernel_array(xp.zeros(N_CTL, dtype=np.int64)), q_rows,
                                    q_len, q_org, q_ready, qc, k_tc, 0, _INF, k_out, 0, 0)
            blocks = self._grid(kern, W)
        t0 = time.perf_counter()
        faults.point("launch")
        self._launch("dfs", kern, blocks, 32 * W, *dp.dfs_args(), flat, L, n_pool,
                     k_ctl, q_rows, q_len, q_org, q_ready, qc, k_tc, int(bool(collect)), stop,
                     k_out, int(cap), int(self.steal))
        t_launch = time.perf_counter() - t0
        stopped = None
        if not _SIM and (self.time_limit is not None or budget is not UNLIMITED):
            stopped = self._wait(ctl, task_count, n_pool, budget)
        ctl_h, tc_h = host_copy(ctl), host_copy(task_count[:n_pool])
        self.last_stats.update(blocks=int(blocks), warps_per_block=W, kmax=KMAX, wide=dp.wide,
                               donated=int(ctl_h[C_DONATED]), stolen=int(ctl_h[C_STOLEN]),
                               t_dfs_launch=t_launch, t_dfs=time.perf_counter() - t0)
        if stopped == "time_limit":
            self.last_stats["timed_out"] = True
            raise TimeoutError(f"gmatch: search stopped after time_limit={self.time_limit} s")
        return ctl_h, tc_h, out, stopped

    def _fused(self, dp, rows, L, limit, budget):
        """The rest of a count from the host's ``rows`` (n, L) in one cooperative launch of
        the fused kernel (:func:`_make_dfs_kernel`'s ``fused``): the BFS levels to the pool
        target, separated by grid barriers, then the DFS over the last level, every match
        counted in its warp's slot; one zero-fill, one upload of the rows, one launch and one
        read of the control block. Returns ``(total, stopped)``, or None where no cooperative
        launch is available (kept launches off): the caller then launches the levels itself.
        """
        KMAX, W = _bucket(dp.k)
        regs = FUSED_REGS.get(KMAX, 0) if self.fused_regs is None else self.fused_regs
        kern = _fused_kernel(KMAX, W, dp.wide, regs)
        t0 = time.perf_counter()
        faults.point("bfs")
        n0 = int(rows.shape[0])
        cap = int(min(FUSED_BUF_INTS, max(1 << 10, self._budget() // 8 // 4)))
        cap = max(cap, (n0 * L + 31) // 32 * 32)  # the host's rows at least
        faults.point("dfs_buffers")
        fs = self._fused_setup(kern, KMAX, W, cap, n0 * L)
        stop = _INF if limit is None else int(limit)
        most = dp.k if self.bfs_levels is None else max(0, self.bfs_levels - (int(L) - 1))
        args = (*dp.dfs_args(), n0, int(L), fs.k_buf, cap, fs.target, most, fs.k_ctl,
                fs.q_rows, fs.q_len, fs.q_org, fs.q_ready, fs.qc, stop, fs.k_out,
                int(self.steal),
                FUSED_NARROW * W if self.fused_narrow is None else int(self.fused_narrow))
        faults.point("launch")
        if _SIM:
            sim_reset()
            blocks = self.blocks or 1
            fs.k_buf[: n0 * L] = np.asarray(rows, dtype=np.int32).reshape(-1)
            fs.both.fill(0)
            with quiet():
                kern[blocks, 32 * W](*args)
        else:
            site = fs.site
            if site is None:
                if fs.tried:
                    return None
                fs.tried = True
                site = fs.site = self._kept.cooperative("fused", kern, 32 * W, *args)
                if site is None:
                    return None
                fs.size(min(self._grid(kern, W), site.max_blocks(32 * W),
                            fs.most_warps // W), W)
            blocks = fs.blocks
            if blocks < 1:
                return None
            rt = self.xp.cuda.runtime
            # the host's rows through pinned memory (an async copy, ordered before the launch on
            # the legacy stream) and only the control block and the used warps' counts zeroed
            if isinstance(rows, np.ndarray):
                fs.stage.rows[: n0 * L] = rows.reshape(-1)
                rt.memcpyAsync(fs.buf_ptr, fs.rows_ptr, 4 * n0 * L, rt.memcpyHostToDevice, 0)
            else:  # a device-resident plan's roots
                rows = self.xp.ascontiguousarray(rows, dtype=np.int32)
                rt.memcpyAsync(fs.buf_ptr, rows.data.ptr, 4 * n0 * L,
                               rt.memcpyDeviceToDevice, 0)
            # the ring's generations, the control block and the used warps' counts: one memset
            rt.memsetAsync(fs.both_ptr, 0, fs.zero_bytes, 0)
            if not site.launch(blocks, 32 * W, args, cooperative=True):
                return None
            self._kept.kept += 1
        t_launch = time.perf_counter() - t0
        nw = blocks * W
        stopped = None
        if not _SIM and (self.time_limit is not None or budget is not UNLIMITED):
            stopped = self._wait(fs.ctl_view, fs.counts_view, nw, budget, npool_slot=C_NPOOL)
        if _SIM:
            c = np.array(fs.both[fs.qpad : fs.qpad + C_COUNTS])
        else:  # waits for the kernel (a synchronous copy on the legacy stream)
            c = fs.stage.ctl
            rt.memcpy(fs.ctl_host_ptr, fs.ctl_ptr, 8 * C_COUNTS, rt.memcpyDeviceToHost)
        total = (int(c[C_SUM_HI]) << 32) + int(c[C_SUM_LO])
        gpu_levels = int(c[C_NPOOL + 1]) - int(L)
        # the sizes of the levels kept, and of one past its buffer where the BFS stopped so
        sizes = c[C_LEVELS : C_LEVELS + gpu_levels + int(c[C_NPOOL + 2])].tolist()
        self.last_stats.update(
            fused=True, blocks=int(blocks), warps_per_block=W, kmax=KMAX, wide=dp.wide,
            gpu_levels=gpu_levels, level_rows=sizes,
            pool_rows=int(c[C_NPOOL]), pool_depth=int(c[C_NPOOL + 1]),
            donated=int(c[C_DONATED]), stolen=int(c[C_STOLEN]), t_dfs_launch=t_launch,
            t_dfs=time.perf_counter() - t0)
        if stopped == "time_limit":
            self.last_stats["timed_out"] = True
            raise TimeoutError(f"gmatch: search stopped after time_limit={self.time_limit} s")
        return total, stopped

    def _fused_setup(self, kern, KMAX, W, cap, row_ints):
        """The fused search's kept buffers, pointers and launch site for ``kern`` (a
        :class:`_FusedSetup`), made again only when the kernel, the buffer's size or a knob
        they depend on changed, or the staged rows outgrow their pinned buffer: looked up piece
        by piece they were ~25-45 us of a ~0.29 ms device count's host time on the card's host
        (kept: 0.80x the time of rebuilt each count). An entry holds its
        arrays, so they stay valid while it is kept, whatever :meth:`_buf`, :meth:`_queue` or
        :meth:`_ring_ctl` hand out since."""
        qc = self.queue_capacity if self.steal else 1
        key = (kern, cap, qc, self.blocks, self._default_pool_target(W))
        fs = self._fused_memo
        if fs is not None and fs.key == key and (fs.stage is None or
                                                 fs.stage.rows.size >= row_ints):
            return fs
        info = device_info()
        most_warps = (self.blocks or 1) * W if _SIM else \
            max(W, int(info["sm_count"] or 1) * int(info["max_threads_per_sm"] or 2048) // 32)
        _, k_buf = self._buf("fused_levels", cap, np.int32, zero=False, view=False)
        q_rows, q_len, q_org, _ = self._queue(qc, KMAX, zero=False)
        both, q_ready, k_ctl, qpad = self._ring_ctl(qc, C_COUNTS + most_warps)
        _, k_out = self._buf("no_output", (1, KMAX_LIMIT), np.int32, zero=False, view=False)
        if self._kept is None:
            self._kept = Launches()
        fs = self._fused_memo = _FusedSetup(
            key, k_buf, q_rows, q_len, q_org, both, q_ready, k_ctl, qpad, k_out, qc,
            key[4], most_warps, None if _SIM else self._stage(C_COUNTS, row_ints))
        return fs

    def _launch(self, site, kern, blocks, threads, *args):
        """Launch ``kern`` through the thread's kept launches: a call site's later launches
        re-marshal only the arguments that changed (the next BFS level's rows; not the plan)."""
        if self._kept is None:
            self._kept = Launches()
        self._kept(site, kern, blocks, threads, *args)

    def _buf(self, name, shape, dtype, zero=True, view=True):
        """A kept device array for ``name`` of at least ``shape`` (rows by powers of two), its
        first ``shape[0]`` rows zeroed unless ``zero`` is False: (a CuPy view of ``shape``, the
        kernel array of all of it); the view is None unless ``view`` (a CuPy slice costs a few
        microseconds of the host's time). Kernels bound these arrays by counts, not shapes, so
        one kernel array -- marshalled once by the kept launches -- serves every launch instead
        of an allocation, a wrap and a marshalling each. Valid until the
        next call for ``name``: each use reads it back before returning."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if self._bufs is None:
            self._bufs = {}
        got = self._bufs.get(name)
        if got is None or got[0].shape[0] < shape[0] or got[0].shape[1:] != shape[1:] \
                or got[0].dtype != dtype:
            a = self.xp.zeros((pow2(shape[0]),) + shape[1:], dtype=dtype)
            got = self._bufs[name] = (a, kernel_array(a))
        if not (view or zero):
            return None, got[1]
        v = got[0][: shape[0]]
        if zero:
            _zero(v)
        return (v if view else None), got[1]

    def _stage(self, ctl_ints, row_ints):
        """The thread's pinned host buffers of the fused search (control block and counts
        read back, the host's rows copied in), grown to at least these sizes."""
        st = self._pinned
        if st is None or st.ctl.size < ctl_ints or st.rows.size < row_ints:
            st = self._pinned = _Staging(self.xp, ctl_ints, row_ints, st)
        return st

    def _queue(self, qc, KMAX, zero=True):
        """The donation ring (rows, lengths, origins, generations), its generations zeroed
        unless ``zero`` is False (a slot's row, length and origin are read only after its
        generation says they were written): kept between launches as Numba device arrays (one
        memset instead of four allocations and four CuPy kernel arguments)."""
        key = (qc, KMAX)
        got = self._qbufs
        if got is None or got[0] != key:
            xp = self.xp
            host = (xp.zeros((qc, KMAX), dtype=np.int32), xp.zeros(qc, dtype=np.int32),
                    xp.zeros(qc, dtype=np.int64), xp.zeros(qc, dtype=np.int64))
            got = self._qbufs = (key, host, [kernel_array(a) for a in host])
        elif zero:
            _zero(got[1][3])
        return got[2]

    def _ring_ctl(self, qc, n):
        """The fused search's donation-ring generations (``qc``) and its control block (``n``)
        in one kept int64 device array, the block from a 128-byte line on, so that one memset
        zeroes both: (the array, the generations' and the block's kernel arrays, the block's
        offset). Valid until the next call, as :meth:`_buf`'s arrays."""
        if self._bufs is None:
            self._bufs = {}
        qpad = (qc + 15) // 16 * 16
        got = self._bufs.get("fused_ring_ctl")
        if got is None or got[4] != qc or got[0].shape[0] < qpad + n:
            a = self.xp.zeros(qpad + pow2(n), dtype=np.int64)
            got = self._bufs["fused_ring_ctl"] = (a, kernel_array(a[:qc]),
                                                  kernel_array(a[qpad:]), qpad, qc)
        return got[0], got[1], got[2], got[3]

    def _wait(self, ctl, task_count, n_pool, budget, npool_slot=None):
        """Wait for the running DFS kernel, polling ``time_limit`` and the run budget (deadline,
        progress, Ctrl-C). To stop the search its flag is raised by a DMA copy on a
        non-blocking stream (the warps poll the flag); progress reads the control block and the
        counts the same way (``n_pool`` of them; the fused search's pool size, which the host
        never sees, is ``ctl[npool_slot]``). Returns None or the reason the search was
        stopped."""
        import cupy as cp

        if self._waits is None:  # kept: a stream's creation is ~20 us of the host's time
            self._waits = (cp.cuda.Event(disable_timing=True), cp.cuda.Stream(non_blocking=True))
        done, side = self._waits
        done.record(cp.cuda.Stream.null)
        t0 = time.perf_counter()
        last = t0
        stopped = None
        flag = ctl_buf = tc_buf = None
        while True:
            try:
                while not done.done:
                    now = time.perf_counter()
                    if stopped is None and self.time_limit is not None and \
                            now - t0 > self.time_limit:
                        stopped = "time_limit"
                    elif stopped is None and budget is not UNLIMITED and now - last >= 0.1:
                        last = now
                        if ctl_buf is None:
                            ctl_buf = cp.cuda.alloc_pinned_memory(8 * ctl.size)
                            tc_buf = cp.cuda.alloc_pinned_memory(8 * max(n_pool, 1))
                        cp.cuda.runtime.memcpyAsync(ctl_buf.ptr, ctl.data.ptr, 8 * ctl.size,
                                                    cp.cuda.runtime.memcpyDeviceToHost,
                                                    side.ptr)
                        cp.cuda.runtime.memcpyAsync(tc_buf.ptr, task_count.data.ptr,
                                                    8 * max(n_pool, 1),
                                                    cp.cuda.runtime.memcpyDeviceToHost,
                                                    side.ptr)
                        side.synchronize()
                        c = np.frombuffer(ctl_buf, dtype=np.int64, count=ctl.size)
                        tc = np.frombuffer(tc_buf, dtype=np.int64, count=max(n_pool, 1))
                        found = exact_sum(tc[:n_pool]) + int(c[C_OUT])
                        rows = n_pool if npool_slot is None else int(c[npool_slot])
                        if not budget.keep_going(found, min(int(c[C_POOL]), rows), rows):
                            stopped = "budget"
                    if stopped is not None and flag is None:
                        flag = cp.cuda.alloc_pinned_memory(8)
                        np.frombuffer(flag, dtype=np.int64, count=1)[0] = 1
                        cp.cuda.runtime.memcpyAsync(ctl.data.ptr + 8 * C_STOP, flag.ptr, 8,
                                                    cp.cuda.runtime.memcpyHostToDevice,
                                                    side.ptr)
                        side.synchronize()
                    # the first 2 ms by polling alone: a sleep of 50 us takes ~100 on Linux
                    # (timer slack), most of a small search's kernel time
                    if now - t0 > 0.002:
                        time.sleep(0.00005 if now - t0 < 0.01 else 0.0005)
                return stopped
            except KeyboardInterrupt:
                budget.stop("interrupted")
                if stopped is None:
                    stopped = "interrupted"

    # -- public protocol ------------------------------------------------------------------------
    def _prepare(self, plan, count=False, fused=False):
        """Device plan, task pool and its depth; the device plan is None when the host prefix
        (:meth:`_host_prefix`) reached the last depth: its rows are then every match -- or,
        with ``count``, the "rows" may be the number of matches (an int) when the host counted
        the last level. With ``fused`` the host levels stop at ``fused_host_rows`` and no GPU
        level runs: the rows are the fused search's start (:meth:`_fused`)."""
        t0 = time.perf_counter()
        KMAX, W = _bucket(plan.k)
        fh = None
        space = _UNREAD
        if fused:
            fh = self.fused_host_rows
            if fh is None:
                fh = FUSED_HOST_ROWS[KMAX]
                if count:
                    # unchecked against the budget (a free-memory read: ~8-35 us of the card's
                    # host, more than the probe's own glue) until it goes to the device
                    space = self._space(plan, fit=False)
                    if space is not None and space.val.size <= self.small_space * plan.k:
                        # a small search: the CPU engine's sequential search counts it, else
                        # its levels run on the host
                        got = count_probe(plan, SMALL_STEPS)
                        if got is not None:
                            self.last_stats = {"host_levels": 0, "host_counted": True,
                                               "k": plan.k, "probe": True, "pool_rows": 0,
                                               "pool_depth": plan.k,
                                               "t_host_bfs": time.perf_counter() - t0}
                            return None, got, plan.k
                        fh = SMALL_HOST_ROWS
                    space = self._fitting(space)
            fh = min(self.host_rows, fh)
        target = self._default_pool_target(W)
        roots = plan.cand_flat[plan.cand_ptr[0] : plan.cand_ptr[1]]
        rows, L, levels, last = self._host_prefix(plan, roots, target, count, fh,
                                                  self.host_work if fused else 0)
        t1 = time.perf_counter()
        self.last_stats = {"host_levels": levels, "t_host_bfs": t1 - t0, "k": plan.k}
        if last is not None:
            self.last_stats.update(pool_rows=0, pool_depth=int(L), host_counted=True)
            return None, last, L
        dp = None
        if L < plan.k and rows.shape[0]:
            dp = self._dev_plan(plan, point="plan_upload", space=space)
            t2 = time.perf_counter()
            if fused:
                self.last_stats.update(t_upload=t2 - t1, host_rows=int(rows.shape[0]))
                return dp, rows, L
            growth = None  # rows per row per host level (sizes the GPU levels' chains)
            if levels and roots.shape[0]:
                growth = (rows.shape[0] / roots.shape[0]) ** (1.0 / levels)
            rows, L = self._bfs(dp, rows, target, L, levels, growth)
            self.last_stats.update(t_upload=t2 - t1, t_bfs=time.perf_counter() - t2)
        self.last_stats.update(pool_rows=int(rows.shape[0]), pool_depth=int(L))
        return dp, rows, L

    def count(self, plan, limit=None, budget=UNLIMITED):
        """Number of matches (exact Python int), at most ``limit``; a :class:`PartialCount`
        lower bound when ``budget`` (deadline, Ctrl-C) stopped the search.

        A device fault (out of memory, failed launch) is not the caller's problem: an
        out-of-memory is retried once with half the memory budget, then (or for any other fault)
        the CPU engine counts the whole search; ``last_stats["recovered"]`` says which.
        """
        limit, known = trivial_answer(plan, limit)
        if known is not None:
            return known
        return self._count_recovering(self._count, plan, limit, budget)

    def _count(self, plan, limit, budget):
        dp, rows, L = self._prepare(plan, count=True, fused=self.fused)
        if isinstance(rows, int):
            return rows if limit is None else min(rows, limit)
        if L == plan.k or rows.shape[0] == 0:
            n = int(rows.shape[0])
            return n if limit is None else min(n, limit)
        got = self._fused(dp, rows, L, limit, budget) if self.fused else None
        if got is not None:
            total, stopped = got
        else:
            if self.fused:  # no cooperative launch here: the GPU levels from the host
                t2 = time.perf_counter()
                rows, L = self._bfs(dp, rows, self._default_pool_target(_bucket(dp.k)[1]), L,
                                    L - 1)
                self.last_stats.update(t_bfs=time.perf_counter() - t2,
                                       pool_rows=int(rows.shape[0]), pool_depth=int(L))
                if L == plan.k or rows.shape[0] == 0:
                    n = int(rows.shape[0])
                    return n if limit is None else min(n, limit)
            ctl, tc, _, stopped = self._dfs(dp, rows, collect=False, stop_at=limit,
                                            budget=budget)
            total = exact_sum(to_host(tc))
        if limit is not None:
            total = min(total, limit)
        if stopped is not None and (limit is None or total < limit):
            return PartialCount(total)
        return total

    def device_rows(self, plan, limit=None, budget=UNLIMITED):
        """Every match (at most ``limit``) as one device array ``(rows, k)`` in matching order,
        never copied to the host: the zero-copy output of a DeviceGraph search.

        Counts first, then collects into a buffer of exactly that size; returns None when that
        buffer would not fit the memory budget or the device failed (the caller then streams
        through the host with :meth:`iter_chunks`).
        """
        xp = self.xp
        self._faults = []
        limit, known = trivial_answer(plan, limit)
        if known is not None:
            return xp.zeros((known, plan.k), dtype=np.int32)
        if plan.k > KMAX_LIMIT:
            return None
        try:
            dp, rows, L = self._prepare(plan)
            if L == plan.k or rows.shape[0] == 0:
                rows = xp.asarray(rows)
                return rows if limit is None else rows[:limit]
            _, tc, _, stopped = self._dfs(dp, rows, stop_at=limit, budget=budget)
            total = exact_sum(to_host(tc))
            if limit is not None:
                total = min(total, limit)
            if stopped is not None or 4 * plan.k * total > self._budget() // 2:
                return None
            ctl, _, out, stopped = self._dfs(dp, rows, collect=True, stop_at=total, cap=total,
                                             budget=budget)
            if stopped is not None:
                return None
            return out[: min(int(ctl[C_OUT]), total)]
        except faults.device_errors() as exc:
            self._recover(exc)
            return None

    def count_per_row(self, plan):
        """(pool rows on host, exact count per row) -- for tests and diagnostics."""
        dp, rows, L = self._prepare(plan)
        if L == plan.k or rows.shape[0] == 0:
            return to_host(rows), np.ones(rows.shape[0], dtype=np.int64)
        _, tc, _, _ = self._dfs(dp, rows)
        return to_host(rows), to_host(tc)

    # -- task pools made elsewhere ----------------------------------------------------------------
    def count_from(self, plan, rows, limit=None, budget=UNLIMITED, cut_part=None):
        """Matches below the partial matches ``rows`` -- an ``(n, L)`` int32 NumPy or CuPy array,
        ``1 <= L <= k``, column d the data node of ``plan.order[d]`` -- each row's subtree
        counted once, at most ``limit``; a :class:`PartialCount` when ``budget`` stopped it.

        The rows are the DFS's task pool as given (a CuPy array is used in place): the public
        entry for a pool another engine built, such as GSI's BFS levels when the next one
        would not fit the device. Every row must be a feasible partial match, as every engine's levels are.

        ``cut_part`` (int32 part id per data node) keeps only the matches whose pattern pairs
        at depths >= 2 map onto no cut pair smaller than the one of depths 0 and 1 (PBE's
        DUPREMOVE): the partitioned engine's cross search, whose rows are seeded cut pairs.
        ``last_stats["t_upload"]`` is the time spent uploading the graph (if not cached), the
        plan, ``cut_part`` and the rows.
        """
        rows = self._checked_rows(plan, rows)
        limit, _ = trivial_answer(plan, limit)
        if plan.empty or limit == 0:
            return 0
        fb = self._fallback(plan)
        if fb is not None:
            self._no_filter_on_cpu(cut_part)
            got = fb.count_from(plan, to_host(rows), budget=budget)
            return got if limit is None else min(got, limit)
        t0 = time.perf_counter()
        dp = self._dev_plan(plan, cut_part)
        return self._count_from(dp, rows, limit, budget, t0=t0)

    def iter_from(self, plan, rows, chunk=4096, limit=None, budget=UNLIMITED, cut_part=None):
        """Like :meth:`iter_chunks`, restricted to the subtrees of ``rows`` (see
        :meth:`count_from`, also for ``cut_part``): host int32 arrays of up to ``chunk`` rows, at
        most ``limit``. With ``cut_part`` a device fault reaches the caller (as from
        :meth:`count_from`) instead of being finished on the CPU engine, which has no DUPREMOVE:
        the caller recovers and redoes the rows."""
        rows = self._checked_rows(plan, rows)
        chunk = check_chunk(chunk)
        limit, _ = trivial_answer(plan, limit)
        if plan.empty or limit == 0:
            return
        fb = self._fallback(plan)
        if fb is not None:
            self._no_filter_on_cpu(cut_part)
            yield from fb.iter_from(plan, to_host(rows), chunk=chunk, limit=limit, budget=budget)
            return
        t0 = time.perf_counter()
        dp = self._dev_plan(plan, cut_part)
        yield from self._iter_from(dp, plan, rows, chunk, limit, budget, t0=t0)

    def _checked_rows(self, plan, rows):
        """``rows`` checked as far as memory safety needs before any kernel indexes by them:
        ``(n, L)`` integers with ``1 <= L <= k`` and data node ids in range (a host array
        becomes int32 here; a device array is checked where it lies)."""
        if isinstance(rows, np.ndarray) or not hasattr(rows, "__cuda_array_interface__"):
            rows = check_prefixes(plan, rows)
        elif rows.ndim == 2 and rows.dtype.kind in "iu" and rows.size and (
                int(rows.min()) < 0 or int(rows.max()) >= plan.G.n):
            raise ValueError(f"partial matches hold data node ids outside 0..{plan.G.n - 1}")
        if rows.ndim != 2 or not 1 <= rows.shape[1] <= plan.k or rows.dtype.kind not in "iu":
            raise ValueError(f"partial matches must be an integer array of shape (n, L) with "
                             f"1 <= L <= {plan.k}; got shape {tuple(rows.shape)} of "
                             f"{rows.dtype}")
        return rows

    @staticmethod
    def _no_filter_on_cpu(cut_part):
        if cut_part is not None:
            raise ValueError(f"cut_part needs the device search (patterns of at most "
                             f"{KMAX_LIMIT} nodes); the CPU engine has no DUPREMOVE filter")

    def _dev_plan(self, plan, cut_part=None, point=None, space=_UNREAD):
        """The plan on the device, in the thread's kept slots when no other plan holds them
        (``point``: the fault point between the graph's upload and the plan's; ``space``:
        :meth:`_space`'s answer where the caller has it, else :data:`_UNREAD`)."""
        garrs = self._graph_arrays(plan.G)
        if point:
            faults.point(point)
        if self._slots is None:
            self._slots = PlanSlots(self.xp)
        if space is _UNREAD:
            space = self._space(plan)
        self.last_stats["space"] = space is not None
        adj = self._adjacency(plan.G) if self.adjacency_bits else None
        self.last_stats["adj_bits"] = adj is not None and not plan.has_elabels
        return DevPlan(plan, self.xp, garrs, cut_part, self._slots, space, adj)

    def _space(self, plan, fit=True):
        """The plan's candidate space for the kernels' local candidate sets, or None (raw
        adjacency rows): a host plan's space, built here unless its build would visit more than
        ``SPACE_VISITS`` adjacency entries, and kept off the device past an eighth of the
        memory budget (unless ``fit`` is False: the caller then checks it with
        :meth:`_fitting` before it goes to the device). The host levels have built it already
        for every search they start."""
        if not self.candidate_space or not isinstance(plan.cand_flat, np.ndarray) or \
                getattr(plan.G, "on_device", False) or plan.drv_j.size == 0:
            return None
        if plan.__dict__.get("_space") is None and space_visits(plan) > SPACE_VISITS:
            return None
        space = build_space(plan)
        return self._fitting(space) if fit else space

    def _fitting(self, space):
        """``space`` where it fits an eighth of the memory budget, else None."""
        return space if space is not None and space.nbytes <= self._budget() // 8 else None

    def _pool(self, dp, rows, t0=None):
        xp = self.xp
        rows = xp.ascontiguousarray(xp.asarray(rows), dtype=np.int32)
        if rows.ndim != 2 or not 1 <= rows.shape[1] <= dp.k:
            raise ValueError(f"partial matches must be an (n, L) array with 1 <= L <= {dp.k}; "
                             f"got shape {tuple(rows.shape)}")
        n, L = rows.shape
        self.last_stats = {"pool_rows": int(n), "pool_depth": int(L), "k": dp.k,
                           "pool_given": True}
        if t0 is not None:
            self.last_stats["t_upload"] = time.perf_counter() - t0
        return rows

    def _count_from(self, dp, rows, limit, budget, t0=None):
        """:meth:`count_from` on an uploaded plan (GSI passes its own, with its signature-pruned
        candidate bits); ``t0``: when the caller's uploads began."""
        rows = self._pool(dp, rows, t0)
        n, L = rows.shape
        if n == 0 or L == dp.k:
            return n if limit is None else min(n, limit)
        _, tc, _, stopped = self._dfs(dp, rows, stop_at=limit, budget=budget)
        total = exact_sum(to_host(tc))
        if limit is not None:
            total = min(total, limit)
        if stopped is not None and (limit is None or total < limit):
            return PartialCount(total)
        return total

    def _iter_from(self, dp, plan, rows, chunk, limit, budget, t0=None):
        """:meth:`iter_from` on an uploaded plan. A pool handed over is usually one whose output
        did not fit a BFS level, so it is counted per row and collected in batches at once
        rather than first tried in one buffer; a ``limit`` that fits the buffer is one pass."""
        self._faults = []
        self._plan = plan  # _collect_batches finishes a faulted batch's prefixes on the CPU
        rows = self._pool(dp, rows, t0)
        n, L = rows.shape
        remaining = [limit]
        if n == 0 or L == dp.k:
            yield from self._emit(rows, n, chunk, remaining)
            return
        cap = self._capacity(plan)
        if limit is not None and limit <= cap:
            yield from self._collect_limit(dp, rows, limit, chunk, remaining, budget)
            return
        yield from self._collect_batches(dp, rows, cap, chunk, remaining, budget)

    def _capacity(self, plan):
        if self.out_capacity is not None:
            return max(1, int(self.out_capacity))
        return max(1024, min(self._budget() // 4, 256 << 20) // (4 * plan.k))

    def iter_chunks(self, plan, chunk=4096, limit=None, budget=UNLIMITED):
        """Matches as int32 arrays of up to ``chunk`` rows (column d: the data node of pattern
        node ``plan.order[d]``), at most ``limit`` in all; ``budget`` can end it early.

        Device faults are recovered as in :meth:`count`; once rows have been emitted, the
        partial matches not yet emitted are finished by the CPU engine (``_collect_batches``),
        so every match is still produced exactly once.
        """
        chunk = check_chunk(chunk)
        limit, known = trivial_answer(plan, limit)
        if known is not None:
            return iter([trivial_rows(known)] if known else [])
        self._plan = plan
        return self._iter_recovering(self._iter, plan, chunk, limit, budget, hold=False)

    def _iter(self, plan, chunk, limit, budget):
        dp, rows, L = self._prepare(plan)
        remaining = [limit]
        if L == plan.k or rows.shape[0] == 0:
            yield from self._emit(rows, rows.shape[0], chunk, remaining)
            return
        cap = self._capacity(plan)
        if limit is not None and limit <= cap:
            yield from self._collect_limit(dp, rows, limit, chunk, remaining, budget)
            return
        ctl, _, out, stopped = self._dfs(dp, rows, collect=True, stop_at=None, cap=cap,
                                         budget=budget)
        n_out = int(ctl[C_OUT])
        if stopped is not None or (n_out <= cap and ctl[C_STOP] == 0):
            # complete, or cut short by the budget: every reserved row below cap was written
            yield from self._emit(out, min(n_out, cap), chunk, remaining)
            return
        del out
        self.last_stats["streamed"] = True
        yield from self._collect_batches(dp, rows, cap, chunk, remaining, budget)

    def _collect_limit(self, dp, rows, limit, chunk, remaining, budget):
        """One pass for a ``limit`` that fits a buffer: the kernel stops at ``limit`` rows."""
        ctl, _, out, _ = self._dfs(dp, rows, collect=True, stop_at=limit, cap=limit,
                                   budget=budget)
        yield from self._emit(out, min(int(ctl[C_OUT]), limit), chunk, remaining)

    def _emit(self, out, n, chunk, remaining):
        """Stream the first ``n`` rows of a device buffer to the host in ``chunk``-row arrays."""
        if remaining[0] is not None:
            n = min(n, remaining[0])
        if n <= 0:
            return
        host = np.ascontiguousarray(to_host(out[:n]), dtype=np.int32)
        if remaining[0] is not None:
            remaining[0] -= n
        for a in range(0, n, chunk):
            yield host[a : a + chunk]

    def _collect_batches(self, dp, rows, cap, chunk, remaining, budget):
        """Count per pool row, then collect batches that fit ``cap`` (heavy rows re-expanded).

        Each batch's device work finishes before any of its rows is emitted, so after a device
        fault the batches not yet emitted are exactly the work left: the CPU engine finishes them
        from their partial matches (:meth:`CpuEngine.iter_from`), each match once.
        """
        xp = self.xp
        L = rows.shape[1]
        errs = faults.device_errors()
        try:
            _, tc, _, stopped = self._dfs(dp, rows, budget=budget)
            if stopped is not None:
                return
            counts = to_host(tc).astype(np.int64)
        except errs as exc:
            if dp.cut_part.shape[0]:
                raise
            self._recover(exc)
            yield from self._cpu_rest(to_host(rows), chunk, remaining, budget)
            return
        half = max(1, cap // 2)
        heavy = np.flatnonzero(counts > half)
        light = np.flatnonzero((counts > 0) & (counts <= half))
        items = []
        if light.size:
            excl = np.concatenate([[0], np.cumsum(counts[light])[:-1]])
            batch = excl // half
            cuts = np.flatnonzero(np.diff(batch)) + 1
            items += [("light", part) for part in np.split(light, cuts)]
        items += [("heavy", np.array([i])) for i in heavy]
        for n_item, (kind, part) in enumerate(items):
            if remaining[0] is not None and remaining[0] <= 0:
                return
            if budget.partial or not budget.keep_going():
                return
            stopped = None
            try:
                sub = rows[xp.asarray(part)]
                if kind == "light":
                    want = int(counts[part].sum())
                    ctl, _, out, stopped = self._dfs(dp, sub, collect=True, cap=cap,
                                                     budget=budget)
                    got = int(ctl[C_OUT])
                    if stopped is None and got != want:
                        raise RuntimeError(f"gmatch: batch produced {got} rows, counted {want}")
                    done = to_host(out[: min(got, cap)])
                else:
                    done = self._expand(dp, sub, L)
                    if done is None:
                        raise MemoryError("gmatch: cannot split a heavy task within the "
                                          "memory budget")
                    if L + 1 == dp.k:
                        done = to_host(done)
            except errs as exc:
                if dp.cut_part.shape[0]:
                    raise
                self._recover(exc)
                rest = np.concatenate([p for _, p in items[n_item:]])
                yield from self._cpu_rest(to_host(rows)[rest], chunk, remaining, budget)
                return
            if kind == "light" or L + 1 == dp.k:
                yield from self._emit(done, done.shape[0], chunk, remaining)
                if stopped is not None:
                    return
            elif done.shape[0]:
                yield from self._collect_batches(dp, done, cap, chunk, remaining, budget)

    def _cpu_rest(self, prefixes, chunk, remaining, budget):
        """Finish the subtrees of ``prefixes`` on the CPU engine (after a device fault)."""
        from ..cpu import CpuEngine

        self._note_recovery("finished the unemitted partial matches on the CPU engine")
        for rows in CpuEngine().iter_from(self._plan, prefixes, chunk=chunk,
                                          limit=remaining[0], budget=budget):
            if remaining[0] is not None:
                remaining[0] -= rows.shape[0]
            yield rows
