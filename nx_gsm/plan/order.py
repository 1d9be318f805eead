"""Matching order (the "order" stage).

Greedy, connectivity-first (as RI / GraphQL / VF2++ do): start from the pattern node with the
fewest candidates per unit of degree, then repeatedly take the unordered node with the most
already-ordered neighbours, breaking ties by fewer candidates, then higher degree. A new connected
component starts again from its best root. Every node after a component's root therefore has a
backward neighbour whose image's adjacency list bounds its candidates.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .. import kernel_cache  # noqa: F401  (sets Numba's cache folder before @njit runs)

__all__ = ["matching_order"]


def undirected_neighbours(H):
    # rows walked through the row pointers: a pattern has a few dozen entries, where
    # building the entries' sources with NumPy cost more than the loop (~20 us per plan)
    nb = [set() for _ in range(H.n)]
    ptr, idx = H.indptr.tolist(), H.indices.tolist()
    for u in range(H.n):
        for w in idx[ptr[u]:ptr[u + 1]]:
            nb[u].add(w)
            nb[w].add(u)
    return nb


def matching_order(H, cand_counts):
    """Return the pattern node ids in matching order (int32 array)."""
    counts = np.ascontiguousarray(np.asarray(cand_counts), dtype=np.float64)
    if counts.size != H.n:
        raise ValueError(f"cand_counts has {counts.size} entries for {H.n} pattern nodes")
    return _greedy_order(H.n, np.ascontiguousarray(H.indptr, dtype=np.int64),
                         np.ascontiguousarray(H.indices, dtype=np.int64), counts)


@njit(cache=True)
def _greedy_order(k, indptr, indices, counts):
    """The module's rule over the pattern's distinct undirected neighbours (its k x k matrix;
    the Python loop this replaces took ~100 us of a 16-node plan): the frontier's node with
    the most placed neighbours, then fewer candidates, higher degree, lower id; a component's
    root by candidates per unit of degree, then higher degree, lower id."""
    adj = np.zeros((k, k), dtype=np.bool_)
    for u in range(k):
        for e in range(indptr[u], indptr[u + 1]):
            w = indices[e]
            adj[u, w] = True
            adj[w, u] = True
    deg = np.zeros(k, dtype=np.float64)
    for u in range(k):
        for w in range(k):
            if adj[u, w]:
                deg[u] += 1.0
    placed = np.zeros(k, dtype=np.bool_)
    back = np.zeros(k, dtype=np.int64)
    order = np.empty(k, dtype=np.int32)
    for step in range(k):
        best = -1
        for x in range(k):  # the frontier
            if placed[x] or back[x] == 0:
                continue
            if best < 0 or back[x] > back[best] or (back[x] == back[best] and (
                    counts[x] < counts[best] or (counts[x] == counts[best] and
                                                 deg[x] > deg[best]))):
                best = x
        if best < 0:  # a new component's root
            kb = 0.0
            for x in range(k):
                if placed[x]:
                    continue
                kx = counts[x] / max(deg[x], 1.0)
                if best < 0 or kx < kb or (kx == kb and deg[x] > deg[best]):
                    best, kb = x, kx
        placed[best] = True
        order[step] = best
        for w in range(k):
            if adj[best, w]:
                back[w] += 1
    return order
