"""Candidate filtering (the "filter" stage of Sun & Luo's filter / order / enumerate split).

``cand[u, v]`` is True when data node v may host pattern node u in *some* match. Every rule here is
necessary, never heuristic, so filtering can only remove impossible pairs:

1. labels: the node-compatibility table from :mod:`nx_gsm.plan.labels`;
2. LDF: distinct out-/in-degree of v at least u's (equal for full isomorphism), self-loop count of v
   at least u's (equal for induced and isomorphism);
3. neighbourhood refinement to a fixpoint (GraphQL / arc consistency): for every pattern edge
   u -> w, v needs an out-neighbour x in cand[w] whose edge v -> x is compatible (multiplicity, edge
   label); in-edges likewise through the CSC.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["candidates"]


def candidates(G, H, mode, node_ok=None, loop_ok=None, eclass_G=None, eok=None, max_rounds=None):
    """Return the boolean candidate matrix (``H.n x G.n``) after all filters."""
    k, n = H.n, G.n
    cand = np.ones((k, n), dtype=bool) if node_ok is None else node_ok.copy()
    if loop_ok is not None:
        cand &= loop_ok
    dg_out, dh_out = G.out_degree(), H.out_degree()
    cmp = np.equal if mode == "iso" else np.greater_equal
    cand &= cmp(dg_out[None, :], dh_out[:, None])
    if G.directed:
        cand &= cmp(G.in_degree()[None, :], H.in_degree()[:, None])
    if mode == "mono":
        cand &= G.loops[None, :] >= H.loops[:, None]
    else:
        cand &= G.loops[None, :] == H.loops[:, None]
    if k == 0 or n == 0:
        return cand

    # one rule per pattern edge and direction: (target u, source w, pattern entry, in-list?)
    hrows = np.repeat(np.arange(k), dh_out)
    rules = []
    for pe in range(H.indices.size):
        u, w = int(hrows[pe]), int(H.indices[pe])
        rules.append((u, w, pe, 0))
        if G.directed:
            rules.append((w, u, pe, 1))
    if not rules:
        return cand
    rules = np.asarray(rules, dtype=np.int64)
    has_el = eok is not None
    in_cls = (eclass_G[G.in_pos] if G.directed else eclass_G) if has_el else np.zeros(1, np.int32)
    out_cls = eclass_G if has_el else np.zeros(1, np.int32)
    eok_a = np.ascontiguousarray(eok, dtype=np.uint8) if has_el else np.ones((1, 1), np.uint8)
    c8 = cand.view(np.uint8)
    rounds = max_rounds if max_rounds is not None else 2 * k + 2
    _refine(c8, rules, H.mult.astype(np.int32), G.indptr, G.indices, G.mult, G.in_indptr,
            G.in_indices, G.in_mult, out_cls, in_cls, eok_a, has_el,
            bool(G.multigraph or H.multigraph), mode == "mono", rounds)
    return cand


@njit(cache=True)
def _refine(cand, rules, hmult, indptr, indices, mult, in_indptr, in_indices, in_mult, out_cls,
            in_cls, eok, has_el, check_mult, mono, rounds):
    """Arc consistency to a fixpoint: drop v from cand[u] when no edge of v (in the rule's
    direction) reaches a candidate of w through a compatible edge. Scans stop at the first hit."""
    n = cand.shape[1]
    for _ in range(rounds):
        changed = False
        for r in range(rules.shape[0]):
            u, w, pe, incoming = rules[r, 0], rules[r, 1], rules[r, 2], rules[r, 3]
            need = hmult[pe]
            if incoming:
                ptr, idx, em, cls = in_indptr, in_indices, in_mult, in_cls
            else:
                ptr, idx, em, cls = indptr, indices, mult, out_cls
            for v in range(n):
                if cand[u, v] == 0:
                    continue
                ok = False
                for e in range(ptr[v], ptr[v + 1]):
                    if cand[w, idx[e]] == 0:
                        continue
                    if check_mult:
                        if mono:
                            if em[e] < need:
                                continue
                        elif em[e] != need:
                            continue
                    if has_el and eok[pe, cls[e]] == 0:
                        continue
                    ok = True
                    break
                if not ok:
                    cand[u, v] = 0
                    changed = True
        if not changed:
            break
