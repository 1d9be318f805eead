"""The CPU engine: Numba-compiled backtracking over a MatchPlan.

Shape (the enumeration stage of Sun & Luo's study, with RI/VF2++-style ordering from the planner):
depth-first with an explicit stack (no recursion); the local candidates of depth ``d`` are drawn
from the shortest candidate-space list (:mod:`nx_gsm.plan.space`) among the images of
``order[d]``'s backward neighbours (or its filtered candidate list when it has none), each checked
against injectivity and, by binary search in sorted adjacency rows, every other constraint of the
plan (multiplicities both ways, induced non-edges, edge labels).

Parallelism: a breadth-first prefix expansion (the BFS-then-DFS split gMatch and GSI use on the
GPU) turns the first levels into at least ``64 x threads`` independent tasks, which ``prange``
hands out one at a time (dynamic chunks of 1), so a skewed root does not leave a core idle.
Enumeration (the iterator API) runs a resumable search that fills a fixed-size buffer and returns,
so Python streams results lazily and can stop at any ``limit``.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from ..plan.space import build_space
from .base import UNLIMITED, PartialCount

__all__ = ["CpuEngine"]

_NOT_STARTED = -2
_DONE = -1
# rows of the per-depth stack array
_LO, _HI, _CUR, _KIND, _FS, _FLG = 0, 1, 2, 3, 4, 5
_STACK_ROWS = 6
# _FLG bits: a match was found below this node / the node has at least one child
_FOUND, _HAS_CHILD = 1, 2
# BFS prefix tasks per thread: enough that a skewed root (one candidate holding most of the
# work) is split across threads, few enough that the BFS stays cheap for 20-50 ms searches.
# Measured on yeast-8 count-all, 2 cores, 2 threads vs 1 (benchmarks/RESULTS.md): heavy queries
# 1.60x geomean with 64 tasks and 8 slots per thread, 1.66x with 1024 and 32, 1.69x with 4096
# and 32, but 4096 made 30 ms queries 0.74x (the deeper BFS costs more than it saves)
_TASKS_PER_THREAD = 1024
# resumable slots per thread in the counting window (more slots: a shorter idle tail per
# round), and candidates examined per slice (about 10-50 ms of work: the granularity of
# deadlines, Ctrl-C and progress updates)
_SLOTS_PER_THREAD = 32
_SLICE_STEPS = 1 << 20
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
     _ci, _ro, _sp, _sv, indptr, indices, emult, eclass, eok, flags, _a) = P
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
     sptr, _sv, _i0, _i1, _e, _ec, _eo, _f, _a) = P
    stk[_FS, d] = 0
    stk[_FLG, d] = 0
    t0 = drv_ptr[d]
    t1 = drv_ptr[d + 1]
    if t0 == t1:
        stk[_KIND, d] = 0
        stk[_LO, d] = cand_ptr[d]
        stk[_HI, d] = cand_ptr[d + 1]
    else:
        stk[_KIND, d] = 1
        for t in range(t0, t1):
            j = drv_j[t]
            r = row_off[t] + cidx[order[j], m[j]]
            a = sptr[r]
            b = sptr[r + 1]
            if t == t0 or b - a < stk[_HI, d] - stk[_LO, d]:
                stk[_LO, d] = a
                stk[_HI, d] = b
    stk[_CUR, d] = stk[_LO, d]


@njit(cache=True, inline="always")
def _value(P, kd, i):
    return P[3][i] if kd == 0 else P[15][i]


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
        stk[_CUR, d] = i + 1
        v = _value(P, stk[_KIND, d], i)
        if not _consistent(P, d, v, m):
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
    """One breadth-first level: every feasible extension of every prefix (two passes)."""
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


@njit(cache=True, parallel=True)
def _run_slots(P, prefixes, slot_task, states, ms, stks, counts, max_steps):
    """One slice of every occupied slot: resume its task for up to ``max_steps`` steps."""
    depth = prefixes.shape[1]
    dummy = np.empty((1, 1), dtype=np.int32)
    big = np.iinfo(np.int64).max
    for s in prange(slot_task.size):
        t = slot_task[s]
        if t < 0:
            continue
        if states[s, 0] == _NOT_STARTED:
            ms[s, :depth] = prefixes[t]
        counts[s] += _search(P, depth, states[s], ms[s], stks[s], dummy, big, False, max_steps)


def plan_arrays(plan):
    """The plan, candidate-space and data-graph arrays as the tuple every kernel here unpacks."""
    G = plan.G
    cs = build_space(plan)
    k = plan.k
    # anc[d]: depth d and, transitively, every earlier depth it is checked against
    anc = np.zeros(max(k, 1), dtype=np.int64)
    for d in range(min(k, 63)):
        a = 1 << d
        for c in range(plan.chk_ptr[d], plan.chk_ptr[d + 1]):
            a |= int(anc[plan.chk_j[c]])
        anc[d] = a
    flags = np.array([plan.has_elabels, plan.mono, G.directed, k <= 63], dtype=np.int8)
    return (plan.order, plan.cand_bits, plan.cand_ptr, plan.cand_flat, plan.chk_ptr, plan.chk_j,
            plan.chk_out, plan.chk_in, plan.chk_peo, plan.chk_pei, plan.drv_ptr, plan.drv_j,
            cs.cidx, cs.row_off, cs.ptr, cs.val, G.indptr, G.indices, G.mult, plan.eclass,
            plan.eok, flags, anc)


def _exact_sum(counts):
    # int64 per task cannot overflow in practice (one increment per match found); the total is
    # summed in Python ints so it stays exact past 2**63
    return sum(int(c) for c in counts.tolist())


class CpuEngine:
    """Engine protocol: ``count(plan, limit)`` -> int and ``iter_chunks(plan, chunk)`` -> arrays.

    Rows of the arrays hold data node ids by depth (column d maps pattern node ``plan.order[d]``).
    """

    name = "cpu"

    def count(self, plan, limit=None, budget=UNLIMITED):
        if plan.empty:
            return 0
        if limit is not None:
            # first-k: one resumable search finds any k matches with no wasted work; a parallel
            # split would explore up to (threads x k) before knowing it had enough
            return sum(self._run(plan, limit, False, budget))
        # a short sequential probe finishes small searches without paying for a parallel launch
        P = plan_arrays(plan)
        probe = self._probe(P, plan.k)
        if probe is not None:
            return probe
        threads = numba.get_num_threads()
        prefixes = np.zeros((1, 0), dtype=np.int32)
        with numba.parallel_chunksize(1):
            while prefixes.shape[1] < plan.k and 0 < prefixes.shape[0] < _TASKS_PER_THREAD * threads:
                prefixes = _expand(P, prefixes)
            if prefixes.shape[1] == plan.k or prefixes.shape[0] == 0:
                return prefixes.shape[0]
            return self._count_tasks(P, plan.k, prefixes, budget, threads)

    @staticmethod
    def _probe(P, k):
        state = np.full(1, _NOT_STARTED, dtype=np.int64)
        m = np.empty(k, dtype=np.int32)
        stk = np.empty((_STACK_ROWS, k), dtype=np.int64)
        out = np.empty((1, k), dtype=np.int32)
        got = _search(P, 0, state, m, stk, out, np.iinfo(np.int64).max, False, _PROBE_STEPS)
        return int(got) if state[0] == _DONE else None

    @staticmethod
    def _count_tasks(P, k, prefixes, budget, threads):
        """Run the prefix tasks through a window of resumable slots, a slice at a time, refilling
        finished slots between slices (so load balances at slice granularity)."""
        n_tasks = prefixes.shape[0]
        n_slots = min(n_tasks, _SLOTS_PER_THREAD * threads)
        slot_task = np.arange(n_slots, dtype=np.int64)
        states = np.full((n_slots, 1), _NOT_STARTED, dtype=np.int64)
        ms = np.empty((n_slots, k), dtype=np.int32)
        stks = np.empty((n_slots, _STACK_ROWS, k), dtype=np.int64)
        counts = np.zeros(n_slots, dtype=np.int64)
        next_task, done, total = n_slots, 0, 0
        # each thread runs _SLOTS_PER_THREAD slots per round: keep a round near one slice of work
        steps = max(_SLICE_STEPS // _SLOTS_PER_THREAD, 1)
        try:
            while True:
                _run_slots(P, prefixes, slot_task, states, ms, stks, counts, steps)
                for s in np.flatnonzero((states[:, 0] == _DONE) & (slot_task >= 0)):
                    # clear before adding: an interrupt in between can only under-count
                    c = int(counts[s])
                    counts[s] = 0
                    total += c
                    done += 1
                    if next_task < n_tasks:
                        slot_task[s] = next_task
                        states[s, 0] = _NOT_STARTED
                        next_task += 1
                    else:
                        slot_task[s] = -1
                if done == n_tasks:
                    return total
                if not budget.keep_going(total + int(counts.sum()), done, n_tasks):
                    return PartialCount(total + int(counts.sum()))
        except KeyboardInterrupt:
            # Ctrl-C lands between compiled slices: what is counted so far is a lower bound
            budget.stop("interrupted")
            return PartialCount(total + int(counts.sum()))

    def iter_chunks(self, plan, chunk=4096, limit=None, budget=UNLIMITED):
        if plan.empty:
            return
        yield from self._run(plan, limit, True, budget, chunk)

    def count_from(self, plan, prefixes, budget=UNLIMITED):
        """Matches below the given partial matches (rows of depths 0..L-1 in ``plan.order``),
        each prefix's subtree counted once: how a GPU engine hands unfinished work to the CPU."""
        prefixes = np.ascontiguousarray(prefixes, dtype=np.int32)
        if prefixes.shape[0] == 0:
            return 0
        if prefixes.shape[1] == plan.k:
            return int(prefixes.shape[0])
        P = plan_arrays(plan)
        with numba.parallel_chunksize(1):
            return self._count_tasks(P, plan.k, prefixes, budget, numba.get_num_threads())

    def iter_from(self, plan, prefixes, chunk=4096, limit=None, budget=UNLIMITED):
        """Like :meth:`iter_chunks`, restricted to the subtrees of ``prefixes`` (see
        :meth:`count_from`)."""
        prefixes = np.ascontiguousarray(prefixes, dtype=np.int32)
        k = plan.k
        if prefixes.shape[0] == 0 or (limit is not None and limit <= 0):
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
        for row in prefixes:
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
                if state[0] != _DONE and not budget.keep_going(found):
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
            if state[0] != _DONE and not budget.keep_going(found):
                return
