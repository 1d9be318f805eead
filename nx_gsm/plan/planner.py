"""The query planner: GsmGraph pair + semantics -> MatchPlan (the arrays every engine runs on).

A MatchPlan fixes *what* is searched (mode, candidates, the per-depth checks) and never *how*;
engines read only its arrays. Depth ``d`` of the search maps pattern node ``order[d]``.

Per depth ``d`` the plan lists

* checks ``chk_ptr[d]:chk_ptr[d+1]`` against earlier depths ``j``: the pattern multiplicity of
  ``order[j] -> order[d]`` (``chk_out``) and of ``order[d] -> order[j]`` (``chk_in``, directed only),
  with the pattern edge positions for edge-label tests (``chk_peo``/``chk_pei``, -1 if no edge). In
  mono mode only pattern-adjacent ``j`` are listed (a missing pattern edge constrains nothing); in
  induced/iso mode every ``j`` is listed, since an absent pattern edge forbids a data edge;
* drivers ``drv_ptr[d]:drv_ptr[d+1]``: ``(j, dir)`` pairs whose adjacency list of ``m[j]``
  (``dir`` 0 = out-list, 1 = in-list) contains every candidate; the engine iterates the shortest.
  ``drv_pe`` is the pattern edge behind each driver (its multiplicity and label).
  Depths with no driver iterate their candidate list ``cand_flat[cand_ptr[d]:cand_ptr[d+1]]``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace

import numpy as np
from numba import njit

from .. import kernel_cache  # noqa: F401  (sets Numba's cache folder before @njit runs)
from . import filter as _filter
from .labels import NODE_CLASSES, compat_table, value_table
from .order import DEFAULT_ORDER, ORDERS, matching_order

__all__ = ["MatchPlan", "make_plan", "reorder", "MODES", "FILTERS", "DEFAULT_FILTER", "ORDERS",
           "DEFAULT_ORDER"]

MODES = ("mono", "induced", "iso")
# the filter stages by name (see nx_gsm.plan.filter): "ldf" keeps the labels, degrees and
# self-loop counts; "ac" refines those to arc consistency (GraphQL's neighbourhood rule, to its
# fixpoint)
FILTERS = ("ac", "ldf")
DEFAULT_FILTER = "ac"


@dataclass
class MatchPlan:
    mode: str
    G: object
    H: object
    order: np.ndarray
    cand: np.ndarray  # bool, H.n x G.n, by pattern id
    cand_bits: np.ndarray  # uint8, packed little-endian bits of cand
    cand_ptr: np.ndarray
    cand_flat: np.ndarray
    chk_ptr: np.ndarray
    chk_j: np.ndarray
    chk_out: np.ndarray
    chk_in: np.ndarray
    chk_peo: np.ndarray
    chk_pei: np.ndarray
    drv_ptr: np.ndarray
    drv_j: np.ndarray
    drv_dir: np.ndarray
    drv_pe: np.ndarray  # pattern out-CSR position of the driver's edge
    eclass: np.ndarray  # int32 per G out-CSR entry (zeros without edge labels)
    eok: np.ndarray  # uint8, pattern entries x edge classes (1x1 without edge labels)
    has_elabels: bool
    empty: bool  # no match can exist (known at plan time)
    notes: list = field(default_factory=list)
    # the stages that made the plan: {"filter": name, "order": name, "seconds": {stage: s}}
    stages: dict = field(default_factory=dict)

    @property
    def k(self):
        return int(self.order.size)

    @property
    def mono(self):
        return self.mode == "mono"

    def candidate_counts(self):
        return self.cand.sum(axis=1)

    def __getstate__(self):
        # a GPU engine's packed image of the plan names a device layout of this process
        # (gmatch's kept slots): a pickle, e.g. for a Dask worker, leaves it behind
        state = self.__dict__.copy()
        state.pop("_slot_image", None)
        return state


def _node_tables(G, H, node_match, node_label, default_label, data_keys=None, allowed=None):
    """``(data class per node of G, ok[pattern node, class])`` or None (no node constraint).
    ``allowed``: :func:`~nx_gsm.plan.labels.compat_table`'s."""
    if node_label is not None:
        gl = [d.get(node_label, default_label) for d in G.node_data or [{}] * G.n]
        hl = [d.get(node_label, default_label) for d in H.node_data or [{}] * H.n]
        return value_table(gl, hl)
    if node_match is None:
        return None
    if G.node_data is None or H.node_data is None:
        raise ValueError("node_match given but the graphs were converted without node attributes")
    # the data graph's classes are kept beside it for the next pattern (checked against the
    # current attribute values each time, so in-place edits are seen)
    cache = getattr(G, "__networkx_cache__", None)
    kept = cache.setdefault(NODE_CLASSES, {}) if isinstance(cache, dict) else None
    return compat_table(node_match, G.node_data, H.node_data, kept, data_keys, allowed)


def _by_class(cand, dcls, nc):
    """``need[u, c]``: some data item of class ``c`` is in ``cand[u]`` (pattern x data items)."""
    need = np.zeros((cand.shape[0], nc), dtype=bool)
    for u, row in enumerate(cand):
        need[u, dcls[row]] = True
    return need


@njit(cache=True)
def _edge_need(cand, h_ptr, h_idx, h_mult, g_ptr, g_idx, g_mult, ecls, nc, check_mult, mono):
    """``need[pe, c]``: some data edge ``v -> x`` of class ``c`` has ``v`` in the candidates of
    pattern entry ``pe``'s source, ``x`` in its target's, and a multiplicity that fits."""
    k, n = cand.shape
    need = np.zeros((h_idx.size, nc), dtype=np.bool_)
    for u in range(k):
        for pe in range(h_ptr[u], h_ptr[u + 1]):
            w, m = h_idx[pe], h_mult[pe]
            for v in range(n):
                if not cand[u, v]:
                    continue
                for e in range(g_ptr[v], g_ptr[v + 1]):
                    if cand[w, g_idx[e]] and not (
                            check_mult and (g_mult[e] < m if mono else g_mult[e] != m)):
                        need[pe, ecls[e]] = True
    return need


def _edge_tables(G, H, edge_match, mode, cand_of):
    """(eclass per G out-entry, eok per H out-entry x class, loop_ok H.n x G.n or None).
    ``cand_of()``: the candidates so far, by which ``edge_match`` is asked about an edge pair
    only when both ends may match and the multiplicity fits (see ``compat_table``'s
    ``allowed``)."""
    if edge_match is None:
        return None, None, None
    if G.edge_data is None or H.edge_data is None:
        raise ValueError("edge_match given but the graphs were converted without edge attributes")
    check_mult = bool(G.multigraph or H.multigraph)

    def edges_allowed(ecls, nc):
        return _edge_need(cand_of(), H.indptr, H.indices, H.mult.astype(np.int32), G.indptr,
                          G.indices, G.mult, ecls, nc, check_mult, mode == "mono")

    eclass, eok = compat_table(edge_match, G.edge_data, H.edge_data, allowed=edges_allowed)
    loop_ok = None
    hl = np.flatnonzero(H.loops)
    if hl.size:
        loop_ok = np.ones((H.n, G.n), dtype=bool)
        gl = np.flatnonzero(G.loops)
        # the loop counts were compared with the candidates (the local rule)
        gcls, lok = compat_table(
            edge_match, [G.loop_data[int(v)] for v in gl], [H.loop_data[int(u)] for u in hl],
            allowed=lambda dcls, nc: _by_class(cand_of()[np.ix_(hl, gl)], dcls, nc))
        for i, u in enumerate(hl):
            loop_ok[u, :] = False
            loop_ok[u, gl] = lok[i, gcls] if gl.size else False
    return eclass, eok, loop_ok


class _Once:
    """A value computed on first use (the structural candidates a callable's table needs, never
    worked out for the recognised helpers' tables)."""

    def __init__(self, fn):
        self._fn, self._done, self._value = fn, False, None

    def __call__(self):
        if not self._done:
            self._value, self._done = self._fn(), True
        return self._value


@njit(cache=True)
def _checks(indptr, indices, mult, order, directed, mono):
    """:func:`depth_arrays`' checks and drivers, in one compiled pass over the depth pairs (a
    Python loop of list appends was ~0.1 ms of an 8-node plan, most of its planning after the
    filter)."""
    k = order.size
    pos = np.full((k, k), -1, dtype=np.int64)  # the out-CSR position of every pair (-1: none)
    for a in range(k):
        for e in range(indptr[a], indptr[a + 1]):
            pos[a, indices[e]] = e
    pairs = k * (k - 1) // 2
    chk_ptr = np.zeros(k + 1, dtype=np.int32)
    drv_ptr = np.zeros(k + 1, dtype=np.int32)
    chk = np.empty((5, pairs), dtype=np.int32)  # j, out, in, peo, pei
    drv = np.empty((3, 2 * pairs), dtype=np.int32)  # j, dir, pe
    c = r = 0
    for d in range(k):
        u = order[d]
        for j in range(d):
            w = order[j]
            peo = pos[w, u]
            pei = pos[u, w] if directed else peo
            need_out = mult[peo] if peo >= 0 else 0
            need_in = mult[pei] if pei >= 0 else 0
            if need_out != 0 or need_in != 0 or not mono:
                chk[0, c], chk[1, c], chk[2, c], chk[3, c], chk[4, c] = \
                    j, need_out, need_in, peo, pei
                c += 1
            if need_out != 0:
                drv[0, r], drv[1, r], drv[2, r] = j, 0, peo
                r += 1
            if directed and need_in != 0:
                drv[0, r], drv[1, r], drv[2, r] = j, 1, pei
                r += 1
        chk_ptr[d + 1] = c
        drv_ptr[d + 1] = r
    return (chk_ptr, chk[0, :c].copy(), chk[1, :c].copy(), chk[2, :c].copy(), chk[3, :c].copy(),
            chk[4, :c].copy(), drv_ptr, drv[0, :r].copy(), drv[1, :r].copy(), drv[2, :r].copy())


def depth_arrays(H, cand, order, mode):
    """The per-depth checks, drivers and candidate lists of matching order ``order``."""
    order = np.ascontiguousarray(order, dtype=np.int32)
    got = _checks(H.indptr, H.indices, H.mult, order, bool(H.directed), mode == "mono")
    drv_ptr = got[6]
    cand_ptr, cand_flat = [0], []
    for d, (a, b) in enumerate(zip(drv_ptr[:-1].tolist(), drv_ptr[1:].tolist())):
        size = 0
        if a == b:  # no driver: the depth iterates its candidate list
            cand_flat.append(np.flatnonzero(cand[order[d]]).astype(np.int32))
            size = cand_flat[-1].size
        cand_ptr.append(cand_ptr[-1] + size)
    flat = np.concatenate(cand_flat) if cand_flat else np.zeros(0, dtype=np.int32)
    names = ("chk_ptr", "chk_j", "chk_out", "chk_in", "chk_peo", "chk_pei", "drv_ptr", "drv_j",
             "drv_dir", "drv_pe")
    return dict(cand_ptr=np.asarray(cand_ptr, dtype=np.int64), cand_flat=flat,
                **dict(zip(names, got)))


def reorder(plan, order, cand=None):
    """A copy of ``plan`` searching in matching ``order`` (and with candidate matrix ``cand``).

    Same matches, another search: PBE's search sequences start at a chosen pattern edge, and a
    distributed task restricts the root's candidates. Every order must keep each depth after a
    component's first node adjacent to an earlier one for the drivers to bound the search (any
    order is still exact).
    """
    cand = plan.cand if cand is None else cand
    order = np.asarray(order, dtype=np.int32)
    bits = np.packbits(cand, axis=1, bitorder="little") if cand.size else plan.cand_bits
    return replace(plan, order=order, cand=cand, cand_bits=bits,
                   stages={**plan.stages, "order_fixed": True},
                   **depth_arrays(plan.H, cand, order, plan.mode))


def check_stages(filter=None, order=None):
    """``(filter, order)``: the stage names, defaults filled in, checked against
    :data:`FILTERS` and :data:`ORDERS`."""
    filter = DEFAULT_FILTER if filter is None else filter
    order = DEFAULT_ORDER if order is None else order
    if filter not in FILTERS:
        raise ValueError(f"filter must be one of {FILTERS}, got {filter!r}")
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    return filter, order


def make_plan(G, H, mode, *, node_match=None, edge_match=None, node_label=None,
              default_label=None, anchors=None, data_keys=None, filter=None, order=None):
    """Build the MatchPlan for mappings of pattern ``H`` into data ``G``.

    ``mode`` is ``"mono"`` (non-induced), ``"induced"`` (node-induced subgraph isomorphism) or
    ``"iso"`` (full isomorphism: induced with ``|G| == |H|``). ``anchors`` (optional) maps pattern
    node ids to the only data node id each may take (incremental matching pins updated edges).
    ``data_keys``: the key of ``node_match`` (a recognised helper) for every node of G, when
    the caller has read them already and found them plain (see
    :func:`~nx_gsm.plan.labels.compat_table`).
    ``filter`` and ``order`` name the filter and order stages (:data:`FILTERS`,
    :data:`ORDERS`; defaults :data:`DEFAULT_FILTER`, :data:`DEFAULT_ORDER`): every choice
    gives the same matches, only the search differs. The plan's ``stages`` records the names
    and each stage's seconds.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, got {mode!r}")
    if G.directed != H.directed:
        raise ValueError("G and H must have the same directedness")
    filter, order_name = check_stages(filter, order)
    order_fixed = order is not None
    rounds = 0 if filter == "ldf" else None
    t0 = time.perf_counter()
    notes = []
    anchor_ok = None
    if anchors:
        anchor_ok = np.ones((H.n, G.n), dtype=bool)
        for u, v in anchors.items():
            anchor_ok[u, :] = False
            anchor_ok[u, v] = True
    no_match = mode == "iso" and G.n != H.n

    def structural(node_ok=None):
        # a callable is asked only about pairs these checks leave (VF2 asks only about pairs
        # that pass its syntactic checks), so one that raises on an impossible pair does not
        # break a search VF2 completes
        ok = anchor_ok if node_ok is None else node_ok if anchor_ok is None else \
            node_ok & anchor_ok
        cand = None if no_match else _filter.candidates(G, H, mode, ok, max_rounds=rounds)
        # a pattern node without a candidate leaves no mapping, so no pair is asked about
        return cand if cand is not None and cand.any(axis=1).all() else \
            np.zeros((H.n, G.n), dtype=bool)

    struct = _Once(structural)
    node_cls = _node_tables(G, H, node_match, node_label, default_label, data_keys,
                            allowed=lambda dcls, nc: _by_class(struct(), dcls, nc))
    node_ok = None
    if anchor_ok is not None:
        node_ok = anchor_ok if node_cls is None else _filter.label_matrix(node_cls) & anchor_ok
        node_cls = None
    labelled = _Once(lambda: structural(
        node_ok if node_cls is None else _filter.label_matrix(node_cls)))
    eclass, eok, loop_ok = _edge_tables(G, H, edge_match, mode, labelled)
    t1 = time.perf_counter()
    if no_match:
        notes.append("isomorphism: node counts differ")
        cand = np.zeros((H.n, G.n), dtype=bool)
        counts = np.zeros(H.n, dtype=np.int64)
    else:
        cand, counts = _filter.candidates(G, H, mode, node_ok, loop_ok, eclass, eok,
                                          node_cls=node_cls, with_counts=True,
                                          max_rounds=rounds)
    empty = bool(H.n > G.n or (H.n and counts.min() == 0) or (mode == "iso" and G.n != H.n))
    t2 = time.perf_counter()
    order = matching_order(H, counts, order_name)
    t3 = time.perf_counter()
    k = H.n
    arrays = depth_arrays(H, cand, order, mode)
    has_el = eok is not None
    t4 = time.perf_counter()
    # order_fixed: the caller named the order (a CPU count may otherwise take another, see
    # nx_gsm.engines.cpu.engine.other_order)
    stages = {"filter": filter, "order": order_name, "order_fixed": order_fixed,
              "candidates": int(counts.sum()),
              "seconds": {"labels": t1 - t0, "filter": t2 - t1, "order": t3 - t2,
                          "depths": t4 - t3}}
    return MatchPlan(
        mode=mode,
        G=G,
        H=H,
        order=order,
        cand=cand,
        cand_bits=np.packbits(cand, axis=1, bitorder="little") if cand.size else
        np.zeros((k, 1), dtype=np.uint8),
        **arrays,
        eclass=eclass if has_el else np.zeros(G.indices.size, dtype=np.int32),
        eok=np.ascontiguousarray(eok, dtype=np.uint8) if has_el else np.ones((1, 1), np.uint8),
        has_elabels=has_el,
        empty=empty,
        notes=notes,
        stages=stages,
    )
