"""The CPU engine's search kernels: Numba-compiled backtracking over a MatchPlan.

Shape (the enumeration stage of Sun & Luo's study, with RI/VF2++-style ordering from the planner):
depth-first with an explicit stack (no recursion); the local candidates of depth ``d`` are the
intersection of the candidate-space lists (:mod:`nx_gsm.plan.space`) of the images of
``order[d]``'s backward neighbours (its filtered candidate list when it has none), so a
candidate is tested only for what no list implies: injectivity and the induced modes' forbidden
edges. A count's last depth is counted, not walked. :func:`expand` and its relatives make the
breadth-first levels that the parallel driver, Dask tasks and the GPU engines start from.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange
from numba.cpython.unsafe.numbers import trailing_zeros

from ... import kernel_cache  # noqa: F401  (sets Numba's cache folder before @njit runs)
from ...threads import launch
from .lastdepth import count_bits, count_free, count_pair, holder, position, row_start

NOT_STARTED = -2
DONE = -1
# rows of the per-depth stack array
LO, HI, CUR, KIND, FS, FLG = 0, 1, 2, 3, 4, 5
STACK_ROWS = 6
# FLG bits: a match was found below this node / the node has at least one child
_FOUND, _HAS_CHILD = 1, 2
# candidates examined per slice of a sequential search (about 10-50 ms of work: the granularity
# of deadlines, Ctrl-C and progress updates)
SLICE_STEPS = 1 << 20
# the local-candidate kind (stack row KIND) of a depth whose list is its drivers' intersection,
# kept in the search's buffer
BUFFERED = -2


@njit(cache=True, inline="always")
def _find(indptr, indices, x, y):
    """The CSR position of edge x -> y, or -1."""
    return position(indices, indptr[x], indptr[x + 1], y)


@njit(cache=True, inline="always")
def _mult_ok(have, need, mono):
    return have >= need if mono else have == need


@njit(cache=True)
def consistent(P, d, v, m):
    """Does v satisfy every constraint of pattern node order[d] except injectivity: its candidate
    bit, and multiplicities (both ways), induced non-edges and edge labels towards m[:d]?"""
    (order, cand_bits, _cp, _cf, chk_ptr, chk_j, chk_out, chk_in, chk_peo, chk_pei, _dp, _dj,
     _ci, _ro, _sp, _sv, indptr, indices, emult, eclass, eok, flags, _a, _n0, _n1, _n2,
     _bo, _bn, _bf, _bw, _bc, _bco) = P
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
def conflict(m, d, v):
    """The depth already holding v, or -1."""
    for j in range(d):
        if m[j] == v:
            return j
    return -1


@njit(cache=True, inline="always")
def setup(P, d, m, stk):
    """Point depth d's local candidates at the shortest candidate-space list of its drivers, or
    at its whole candidate list when it has no backward neighbour."""
    (order, _cb, cand_ptr, _cf, _c0, _c1, _c2, _c3, _c4, _c5, drv_ptr, drv_j, cidx, row_off,
     sptr, _sv, _i0, _i1, _e, _ec, _eo, _f, _a, _n0, _n1, _n2, _bo, _bn, _bf, _bw, _bc,
     _bco) = P
    stk[FS, d] = 0
    stk[FLG, d] = 0
    t0 = drv_ptr[d]
    t1 = drv_ptr[d + 1]
    if t0 == t1:
        stk[KIND, d] = -1
        stk[LO, d] = cand_ptr[d]
        stk[HI, d] = cand_ptr[d + 1]
    else:
        for t in range(t0, t1):
            j = drv_j[t]
            r = row_off[t] + cidx[order[j], m[j]]
            a = sptr[r]
            b = sptr[r + 1]
            if t == t0 or b - a < stk[HI, d] - stk[LO, d]:
                stk[KIND, d] = t
                stk[LO, d] = a
                stk[HI, d] = b
    stk[CUR, d] = stk[LO, d]


@njit(cache=True, inline="always")
def value(P, kd, i):
    return P[3][i] if kd < 0 else P[15][i]


@njit(cache=True, inline="always")
def _intersect(vals, buf, base, n, b, b1):
    """Keep in ``buf[base:base + n]`` (sorted) the entries also in the sorted ``vals[b:b1]``;
    returns how many stay. A branch-free merge where the lists are of similar length, else a
    binary search of the longer list for each entry (Sun & Luo's hybrid set intersection)."""
    if (b1 - b) > 32 * n:
        kept = 0
        for i in range(n):
            x = buf[base + i]
            if position(vals, b, b1, x) >= 0:
                buf[base + kept] = x
                kept += 1
        return kept
    i = 0
    kept = 0
    while i < n and b < b1:
        x = buf[base + i]
        y = vals[b]
        buf[base + kept] = x
        kept += x == y
        i += x <= y
        b += y <= x
    return kept


@njit(cache=True, inline="always")
def _open(d, m, stk, buf, order, cand_ptr, drv_ptr, drv_j, cidx, row_off, sptr, sval,
          buf_off, bw_n, bw_off, bw, bcand, bcand_off):
    """Depth d's local candidates: its candidate list (no driver), its driver's candidate-space
    list (one driver), or the intersection of its drivers' lists (two or more), made once in
    depth d's part of ``buf`` (from ``buf_off[d]``; kind :data:`BUFFERED`): the shortest list
    copied, then cut by each other one. A driver's list holds exactly the candidates of
    ``order[d]`` that ``m[j]`` reaches through an edge fitting the pattern edge (direction,
    multiplicity, label: the space's ``edge_fits`` is :func:`consistent`'s test), so every
    candidate passes every driver's test; a binary search in each other list per candidate of
    the shortest was most of the search's time. The
    buffer is a function of ``m[:d]`` alone, so a search resumed or split at depth d makes the
    same one again and its positions stay valid."""
    stk[FS, d] = 0
    stk[FLG, d] = 0
    t0 = drv_ptr[d]
    t1 = drv_ptr[d + 1]
    if t0 == t1:
        stk[KIND, d] = -1
        stk[LO, d] = cand_ptr[d]
        stk[HI, d] = cand_ptr[d + 1]
    elif t1 - t0 == 1:
        j = drv_j[t0]
        r = row_off[t0] + cidx[order[j], m[j]]
        stk[KIND, d] = t0
        stk[LO, d] = sptr[r]
        stk[HI, d] = sptr[r + 1]
    elif bw_n[d] > 0:
        # the drivers' bit rows ANDed a word at a time, the set bits read back as candidates
        nw = bw_n[d]
        u = order[d]
        c0 = bcand_off[u]
        base = buf_off[d]
        n = 0
        # two drivers (the common case): their rows' starts found once, not once per word
        # (the drivers sit above d, so row_start reads their images from m)
        ra = row_start(t0, d, 0, m, order, drv_j, cidx, bw_off, nw)
        rb = row_start(t0 + 1, d, 0, m, order, drv_j, cidx, bw_off, nw)
        for wi in range(nw):
            x = bw[ra + wi] & bw[rb + wi]
            for t in range(t0 + 2, t1):
                x &= bw[row_start(t, d, 0, m, order, drv_j, cidx, bw_off, nw) + wi]
            while x != 0:
                buf[base + n] = bcand[c0 + 64 * wi + trailing_zeros(x)]
                n += 1
                x &= x - 1
        stk[KIND, d] = BUFFERED
        stk[LO, d] = base
        stk[HI, d] = base + n
    else:
        best = -1
        blo = 0
        bhi = 0
        for t in range(t0, t1):
            j = drv_j[t]
            r = row_off[t] + cidx[order[j], m[j]]
            a = sptr[r]
            b = sptr[r + 1]
            if best < 0 or b - a < bhi - blo:
                best = t
                blo = a
                bhi = b
        base = buf_off[d]
        n = bhi - blo
        for i in range(n):
            buf[base + i] = sval[blo + i]
        for t in range(t0, t1):
            if t != best and n > 0:
                j = drv_j[t]
                r = row_off[t] + cidx[order[j], m[j]]
                n = _intersect(sval, buf, base, n, sptr[r], sptr[r + 1])
        stk[KIND, d] = BUFFERED
        stk[LO, d] = base
        stk[HI, d] = base + n
    stk[CUR, d] = stk[LO, d]


@njit(cache=True)
def tree_estimate(P, dives, seed):
    """Knuth's estimate of the search tree's size below the last depth ("Estimating the
    efficiency of backtrack programs", Math. Comp. 1975): ``dives`` random root-to-leaf walks,
    each taking one of the local candidates no depth holds at every depth; a walk adds, per
    depth, the product of the candidate counts above it. The mean is unbiased for the tree
    without failing-set pruning; two orders' estimates say which searches less. Deterministic
    for a ``seed``."""
    (order, _cb, cand_ptr, cand_flat, _c0, _c1, _c2, _c3, _c4, _c5, drv_ptr, drv_j, cidx,
     row_off, sptr, sval, indptr, indices, emult, _ec, _eo, _f, _a, neg_ptr, neg_j, neg_dir,
     buf_off, bw_n, bw_off, bw, bcand, bcand_off) = P
    np.random.seed(seed)
    k = order.size
    used = np.zeros(indptr.size - 1, dtype=np.uint8)
    buf = np.empty(buf_off[k], dtype=np.int32)
    stk = np.zeros((STACK_ROWS, k), dtype=np.int64)
    m = np.zeros(k, dtype=np.int32)
    free = np.empty(1024, dtype=np.int32)  # the walk's choices at a depth (a sample of them)
    total = 0.0
    for _ in range(dives):
        prod = 1.0
        d = 0
        while d < k - 1:
            _open(d, m, stk, buf, order, cand_ptr, drv_ptr, drv_j, cidx, row_off, sptr, sval,
                  buf_off, bw_n, bw_off, bw, bcand, bcand_off)
            kd = stk[KIND, d]
            v = m[d]
            if d == 0:
                # no depth holds a node yet and no test applies: every entry is a choice, so
                # one is drawn by its position (the root's list is the pattern node's whole
                # candidate set: thousands of entries on wordnet, read by every walk, made
                # 64 walks take 12 ms there)
                c = stk[HI, d] - stk[LO, d]
                if c > 0:
                    i = stk[LO, d] + np.random.randint(c)
                    v = buf[i] if kd == BUFFERED else cand_flat[i] if kd < 0 else sval[i]
            else:
                c = 0
                for i in range(stk[LO, d], stk[HI, d]):
                    x = buf[i] if kd == BUFFERED else cand_flat[i] if kd < 0 else sval[i]
                    if used[x] == 0 and (neg_ptr[d + 1] == neg_ptr[d] or _free(
                            d, x, m, indptr, indices, emult, neg_ptr, neg_j, neg_dir)):
                        # (past the sample's room, reservoir sampling keeps a uniform choice)
                        if c < free.size:
                            free[c] = x
                        else:
                            r = np.random.randint(c + 1)
                            if r < free.size:
                                free[r] = x
                        c += 1
                if c > 0:
                    v = free[np.random.randint(min(c, free.size))]
            if c == 0:
                break
            prod *= c
            total += prod
            m[d] = v
            used[v] = 1
            d += 1
        for e in range(d):
            used[m[e]] = 0
    return total / max(dives, 1)


@njit(cache=True)
def buffer_starts(drv_ptr, row_off, sptr):
    """Where each depth's part of the search's intersection buffer starts (the last entry: its
    size). A depth with two drivers or more needs room for its shortest driver's longest list
    (a slot's rows run from its ``row_off`` to the next slot's); other depths need none. (In
    Numba: the same in NumPy calls was ~25 us of a ~300 us light count.)"""
    k = drv_ptr.size - 1
    n_rows = sptr.size - 1
    starts = np.zeros(k + 1, dtype=np.int64)
    for d in range(k):
        need = 0
        if drv_ptr[d + 1] - drv_ptr[d] >= 2:
            for t in range(drv_ptr[d], drv_ptr[d + 1]):
                end = row_off[t + 1] if t + 1 < row_off.size else n_rows
                longest = 0
                for r in range(row_off[t], end):
                    longest = max(longest, sptr[r + 1] - sptr[r])
                need = longest if t == drv_ptr[d] else min(need, longest)
        starts[d + 1] = starts[d] + need
    return starts


# the most 64-bit words a depth's bit rows may take (candidates / 64, rounded up)
BIT_WORDS = 8
# a depth's bit rows may take at most this many words per list entry they stand for (plus
# BIT_SLACK): a driving node with many candidates and short lists keeps its lists
BIT_PER_ENTRY = 2
BIT_SLACK = 1 << 12


@njit(cache=True)
def bit_rows(order, drv_ptr, drv_j, row_off, sptr, sval, cidx, cand_off, max_words):
    """The candidate space's lists again as bit rows, for the depths with two drivers or more
    whose pattern node has at most ``64 * max_words`` candidates and whose rows take at most
    :data:`BIT_PER_ENTRY` words per list entry (plus :data:`BIT_SLACK`): bit c of a row is the
    node's c-th candidate. An intersection is then one AND per word and driver, not a merge of
    lists (the merge was a third of the search's time on yeast). Returns the words per depth
    (0: the depth merges lists), where each driver slot's rows start (one row per candidate
    of the driving node, ``words`` apart) and the rows."""
    k = order.size
    n_rows = sptr.size - 1
    bw_n = np.zeros(k, dtype=np.int64)
    bw_off = np.zeros(drv_j.size, dtype=np.int64)
    total = 0
    for d in range(k):
        if drv_ptr[d + 1] - drv_ptr[d] < 2:
            continue
        u = order[d]
        nw = (cand_off[u + 1] - cand_off[u] + 63) >> 6
        if nw > max_words:
            continue
        words = 0
        entries = 0
        for t in range(drv_ptr[d], drv_ptr[d + 1]):
            end = row_off[t + 1] if t + 1 < row_off.size else n_rows
            words += (end - row_off[t]) * nw
            entries += sptr[end] - sptr[row_off[t]]
        if words > BIT_PER_ENTRY * entries + BIT_SLACK:
            continue
        bw_n[d] = nw
        for t in range(drv_ptr[d], drv_ptr[d + 1]):
            end = row_off[t + 1] if t + 1 < row_off.size else n_rows
            bw_off[t] = total
            total += (end - row_off[t]) * nw
    bw = np.zeros(total, dtype=np.int64)
    for d in range(k):
        nw = bw_n[d]
        if nw == 0:
            continue
        u = order[d]
        for t in range(drv_ptr[d], drv_ptr[d + 1]):
            end = row_off[t + 1] if t + 1 < row_off.size else n_rows
            for r in range(row_off[t], end):
                o = bw_off[t] + (r - row_off[t]) * nw
                for e in range(sptr[r], sptr[r + 1]):
                    c = np.int64(cidx[u, sval[e]])
                    bw[o + (c >> 6)] |= np.int64(1) << (c & 63)
    return bw_n, bw_off, bw


@njit(cache=True, inline="always")
def _free(d, v, m, indptr, indices, emult, neg_ptr, neg_j, neg_dir):
    """No forbidden edge (the induced modes' pattern pairs without an edge) between v and an
    earlier depth's node: the one test of a candidate that no driver's list implies."""
    for c in range(neg_ptr[d], neg_ptr[d + 1]):
        x = m[neg_j[c]]
        e = _find(indptr, indices, x, v) if neg_dir[c] == 0 else _find(indptr, indices, v, x)
        if e >= 0 and emult[e] != 0:
            return False
    return True


@njit(cache=True, inline="always")
def _child_ended(stk, d, found, fs, prune):
    """Depth d learns how its child ended: a match below it, or the child's failing set ``fs``;
    one that misses depth d ends d's remaining siblings too (failing sets, see :func:`search`)."""
    if found:
        stk[FLG, d] |= _FOUND | _HAS_CHILD
    elif prune and (fs >> d) & 1 == 0 and stk[FLG, d] & _FOUND == 0:
        stk[FS, d] = fs
        stk[FLG, d] = _HAS_CHILD
        stk[CUR, d] = stk[HI, d]
    else:
        stk[FS, d] |= fs
        stk[FLG, d] |= _HAS_CHILD


def used_array(n, k, rows=None):
    """The search's injectivity table for a data graph of ``n`` nodes and a pattern of ``k``
    (``rows`` of them, one per thread, when given): zeros, one byte a node where every depth
    fits (k < 255). :func:`search` leaves it zero when it returns, so one table serves every
    search of a thread."""
    return np.zeros(n if rows is None else (rows, n), dtype=np.uint8 if k < 255 else np.int32)


@njit(cache=True, inline="always")
def _release(used, m, n):
    """Clear the entries of m[:n]: :func:`search` returns its table all zero."""
    for e in range(n):
        used[m[e]] = 0


@njit(cache=True)
def search(P, start, state, m, stk, used, out, cap, collect, max_steps, tree=None):
    """Resumable DFS below the fixed prefix ``m[:start]``, with DP-iso failing-set pruning.

    Returns the number of rows written to ``out`` (collect) or of matches counted, stopping once
    it reaches ``cap`` or has examined ``max_steps`` candidates; ``state[0]`` keeps the depth to
    resume at, or DONE. ``stk`` holds per
    depth the local-candidate range and cursor and the failing-set bookkeeping. ``used``
    (:func:`used_array`: zero on entry, left zero) holds 1 + the depth each data node is taken
    at: injectivity is one lookup, and a table kept zero costs nothing per call on a large
    graph (the branch on a zero entry is predictable; a validated sparse set was 1.3-1.6x
    slower on yeast counts). ``tree`` (an
    int64 array of ``k`` entries, for the engine's ``search_tree``) adds the search tree's
    nodes per depth: the partial matches made there (at the last depth, the matches); left out
    (None), Numba compiles the search without those adds.

    The plan's arrays are unpacked once here and handed to the inlined helpers one by one:
    helpers that each took the whole tuple ``P`` made the loop 2.5-3.5x slower (measured on
    yeast), the arrays' reference counts no longer being elided in the larger loop.

    Failing sets (Han et al., DP-iso, SIGMOD 2019, section 5): the failing set F of a search node
    is a set of pattern nodes (bits by depth) such that no extension of any partial match agreeing
    with it on F succeeds. A conflict child (v already used at depth j) has F = anc(d) | anc(j),
    a node with no candidates F = anc(d), an inner node the union of its children's; a child
    whose F misses depth d proves every sibling fails too, so they are skipped.
    """
    (order, cand_bits, cand_ptr, cand_flat, _c0, _c1, _c2, _c3, _c4, _c5, drv_ptr, drv_j, cidx,
     row_off, sptr, sval, indptr, indices, emult, _ec, _eo, flags, anc, neg_ptr, neg_j, neg_dir,
     buf_off, bw_n, bw_off, bw, bcand, bcand_off) = P
    k = order.size
    prune = flags[3] != 0
    d = state[0]
    if d == DONE:
        return 0
    # the buffered depths' intersections (_open): made again from m for the open depths of a
    # search resumed or split
    buf = np.empty(buf_off[k], dtype=np.int32)
    # local candidates kept per depth: depth d's list is a function of its drivers' images,
    # so it stays valid until its deepest driver takes a new node (stamp)
    top = np.full(k, -1, dtype=np.int64)
    for e in range(k):
        for t in range(drv_ptr[e], drv_ptr[e + 1]):
            top[e] = max(top[e], drv_j[t])
    stamp = np.zeros(k, dtype=np.int64)
    key = np.full(k, -1, dtype=np.int64)
    tick = 0
    for j in range(start):
        used[m[j]] = j + 1
    if d == NOT_STARTED:
        d = start
        _open(d, m, stk, buf, order, cand_ptr, drv_ptr, drv_j, cidx, row_off, sptr, sval,
              buf_off, bw_n, bw_off, bw, bcand, bcand_off)
    else:
        for e in range(start, d):
            used[m[e]] = e + 1
        for e in range(start, d + 1):
            if stk[KIND, e] == BUFFERED:
                keep = stk[:, e].copy()
                _open(e, m, stk, buf, order, cand_ptr, drv_ptr, drv_j, cidx, row_off, sptr,
                      sval, buf_off, bw_n, bw_off, bw, bcand, bcand_off)
                stk[:, e] = keep
    n_last = drv_ptr[k] - drv_ptr[k - 1]
    last_plain = neg_ptr[k] == neg_ptr[k - 1]
    last_words = bw_n[k - 1]
    # the last depth's list while its drivers sit above depth k-2 (see below): which one
    # (last_tok), where, and its free entries
    last_tok = -1
    last_vals = sval
    last_lo = 0
    last_hi = 0
    last_free = 0
    last_fs = 0
    found = 0
    steps = 0
    while True:
        if steps >= max_steps:
            state[0] = d
            _release(used, m, d)
            return found
        steps += 1
        if stk[CUR, d] >= stk[HI, d]:
            flg = stk[FLG, d]
            fs = stk[FS, d] if flg & _HAS_CHILD else anc[d]
            d -= 1
            if d < start:
                break
            used[m[d]] = 0
            _child_ended(stk, d, flg & _FOUND != 0, fs, prune)
            continue
        i = stk[CUR, d]
        kd = stk[KIND, d]
        plain = neg_ptr[d + 1] == neg_ptr[d]
        if d == k - 1 and not collect and found + stk[HI, d] - i < cap:
            hi = stk[HI, d]
            steps += hi - i
            stk[CUR, d] = hi
            if kd == BUFFERED:
                vals = buf
            elif kd < 0:
                vals = cand_flat
            else:
                vals = sval
            got = 0
            fsx = 0
            for x in range(i, hi):
                v = vals[x]
                if not plain and not _free(d, v, m, indptr, indices, emult, neg_ptr, neg_j,
                                           neg_dir):
                    continue
                u = holder(used, v)
                if u < 0:
                    got += 1
                else:
                    fsx |= anc[u]
            if fsx != 0:
                stk[FS, d] |= anc[d] | fsx
                stk[FLG, d] |= _HAS_CHILD
            if got > 0:
                stk[FLG, d] |= _FOUND | _HAS_CHILD
            found += got
            if tree is not None:
                tree[d] += got
            continue
        stk[CUR, d] = i + 1
        if kd == BUFFERED:
            v = buf[i]
        elif kd < 0:
            v = cand_flat[i]
        else:
            v = sval[i]
        if not plain and not _free(d, v, m, indptr, indices, emult, neg_ptr, neg_j, neg_dir):
            continue
        u = holder(used, v)
        if u >= 0:
            stk[FS, d] |= anc[d] | anc[u]
            stk[FLG, d] |= _HAS_CHILD
            continue
        m[d] = v
        if tree is not None:
            tree[d] += 1
        if d == k - 1:
            stk[FLG, d] |= _FOUND | _HAS_CHILD
            if collect:
                for t in range(k):
                    out[found, t] = m[t]
            found += 1
            if found >= cap:
                state[0] = d
                _release(used, m, d)
                return found
            continue
        if d == k - 2 and not collect and last_plain and top[k - 1] < d:
            # a count's last depth whose drivers all sit above d: its list is the same for all
            # of d's candidates, and so are the depths holding its entries but for v. Its free
            # entries (and their holders' failing-set bits) are counted once per list, and
            # each candidate v takes one from them where the list holds v (a binary search),
            # without opening depth k-1.
            tok = stamp[d - 1] if d > start else -2
            if last_tok != tok:
                _open(k - 1, m, stk, buf, order, cand_ptr, drv_ptr, drv_j, cidx, row_off, sptr,
                      sval, buf_off, bw_n, bw_off, bw, bcand, bcand_off)
                t = top[k - 1]
                key[k - 1] = stamp[t] if t >= start else -1
                kd1 = stk[KIND, k - 1]
                last_vals = buf if kd1 == BUFFERED else cand_flat if kd1 < 0 else sval
                last_lo, last_hi = stk[LO, k - 1], stk[HI, k - 1]
                last_free, last_fs = count_free(last_vals, last_lo, last_hi, used, anc)
                steps += last_hi - last_lo
                last_tok = tok
            if found + last_free < cap:
                got, fsx = last_free, last_fs
                if position(last_vals, last_lo, last_hi, v) >= 0:
                    got -= 1
                    fsx |= anc[d]
                found += got
                if tree is not None:
                    tree[d + 1] += got
                _child_ended(stk, d, got > 0, anc[d + 1] | fsx, prune)
                continue
        if (d == k - 2 and not collect and last_plain
                and (n_last == 1 or (top[k - 1] == d and (n_last == 2 or last_words > 0)))):
            # a count's last depth with one driver, or two of which v is one: the size of its
            # driver's list (of the two lists' intersection) less the used entries, counted
            # without opening depth k-1, and what depth k-1's end would tell depth d (failing
            # set, found) applied here at once. (Two drivers both above d keep their buffered
            # intersection, made once for all of d's candidates.) On yeast sparse_16_1, whose
            # last three depths have one driver each, pushing and popping depth k-1 for each of
            # its 1.4 x 10^6 depth-14 nodes was a third of the search. A last depth kept as bit
            # rows counts from them (count_bits), with any number of drivers.
            if n_last >= 2 and last_words > 0:
                got, fsx = count_bits(d, v, m, order, drv_ptr, drv_j, cidx, bw_off, bw,
                                       last_words, anc)
                width = got
            else:
                t0 = drv_ptr[k - 1]
                j = drv_j[t0]
                r = row_off[t0] + cidx[order[j], v if j == d else m[j]]
                a, a1 = sptr[r], sptr[r + 1]
                b, b1 = a, a
                if n_last == 2:
                    j = drv_j[t0 + 1]
                    r = row_off[t0 + 1] + cidx[order[j], v if j == d else m[j]]
                    b, b1 = sptr[r], sptr[r + 1]
                    if a1 - a > b1 - b:
                        a, a1, b, b1 = b, b1, a, a1
                width = a1 - a
                got, fsx = 0, 0
                if found + width < cap:
                    used[v] = d + 1
                    if n_last == 1:
                        got, fsx = count_free(sval, a, a1, used, anc)
                    else:
                        got, fsx = count_pair(sval, a, a1, b, b1, used, anc)
                    used[v] = 0
            # (past the cap: depth k-1 is walked, to stop at exactly cap matches)
            if found + width < cap:
                steps += width
                found += got
                if tree is not None:
                    tree[d + 1] += got
                _child_ended(stk, d, got > 0, anc[d + 1] | fsx, prune)
                continue
        used[v] = d + 1
        tick += 1
        stamp[d] = tick
        d += 1
        t = top[d]
        if t >= start and key[d] == stamp[t]:
            stk[FS, d] = 0
            stk[FLG, d] = 0
            stk[CUR, d] = stk[LO, d]
        else:
            _open(d, m, stk, buf, order, cand_ptr, drv_ptr, drv_j, cidx, row_off, sptr, sval,
                  buf_off, bw_n, bw_off, bw, bcand, bcand_off)
            key[d] = stamp[t] if t >= start else -1
    state[0] = DONE
    _release(used, m, start)
    return found


@njit(cache=True, parallel=True)
def run_search(P, start, state, m, stk, used, out, cap, collect, max_steps, tree=None):
    """:func:`search`, called as the body of a one-iteration ``prange``: how every host caller
    runs it. Numba compiles a parallel loop's body with its arrays marked as not aliasing one
    another (it checks that they do not) and LLVM inlines the search there, so loads from the
    plan's arrays stay in registers across the search's stores to its stack, partial match and
    injectivity table: 1.4-2.6x faster on yeast counts than the same search called directly,
    for ~1 us of parallel launch."""
    got = np.zeros(1, dtype=np.int64)
    for _ in prange(1):
        got[0] = search(P, start, state, m, stk, used, out, cap, collect, max_steps, tree)
    return got[0]


@njit(cache=True)
def _children(P, prefix, depth, out, write):
    """Count (and with ``write`` store into ``out``) the feasible extensions of one prefix."""
    k = P[0].size
    m = np.empty(k, dtype=np.int32)
    stk = np.empty((STACK_ROWS, k), dtype=np.int64)
    m[:depth] = prefix
    setup(P, depth, m, stk)
    n = 0
    for i in range(stk[LO, depth], stk[HI, depth]):
        v = value(P, stk[KIND, depth], i)
        if consistent(P, depth, v, m) and conflict(m, depth, v) < 0:
            if write:
                out[n, :depth] = prefix
                out[n, depth] = v
            n += 1
    return n


@njit(cache=True, parallel=True)
def expand(P, prefixes):
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
    stk = np.empty((STACK_ROWS, k), dtype=np.int64)
    n = 0
    for i in range(lo, hi):
        m[:depth] = prefixes[i]
        setup(P, depth, m, stk)
        if work is not None:
            work[0] += stk[HI, depth] - stk[LO, depth]
        for c in range(stk[LO, depth], stk[HI, depth]):
            v = value(P, stk[KIND, depth], c)
            if conflict(m, depth, v) < 0 and consistent(P, depth, v, m):
                if n == limit:
                    return limit + 1
                if write:
                    out[base + n, :depth] = m[:depth]
                    out[base + n, depth] = v
                n += 1
    return n


@njit(cache=True)
def expand_small(P, prefixes, cap, work=None):
    """:func:`expand` in one thread and one pass for small frontiers, or None as soon as the
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
    out, fits, _ = launch(_wide, P, prefixes, cap, blocks, slack, True)
    return out, bool(fits)


# frontier rows from which a host level is expanded by all threads (a parallel region costs
# ~10-30 us; one thread ~0.3 us a row)
WIDE_ROWS = 256


@njit(cache=True)
def narrow_levels(P, rows, cap, max_levels, wide_rows, prev, count_last, count_cap,
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
        rows, done, prev, stop, counted = narrow_levels(P, rows, cap, max_levels - levels,
                                                         wide_rows, prev, count_last, count_cap,
                                                         work_cap)
        levels += done
        if stop:
            last = int(counted) if counted >= 0 else None
            break
        n = rows.shape[0]
        blocks = max(1, min(n // 32, 8 * threads))
        if count_last and rows.shape[1] == k - 1:
            _, fits, size = launch(_wide, P, rows, count_cap, blocks, _SLACK, False)
            if fits:
                last, levels = int(size), levels + 1
            break
        wide, fits = expand_wide(P, rows, cap, blocks)
        if not fits:
            break
        prev, rows, levels = n, wide, levels + 1
    return (rows, levels, last) if count_last else (rows, levels)
