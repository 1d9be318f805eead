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

from .filter import edge_fits

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
def _cand_lists(cand):
    """Each pattern node's candidates, ascending, one list after another (flat, offsets), and
    ``cidx``: a candidate's position in its list, -1 elsewhere."""
    k, n = cand.shape
    off = np.zeros(k + 1, dtype=np.int64)
    for u in range(k):
        off[u + 1] = off[u] + np.count_nonzero(cand[u])
    flat = np.empty(off[k], dtype=np.int32)
    cidx = np.full((k, n), -1, dtype=np.int32)
    for u in range(k):
        c = 0
        for v in range(n):
            if cand[u, v]:
                cidx[u, v] = c
                flat[off[u] + c] = v
                c += 1
    return flat, off, cidx


@njit(cache=True)
def _slots(order, drv_ptr, drv_j, drv_pe, hmult, cand_off):
    """Per driver slot: the driving and the driven pattern node, the multiplicity it needs, and
    where its rows start (one row per candidate of the driving node)."""
    n_slots = drv_j.size
    w = np.empty(n_slots, dtype=np.int64)
    u = np.empty(n_slots, dtype=np.int64)
    need = np.empty(n_slots, dtype=np.int64)
    row_off = np.zeros(n_slots, dtype=np.int64)
    rows = 0
    for d in range(order.size):
        for t in range(drv_ptr[d], drv_ptr[d + 1]):
            w[t] = order[drv_j[t]]
            u[t] = order[d]
            need[t] = hmult[drv_pe[t]]
            row_off[t] = rows
            rows += cand_off[w[t] + 1] - cand_off[w[t]]
    return w, u, need, row_off, rows


@njit(cache=True)
def _slot_lists(slot_w, slot_u, slot_need, slot_pe, slot_dir, cand_bits, cand_flat, cand_off,
                ptr_o, idx_o, mult_o, cls_o, ptr_i, idx_i, mult_i, cls_i, eok, has_el,
                check_mult, mono, ptr, val, write):
    """Every slot's lists in one call (a call per slot cost ~10 us of argument checks each,
    most of a small plan's space): counts into ``ptr`` first, then, with ``write``, the
    candidates themselves into ``val`` at those offsets."""
    row = 0
    for t in range(slot_w.size):
        w, u, need, pe = slot_w[t], slot_u[t], slot_need[t], slot_pe[t]
        if slot_dir[t] == 0:
            ptr_g, idx_g, mult_g, cls_g = ptr_o, idx_o, mult_o, cls_o
        else:
            ptr_g, idx_g, mult_g, cls_g = ptr_i, idx_i, mult_i, cls_i
        for i in range(cand_off[w], cand_off[w + 1]):
            x = cand_flat[i]
            n = 0
            base = ptr[row]
            for e in range(ptr_g[x], ptr_g[x + 1]):
                v = idx_g[e]
                if (cand_bits[u, v >> 3] >> (v & 7)) & 1 == 0 or \
                        not edge_fits(mult_g, cls_g, e, need, pe, eok, check_mult, mono, has_el):
                    continue
                if write:
                    val[base + n] = v
                n += 1
            if not write:
                ptr[row + 1] = n
            row += 1


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
    cand_flat, cand_off, cidx = _cand_lists(plan.cand.view(np.uint8))
    slot_w, slot_u, slot_need, row_off, n_rows = _slots(
        plan.order, plan.drv_ptr, plan.drv_j, plan.drv_pe, H.mult, cand_off)
    has_el = plan.has_elabels
    out_cls = plan.eclass
    in_cls = (plan.eclass[G.in_pos] if G.directed else plan.eclass) if has_el else plan.eclass
    args = (slot_w, slot_u, slot_need, plan.drv_pe, plan.drv_dir, plan.cand_bits, cand_flat,
            cand_off, G.indptr, G.indices, G.mult, out_cls, G.in_indptr, G.in_indices,
            G.in_mult, in_cls, plan.eok, has_el, bool(G.multigraph or H.multigraph), plan.mono)
    ptr = np.zeros(n_rows + 1, dtype=np.int64)
    _slot_lists(*args, ptr, np.zeros(0, dtype=np.int32), False)
    np.cumsum(ptr, out=ptr)
    val = np.empty(int(ptr[-1]), dtype=np.int32)
    _slot_lists(*args, ptr, val, True)
    return CandidateSpace(cidx=cidx, row_off=row_off, ptr=ptr, val=val)
