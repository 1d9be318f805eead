"""gMatch's device code: the BFS level kernel (Sec. 4.3), the warp-batched DFS kernel with
work donation (Sec. 4.1-4.3, Alg. 2) and the fused count kernel, built per stack depth
and kept, with the register and shared-memory report of the compiled ones."""

from __future__ import annotations

from numba import cuda, int8, int32, int64

from ....kernel_cache import cached_kernel, compile_like
from ..common import ballot, cand_at, dup_ok, feasible_from, local_cands, pause, wsync
from ..device import is_simulator
from .config import (BUCKETS, C_BAR, C_BUSY, C_COUNTS, C_DONATED, C_FOUND, C_GEN, C_IDLE, C_LEVELS,
                     C_NARROW, C_NPOOL, C_OUT, C_POOL, C_QHEAD, C_QTAIL, C_STOLEN, C_STOP,
                     C_SUM_HI, C_SUM_LO, FUSED_REGS, INF, LEVEL_WPB)

__all__ = ["bfs_level_kernel", "bucket", "compile_variants", "dfs_kernel", "fused_kernel",
           "kernel_resources"]

_SIM = is_simulator()


@cached_kernel
@cuda.jit
def bfs_level_kernel(rows, L, n0, ci, cap_in, target, small_from, gfix, sm, drv_ptr, drv_j,
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
    B = cuda.shared.array(LEVEL_WPB, int64)
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
                            if stop_at < INF:
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
        """One BFS level of the fused search, :func:`bfs_level_kernel`'s work over ``nw``
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

    @cached_kernel
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

    @cached_kernel
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


def dfs_kernel(KMAX, W, wide):
    return _kernels(KMAX, W, wide)[0]


def fused_kernel(KMAX, W, wide, regs):
    key = (KMAX, W, bool(wide), int(regs))
    if key not in _FUSED:
        _, run, level = _kernels(KMAX, W, wide)
        _FUSED[key] = _make_fused_kernel(KMAX, W, run, level, regs)
    return _FUSED[key]


def compile_variants():
    """Compile every DFS and fused kernel the engine can launch with its default register
    caps -- each stack depth of :data:`BUCKETS`, int32 and int64 (``wide``) stack offsets --
    for every argument signature any of them was launched with in this process: they all take
    the same arguments, so one launch of each kind gives the signatures of all. Each is loaded
    from the disk cache where it is there (:func:`~nx_gsm.kernel_cache.cached_kernel`).
    Returns how many were compiled or loaded; 0 under the simulator."""
    if _SIM:
        return 0
    widths = (False, True)
    dfs = [dfs_kernel(K, W, wide) for K, W in BUCKETS for wide in widths]
    fused = [fused_kernel(K, W, wide, FUSED_REGS.get(K, 0)) for K, W in BUCKETS for wide in widths]
    return compile_like(dfs) + compile_like(fused)


def bucket(k):
    for KMAX, W in BUCKETS:
        if k <= KMAX:
            return KMAX, W
    return None


def kernel_resources():
    """Registers / shared / local memory per compiled kernel (after they ran once)."""
    out = {}
    items = [("bfs_level", bfs_level_kernel)]
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
