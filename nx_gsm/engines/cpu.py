"""The CPU engine: Numba-compiled backtracking over a MatchPlan.

Shape (the enumeration stage of Sun & Luo's study, with RI/VF2++-style ordering from the planner):
depth-first with an explicit stack (no recursion); the local candidates of depth ``d`` are drawn
from the shortest candidate-space list (:mod:`nx_gsm.plan.space`) among the images of
``order[d]``'s backward neighbours (or its filtered candidate list when it has none), each checked
against injectivity and, by binary search in sorted adjacency rows, every other constraint of the
plan (multiplicities both ways, induced non-edges, edge labels).

Parallelism (counting): the search that a short sequential probe started becomes the first
task of a window of resumable slots, whose busy ones ``prange`` runs a slice at a time. Between
slices, while fewer tasks are left than the window holds, running tasks give half of
the untried candidates at their shallowest open level away as new tasks (work splitting) until
it is full again, so the threads stay busy however skewed the search tree is, and one thread
runs exactly the sequential search. ``count_from`` starts the window from given prefixes.
Enumeration (the iterator API) runs a resumable search that fills a fixed-size buffer and returns,
so Python streams results lazily and can stop at any ``limit``.
"""

from __future__ import annotations

import numbers

import numba
import numpy as np
from numba import njit, prange

from .. import kernel_cache  # noqa: F401  (sets Numba's cache folder before @njit runs)
from ..plan.space import build_space
from .base import UNLIMITED, PartialCount
from .registry import capabilities_of

__all__ = ["CpuEngine", "check_chunk", "check_prefixes", "trivial_answer", "trivial_rows"]

_NOT_STARTED = -2
_DONE = -1
# rows of the per-depth stack array
_LO, _HI, _CUR, _KIND, _FS, _FLG = 0, 1, 2, 3, 4, 5
_STACK_ROWS = 6
# _FLG bits: a match was found below this node / the node has at least one child
_FOUND, _HAS_CHILD = 1, 2
# candidates examined per slice of a sequential search (about 10-50 ms of work: the granularity
# of deadlines, Ctrl-C and progress updates)
_SLICE_STEPS = 1 << 20
# resumable slots per thread in the counting window, and candidates a thread examines per round
# between two scheduling points (about 5-10 ms): prange gives each thread a fixed block of slots,
# so a round's uneven end idles a thread, and short rounds keep that small. On 12 yeast-8
# count-all queries of 20 ms to 1.5 s (2 cores, benchmarks/RESULTS.md), 2 threads over 1 gave
# 1.49x geomean with 8 slots and 2**17 steps, 1.42x with 32 slots and 2**20
_SLOTS_PER_THREAD = 8
_ROUND_STEPS = 1 << 17
# a count that finishes within this many steps never goes parallel
_PROBE_STEPS = 1 << 16


@njit(cache=True, inline="always")
def _find(indptr, indices, x, y):
    lo = indptr[x]
    hi = indptr[x + 1]
    while lo < hi:
        mid = (lo + hi) >> 1
        t = indices[mid]
        if t < y:
            lo = mid + 1
        elif t > y:
            hi = mid
        else:
            return mid
    return -1


@njit(cache=True, inline="always")
def _mult_ok(have, need, mono):
    return have >= need if mono else have == need


@njit(cache=True)
def _consistent(P, d, v, m):
    """Does v satisfy every constraint of pattern node order[d] except injectivity: its candidate
    bit, and multiplicities (both ways), induced non-edges and edge labels towards m[:d]?"""
    (order, cand_bits, _cp, _cf, chk_ptr, chk_j, chk_out, chk_in, chk_peo, chk_pei, _dp, _dj,
     _ci, _ro, _sp, _sv, indptr, indices, emult, eclass, eok, flags, _a, _n0, _n1, _n2) = P
    has_el, mono, directed = flags[0] != 0, flags[1] != 0, flags[2] != 0
    u = order[d]
    if (cand_bits[u, v >> 3] >> (v & 7)) & 1 == 0:
        return False
    for c in range(chk_ptr[d], chk_ptr[d + 1]):
        x = m[chk_j[c]]
        e = _find(indptr, indices, x, v)
        need = chk_out[c]
        if not _mult_ok(0 if e < 0 else emult[e], need, mono):
            return False
        if has_el and need > 0 and eok[chk_peo[c], eclass[e]] == 0:
            return False
        if directed:
            e = _find(indptr, indices, v, x)
            need = chk_in[c]
            if not _mult_ok(0 if e < 0 else emult[e], need, mono):
                return False
            if has_el and need > 0 and eok[chk_pei[c], eclass[e]] == 0:
                return False
    return True


@njit(cache=True, inline="always")
def _conflict(m, d, v):
    """The depth already holding v, or -1."""
    for j in range(d):
        if m[j] == v:
            return j
    return -1


@njit(cache=True, inline="always")
def _setup(P, d, m, stk):
    """Point depth d's local candidates at the shortest candidate-space list of its drivers, or
    at its whole candidate list when it has no backward neighbour."""
    (order, _cb, cand_ptr, _cf, _c0, _c1, _c2, _c3, _c4, _c5, drv_ptr, drv_j, cidx, row_off,
     sptr, _sv, _i0, _i1, _e, _ec, _eo, _f, _a, _n0, _n1, _n2) = P
    stk[_FS, d] = 0
    stk[_FLG, d] = 0
    t0 = drv_ptr[d]
    t1 = drv_ptr[d + 1]
    if t0 == t1:
        stk[_KIND, d] = -1
        stk[_LO, d] = cand_ptr[d]
        stk[_HI, d] = cand_ptr[d + 1]
    else:
        for t in range(t0, t1):
            j = drv_j[t]
            r = row_off[t] + cidx[order[j], m[j]]
            a = sptr[r]
            b = sptr[r + 1]
            if t == t0 or b - a < stk[_HI, d] - stk[_LO, d]:
                stk[_KIND, d] = t
                stk[_LO, d] = a
                stk[_HI, d] = b
    stk[_CUR, d] = stk[_LO, d]


@njit(cache=True, inline="always")
def _value(P, kd, i):
    return P[3][i] if kd < 0 else P[15][i]


@njit(cache=True, inline="always")
def _in_sorted(val, lo, hi, v):
    while lo < hi:
        mid = (lo + hi) >> 1
        t = val[mid]
        if t < v:
            lo = mid + 1
        elif t > v:
            hi = mid
        else:
            return True
    return False


@njit(cache=True, inline="always")
def _fits(P, d, v, m, kd):
    """:func:`_consistent` for a v drawn from depth d's local list ``kd`` (driver slot ``kd``'s
    candidate-space list, or the candidate list when ``kd < 0``), doing only the tests that
    list does not imply.

    A driver's list holds exactly the candidates of ``order[d]`` that ``m[j]`` reaches through
    an edge fitting the pattern edge (direction, multiplicity, label: the space's ``edge_fits``
    is :func:`_consistent`'s test), so v passes every positive constraint once it is in every
    other driver's list: a binary search of a list of a few candidates, where
    :func:`_consistent` searches a whole adjacency row per constraint. What no list implies are
    the induced modes' forbidden edges (``neg``: a pattern pair, in one direction, without an
    edge), tested in the adjacency rows."""
    (order, _cb, _cp, _cf, _c0, _c1, _c2, _c3, _c4, _c5, drv_ptr, drv_j, cidx, row_off,
     sptr, sval, indptr, indices, emult, _ec, _eo, _f, _a, neg_ptr, neg_j, neg_dir) = P
    for t in range(drv_ptr[d], drv_ptr[d + 1]):
        if t != kd:
            j = drv_j[t]
            r = row_off[t] + cidx[order[j], m[j]]
            if not _in_sorted(sval, sptr[r], sptr[r + 1], v):
                return False
    for c in range(neg_ptr[d], neg_ptr[d + 1]):
        x = m[neg_j[c]]
        e = _find(indptr, indices, x, v) if neg_dir[c] == 0 else _find(indptr, indices, v, x)
        if e >= 0 and emult[e] != 0:
            return False
    return True


@njit(cache=True, inline="always")
def _count_last(P, d, lo, hi, kd, m, stk, anc):
    """The matches below ``m[:d]`` from the last depth's local list entries ``lo:hi``, with that
    depth's failing-set bookkeeping set as the one-by-one loop of :func:`_search` would: the
    entries passing :func:`_fits`, less those already used at an earlier depth j (each such
    conflict adds ``anc[d] | anc[j]`` to the failing set)."""
    drivers = P[10][d + 1] - P[10][d] - (1 if kd >= 0 else 0)
    if drivers == 0 and P[23][d + 1] == P[23][d]:
        got = hi - lo  # the list implies every test (a mono count's usual last depth)
    else:
        got = 0
        for i in range(lo, hi):
            if _fits(P, d, _value(P, kd, i), m, kd):
                got += 1
    vals = P[3] if kd < 0 else P[15]
    for j in range(d):
        v = m[j]
        if _in_sorted(vals, lo, hi, v) and _fits(P, d, v, m, kd):
            got -= 1
            stk[_FS, d] |= anc[d] | anc[j]
            stk[_FLG, d] |= _HAS_CHILD
    if got > 0:
        stk[_FLG, d] |= _FOUND | _HAS_CHILD
    return got


@njit(cache=True)
def _search(P, start, state, m, stk, out, cap, collect, max_steps):
    """Resumable DFS below the fixed prefix ``m[:start]``, with DP-iso failing-set pruning.

    Returns the number of rows written to ``out`` (collect) or of matches counted, stopping once
    it reaches ``cap`` or has examined ``max_steps`` candidates; ``state[0]`` keeps the depth to
    resume at, or _DONE. ``stk`` holds per
    depth the local-candidate range and cursor and the failing-set bookkeeping.

    Failing sets (Han et al., DP-iso, SIGMOD 2019, section 5): the failing set F of a search node
    is a set of pattern nodes (bits by depth) such that no extension of any partial match agreeing
    with it on F succeeds. A conflict child (v already used at depth j) has F = anc(d) | anc(j),
    a node with no candidates F = anc(d), an inner node the union of its children's; a child
    whose F misses depth d proves every sibling fails too, so they are skipped.
    """
    k = P[0].size
    anc = P[22]
    prune = P[21][3] != 0
    d = state[0]
    if d == _DONE:
        return 0
    if d == _NOT_STARTED:
        d = start
        _setup(P, d, m, stk)
    found = 0
    steps = 0
    while True:
        if steps >= max_steps:
            state[0] = d
            return found
        steps += 1
        if stk[_CUR, d] >= stk[_HI, d]:
            flg = stk[_FLG, d]
            fs = stk[_FS, d] if flg & _HAS_CHILD else anc[d]
            d -= 1
            if d < start:
                break
            if flg & _FOUND:
                stk[_FLG, d] |= _FOUND | _HAS_CHILD
            elif prune and (fs >> d) & 1 == 0 and stk[_FLG, d] & _FOUND == 0:
                stk[_FS, d] = fs
                stk[_FLG, d] = _HAS_CHILD
                stk[_CUR, d] = stk[_HI, d]
            else:
                stk[_FS, d] |= fs
                stk[_FLG, d] |= _HAS_CHILD
            continue
        i = stk[_CUR, d]
        kd = stk[_KIND, d]
        if d == k - 1 and not collect and found + stk[_HI, d] - i < cap:
            # a count's last depth: its matches are counted, never made one by one (Sun & Luo's
            # study counts the last level's valid candidates the same way)
            hi = stk[_HI, d]
            steps += hi - i
            stk[_CUR, d] = hi
            found += _count_last(P, d, i, hi, kd, m, stk, anc)
            continue
        stk[_CUR, d] = i + 1
        v = _value(P, kd, i)
        if not _fits(P, d, v, m, kd):
            continue
        j = _conflict(m, d, v)
        if j >= 0:
            stk[_FS, d] |= anc[d] | anc[j]
            stk[_FLG, d] |= _HAS_CHILD
            continue
        m[d] = v
        if d == k - 1:
            stk[_FLG, d] |= _FOUND | _HAS_CHILD
            if collect:
                for t in range(k):
                    out[found, t] = m[t]
            found += 1
            if found >= cap:
                state[0] = d
                return found
            continue
        d += 1
        _setup(P, d, m, stk)
    state[0] = _DONE
    return found


@njit(cache=True)
def _children(P, prefix, depth, out, write):
    """Count (and with ``write`` store into ``out``) the feasible extensions of one prefix."""
    k = P[0].size
    m = np.empty(k, dtype=np.int32)
    stk = np.empty((_STACK_ROWS, k), dtype=np.int64)
    m[:depth] = prefix
    _setup(P, depth, m, stk)
    n = 0
    for i in range(stk[_LO, depth], stk[_HI, depth]):
        v = _value(P, stk[_KIND, depth], i)
        if _consistent(P, depth, v, m) and _conflict(m, depth, v) < 0:
            if write:
                out[n, :depth] = prefix
                out[n, depth] = v
            n += 1
    return n


@njit(cache=True, parallel=True)
def _expand(P, prefixes):
    """One breadth-first level: every feasible extension of every prefix (two passes), e.g. the
    prefix rows that :meth:`CpuEngine.count_from` and :meth:`CpuEngine.iter_from` take."""
    t, depth = prefixes.shape
    counts = np.zeros(t + 1, dtype=np.int64)
    dummy = np.empty((1, depth + 1), dtype=np.int32)
    for i in prange(t):
        counts[i + 1] = _children(P, prefixes[i], depth, dummy, False)
    offs = np.cumsum(counts)
    out = np.empty((offs[-1], depth + 1), dtype=np.int32)
    for i in prange(t):
        _children(P, prefixes[i], depth, out[offs[i]:offs[i + 1]], True)
    return out


@njit(cache=True)
def _block(P, prefixes, lo, hi, out, base, write, limit, work=None):
    """The feasible extensions of prefix rows ``lo:hi``, in order: their number, or ``limit + 1``
    as soon as there are more than ``limit``; with ``write`` stored from ``out[base]`` on. One
    partial match and stack for the whole block: sharing :func:`_children`'s per-row setup
    measured 1.7x slower here (2.8 -> 4.8 ms on yeast dense_16_4). ``work[0]`` (where given)
    adds the candidates the rows' local sets hold."""
    depth = prefixes.shape[1]
    k = P[0].size
    m = np.empty(k, dtype=np.int32)
    stk = np.empty((_STACK_ROWS, k), dtype=np.int64)
    n = 0
    for i in range(lo, hi):
        m[:depth] = prefixes[i]
        _setup(P, depth, m, stk)
        if work is not None:
            work[0] += stk[_HI, depth] - stk[_LO, depth]
        for c in range(stk[_LO, depth], stk[_HI, depth]):
            v = _value(P, stk[_KIND, depth], c)
            if _conflict(m, depth, v) < 0 and _consistent(P, depth, v, m):
                if n == limit:
                    return limit + 1
                if write:
                    out[base + n, :depth] = m[:depth]
                    out[base + n, depth] = v
                n += 1
    return n


@njit(cache=True)
def expand_small(P, prefixes, cap, work=None):
    """:func:`_expand` in one thread and one pass for small frontiers, or None as soon as the
    level holds more than ``cap`` rows. gmatch runs the first BFS levels of a search here while
    they are small: on the host such a level takes microseconds, on the GPU about a millisecond
    of launches and synchronisations whatever its size."""
    t, depth = prefixes.shape
    out = np.empty((cap, depth + 1), dtype=np.int32)
    n = _block(P, prefixes, 0, t, out, 0, True, cap, work)
    return None if n > cap else out[:n]


@njit(cache=True, parallel=True)
def _wide(P, prefixes, cap, blocks, slack, write):
    """:func:`expand_wide`'s passes: ``(rows, fits, size)``; without ``write`` the level is
    only counted (no rows)."""
    t, depth = prefixes.shape
    counts = np.zeros(blocks + 1, dtype=np.int64)
    share = np.empty(blocks, dtype=np.int64)
    for b in range(blocks):
        rows = (b + 1) * t // blocks - b * t // blocks
        share[b] = min(cap, 2 * cap * rows // max(t, 1) + slack)
    dummy = np.empty((1, depth + 1), dtype=np.int32)
    for b in prange(blocks):
        counts[b + 1] = _block(P, prefixes, b * t // blocks, (b + 1) * t // blocks, dummy, 0,
                               False, share[b])
    if counts.sum() <= cap:
        for b in prange(blocks):
            if counts[b + 1] > share[b]:
                counts[b + 1] = _block(P, prefixes, b * t // blocks, (b + 1) * t // blocks,
                                       dummy, 0, False, cap)
    offs = np.cumsum(counts)
    fits = offs[-1] <= cap
    out = np.empty((offs[-1] if fits and write else 0, depth + 1), dtype=np.int32)
    if fits and write:  # (one return: Numba's parallel array analysis rejects an optional array)
        for b in prange(blocks):
            _block(P, prefixes, b * t // blocks, (b + 1) * t // blocks, out, offs[b], True,
                   cap)
    return out, fits, offs[-1]


# rows a block of a wide level counts past twice its share of the cap (expand_wide)
_SLACK = 64


def expand_wide(P, prefixes, cap, blocks, slack=_SLACK):
    """:func:`expand_small` over ``blocks`` contiguous blocks of rows at once (a count pass,
    then each block writes at its offset: the same rows in the same order); returns ``(rows,
    fits)``, ``fits`` False (and no rows) past ``cap`` rows. For levels of hundreds of rows and
    more, where one thread was most of a narrow, deep search's time on the GPU's host (yeast
    dense_16_5: 7.3 of 11.8 ms).

    A level past ``cap`` is known without counting it all: each block first counts up to
    twice its share of ``cap`` (by rows) plus ``slack``; past ``cap`` in all, the level does
    not fit, and only the blocks that reached their share are counted on. A block counting up
    to ``cap`` itself made an overflowing level cost every block's whole count (yeast
    sparse_16_16: 28 ms of one thread's work on a 92,000-row level that gmatch's GPU then
    expanded again)."""
    out, fits, _ = _wide(P, prefixes, cap, blocks, slack, True)
    return out, bool(fits)


# frontier rows from which a host level is expanded by all threads (a parallel region costs
# ~10-30 us; one thread ~0.3 us a row)
WIDE_ROWS = 256


@njit(cache=True)
def _narrow_levels(P, rows, cap, max_levels, wide_rows, prev, count_last, count_cap,
                   work_cap):
    """:func:`host_levels`' one-thread levels, while the frontier is under ``wide_rows`` rows:
    ``(rows, levels, prev, stop, matches)``; ``stop`` is False only when it returns at a wide
    frontier whose level is due (every bound checked). With ``count_last`` a narrow last level
    is counted here (``matches``, else -1; at most ``count_cap``): one compiled call still does
    a small search's every level (a second call from Python, ~20-40 us on the GPU machine's
    host, was more than the last level of the smallest yeast 16-vertex counts). A positive
    ``work_cap`` stops before a level once the levels so far examined that many candidates."""
    k = P[0].size
    levels = 0
    work = np.zeros(1, dtype=np.int64)
    while levels < max_levels and rows.shape[1] < k and 0 < rows.shape[0] < cap:
        n = rows.shape[0]
        last = count_last and rows.shape[1] == k - 1
        if prev > 0 and n * n > 2 * (count_cap if last else cap) * prev:
            return rows, levels, prev, True, -1
        if work_cap > 0 and work[0] >= work_cap:
            return rows, levels, prev, True, -1
        if n >= wide_rows:
            return rows, levels, prev, False, -1
        if last:
            c = _block(P, rows, 0, n, np.empty((1, k), dtype=np.int32), 0, False, count_cap)
            if c > count_cap:
                return rows, levels, prev, True, -1
            return rows, levels + 1, prev, True, c
        nxt = expand_small(P, rows, cap, work)
        if nxt is None:
            return rows, levels, prev, True, -1
        prev = n
        rows = nxt
        levels += 1
    return rows, levels, prev, True, -1


def host_levels(P, rows, cap, max_levels, threads=1, wide_rows=WIDE_ROWS, count_last=False,
                count_cap=None, work_cap=0):
    """Up to ``max_levels`` levels from ``rows`` while they hold fewer than ``cap`` rows
    (frontiers of ``wide_rows`` rows or more on ``threads`` threads); returns ``(rows,
    levels)``. A level that the last growth factor puts past twice ``cap`` is not tried: a
    try that overflows costs work for nothing (gmatch's GPU BFS then does that level). (Growth
    is uneven -- yeast's dense_16_5 grows 8x, then 2x, then 0.5x --, so a tighter guess stops
    levels that fit.) The narrow levels run in one compiled call; a wide one is called from
    here, as Numba's parallel functions are launched from Python (called from another compiled
    function, one crashed a process now and then here).

    With ``count_last`` the search's last level, when it is due, is counted, not written (a
    wide one by :func:`expand_wide`'s count pass alone: writing it was a second pass):
    returns ``(rows, levels, matches)``, ``matches`` None unless that level was counted
    (``rows`` are then the frontier it was counted from). ``count_cap`` (default ``cap``)
    bounds that count instead of ``cap``: a counted level writes nothing, so it may be let
    past the rows a written level is allowed. A positive ``work_cap`` ends the narrow levels
    once they examined that many candidates (gmatch's fused counts: the device does a deep,
    narrow search's remaining levels faster than one host thread)."""
    k = P[0].size
    count_cap = cap if count_cap is None else count_cap
    if threads <= 1:
        wide_rows = cap
    levels, prev, last = 0, 0, None
    while True:
        rows, done, prev, stop, counted = _narrow_levels(P, rows, cap, max_levels - levels,
                                                         wide_rows, prev, count_last, count_cap,
                                                         work_cap)
        levels += done
        if stop:
            last = int(counted) if counted >= 0 else None
            break
        n = rows.shape[0]
        blocks = max(1, min(n // 32, 8 * threads))
        if count_last and rows.shape[1] == k - 1:
            _, fits, size = _wide(P, rows, count_cap, blocks, _SLACK, False)
            if fits:
                last, levels = int(size), levels + 1
            break
        wide, fits = expand_wide(P, rows, cap, blocks)
        if not fits:
            break
        prev, rows, levels = n, wide, levels + 1
    return (rows, levels, last) if count_last else (rows, levels)


@njit(cache=True, parallel=True)
def _run_slots(P, run, starts, states, ms, stks, counts, max_steps):
    """One slice of every slot in ``run``: resume its task for up to ``max_steps`` steps."""
    dummy = np.empty((1, 1), dtype=np.int32)
    big = np.iinfo(np.int64).max
    # prange gives each thread one contiguous block of the iterations (measured with the
    # OpenMP layer, parallel_chunksize(1) or not), so it runs over the busy slots only: a block
    # of idle slots would leave its thread without work
    for j in prange(run.size):
        s = run[j]
        counts[s] += _search(P, starts[s], states[s], ms[s], stks[s], dummy, big, False,
                             max_steps)


@njit(cache=True)
def _split(k, busy, starts, states, ms, stks, pool_m, pool_hdr, n_pool, want):
    """Make up to ``want`` new tasks; returns the new pool size.

    A slot part-way through its task gives away half of the untried candidates at its shallowest
    open level (the shallowest, likely largest, first), and a queued range is halved; passes
    repeat until ``want`` tasks are made or nothing is left to split, so that a single task
    fills a whole window at once. A range given away leaves the slot's stack (its ``_HI`` drops
    to the split point), so each subtree is searched once. The slot's failing-set bookkeeping
    stays sound: the levels above the split one have no untried candidates left for a
    propagated set to prune.
    """
    open_lv = np.empty(busy.size, dtype=np.int64)
    while want > 0:
        made = 0
        # the last level's candidates are leaves, a step each: not worth a task
        open_lv[:] = k - 1
        for s in range(busy.size):
            if busy[s]:
                for lv in range(starts[s], min(states[s, 0] + 1, k - 1)):
                    if stks[s, _CUR, lv] < stks[s, _HI, lv]:
                        open_lv[s] = lv
                        break
        for lv in range(k - 1):
            for s in range(busy.size):
                if open_lv[s] == lv and made < want:
                    cur = stks[s, _CUR, lv]
                    hi = stks[s, _HI, lv]
                    mid = cur + (hi - cur) // 2
                    stks[s, _HI, lv] = mid
                    pool_m[n_pool, :lv] = ms[s, :lv]
                    pool_hdr[n_pool, 0] = lv
                    pool_hdr[n_pool, 1] = stks[s, _KIND, lv]
                    pool_hdr[n_pool, 2] = mid
                    pool_hdr[n_pool, 3] = hi
                    n_pool += 1
                    made += 1
        for i in range(n_pool):
            lo = pool_hdr[i, 2]
            hi = pool_hdr[i, 3]
            if hi - lo >= 2 and made < want:
                mid = lo + (hi - lo) // 2
                pool_hdr[i, 3] = mid
                pool_m[n_pool] = pool_m[i]
                pool_hdr[n_pool, 0] = pool_hdr[i, 0]
                pool_hdr[n_pool, 1] = pool_hdr[i, 1]
                pool_hdr[n_pool, 2] = mid
                pool_hdr[n_pool, 3] = hi
                n_pool += 1
                made += 1
        if made == 0:
            break
        want -= made
    return n_pool


@njit(cache=True)
def _schedule(k, prefixes, busy, starts, states, ms, stks, counts, pool_m, pool_hdr, ctl,
              split_below):
    """Between two slices: collect finished slots, split running tasks once fewer than
    ``split_below`` tasks are left, refill empty slots (prefix rows first, then split ranges).

    ``ctl`` holds the next prefix row, the pool size, the tasks done and the tasks split off.
    Returns the matches of the tasks finished since the last call.
    """
    found = 0
    left = prefixes.shape[0] - ctl[0] + ctl[1]
    for s in range(busy.size):
        if busy[s]:
            if states[s, 0] == _DONE:
                found += counts[s]
                counts[s] = 0
                busy[s] = False
                ctl[2] += 1
            else:
                left += 1
    if left < split_below:
        n_pool = _split(k, busy, starts, states, ms, stks, pool_m, pool_hdr, ctl[1],
                        split_below - left)
        ctl[3] += n_pool - ctl[1]
        ctl[1] = n_pool
    depth = prefixes.shape[1]
    for s in range(busy.size):
        if busy[s]:
            continue
        if ctl[0] < prefixes.shape[0]:
            ms[s, :depth] = prefixes[ctl[0]]
            starts[s] = depth
            states[s, 0] = _NOT_STARTED
            ctl[0] += 1
        elif ctl[1] > 0:
            ctl[1] -= 1
            i = ctl[1]
            lv = pool_hdr[i, 0]
            ms[s, :lv] = pool_m[i, :lv]
            starts[s] = lv
            stks[s, _LO, lv] = pool_hdr[i, 2]
            stks[s, _HI, lv] = pool_hdr[i, 3]
            stks[s, _CUR, lv] = pool_hdr[i, 2]
            stks[s, _KIND, lv] = pool_hdr[i, 1]
            stks[s, _FS, lv] = 0
            stks[s, _FLG, lv] = 0
            # resumes at level lv as if paused there
            states[s, 0] = lv
        else:
            break
        busy[s] = True
    return found


def trivial_answer(plan, limit):
    """``(limit, count)`` at an engine's entry: ``limit`` checked (an int >= 0 or None, NumPy
    integers taken) and the number of matches when no kernel may run, else None.

    No kernel runs on a plan without a match, with ``limit=0``, or on the empty pattern, which
    has one (empty) mapping as in GraphMatcher (``plan.empty`` says when it has none: an
    isomorphism into a non-empty graph). The kernels index their per-depth arrays without bounds
    checks, so a zero-depth plan must never reach them.
    """
    if limit is not None:
        if isinstance(limit, (bool, np.bool_)) or not isinstance(limit, numbers.Integral):
            raise TypeError(f"limit must be a non-negative int or None, got {limit!r}")
        limit = int(limit)
        if limit < 0:
            raise ValueError(f"limit must be non-negative, got {limit}")
    if plan.empty or limit == 0:
        return limit, 0
    if plan.k == 0:
        return limit, 1
    return limit, None


def check_chunk(chunk):
    """``chunk`` (rows per yielded array) as a positive int: the kernels fill a buffer of that
    many rows, and an empty one would never fill."""
    if isinstance(chunk, (bool, np.bool_)) or not isinstance(chunk, numbers.Integral):
        raise TypeError(f"chunk must be a positive int, got {chunk!r}")
    if chunk < 1:
        raise ValueError(f"chunk must be a positive int, got {chunk}")
    return int(chunk)


def check_prefixes(plan, prefixes):
    """``prefixes`` as a C-contiguous int32 array, checked as far as memory safety needs: two
    dimensions, at most ``plan.k`` columns and data node ids in range (the kernels index by
    them without bounds checks). That each row is a partial match is the caller's promise."""
    arr = np.asarray(prefixes)
    if arr.ndim != 2 or arr.shape[1] > plan.k or (arr.size and arr.dtype.kind not in "iu"):
        raise ValueError(f"prefixes must be an integer array of shape (rows, L) with "
                         f"L <= {plan.k}, got shape {arr.shape} of {arr.dtype}")
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        if lo < 0 or hi >= plan.G.n:
            raise ValueError(f"prefixes hold data node ids outside 0..{plan.G.n - 1}")
    return np.ascontiguousarray(arr, dtype=np.int32)


def trivial_rows(count):
    """The rows of a trivial answer (:func:`trivial_answer`): one empty mapping or none."""
    return np.zeros((count, 0), dtype=np.int32)


def _units_left(prefixes, ctl, busy, starts, states, ms, stks, pool_m, pool_hdr):
    """Units of work of a task window not finished yet, for progress: the prefix rows (or,
    with no prefixes, the root candidates) that a task still holds. A unit leaves only when
    its last task is done, so ``total - left`` never decreases."""
    live = np.flatnonzero(busy)
    n_pool = int(ctl[1])
    base = prefixes.shape[1]
    if base:
        held = np.concatenate([ms[live, :base], pool_m[:n_pool, :base]])
        return prefixes.shape[0] - int(ctl[0]) + np.unique(held, axis=0).shape[0]
    # roots not tried yet (depth-0 ranges of tasks and queued ranges), plus the roots whose
    # subtree some task is inside
    top = live[starts[live] == 0]
    untried = int((stks[top, _HI, 0] - stks[top, _CUR, 0]).sum())
    queued = pool_hdr[:n_pool, 0] == 0
    untried += int((pool_hdr[:n_pool, 3] - pool_hdr[:n_pool, 2])[queued].sum())
    inside = live[(starts[live] > 0) | (states[live, 0] > 0)]
    roots = np.concatenate([ms[inside, 0], pool_m[:n_pool, 0][~queued]])
    return untried + np.unique(roots).size


def _roots_done(P, state, stk):
    """Root candidates a sequential search from depth 0 has finished (progress units)."""
    if state[0] == _DONE:
        return int(P[2][1] - P[2][0])
    if state[0] == _NOT_STARTED:
        return 0
    # paused below depth 0, the current root's subtree is still under way
    return int(stk[_CUR, 0] - stk[_LO, 0]) - (1 if state[0] > 0 else 0)


def plan_arrays(plan):
    """The plan, candidate-space and data-graph arrays as the tuple every kernel here unpacks."""
    G = plan.G
    cs = build_space(plan)
    k = plan.k
    # anc[d]: depth d and, transitively, every earlier depth it is checked against
    anc = [0] * max(k, 1)
    chk_ptr, chk_j = plan.chk_ptr.tolist(), plan.chk_j.tolist()  # Python ints: k^2 reads
    for d in range(min(k, 63)):
        a = 1 << d
        for c in range(chk_ptr[d], chk_ptr[d + 1]):
            a |= anc[chk_j[c]]
        anc[d] = a
    anc = np.asarray(anc, dtype=np.int64)
    flags = np.array([plan.has_elabels, plan.mono, G.directed, k <= 63], dtype=np.int8)
    neg_ptr, neg_j, neg_dir = _forbidden(plan)
    return (plan.order, plan.cand_bits, plan.cand_ptr, plan.cand_flat, plan.chk_ptr, plan.chk_j,
            plan.chk_out, plan.chk_in, plan.chk_peo, plan.chk_pei, plan.drv_ptr, plan.drv_j,
            cs.cidx, cs.row_off, cs.ptr, cs.val, G.indptr, G.indices, G.mult, plan.eclass,
            plan.eok, flags, anc, neg_ptr, neg_j, neg_dir)


def _forbidden(plan):
    """Per depth d, the ``(j, direction)`` pairs whose data edge must be absent (outside mono:
    a pattern pair without an edge that way; direction 0 is ``m[j] -> v``, 1 is ``v -> m[j]``,
    undirected graphs only use 0), the tests of :func:`_fits` that no driver list implies."""
    k = plan.k
    ptr = np.zeros(k + 1, dtype=np.int64)
    js, dirs = [], []
    if not plan.mono:
        chk_ptr, chk_j = plan.chk_ptr.tolist(), plan.chk_j.tolist()
        outs, ins = plan.chk_out.tolist(), plan.chk_in.tolist()
        for d in range(k):
            for c in range(chk_ptr[d], chk_ptr[d + 1]):
                if outs[c] == 0:
                    js.append(chk_j[c])
                    dirs.append(0)
                if plan.G.directed and ins[c] == 0:
                    js.append(chk_j[c])
                    dirs.append(1)
            ptr[d + 1] = len(js)
    return ptr, np.asarray(js, dtype=np.int64), np.asarray(dirs, dtype=np.int8)


def _probe(P, k, max_steps):
    """The sequential search from the roots for at most ``max_steps`` candidates: ``(count,
    None)`` when it finished, else ``(count so far, (state, m, stk, count))``, the search to
    go on with."""
    state = np.full(1, _NOT_STARTED, dtype=np.int64)
    m = np.empty(k, dtype=np.int32)
    stk = np.empty((_STACK_ROWS, k), dtype=np.int64)
    out = np.empty((1, k), dtype=np.int32)
    got = int(_search(P, 0, state, m, stk, out, np.iinfo(np.int64).max, False, max_steps))
    return (got, None) if state[0] == _DONE else (got, (state, m, stk, got))


def count_probe(plan, max_steps):
    """The number of matches of ``plan`` when the sequential search (one thread, failing-set
    pruning) finishes within ``max_steps`` candidates, else None: how a GPU engine counts a
    search too small to be worth a launch."""
    _, known = trivial_answer(plan, None)
    if known is not None:
        return known
    got, seed = _probe(plan_arrays(plan), plan.k, max_steps)
    return got if seed is None else None


class CpuEngine:
    """Engine protocol: ``count(plan, limit)`` -> int and ``iter_chunks(plan, chunk)`` -> arrays.

    Rows of the arrays hold data node ids by depth (column d maps pattern node ``plan.order[d]``).
    """

    name = "cpu"
    capabilities = capabilities_of("cpu")

    def count(self, plan, limit=None, budget=UNLIMITED):
        limit, known = trivial_answer(plan, limit)
        if known is not None:
            return known
        if limit is not None:
            # first-k: one resumable search finds any k matches with no wasted work; a parallel
            # split would explore up to (threads x k) before knowing it had enough
            return sum(self._run(plan, limit, False, budget))
        # a short sequential probe finishes small searches without paying for a parallel launch
        P = plan_arrays(plan)
        k = plan.k
        got, seed = _probe(P, k, _PROBE_STEPS)
        if seed is None:
            return got
        # the probe's search goes on as the only task: the other threads get their work by
        # splitting it, so one thread runs the plain sequential search (all its pruning intact)
        return self._count_tasks(P, k, np.zeros((0, 0), dtype=np.int32), budget,
                                 numba.get_num_threads(), seed)

    @staticmethod
    def _count_tasks(P, k, prefixes, budget, threads, seed=None):
        """Run the tasks (the prefix rows, after ``seed``: a search under way) through a window
        of resumable slots, a round at a time; between rounds finished slots are refilled and,
        while fewer tasks are left than slots, running ones are split (see _split)."""
        n_slots = _SLOTS_PER_THREAD * threads
        # tasks are split while fewer are left than the window holds; one thread has no one to
        # balance with, so there splitting would only cost pruning
        split_below = n_slots if threads > 1 else 0
        busy = np.zeros(n_slots, dtype=np.bool_)
        starts = np.zeros(n_slots, dtype=np.int64)
        states = np.full((n_slots, 1), _DONE, dtype=np.int64)
        ms = np.empty((n_slots, k), dtype=np.int32)
        stks = np.empty((n_slots, _STACK_ROWS, k), dtype=np.int64)
        counts = np.zeros(n_slots, dtype=np.int64)
        # splits only bring the tasks left up to split_below, so the pool never holds more
        pool_m = np.empty((split_below, k), dtype=np.int32)
        pool_hdr = np.empty((split_below, 4), dtype=np.int64)
        ctl = np.zeros(4, dtype=np.int64)
        n_tasks = prefixes.shape[0]
        total = 0
        if seed is not None:
            # a search already under way (the probe's) is the first task
            states[0], ms[0], stks[0], counts[0] = seed
            busy[0] = True
            n_tasks += 1
        # one thread never splits and has no one to wait for: its round is one slice
        steps = max(_ROUND_STEPS // _SLOTS_PER_THREAD, 1)
        try:
            while True:
                # matches move from counts to total inside _schedule: an interrupt before it
                # returns loses them, so a partial count stays a lower bound
                total += int(_schedule(k, prefixes, busy, starts, states, ms, stks, counts,
                                       pool_m, pool_hdr, ctl, split_below))
                done, tasks = int(ctl[2]), n_tasks + int(ctl[3])
                if done == tasks:
                    return total
                # progress in units fixed up front (root candidates or prefix rows): the
                # task count grows as tasks are split
                units = prefixes.shape[0] if prefixes.shape[1] else int(P[2][1] - P[2][0])
                left = _units_left(prefixes, ctl, busy, starts, states, ms, stks, pool_m,
                                   pool_hdr) if budget.watched else units
                if not budget.keep_going(total + int(counts.sum()), units - left, units):
                    return PartialCount(total + int(counts.sum()))
                run = np.flatnonzero(busy)
                if threads == 1:
                    steps = max(_SLICE_STEPS // run.size, 1)
                _run_slots(P, run, starts, states, ms, stks, counts, steps)
        except KeyboardInterrupt:
            # Ctrl-C lands between compiled rounds: what is counted so far is a lower bound
            budget.stop("interrupted")
            return PartialCount(total + int(counts.sum()))

    def iter_chunks(self, plan, chunk=4096, limit=None, budget=UNLIMITED):
        chunk = check_chunk(chunk)
        limit, known = trivial_answer(plan, limit)
        if known is not None:
            if known:
                yield trivial_rows(known)
            return
        yield from self._run(plan, limit, True, budget, chunk)

    def count_from(self, plan, prefixes, budget=UNLIMITED):
        """Matches below the given partial matches (rows of depths 0..L-1 in ``plan.order``),
        each prefix's subtree counted once: how a GPU engine hands unfinished work to the CPU."""
        prefixes = check_prefixes(plan, prefixes)
        if prefixes.shape[0] == 0 or plan.empty:
            return 0
        if prefixes.shape[1] == plan.k:
            return int(prefixes.shape[0])
        return self._count_tasks(plan_arrays(plan), plan.k, prefixes, budget,
                                 numba.get_num_threads())

    def iter_from(self, plan, prefixes, chunk=4096, limit=None, budget=UNLIMITED):
        """Like :meth:`iter_chunks`, restricted to the subtrees of ``prefixes`` (see
        :meth:`count_from`)."""
        prefixes = check_prefixes(plan, prefixes)
        chunk = check_chunk(chunk)
        limit, _ = trivial_answer(plan, limit)
        k = plan.k
        if prefixes.shape[0] == 0 or limit == 0 or plan.empty:
            return
        if prefixes.shape[1] == k:
            rows = prefixes if limit is None else prefixes[:limit]
            for a in range(0, rows.shape[0], chunk):
                yield rows[a : a + chunk].copy()
            return
        P = plan_arrays(plan)
        depth = prefixes.shape[1]
        m = np.empty(k, dtype=np.int32)
        stk = np.empty((_STACK_ROWS, k), dtype=np.int64)
        out = np.empty((chunk, k), dtype=np.int32)
        state = np.empty(1, dtype=np.int64)
        remaining = limit
        found = 0
        for i, row in enumerate(prefixes):
            m[:depth] = row
            state[0] = _NOT_STARTED
            while state[0] != _DONE:
                cap = chunk if remaining is None else min(chunk, remaining)
                try:
                    got = _search(P, depth, state, m, stk, out, cap, True, _SLICE_STEPS)
                except KeyboardInterrupt:
                    budget.stop("interrupted")
                    return
                found += got
                if got:
                    yield out[:got].copy()
                if remaining is not None:
                    remaining -= got
                    if remaining <= 0:
                        return
                if state[0] != _DONE and not budget.keep_going(found, i, prefixes.shape[0]):
                    return

    @staticmethod
    def _run(plan, limit, collect, budget, chunk=4096):
        """The resumable sequential search, in slices; yields arrays (collect) or counts."""
        P = plan_arrays(plan)
        k = plan.k
        state = np.full(1, _NOT_STARTED, dtype=np.int64)
        m = np.empty(k, dtype=np.int32)
        stk = np.empty((_STACK_ROWS, k), dtype=np.int64)
        out = np.empty((chunk if collect else 1, k), dtype=np.int32)
        remaining = limit
        found = 0
        while state[0] != _DONE and (remaining is None or remaining > 0):
            cap = chunk if collect else np.iinfo(np.int64).max
            if remaining is not None:
                cap = min(cap, remaining)
            try:
                got = _search(P, 0, state, m, stk, out, cap, collect, _SLICE_STEPS)
            except KeyboardInterrupt:
                budget.stop("interrupted")
                return
            found += got
            if remaining is not None:
                remaining -= got
            if got:
                yield out[:got].copy() if collect else got
            roots = int(P[2][1] - P[2][0])
            if state[0] != _DONE and \
                    not budget.keep_going(found, _roots_done(P, state, stk), roots):
                return
