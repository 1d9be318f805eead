"""The CPU engine: Numba-compiled backtracking over a MatchPlan.

Shape (the enumeration stage of Sun & Luo's study, with VF2++/RI-style ordering from the planner):
depth-first, an explicit stack (no recursion), local candidates of depth ``d`` drawn from the
shortest adjacency list among the images of ``order[d]``'s backward neighbours (or its filtered
candidate list when it has none), and every other constraint checked by binary search in sorted
adjacency rows. Counting runs the root candidates in parallel (``prange``, dynamic chunks of one
root so skewed roots do not idle a core); enumeration runs a resumable search that fills a
fixed-size buffer and returns, so Python can stream results lazily and stop at any ``limit``.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

__all__ = ["CpuEngine"]

_NOT_STARTED = -2
_DONE = -1


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


@njit(cache=True)
def _feasible(d, v, m, order, cand_bits, chk_ptr, chk_j, chk_out, chk_in, chk_peo, chk_pei,
              indptr, indices, emult, eclass, eok, has_el, mono, directed):
    u = order[d]
    if (cand_bits[u, v >> 3] >> (v & 7)) & 1 == 0:
        return False
    for j in range(d):
        if m[j] == v:
            return False
    for c in range(chk_ptr[d], chk_ptr[d + 1]):
        x = m[chk_j[c]]
        e = _find(indptr, indices, x, v)
        have = 0 if e < 0 else emult[e]
        need = chk_out[c]
        if mono:
            if have < need:
                return False
        elif have != need:
            return False
        if has_el and need > 0 and eok[chk_peo[c], eclass[e]] == 0:
            return False
        if directed:
            e = _find(indptr, indices, v, x)
            have = 0 if e < 0 else emult[e]
            need = chk_in[c]
            if mono:
                if have < need:
                    return False
            elif have != need:
                return False
            if has_el and need > 0 and eok[chk_pei[c], eclass[e]] == 0:
                return False
    return True


@njit(cache=True)
def _search(order, cand_bits, cand_ptr, cand_flat, chk_ptr, chk_j, chk_out, chk_in, chk_peo,
            chk_pei, drv_ptr, drv_j, drv_dir, indptr, indices, emult, in_indptr, in_indices,
            eclass, eok, has_el, mono, directed, r_lo, r_hi, state, m, lo, hi, cur, kind, out,
            cap, collect):
    """Resumable DFS over depth-0 candidates ``cand_flat[r_lo:r_hi]``.

    Returns the number of rows written to ``out`` (collect) or of matches counted, stopping early
    once it reaches ``cap``. ``state[0]`` is the depth to resume at, or _DONE.
    """
    k = order.size
    d = state[0]
    if d == _DONE:
        return 0
    if d == _NOT_STARTED:
        lo[0] = r_lo
        hi[0] = r_hi
        cur[0] = r_lo
        kind[0] = 0
        d = 0
    found = 0
    while d >= 0:
        if cur[d] >= hi[d]:
            d -= 1
            continue
        i = cur[d]
        cur[d] = i + 1
        kd = kind[d]
        if kd == 0:
            v = cand_flat[i]
        elif kd == 1:
            v = indices[i]
        else:
            v = in_indices[i]
        if not _feasible(d, v, m, order, cand_bits, chk_ptr, chk_j, chk_out, chk_in, chk_peo,
                         chk_pei, indptr, indices, emult, eclass, eok, has_el, mono, directed):
            continue
        m[d] = v
        if d == k - 1:
            if collect:
                for t in range(k):
                    out[found, t] = m[t]
            found += 1
            if found >= cap:
                state[0] = d
                return found
            continue
        d += 1
        t0 = drv_ptr[d]
        t1 = drv_ptr[d + 1]
        if t0 == t1:
            kind[d] = 0
            lo[d] = cand_ptr[d]
            hi[d] = cand_ptr[d + 1]
        else:
            best = -1
            for t in range(t0, t1):
                x = m[drv_j[t]]
                if drv_dir[t] == 0:
                    a = indptr[x]
                    b = indptr[x + 1]
                else:
                    a = in_indptr[x]
                    b = in_indptr[x + 1]
                if best < 0 or b - a < hi[d] - lo[d]:
                    best = t
                    lo[d] = a
                    hi[d] = b
                    kind[d] = 1 if drv_dir[t] == 0 else 2
        cur[d] = lo[d]
    state[0] = _DONE
    return found


@njit(cache=True, parallel=True)
def _count_roots(order, cand_bits, cand_ptr, cand_flat, chk_ptr, chk_j, chk_out, chk_in, chk_peo,
                 chk_pei, drv_ptr, drv_j, drv_dir, indptr, indices, emult, in_indptr, in_indices,
                 eclass, eok, has_el, mono, directed):
    k = order.size
    n_roots = cand_ptr[1] - cand_ptr[0]
    counts = np.zeros(n_roots, dtype=np.int64)
    dummy = np.empty((1, 1), dtype=np.int32)
    for r in prange(n_roots):
        state = np.full(1, _NOT_STARTED, dtype=np.int64)
        m = np.empty(k, dtype=np.int32)
        lo = np.empty(k, dtype=np.int64)
        hi = np.empty(k, dtype=np.int64)
        cur = np.empty(k, dtype=np.int64)
        kind = np.empty(k, dtype=np.int8)
        counts[r] = _search(order, cand_bits, cand_ptr, cand_flat, chk_ptr, chk_j, chk_out,
                            chk_in, chk_peo, chk_pei, drv_ptr, drv_j, drv_dir, indptr, indices,
                            emult, in_indptr, in_indices, eclass, eok, has_el, mono, directed,
                            cand_ptr[0] + r, cand_ptr[0] + r + 1, state, m, lo, hi, cur, kind,
                            dummy, np.iinfo(np.int64).max, False)
    return counts


def _args(plan):
    G = plan.G
    return (plan.order, plan.cand_bits, plan.cand_ptr, plan.cand_flat, plan.chk_ptr, plan.chk_j,
            plan.chk_out, plan.chk_in, plan.chk_peo, plan.chk_pei, plan.drv_ptr, plan.drv_j,
            plan.drv_dir, G.indptr, G.indices, G.mult, G.in_indptr, G.in_indices, plan.eclass,
            plan.eok, plan.has_elabels, plan.mono, G.directed)


class CpuEngine:
    """Engine protocol: ``count(plan, limit)`` -> int and ``iter_chunks(plan, chunk)`` -> arrays.

    Rows of the arrays hold data node ids by depth (column d maps pattern node ``plan.order[d]``).
    """

    name = "cpu"

    def count(self, plan, limit=None):
        if plan.empty:
            return 0
        args = _args(plan)
        if limit is None:
            with numba.parallel_chunksize(1):
                counts = _count_roots(*args)
            # summed as Python ints: exact at any size
            return sum(int(c) for c in counts) if counts.size < 4096 else int(
                counts.astype(object).sum())
        total = 0
        for rows in self._run(plan, args, limit, collect=False):
            total += rows
        return total

    def iter_chunks(self, plan, chunk=4096, limit=None):
        if plan.empty:
            return
        yield from self._run(plan, _args(plan), limit, collect=True, chunk=chunk)

    @staticmethod
    def _run(plan, args, limit, collect, chunk=4096):
        k = plan.k
        state = np.full(1, _NOT_STARTED, dtype=np.int64)
        m = np.empty(k, dtype=np.int32)
        lo = np.empty(k, dtype=np.int64)
        hi = np.empty(k, dtype=np.int64)
        cur = np.empty(k, dtype=np.int64)
        kind = np.empty(k, dtype=np.int8)
        remaining = limit
        out = np.empty((chunk if collect else 1, k), dtype=np.int32)
        r_lo, r_hi = int(plan.cand_ptr[0]), int(plan.cand_ptr[1])
        while state[0] != _DONE and (remaining is None or remaining > 0):
            cap = chunk if collect else (1 << 62)
            if remaining is not None:
                cap = min(cap, remaining)
            got = _search(*args, r_lo, r_hi, state, m, lo, hi, cur, kind, out, cap, collect)
            if remaining is not None:
                remaining -= got
            if got:
                yield out[:got].copy() if collect else got
