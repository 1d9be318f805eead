"""The CPU engine: Numba-compiled backtracking over a MatchPlan (the engine object).

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

from ...plan.order import matching_order, undirected_neighbours
from ...plan.planner import reorder
from ...plan.space import build_space, space_visits
from ..base import UNLIMITED, PartialCount
from ..catalog import capabilities_of
from ...threads import launch
from .parallel import roots_done, run_slots, schedule, units_left
from .kernels import (BIT_WORDS, DONE, NOT_STARTED, SLICE_STEPS, STACK_ROWS, bit_rows,
                      buffer_starts, run_search, tree_estimate, used_array)

__all__ = ["CpuEngine", "check_chunk", "check_prefixes", "trivial_answer", "trivial_rows",
           "plan_arrays", "count_probe", "other_order", "swapped_tail", "other_tail",
           "search_tree"]

# resumable slots per thread in the counting window, and candidates a thread examines per round
# between two scheduling points. prange gives each thread a fixed block of slots, so a round's
# uneven end idles a thread, which short rounds keep small; but each round resumes every slot,
# and a resume makes its open depths' intersections again. So the first rounds are short (a
# count of a few milliseconds still spreads) and a count that goes on doubles them every
# _ROUND_GROW_EVERY rounds, up to _ROUND_GROWTH times as long (about 5 ms a round). On the four
# yeast-8 counts of 0.8-1.7 s on 2 cores, 2 threads over 1 gave 1.57x geomean with 8 slots and
# rounds of 2**17 steps throughout, 1.72x with 8 slots and 2**20, 1.77x with 4 and 2**20
_SLOTS_PER_THREAD = 4
_ROUND_STEPS = 1 << 17
_ROUND_GROWTH = 8
_ROUND_GROW_EVERY = 8
# a count that finishes within this many steps never goes parallel
_PROBE_STEPS = 1 << 16
# a count the probe does not finish, planned in the default order, runs in GraphQL's order
# instead where Knuth's estimate (_DIVES walks) puts that order's tree _ORDER_GAIN times
# smaller: on yeast counts of 2-900 ms (one thread) neither order wins everywhere (up to 5x
# either way), and the estimate's choice came to 1.04-1.10x of the faster order's time,
# geomean, where the default alone came to 1.24x; near-equal estimates keep the default
# (noise). Trees estimated under _ORDER_MIN_TREE nodes keep it too: building the other
# order's candidate space and walking it costs about 0.5 ms
_DIVES = 64
# ... and the probe asks after this many steps, not after all of _PROBE_STEPS: a search that
# the other order finishes within the probe then does not first spend the probe in the default
# order (yeast dense_16_21: 3.7 -> 1.9 ms; 1.02x geomean over 69 yeast queries, none slower
# past noise)
_ORDER_STEPS = 1 << 12
_ORDER_GAIN = 1.5
_ORDER_MIN_TREE = 1e5
# ... nor do trees estimated under _ORDER_PER_VISIT nodes per adjacency entry that building
# the candidate space read (plan.space.space_visits): the other order's space reads about as
# many, and a search that small would spend more on it than it could save (on wordnet's
# 76,853 nodes a build takes 12-20 ms, and 8-vertex counts of 50-100 ms lost it; the yeast
# counts that the other order speeds up estimate 11-2,000 nodes per entry)
_ORDER_PER_VISIT = 1.0
_OTHER_ORDER = "gql"
# A count the probe does not finish, in an order the caller did not name, tries its last two
# depths the other way round (swapped_tail) for _PROBE_STEPS, and keeps that tail where it
# counted over _TAIL_GAIN times the matches the order's own first _PROBE_STEPS did. Both
# orders visit the partial matches above those depths in the same sequence, so the matches
# counted within the same number of examined candidates tell which gets through them faster,
# where Knuth's estimate cannot: its random walks die above the tail (wordnet dense_16_121:
# the order's tail enumerates a leaf that a hub drives, 275 candidates per partial match,
# before the node that closes a 4-cycle; 490 against 1,496 matches in the first 2^16 steps;
# 4.2 s -> 0.9 s). Over 20 queries of each yeast and wordnet 8 and 16-vertex set, the ratio
# was over 1.5 on five (each faster swapped: 1.9-4.6x or still running at 2 x 10^9 steps)
# and under 1.5 on every search the swap slowed. The check (the other tail's candidate space,
# about space_visits(plan) adjacency reads, and its probe) costs 1-4 ms on yeast, so only a
# count whose probe, extrapolated by the root candidates it finished, puts the search past
# _TAIL_STEPS candidates and _TAIL_PER_VISIT times the space's reads is checked (checked
# wherever the probe did not finish, yeast dense_8_1 took 5.5 ms against 3.4). The
# extrapolation undershoots (wordnet dense_16_121: 9 x 10^6 for a search of 10^8), hence the
# low bounds: it still passes over yeast dense_8_1 (8 x 10^4) and wordnet dense_16_81 (10^6
# against 2 x 3.2 x 10^6 reads)
_TAIL_GAIN = 1.5
_TAIL_STEPS = 1 << 19
_TAIL_PER_VISIT = 2.0


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
            plan.eok, flags, anc, neg_ptr, neg_j, neg_dir, _buffers(plan.drv_ptr, cs),
            *bit_rows(plan.order, plan.drv_ptr, plan.drv_j, cs.row_off, cs.ptr, cs.val, cs.cidx,
                      cs.cand_off, BIT_WORDS), cs.cand, cs.cand_off)


def _buffers(drv_ptr, cs):
    """Per depth, where its part of the search's intersection buffer starts (kernels.local):
    a depth with two drivers or more needs the length of its shortest driver's longest list,
    every other depth none."""
    return buffer_starts(drv_ptr, cs.row_off, cs.ptr)


def _forbidden(plan):
    """Per depth d, the ``(j, direction)`` pairs whose data edge must be absent (outside mono:
    a pattern pair without an edge that way; direction 0 is ``m[j] -> v``, 1 is ``v -> m[j]``,
    undirected graphs only use 0), the tests of :func:`fits` that no driver list implies."""
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


def _probe(P, k, max_steps, seed=None):
    """The sequential search from the roots (or on from ``seed``, a probe's search under way)
    for at most ``max_steps`` candidates: ``(count, None)`` when it finished, else ``(count so
    far, (state, m, stk, count))``, the search to go on with."""
    if seed is None:
        state = np.full(1, NOT_STARTED, dtype=np.int64)
        m = np.empty(k, dtype=np.int32)
        stk = np.empty((STACK_ROWS, k), dtype=np.int64)
        got = 0
    else:
        state, m, stk, got = seed
    out = np.empty((1, k), dtype=np.int32)
    got += int(launch(run_search, P, 0, state, m, stk, used_array(P[16].size - 1, k), out,
                      np.iinfo(np.int64).max, False, max_steps))
    return (got, None) if state[0] == DONE else (got, (state, m, stk, got))


def other_order(plan, P):
    """``(plan, P)`` of the same query in :data:`_OTHER_ORDER` where its estimated search tree
    (:func:`~nx_gsm.engines.cpu.kernels.tree_estimate`) is :data:`_ORDER_GAIN` times smaller,
    else None; always None for a plan whose order the caller named (``stages["order_fixed"]``)
    and for one already in that order."""
    if plan.stages.get("order_fixed", True) or plan.k < 3:
        return None
    here = tree_estimate(P, _DIVES, 1)
    if here < _ORDER_MIN_TREE or here < _ORDER_PER_VISIT * space_visits(plan):
        return None
    order = matching_order(plan.H, plan.candidate_counts(), _OTHER_ORDER)
    if np.array_equal(order, plan.order):
        return None
    alt = reorder(plan, order)
    alt.stages["order"] = _OTHER_ORDER  # (reorder's own copy of the stages)
    P2 = plan_arrays(alt)
    return (alt, P2) if tree_estimate(P2, _DIVES, 1) * _ORDER_GAIN < here else None


def swapped_tail(plan):
    """``plan``'s order with its last two nodes exchanged, where each of them has a neighbour
    among the nodes before them (so both depths keep a driver), else None."""
    k = plan.k
    if k < 3:
        return None
    order = plan.order
    nb = undirected_neighbours(plan.H)
    early = set(order[:k - 2].tolist())
    a, b = int(order[k - 2]), int(order[k - 1])
    if not nb[a] & early or not nb[b] & early:
        return None
    out = order.copy()
    out[k - 2], out[k - 1] = b, a
    return out


def _tail_due(plan, P, seed):
    """Whether a count whose probe ran :data:`_PROBE_STEPS` candidates (``seed``: its search
    under way) looks long enough for the tail check: the probe's share of the root candidates
    it finished, extrapolated, puts the whole search past :data:`_TAIL_STEPS` candidates and
    :data:`_TAIL_PER_VISIT` times the candidate space's reads. (The count goes on in parallel
    right after the probe, with its budget watched, so the check cannot wait for the search
    to get that far.)"""
    state, _, stk, _ = seed
    roots = int(P[2][1] - P[2][0])
    done = max(roots_done(P, state, stk), 0.5)
    need = max(_TAIL_STEPS, _TAIL_PER_VISIT * space_visits(plan))
    return _PROBE_STEPS * roots / done >= need


def other_tail(plan, P, base=None):
    """``(plan, P, count, seed)`` of the same query with its last two depths the other way
    round (:func:`swapped_tail`; ``stages["tail"]`` is ``"swapped"``) after a probe of
    :data:`_PROBE_STEPS` candidates, where that probe finished the count (``seed`` None) or
    counted over :data:`_TAIL_GAIN` times ``base``, the matches ``plan``'s own first
    :data:`_PROBE_STEPS` count (probed here when None); else None."""
    order = swapped_tail(plan)
    if order is None:
        return None
    k = plan.k
    if base is None:
        base, seed = _probe(P, k, _PROBE_STEPS)
        if seed is None:
            return None
    alt = reorder(plan, order)
    alt.stages["tail"] = "swapped"  # (reorder's own copy of the stages)
    P2 = plan_arrays(alt)
    got, seed = _probe(P2, k, _PROBE_STEPS)
    if seed is None or got > _TAIL_GAIN * base:
        return alt, P2, got, seed
    return None


def count_probe(plan, max_steps):
    """The number of matches of ``plan`` when the sequential search (one thread, failing-set
    pruning) finishes within ``max_steps`` candidates, else None: how a GPU engine counts a
    search too small to be worth a launch."""
    _, known = trivial_answer(plan, None)
    if known is not None:
        return known
    got, seed = _probe(plan_arrays(plan), plan.k, max_steps)
    return got if seed is None else None


def search_tree(plan, max_steps=None, prune=True):
    """The one-thread count of ``plan`` with its search tree's size: ``{"matches", "nodes",
    "calls", "complete"}``, where ``nodes[d]`` is the number of partial matches made at depth
    ``d`` (at the last depth: the matches, counted in bulk) and ``calls`` the partial matches
    that were extended (depths below the last: Sun & Luo's "call count"). Deterministic, so a
    fair way to compare filters and orders on a noisy machine. ``prune=False`` turns the
    failing sets off; ``max_steps`` bounds the candidates examined (``complete`` is then False
    when the search did not finish)."""
    k = plan.k
    nodes = np.zeros(max(k, 1), dtype=np.int64)
    _, known = trivial_answer(plan, None)
    if known is not None:
        return {"matches": known, "nodes": nodes[:k].tolist(), "calls": 0, "complete": True}
    P = plan_arrays(plan)
    if not prune:
        flags = P[21].copy()
        flags[3] = 0
        P = P[:21] + (flags,) + P[22:]
    state = np.full(1, NOT_STARTED, dtype=np.int64)
    m = np.empty(k, dtype=np.int32)
    stk = np.empty((STACK_ROWS, k), dtype=np.int64)
    out = np.empty((1, k), dtype=np.int32)
    steps = np.iinfo(np.int64).max if max_steps is None else int(max_steps)
    got = int(launch(run_search, P, 0, state, m, stk, used_array(plan.G.n, k), out,
                     np.iinfo(np.int64).max, False, steps, nodes))
    return {"matches": got, "nodes": nodes.tolist(), "calls": int(nodes[:k - 1].sum()),
            "complete": bool(state[0] == DONE)}


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
        # a short sequential probe finishes small searches without paying for a parallel launch;
        # past its first _ORDER_STEPS the order is settled, and the probe goes on in it
        P = plan_arrays(plan)
        k = plan.k
        fixed = plan.stages.get("order_fixed", True)
        got, seed = _probe(P, k, _ORDER_STEPS)
        if seed is None:
            return got
        better = other_order(plan, P)
        if better is not None:
            plan, P = better
            got, seed = _probe(P, k, _PROBE_STEPS)
        else:
            got, seed = _probe(P, k, _PROBE_STEPS - _ORDER_STEPS, seed)
        if seed is None:
            return got
        if not fixed and swapped_tail(plan) is not None and _tail_due(plan, P, seed):
            tail = other_tail(plan, P, got)
            if tail is not None:
                plan, P, got, seed = tail
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
        while fewer tasks are left than slots, running ones are split (see split)."""
        n_slots = _SLOTS_PER_THREAD * threads
        # tasks are split while fewer are left than the window holds; one thread has no one to
        # balance with, so there splitting would only cost pruning
        split_below = n_slots if threads > 1 else 0
        busy = np.zeros(n_slots, dtype=np.bool_)
        starts = np.zeros(n_slots, dtype=np.int64)
        states = np.full((n_slots, 1), DONE, dtype=np.int64)
        ms = np.empty((n_slots, k), dtype=np.int32)
        stks = np.empty((n_slots, STACK_ROWS, k), dtype=np.int64)
        counts = np.zeros(n_slots, dtype=np.int64)
        useds = used_array(P[16].size - 1, k, threads)
        # splits only bring the tasks left up to split_below, so the pool never holds more
        pool_m = np.empty((split_below, k), dtype=np.int32)
        pool_hdr = np.empty((split_below, 4), dtype=np.int64)
        ctl = np.zeros(4, dtype=np.int64)
        stop = np.zeros(1, dtype=np.int64)
        n_tasks = prefixes.shape[0]
        total = 0
        if seed is not None:
            # a search already under way (the probe's) is the first task
            states[0], ms[0], stks[0], counts[0] = seed
            busy[0] = True
            n_tasks += 1
        # one thread never splits and has no one to wait for: its round is one slice
        steps = max(_ROUND_STEPS // _SLOTS_PER_THREAD, 1)
        longest = steps * _ROUND_GROWTH
        rounds = 0
        try:
            while True:
                # matches move from counts to total inside schedule: an interrupt before it
                # returns loses them, so a partial count stays a lower bound
                total += int(schedule(k, prefixes, busy, starts, states, ms, stks, counts,
                                       pool_m, pool_hdr, ctl, split_below))
                done, tasks = int(ctl[2]), n_tasks + int(ctl[3])
                if done == tasks:
                    return total
                # progress in units fixed up front (root candidates or prefix rows): the
                # task count grows as tasks are split
                units = prefixes.shape[0] if prefixes.shape[1] else int(P[2][1] - P[2][0])
                left = units_left(prefixes, ctl, busy, starts, states, ms, stks, pool_m,
                                   pool_hdr) if budget.watched else units
                if not budget.keep_going(total + int(counts.sum()), units - left, units):
                    return PartialCount(total + int(counts.sum()))
                run = np.flatnonzero(busy)
                if threads == 1:
                    steps = max(SLICE_STEPS // run.size, 1)
                elif rounds and rounds % _ROUND_GROW_EVERY == 0:
                    steps = min(2 * steps, longest)
                launch(run_slots, P, run, starts, states, ms, stks, useds, counts, stop, steps)
                rounds += 1
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
        stk = np.empty((STACK_ROWS, k), dtype=np.int64)
        used = used_array(plan.G.n, k)
        out = np.empty((chunk, k), dtype=np.int32)
        state = np.empty(1, dtype=np.int64)
        remaining = limit
        found = 0
        for i, row in enumerate(prefixes):
            m[:depth] = row
            state[0] = NOT_STARTED
            while state[0] != DONE:
                cap = chunk if remaining is None else min(chunk, remaining)
                try:
                    got = launch(run_search, P, depth, state, m, stk, used, out, cap, True,
                                 SLICE_STEPS)
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
                if state[0] != DONE and not budget.keep_going(found, i, prefixes.shape[0]):
                    return

    @staticmethod
    def _run(plan, limit, collect, budget, chunk=4096):
        """The resumable sequential search, in slices; yields arrays (collect) or counts."""
        P = plan_arrays(plan)
        k = plan.k
        state = np.full(1, NOT_STARTED, dtype=np.int64)
        m = np.empty(k, dtype=np.int32)
        stk = np.empty((STACK_ROWS, k), dtype=np.int64)
        used = used_array(plan.G.n, k)
        out = np.empty((chunk if collect else 1, k), dtype=np.int32)
        remaining = limit
        found = 0
        while state[0] != DONE and (remaining is None or remaining > 0):
            cap = chunk if collect else np.iinfo(np.int64).max
            if remaining is not None:
                cap = min(cap, remaining)
            try:
                got = launch(run_search, P, 0, state, m, stk, used, out, cap, collect, SLICE_STEPS)
            except KeyboardInterrupt:
                budget.stop("interrupted")
                return
            found += got
            if remaining is not None:
                remaining -= got
            if got:
                yield out[:got].copy() if collect else got
            roots = int(P[2][1] - P[2][0])
            if state[0] != DONE and \
                    not budget.keep_going(found, roots_done(P, state, stk), roots):
                return
