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
    nb = [set() for _ in range(H.n)]
    for u in range(H.n):
        for w in H.indices[H.indptr[u] : H.indptr[u + 1]]:
            nb[u].add(int(w))
            nb[int(w)].add(u)
    return nb


def matching_order(H, cand_counts):
    """Return the pattern node ids in matching order (int32 array)."""
    k = H.n
    nb = _undirected_neighbours(H)
    deg = np.array([len(s) for s in nb], dtype=np.float64)
    counts = np.asarray(cand_counts, dtype=np.float64)
    placed = np.zeros(k, dtype=bool)
    back = np.zeros(k, dtype=np.int64)
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
