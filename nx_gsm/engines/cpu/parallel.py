"""The CPU engine's parallel driver: a window of resumable search slots run a slice at a time.

The search that a short sequential probe started becomes the first task of a window of
resumable slots, whose busy ones ``prange`` runs a slice at a time. Between slices, while fewer
tasks are left than the window holds, running tasks give half of the untried candidates at their
shallowest open level away as new tasks (work splitting) until it is full again, so the threads
stay busy however skewed the search tree is, and one thread runs exactly the sequential search.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ... import kernel_cache  # noqa: F401  (sets Numba's cache folder before @njit runs)
from .kernels import CUR, DONE, FLG, FS, HI, KIND, LO, NOT_STARTED, search

# a block's slots run in turns of a piece of their slice each, so a block that runs out of
# work ends the round for all after at most one piece of the others
PIECES = 8


@njit(cache=True, parallel=True)
def run_slots(P, run, starts, states, ms, stks, useds, counts, stop, max_steps):
    """One slice of every slot in ``run``: resume its task for up to ``max_steps`` steps. The
    slots run in contiguous blocks, one per row of ``useds`` (a thread's injectivity table,
    see kernels.used_array), each block's slots in turns of ``max_steps // PIECES`` steps. The
    first block to finish (its slots' slices spent or their tasks done) sets ``stop[0]``, and
    the others stop after the piece they are in: a thread whose tasks end early would
    otherwise wait idle for the rest of the round, while the tasks left could be split."""
    dummy = np.empty((1, 1), dtype=np.int32)
    big = np.iinfo(np.int64).max
    # prange gives each thread one contiguous block of the iterations (measured with the
    # OpenMP layer, parallel_chunksize(1) or not): one iteration per row of useds makes each
    # thread's block one row, which no other thread touches, and runs over the busy slots only
    # (a block of idle slots would leave its thread without work)
    blocks = min(useds.shape[0], run.size)
    piece = max(max_steps // PIECES, 1)
    stop[0] = 0
    for b in prange(blocks):
        used = useds[b]
        lo = b * run.size // blocks
        hi = (b + 1) * run.size // blocks
        left = max_steps * (hi - lo)
        # a block that finds stop set before its first turn still makes one: every round
        # moves every block's tasks on
        while True:
            active = 0
            for j in range(lo, hi):
                s = run[j]
                if states[s][0] == DONE:
                    continue
                active += 1
                counts[s] += search(P, starts[s], states[s], ms[s], stks[s], used, dummy, big,
                                     False, piece)
                left -= piece
            if active == 0 or left <= 0 or stop[0] != 0:
                break
        stop[0] = 1


@njit(cache=True)
def split(k, busy, starts, states, ms, stks, pool_m, pool_hdr, n_pool, want):
    """Make up to ``want`` new tasks; returns the new pool size.

    A slot part-way through its task gives away half of the untried candidates at its shallowest
    open level (the shallowest, likely largest, first), and a queued range is halved; passes
    repeat until ``want`` tasks are made or nothing is left to split, so that a single task
    fills a whole window at once. A range given away leaves the slot's stack (its ``HI`` drops
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
                    if stks[s, CUR, lv] < stks[s, HI, lv]:
                        open_lv[s] = lv
                        break
        for lv in range(k - 1):
            for s in range(busy.size):
                if open_lv[s] == lv and made < want:
                    cur = stks[s, CUR, lv]
                    hi = stks[s, HI, lv]
                    mid = cur + (hi - cur) // 2
                    stks[s, HI, lv] = mid
                    pool_m[n_pool, :lv] = ms[s, :lv]
                    pool_hdr[n_pool, 0] = lv
                    pool_hdr[n_pool, 1] = stks[s, KIND, lv]
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
def schedule(k, prefixes, busy, starts, states, ms, stks, counts, pool_m, pool_hdr, ctl,
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
            if states[s, 0] == DONE:
                found += counts[s]
                counts[s] = 0
                busy[s] = False
                ctl[2] += 1
            else:
                left += 1
    if left < split_below:
        n_pool = split(k, busy, starts, states, ms, stks, pool_m, pool_hdr, ctl[1],
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
            states[s, 0] = NOT_STARTED
            ctl[0] += 1
        elif ctl[1] > 0:
            ctl[1] -= 1
            i = ctl[1]
            lv = pool_hdr[i, 0]
            ms[s, :lv] = pool_m[i, :lv]
            starts[s] = lv
            stks[s, LO, lv] = pool_hdr[i, 2]
            stks[s, HI, lv] = pool_hdr[i, 3]
            stks[s, CUR, lv] = pool_hdr[i, 2]
            stks[s, KIND, lv] = pool_hdr[i, 1]
            stks[s, FS, lv] = 0
            stks[s, FLG, lv] = 0
            # resumes at level lv as if paused there
            states[s, 0] = lv
        else:
            break
        busy[s] = True
    return found


def units_left(prefixes, ctl, busy, starts, states, ms, stks, pool_m, pool_hdr):
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
    untried = int((stks[top, HI, 0] - stks[top, CUR, 0]).sum())
    queued = pool_hdr[:n_pool, 0] == 0
    untried += int((pool_hdr[:n_pool, 3] - pool_hdr[:n_pool, 2])[queued].sum())
    inside = live[(starts[live] > 0) | (states[live, 0] > 0)]
    roots = np.concatenate([ms[inside, 0], pool_m[:n_pool, 0][~queued]])
    return untried + np.unique(roots).size


def roots_done(P, state, stk):
    """Root candidates a sequential search from depth 0 has finished (progress units)."""
    if state[0] == DONE:
        return int(P[2][1] - P[2][0])
    if state[0] == NOT_STARTED:
        return 0
    # paused below depth 0, the current root's subtree is still under way
    return int(stk[CUR, 0] - stk[LO, 0]) - (1 if state[0] > 0 else 0)
