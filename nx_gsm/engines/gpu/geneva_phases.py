"""GENEVA's phase decomposition (Sec. 5.5, Alg. 8): the plan's order cut into runs of
pattern vertices matched together, each with its multi-vertex pattern id; the pattern's
2-core bounds the runs that hold core vertices (Sec. 6)."""

from __future__ import annotations

import numpy as np

__all__ = ["GROUP_MAX", "phase_plan"]

GROUP_MAX = 4  # most pattern vertices one phase matches (the kernels' local tuple size)


def _core(H):
    """Boolean mask of the pattern's 2-core (CFL decomposition, GENEVA Sec. 6: peel degree-1
    vertices; what remains is the core, the peeled vertices form trees)."""
    n = H.n
    nbrs = [set() for _ in range(n)]
    for indptr, indices in ((H.indptr, H.indices), (H.in_indptr, H.in_indices)):
        for u in range(n):
            for w in indices[indptr[u] : indptr[u + 1]]:
                if int(w) != u:
                    nbrs[u].add(int(w))
    deg = [len(s) for s in nbrs]
    alive = [True] * n
    stack = [u for u in range(n) if deg[u] <= 1]
    while stack:
        u = stack.pop()
        if not alive[u]:
            continue
        alive[u] = False
        for w in nbrs[u]:
            if alive[w]:
                deg[w] -= 1
                if deg[w] <= 1:
                    stack.append(w)
    return np.asarray(alive, dtype=bool)


def _pattern_id(plan, d0, g):
    """GENEVA's pattern number (Fig. 1 as reconstructed in the digest, Sec. 2.4) of a phase."""
    if g == 1:
        return 0
    srcs = []
    for d in range(d0, d0 + g):
        js = plan.drv_j[plan.drv_ptr[d] : plan.drv_ptr[d + 1]]
        srcs.append(set(int(j) for j in js if j < d0))
    one_source = bool(set.intersection(*srcs))
    us = plan.order[d0 : d0 + g]
    same_label = all(np.array_equal(plan.cand[us[0]], plan.cand[u]) for u in us[1:])
    if g == 2:
        if one_source:
            return 1 if same_label else 3
        return 2 if same_label else 4
    if one_source:
        return 5 if same_label else 6
    return 7


def phase_plan(plan, group_max=GROUP_MAX):
    """Cut the plan's order into GENEVA phases: a list of ``(first_depth, size, pattern)``.

    Depth 0 is the initial frontier (its candidates, GENEVA's first-phase source taken from the
    partition); every later phase matches ``size`` consecutive depths whose pattern vertices each
    have a backward neighbour before ``first_depth``. Phases touching the pattern's 2-core hold at
    most two vertices (Sec. 6); larger phases are preferred (Sec. 5.5 priority).

    Parameters
    ----------
    plan : MatchPlan
    group_max : int
        Largest phase (1 gives the paper's SV-match baseline); at most :data:`GROUP_MAX`.

    Examples
    --------
    >>> import networkx as nx
    >>> from nx_gsm.api import prepare
    >>> plan = prepare(nx.complete_graph(5), nx.star_graph(3), "mono")[0]
    >>> phase_plan(plan)
    [(1, 3, 5)]
    """
    group_max = max(1, min(int(group_max), GROUP_MAX))
    k = plan.k
    core = _core(plan.H) if k else np.zeros(0, dtype=bool)
    out = []
    d = 1
    while d < k:
        g = 1
        if plan.drv_ptr[d + 1] > plan.drv_ptr[d]:
            in_core = bool(core[plan.order[d]])
            while d + g < k and g < group_max:
                dd = d + g
                js = plan.drv_j[plan.drv_ptr[dd] : plan.drv_ptr[dd + 1]]
                if not (js < d).any():
                    break
                if (in_core or core[plan.order[dd]]) and g + 1 > 2:
                    break
                in_core = in_core or bool(core[plan.order[dd]])
                g += 1
        out.append((d, g, _pattern_id(plan, d, g)))
        d += g
    return out
