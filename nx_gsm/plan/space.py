"""The candidate space: per driver edge, the candidate-to-candidate adjacency (CFL / DP-iso's CS).

For every driver slot ``t`` of the plan (depth d, earlier depth j, direction), with
``w = order[j]`` and ``u = order[d]``, and every candidate x of w, the space lists the candidates v
of u that x reaches through an edge compatible with the pattern edge (direction, multiplicity,
edge label), sorted. During the search, depth d then iterates ``CS[t][m[j]]`` instead of the whole
adjacency row of ``m[j]``: on labelled graphs a row is mostly other labels, and scanning it was
most of the search time (a hub row of 300 neighbours holding a handful of candidates).

Layout: ``cidx[w, x]`` = position of x in w's sorted candidate list (-1 if not a candidate);
slot t's rows start at ``row_off[t]`` in ``ptr``, so x's list is
``val[ptr[row_off[t] + cidx[w, x]] : ptr[row_off[t] + cidx[w, x] + 1]]``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

__all__ = ["CandidateSpace", "build_space"]


@dataclass
class CandidateSpace:
    cidx: np.ndarray  # int32, k x n
    row_off: np.ndarray  # int64, one per driver slot
    ptr: np.ndarray  # int64
    val: np.ndarray  # int32

    @property
    def nbytes(self):
        return self.cidx.nbytes + self.row_off.nbytes + self.ptr.nbytes + self.val.nbytes


@njit(cache=True)
def _slot_lists(x_list, u_bits, need, pe, ptr_g, idx_g, mult_g, cls_g, eok, has_el, check_mult,
                mono, counts, out, offs, write):
    for i in range(x_list.size):
        x = x_list[i]
        n = 0
        base = offs[i] if write else 0
        for e in range(ptr_g[x], ptr_g[x + 1]):
            v = idx_g[e]
            if (u_bits[v >> 3] >> (v & 7)) & 1 == 0:
                continue
            if check_mult:
                if mono:
                    if mult_g[e] < need:
                        continue
                elif mult_g[e] != need:
                    continue
            if has_el and eok[pe, cls_g[e]] == 0:
                continue
            if write:
                out[base + n] = v
            n += 1
        if not write:
            counts[i] = n



def build_space(plan):
    """The CandidateSpace of a plan (NumPy + Numba; cost ~ sum of candidate degrees).

    Built once per plan object and kept on it: the planner's probe and estimate, the CPU engine
    and gmatch's output sizing all read it, and a plan is never changed in place (``reorder``
    and the partitioned engine make new plans, which build their own).
    """
    cached = plan.__dict__.get("_space")
    if cached is None:
        cached = plan.__dict__["_space"] = _build_space(plan)
    return cached


def _build_space(plan):
    G, H = plan.G, plan.H
    k, n = plan.k, G.n
    cand_lists = [np.flatnonzero(plan.cand[u]).astype(np.int32) for u in range(k)]
    cidx = np.full((k, n), -1, dtype=np.int32)
    for u, lst in enumerate(cand_lists):
        cidx[u, lst] = np.arange(lst.size, dtype=np.int32)
    n_slots = plan.drv_j.size
    slot_depth = np.repeat(np.arange(k), np.diff(plan.drv_ptr))
    row_off = np.zeros(n_slots, dtype=np.int64)
    ptr_parts, val_parts = [np.zeros(1, dtype=np.int64)], []
    has_el = plan.has_elabels
    out_cls = plan.eclass
    in_cls = (plan.eclass[G.in_pos] if G.directed else plan.eclass) if has_el else plan.eclass
    check_mult = bool(G.multigraph or H.multigraph)
    total = 0
    rows_so_far = 0
    for t in range(n_slots):
        w = int(plan.order[plan.drv_j[t]])
        u = int(plan.order[slot_depth[t]])
        pe = int(plan.drv_pe[t])
        if plan.drv_dir[t] == 0:
            ptr_g, idx_g, mult_g, cls_g = G.indptr, G.indices, G.mult, out_cls
        else:
            ptr_g, idx_g, mult_g, cls_g = G.in_indptr, G.in_indices, G.in_mult, in_cls
        xs = cand_lists[w]
        counts = np.zeros(xs.size, dtype=np.int64)
        dummy = np.zeros(1, dtype=np.int32)
        args = (xs, plan.cand_bits[u], int(H.mult[pe]), pe, ptr_g, idx_g, mult_g, cls_g,
                plan.eok, has_el, check_mult, plan.mono)
        _slot_lists(*args, counts, dummy, counts, False)
        offs = np.zeros(xs.size + 1, dtype=np.int64)
        np.cumsum(counts, out=offs[1:])
        vals = np.empty(int(offs[-1]), dtype=np.int32)
        _slot_lists(*args, counts, vals, offs, True)
        row_off[t] = rows_so_far
        ptr_parts.append(offs[1:] + total)
        val_parts.append(vals)
        total += int(offs[-1])
        rows_so_far += xs.size
    ptr = np.concatenate(ptr_parts)
    val = np.concatenate(val_parts) if val_parts else np.zeros(0, dtype=np.int32)
    return CandidateSpace(cidx=cidx, row_off=row_off, ptr=ptr, val=val)
