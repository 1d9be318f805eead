"""Matching order (the "order" stage).

Greedy, connectivity-first (as RI / GraphQL / VF2++ do): start from the pattern node with the
fewest candidates per unit of degree, then repeatedly take the unordered node with the most
already-ordered neighbours, breaking ties by fewer candidates, then higher degree. A new connected
component starts again from its best root. Every node after a component's root therefore has a
backward neighbour whose image's adjacency list bounds its candidates.
"""

from __future__ import annotations

import numpy as np

__all__ = ["matching_order"]


def _undirected_neighbours(H):
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
    k = H.n
    nb = _undirected_neighbours(H)
    # plain Python numbers: the loop below reads them k^2 times (numpy scalars cost ~1 us each)
    deg = [float(len(s)) for s in nb]
    counts = np.asarray(cand_counts, dtype=np.float64).tolist()
    placed = [False] * k
    back = [0] * k
    order = []
    while len(order) < k:
        frontier = [u for u in range(k) if not placed[u] and back[u] > 0]
        if frontier:
            u = min(frontier, key=lambda x: (-back[x], counts[x], -deg[x], x))
        else:
            rest = [u for u in range(k) if not placed[u]]
            u = min(rest, key=lambda x: (counts[x] / max(deg[x], 1.0), -deg[x], x))
        placed[u] = True
        order.append(u)
        for w in nb[u]:
            back[w] += 1
    return np.asarray(order, dtype=np.int32)
