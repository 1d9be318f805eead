"""A count's last depth, counted from the depth before without being opened (the CPU search,
:func:`nx_gsm.engines.cpu.kernels.search`): how many entries of its local candidates no depth
holds, and the failing-set bits of the depths holding the others, from one list, two lists'
intersection or the AND of bit rows (:func:`~nx_gsm.engines.cpu.kernels.bit_rows`). Sun & Luo's
study counts the last level's valid candidates the same way instead of building each match
("In-Memory Subgraph Matching: An In-depth Study", SIGMOD 2020)."""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.extending import intrinsic

from ... import kernel_cache  # noqa: F401  (sets Numba's cache folder before @njit runs)

__all__ = ["position", "holder", "count_free", "count_pair", "count_bits", "row_start"]


@njit(cache=True, inline="always")
def position(vals, lo, hi, v):
    """Where v is in the sorted ``vals[lo:hi]``, or -1."""
    while lo < hi:
        mid = (lo + hi) >> 1
        t = vals[mid]
        if t < v:
            lo = mid + 1
        elif t > v:
            hi = mid
        else:
            return mid
    return -1


@njit(cache=True, inline="always")
def holder(used, v):
    """The depth holding v, or -1."""
    return np.int64(used[v]) - 1


@njit(cache=True, inline="always")
def count_pair(vals, a, a1, b, b1, used, anc):
    """How many entries of both sorted lists ``vals[a:a1]`` and ``vals[b:b1]`` no depth holds,
    and the failing-set bits of the depths holding the others."""
    got = 0
    fsx = 0
    if (b1 - b) > 32 * (a1 - a):
        for i in range(a, a1):
            x = vals[i]
            if position(vals, b, b1, x) >= 0:
                u = holder(used, x)
                if u < 0:
                    got += 1
                else:
                    fsx |= anc[u]
        return got, fsx
    while a < a1 and b < b1:
        x = vals[a]
        y = vals[b]
        if x == y:
            u = holder(used, x)
            if u < 0:
                got += 1
            else:
                fsx |= anc[u]
        a += x <= y
        b += y <= x
    return got, fsx


@njit(cache=True, inline="always")
def row_start(t, d, v, m, order, drv_j, cidx, bw_off, nw):
    """Where driver slot ``t``'s bit row (:func:`~nx_gsm.engines.cpu.kernels.bit_rows`) for
    the current partial match starts: its driver depth's image is ``v`` at depth ``d`` and
    ``m``'s entry above it."""
    j = drv_j[t]
    return bw_off[t] + np.int64(cidx[order[j], v if j == d else m[j]]) * nw


@intrinsic
def popcount(typingctx, x):
    """The number of set bits of an integer (LLVM's ctpop: one instruction on x86-64)."""
    def codegen(context, builder, signature, args):
        return builder.ctpop(args[0])

    return x(x), codegen


@njit(cache=True, inline="always")
def _and_word(d, v, m, order, t0, t1, drv_j, cidx, bw_off, bw, nw, wi, ra, rb):
    """Word ``wi`` of the AND of the last depth's driver rows
    (:func:`~nx_gsm.engines.cpu.kernels.bit_rows`), with ``v`` as depth ``d``'s image; the
    first two drivers' rows start at ``ra`` and ``rb``."""
    x = bw[ra + wi] & bw[rb + wi]
    for t in range(t0 + 2, t1):
        x &= bw[row_start(t, d, v, m, order, drv_j, cidx, bw_off, nw) + wi]
    return x


@njit(cache=True, inline="always")
def count_bits(d, v, m, order, drv_ptr, drv_j, cidx, bw_off, bw, nw, anc):
    """:func:`count_pair` for a last depth kept as bit rows, any number of drivers: the set
    bits of the rows' AND, less the nodes of depths ``0..d`` (``v`` at ``d``) among them, whose
    depths make the failing-set bits. One AND and popcount per word and a test per depth
    instead of a merge of lists (yeast sparse_8_41: 4 x 10^7 such counts)."""
    k = order.size
    u = order[k - 1]
    t0 = drv_ptr[k - 1]
    t1 = drv_ptr[k]
    # the first two drivers' rows' starts found once, not once per word (two is the common
    # case; each further driver's row is found per word)
    ra = row_start(t0, d, v, m, order, drv_j, cidx, bw_off, nw)
    rb = row_start(t0 + 1, d, v, m, order, drv_j, cidx, bw_off, nw)
    got = 0
    for wi in range(nw):
        got += popcount(_and_word(d, v, m, order, t0, t1, drv_j, cidx, bw_off, bw, nw, wi, ra,
                                  rb))
    fsx = 0
    if got == 0:
        return got, fsx
    for e in range(d + 1):
        c = np.int64(cidx[u, v if e == d else m[e]])
        if c >= 0 and (_and_word(d, v, m, order, t0, t1, drv_j, cidx, bw_off, bw, nw, c >> 6,
                                 ra, rb) >> (c & 63)) & 1:
            got -= 1
            fsx |= anc[e]
    return got, fsx


@njit(cache=True, inline="always")
def count_free(vals, a, a1, used, anc):
    """How many entries of ``vals[a:a1]`` no depth holds, and the failing-set bits of the depths
    holding the others."""
    got = 0
    fsx = 0
    for i in range(a, a1):
        u = holder(used, vals[i])
        if u < 0:
            got += 1
        else:
            fsx |= anc[u]
    return got, fsx
