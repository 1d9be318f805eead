"""GAMMA's delta kernel (Sec. IV-C and V-A/B): a warp per updated item runs the DFS of its
task on :class:`~nx_gsm.engines.gpu.gamma.pma.RowPMA` rows, each match reported once from its
smallest updated item, with work stealing inside a block and donation between blocks."""

from __future__ import annotations

from numba import cuda, int32, int64

from ....kernel_cache import cached_kernel
from ..common import ballot, pause, ring_take, wsync
from ..device import is_simulator

__all__ = ["KMAX", "WPB", "ALLKEYS", "C_TASK", "C_MATCH", "C_STEAL", "C_HEAD", "C_TAIL",
           "C_BUSY", "C_IDLE", "C_DON", "C_SLC", "C_RDY", "delta_kernel"]

KMAX = 16  # deepest pattern the kernel's per-lane arrays hold
WPB = 4 if is_simulator() else 16  # warps per block (the simulator runs each as 32 threads)
# RowPMA rows here are sorted by key (class of the neighbour << 32) | neighbour id; a pattern
# node whose candidate classes are not one run of class ids reads [0, ALLKEYS): whole rows
ALLKEYS = 1 << 62
# the delta kernel's control words: task counter, matches, steals within a block, then the
# donation ring (GAMMA's stealing carried across blocks as gMatch's Sec. 4.3 queue): claims,
# reservations, busy warps (relative: each warp counts itself once it starts), idle warps,
# donations, slices given; ring slot s's ready word (the generation written there) is
# ctl[C_RDY + s]
C_TASK, C_MATCH, C_STEAL, C_HEAD, C_TAIL, C_BUSY, C_IDLE, C_DON, C_SLC, C_RDY = range(10)


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
    for i in range(1, WPB):
        v = (wib + i) % WPB
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
    h = ring_take(ctl, C_HEAD, C_TAIL, C_BUSY, C_IDLE, ctl, C_RDY, q_cap)
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
    idle = cuda.atomic.add(ctl, C_IDLE, 0)
    if idle <= 0:
        return -1
    hd = cuda.atomic.add(ctl, C_HEAD, 0)
    tl = cuda.atomic.add(ctl, C_TAIL, 0)
    if tl - hd >= idle or tl - hd >= q_cap:
        return -1
    _lock(S_lock, wib, lk)  # a thief of the block may be lowering S_end
    lv, first, take = _tail_half(S_p, S_end, wib, base, d + 1)
    if lv < 0 or cuda.atomic.cas(ctl, C_TAIL, tl, tl + 1) != tl:
        _unlock(S_lock, wib, lk)
        return -1
    S_end[wib, lv] = first
    _unlock(S_lock, wib, lk)
    s = tl % q_cap
    while cuda.atomic.add(ctl, C_RDY + s, 0) != 0:  # its last unit's claimer is still reading
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
        idle = cuda.atomic.add(ctl, C_IDLE, 0)
        hd = cuda.atomic.add(ctl, C_HEAD, 0)
        tl = cuda.atomic.add(ctl, C_TAIL, 0)
        want = idle - (tl - hd)
        if want <= 0 or tl - hd >= q_cap:
            break
        if cuda.atomic.cas(ctl, C_TAIL, tl, tl + 1) != tl:
            continue
        s = max(int64(slice_min), (i_hi - i_lo) // (want + 1))
        q = tl % q_cap
        while cuda.atomic.add(ctl, C_RDY + q, 0) != 0:  # its last unit's claimer is reading
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
        cuda.atomic.exch(ctl, C_RDY + q, tl + 1)
        i_hi -= s
        given += 1
    if given > 0:
        cuda.atomic.add(ctl, C_SLC, given)
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
    narrow = klo > 0 or khi < ALLKEYS
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


@cached_kernel
@cuda.jit
def delta_kernel(n_tasks, n_groups, g_first, g_rank, g_x, g_y, g_toff, g_parts, tlist, tab_wt, k,
                  order_t, chk_ptr, chk_j, chk_out, chk_in, chk_peo, chk_pei, drv_ptr, drv_j,
                  drv_dir, loop_used, ct,
                  rstart, rlen, adj, akey, amult, aemask, irstart, irlen, iadj, iakey, vcls, ukey,
                  narrow_row, trange, mkeys, mranks,
                  nn, n_nodes, has_el, mono, directed, cbuf, out, out_tab, out_cap, ctl, steal,
                  q_meta, q_m, q_ent, q_cap, poll, batch_min, slice_min):
    """GAMMA Alg. 1 (WBM) with the digest's corrections: one warp per task (an updated item
    seeded onto a pattern pair, loop or isolated node), warp-cooperative candidate generation
    per depth (lanes split the shortest backward-neighbour row, ballot compaction into the
    warp's level buffer ``cbuf``), depth-first over the levels. ``ctl[C_TASK]`` hands out
    tasks, ``ctl[C_MATCH]`` counts matches (rows past ``out_cap`` are counted, not written;
    with ``out_cap == 0`` each match counts ``tab_wt`` of its order table: the size of its
    pattern pair's automorphism orbit, Sec. V-B, and each warp adds its count once, when it
    stops), ``ctl[C_STEAL]`` counts steals (the other words: ``_C_*``).

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
    gw = cuda.blockIdx.x * WPB + wib
    B = cuda.shared.array((WPB, 6), int64)  # lane 0's broadcasts
    S_m = cuda.shared.array((WPB, KMAX), int32)
    S_p = cuda.shared.array((WPB, KMAX), int32)
    S_end = cuda.shared.array((WPB, KMAX), int32)
    S_task = cuda.shared.array((WPB, 2), int64)
    S_lock = cuda.shared.array(WPB, int32)
    S_busy = cuda.shared.array(WPB, int32)
    # a chunk of last-but-one-level entries counted together: entry, row start, offset of its
    # candidates (one more: their total), row kind * 32 + driving depth + 1
    S_r = cuda.shared.array((WPB, 32), int32)
    S_lo = cuda.shared.array((WPB, 32), int64)
    S_off = cuda.shared.array((WPB, 33), int64)
    S_kj = cuda.shared.array((WPB, 32), int32)
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
        cuda.atomic.add(ctl, C_BUSY, 1)
    lk = steal & 1  # the per-warp lock guards against thieves of the block only
    idle = False  # (lane 0) counted idle, not busy, in ctl
    gens = 0  # levels made (the donation poll's clock)
    drained = False
    ns_back = 64
    part = 0
    parts = 1
    r_lo = int64(0)  # a claimed slice of its first level's row: [r_lo, r_hi), r_hi < 0: none
    r_hi = int64(-1)
    # counting (out_cap == 0): the warp's matches, added to ctl[C_MATCH] once when it stops --
    # an atomic per warp round on one address serialised the warps of a large count
    acc = int64(0)
    while True:
        t = n_tasks
        if not drained:
            # a persistent warp takes its next task from the global counter (the digest's A2.7)
            if lane == 0:
                B[wib, 0] = cuda.atomic.add(ctl, C_TASK, 1)
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
                    _emit(out, out_tab, cuda.atomic.add(ctl, C_MATCH, 1), m, k - 1, bo, tab,
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
                        cuda.atomic.add(ctl, C_IDLE, 1)
                        cuda.threadfence()
                        cuda.atomic.add(ctl, C_BUSY, -1)
                        cuda.threadfence()
                    idle = True
                st = -1
                if lk != 0:
                    st = _find_victim(wib, k, S_lock, S_p, S_end, S_busy, B)
                if st == 1 and steal & 2:
                    # (the victim, whose lock is held, is busy until it takes its entries
                    # left: the grid's busy count never reads 0 in between)
                    cuda.atomic.add(ctl, C_BUSY, 1)
                    cuda.atomic.add(ctl, C_IDLE, -1)
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
                vgw = cuda.blockIdx.x * WPB + v
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
                    cuda.atomic.add(ctl, C_STEAL, 1)
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
                    cuda.atomic.exch(ctl, C_RDY + q, int64(0))  # the slot is free again
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
                        B[wib, 0] = cuda.atomic.add(ctl, C_MATCH, c * wt)
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
                        cuda.atomic.exch(ctl, C_RDY + q, B[wib, 0])
                        cuda.atomic.add(ctl, C_DON, 1)
            wsync()
    if lane == 0 and acc > 0:
        cuda.atomic.add(ctl, C_MATCH, acc)
