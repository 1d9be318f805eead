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

__all__ = ["candidates"]


def _edge_ok(G, H, mode, pe, eclass_G, eok, in_csc):
    """Mask over G's out-CSR (or in-CSR when ``in_csc``) entries that may host pattern entry pe."""
    need = int(H.mult[pe])
    gm = G.in_mult if in_csc else G.mult
    ok = None
    if need > 1 or G.multigraph:
        ok = gm >= need if mode == "mono" else gm == need
    if eok is not None:
        cls = eclass_G[G.in_pos] if (in_csc and G.directed) else eclass_G
        lab = eok[pe][cls]
        ok = lab if ok is None else ok & lab
    return ok


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

    rows_out = np.repeat(np.arange(n, dtype=np.int32), dg_out)
    rows_in = np.repeat(np.arange(n, dtype=np.int32), G.in_degree()) if G.directed else rows_out
    hrows = np.repeat(np.arange(k), dh_out)
    # (u, w, pattern entry, G entry mask) per pattern edge u -> w, computed once
    rules = []
    for pe in range(H.indices.size):
        u, w = int(hrows[pe]), int(H.indices[pe])
        rules.append((u, w, _edge_ok(G, H, mode, pe, eclass_G, eok, False), False))
        if G.directed:
            rules.append((w, u, _edge_ok(G, H, mode, pe, eclass_G, eok, True), True))
    rounds = max_rounds if max_rounds is not None else 2 * k + 2
    for _ in range(rounds):
        changed = False
        for u, w, emask, incoming in rules:
            if not cand[u].any():
                continue
            idx, rows = (G.in_indices, rows_in) if incoming else (G.indices, rows_out)
            hit = cand[w][idx]
            if emask is not None:
                hit &= emask
            support = np.bincount(rows[hit], minlength=n) > 0
            new = cand[u] & support
            if new.sum() != cand[u].sum():
                cand[u] = new
                changed = True
        if not changed:
            break
    return cand
