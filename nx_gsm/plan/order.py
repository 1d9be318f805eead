"""Matching order (the "order" stage), selectable by name as in Sun & Luo's study code.

Every order here is connectivity-first: each node after a connected component's root has an
already-ordered neighbour, whose image's candidate-space list bounds its local candidates. A new
component starts again from its best root. Directed patterns are ordered on their undirected
neighbours. The orders (:data:`ORDERS`):

``"gql"``
    GraphQL (He & Singh, SIGMOD 2008; Sun & Luo's ``generateGQLQueryPlan``): the root is the
    node with the fewest candidates, then repeatedly the frontier node (unordered, adjacent to an
    ordered one) with the fewest candidates; ties by higher degree, then lower id.
``"ri"``
    RI (Bonnici et al., BMC Bioinformatics 2013; the study's ``generateRIQueryPlan``), structure
    only: the root has the highest degree, then the node with the most ordered neighbours; ties by
    the number of ordered nodes that share an unordered neighbour with it, then by its unordered
    neighbours that no ordered node touches, then lower id.
``"greedy"``
    The most ordered neighbours first (as RI), ties by fewer candidates, then higher degree; the
    root by candidates per unit of degree.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .. import kernel_cache  # noqa: F401  (sets Numba's cache folder before @njit runs)

__all__ = ["matching_order", "ORDERS", "DEFAULT_ORDER"]

ORDERS = ("gql", "ri", "greedy")
DEFAULT_ORDER = "greedy"


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


def matching_order(H, cand_counts, method=None):
    """Return the pattern node ids in matching order (int32 array), by the order named
    ``method`` (one of :data:`ORDERS`; default :data:`DEFAULT_ORDER`)."""
    method = DEFAULT_ORDER if method is None else method
    if method not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {method!r}")
    counts = np.ascontiguousarray(np.asarray(cand_counts), dtype=np.float64)
    if counts.size != H.n:
        raise ValueError(f"cand_counts has {counts.size} entries for {H.n} pattern nodes")
    adj = _adjacency(H.n, np.ascontiguousarray(H.indptr, dtype=np.int64),
                     np.ascontiguousarray(H.indices, dtype=np.int64))
    if method == "greedy":
        return _greedy_order(adj, counts)
    np.fill_diagonal(adj, False)  # (GraphQL and RI are defined on simple graphs)
    return _gql_order(adj, counts) if method == "gql" else _ri_order(adj)


@njit(cache=True)
def _adjacency(k, indptr, indices):
    """The pattern's distinct undirected neighbours as a k x k matrix (a self-loop makes a
    node its own neighbour: ``"greedy"`` counts it in the degree)."""
    adj = np.zeros((k, k), dtype=np.bool_)
    for u in range(k):
        for e in range(indptr[u], indptr[u + 1]):
            w = indices[e]
            adj[u, w] = True
            adj[w, u] = True
    return adj


@njit(cache=True)
def _degrees(adj):
    k = adj.shape[0]
    deg = np.zeros(k, dtype=np.float64)
    for u in range(k):
        for w in range(k):
            if adj[u, w]:
                deg[u] += 1.0
    return deg


@njit(cache=True)
def _gql_order(adj, counts):
    """GraphQL's order (see the module docstring): the frontier's node with the fewest
    candidates, ties by higher degree, lower id; a component's root likewise among all."""
    k = adj.shape[0]
    deg = _degrees(adj)
    placed = np.zeros(k, dtype=np.bool_)
    near = np.zeros(k, dtype=np.bool_)
    order = np.empty(k, dtype=np.int32)
    for step in range(k):
        best = -1
        for x in range(k):
            if placed[x] or not near[x]:
                continue
            if best < 0 or counts[x] < counts[best] or (counts[x] == counts[best] and
                                                         deg[x] > deg[best]):
                best = x
        if best < 0:  # a new component's root
            for x in range(k):
                if placed[x]:
                    continue
                if best < 0 or counts[x] < counts[best] or (counts[x] == counts[best] and
                                                             deg[x] > deg[best]):
                    best = x
        placed[best] = True
        order[step] = best
        for w in range(k):
            if adj[best, w]:
                near[w] = True
    return order


@njit(cache=True)
def _ri_order(adj):
    """RI's order (see the module docstring), on structure alone."""
    k = adj.shape[0]
    deg = _degrees(adj)
    placed = np.zeros(k, dtype=np.bool_)
    back = np.zeros(k, dtype=np.int64)  # ordered neighbours
    touched = np.zeros(k, dtype=np.bool_)  # adjacent to an ordered node
    order = np.empty(k, dtype=np.int32)
    for step in range(k):
        best = -1
        best_key = np.zeros(3, dtype=np.int64)
        for x in range(k):
            if placed[x]:
                continue
            key0 = back[x]
            if step == 0:
                key0 = np.int64(deg[x])
            if best >= 0 and key0 < best_key[0]:
                continue
            # ordered nodes sharing an unordered neighbour with x; x's unordered neighbours
            # that no ordered node touches
            key1 = 0
            key2 = 0
            if step > 0:
                for j in range(step):
                    y = order[j]
                    for w in range(k):
                        if adj[x, w] and not placed[w] and adj[y, w]:
                            key1 += 1
                            break
                for w in range(k):
                    if adj[x, w] and not placed[w] and not touched[w]:
                        key2 += 1
            if best < 0 or key0 > best_key[0] or (key0 == best_key[0] and (
                    key1 > best_key[1] or (key1 == best_key[1] and key2 > best_key[2]))):
                best = x
                best_key[0], best_key[1], best_key[2] = key0, key1, key2
        placed[best] = True
        order[step] = best
        touched[best] = True
        for w in range(k):
            if adj[best, w]:
                back[w] += 1
                touched[w] = True
    return order


@njit(cache=True)
def _greedy_order(adj, counts):
    """The ``"greedy"`` rule over the pattern's distinct undirected neighbours (its k x k
    matrix; the Python loop this replaces took ~100 us of a 16-node plan): the frontier's node
    with the most placed neighbours, then fewer candidates, higher degree, lower id; a
    component's root by candidates per unit of degree, then higher degree, lower id."""
    k = adj.shape[0]
    deg = _degrees(adj)
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
