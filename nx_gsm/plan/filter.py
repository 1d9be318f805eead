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

from .. import kernel_cache  # noqa: F401  (sets Numba's cache folder before @njit runs)

__all__ = ["candidates", "label_matrix"]


def label_matrix(node_cls):
    """The label rule ``node_cls = (class per data node, ok[pattern node, class])`` as the
    ``H.n x G.n`` boolean matrix (for the uses that edit it or combine it per node)."""
    dcls, ok = node_cls
    return ok[:, dcls]


def candidates(G, H, mode, node_ok=None, loop_ok=None, eclass_G=None, eok=None, max_rounds=None,
               node_cls=None, with_counts=False):
    """Return the boolean candidate matrix (``H.n x G.n``) after all filters, and with
    ``with_counts`` each pattern node's number of candidates (int64; the filter keeps them, a
    second pass over the matrix is not needed). The label rule comes as a matrix ``node_ok``
    or as ``node_cls = (class per data node, ok[pattern node, class])``, read in the first
    pass without building the matrix (on a large data graph that matrix and its copy were two
    ``H.n x G.n`` temporaries)."""
    k, n = H.n, G.n
    if node_cls is not None and loop_ok is not None:  # (self-loop labels: rare)
        node_ok, node_cls = label_matrix(node_cls), None
    if node_cls is None:
        cand = np.ones((k, n), dtype=bool) if node_ok is None else node_ok.copy()
        if loop_ok is not None:
            cand &= loop_ok
        dcls, ok = np.zeros(1, dtype=np.int32), np.zeros((1, 1), dtype=np.uint8)
    else:
        cand = np.zeros((k, n), dtype=bool)
        dcls = np.ascontiguousarray(node_cls[0], dtype=np.int32)
        ok = np.ascontiguousarray(node_cls[1], dtype=bool).view(np.uint8)
    c8 = cand.view(np.uint8)
    counts = np.zeros(k, dtype=np.int64)
    args = (c8, node_cls is not None, dcls, ok, G.indptr, H.indptr, G.in_indptr, H.in_indptr,
            G.loops, H.loops, mode == "iso", G.directed, mode == "mono", counts)
    if node_cls is None:
        _local(*args)
        given = np.zeros(0, dtype=np.int32), np.zeros(k + 1, dtype=np.int64)
    else:
        given = _local_classes(*args)
    if k == 0 or n == 0 or H.indices.size == 0:
        return (cand, counts) if with_counts else cand
    has_el = eok is not None
    rounds = max_rounds if max_rounds is not None else 2 * k + 2
    # each pattern node's candidates as a list, when the lists take fewer bytes than the matrix:
    # on labelled data a rule then visits its ~n / labels candidates instead of all n nodes
    lists = int(counts.sum()) * 4 <= cand.size
    check_mult = bool(G.multigraph or H.multigraph)
    if not (has_el or check_mult):
        # any edge supports a rule: one pass over the source's candidates' rows marks every
        # node they reach, for all the rules of that source at once
        _refine_marks(c8, H.indptr, H.indices, H.in_indptr, H.in_indices, G.directed, G.indptr,
                      G.indices, G.in_indptr, G.in_indices, rounds, lists, counts, *given)
        return (cand, counts) if with_counts else cand
    in_cls = (eclass_G[G.in_pos] if G.directed else eclass_G) if has_el else np.zeros(1, np.int32)
    out_cls = eclass_G if has_el else np.zeros(1, np.int32)
    eok_a = np.ascontiguousarray(eok, dtype=np.uint8) if has_el else np.ones((1, 1), np.uint8)
    _refine(c8, H.indptr, H.indices, G.directed, H.mult.astype(np.int32), G.indptr, G.indices,
            G.mult, G.in_indptr, G.in_indices, G.in_mult, out_cls, in_cls, eok_a, has_el,
            check_mult, mode == "mono", rounds, lists, counts, *given)
    return (cand, counts) if with_counts else cand


@njit(cache=True, inline="always")
def edge_fits(mult, cls, e, need, pe, eok, check_mult, mono, has_el):
    """Can data edge entry ``e`` host pattern entry ``pe`` (multiplicity ``need``): enough
    parallel edges (exactly as many outside mono), and a compatible edge label?"""
    if check_mult and (mult[e] < need if mono else mult[e] != need):
        return False
    return not (has_el and eok[pe, cls[e]] == 0)


@njit(cache=True)
def _local(cand, from_classes, dcls, ok, g_ptr, h_ptr, g_in, h_in, g_loops, h_loops, exact,
           directed, mono, counts):
    """Rules 1 (labels, from the classes when ``from_classes``, else as ``cand`` holds them) and
    2 (LDF) in one pass over the matrix; ``counts[u]``: u's candidates left."""
    k, n = cand.shape
    for u in range(k):
        du, di, lu = h_ptr[u + 1] - h_ptr[u], h_in[u + 1] - h_in[u], h_loops[u]
        c = 0
        for v in range(n):
            keep = ok[u, dcls[v]] != 0 if from_classes else cand[u, v] != 0
            if keep:
                dv = g_ptr[v + 1] - g_ptr[v]
                keep = dv == du if exact else dv >= du
            if keep and directed:
                dvi = g_in[v + 1] - g_in[v]
                keep = dvi == di if exact else dvi >= di
            if keep:
                keep = g_loops[v] >= lu if mono else g_loops[v] == lu
            cand[u, v] = keep
            if keep:
                c += 1
        counts[u] = c


@njit(cache=True)
def _local_classes(cand, from_classes, dcls, ok, g_ptr, h_ptr, g_in, h_in, g_loops, h_loops,
                   exact, directed, mono, counts):
    """:func:`_local` from the label classes (``from_classes`` is True), on a zeroed ``cand``:
    the data nodes sorted by class once (a counting sort), then each pattern node tests only
    the nodes of the classes it accepts -- on labelled data a few dozen of the n, where the
    full pass cost ~90 us of a 16-node plan on yeast. Returns each pattern node's candidates
    as a list, ``lst[off[u] : off[u] + counts[u]]``, when the nodes of the classes it accepts
    take at most the matrix's bytes (else ``lst`` is empty): :func:`_refine_marks` walks them
    instead of finding them again in the matrix (~35 us of its ~90 on yeast)."""
    k, n = cand.shape
    nc = ok.shape[1]
    start = np.zeros(nc + 1, dtype=np.int64)
    for v in range(n):
        start[dcls[v] + 1] += 1
    for c in range(nc):
        start[c + 1] += start[c]
    fill = start[:nc].copy()
    members = np.empty(n, dtype=np.int32)
    for v in range(n):
        c = dcls[v]
        members[fill[c]] = v
        fill[c] += 1
    off = np.zeros(k + 1, dtype=np.int64)
    for u in range(k):
        room = 0
        for c in range(nc):
            if ok[u, c] != 0:
                room += start[c + 1] - start[c]
        off[u + 1] = off[u] + room
    listed = off[k] * 4 <= k * n
    lst = np.empty(off[k] if listed else 0, dtype=np.int32)
    for u in range(k):
        du, di, lu = h_ptr[u + 1] - h_ptr[u], h_in[u + 1] - h_in[u], h_loops[u]
        got = 0
        for c in range(nc):
            if ok[u, c] == 0:
                continue
            for i in range(start[c], start[c + 1]):
                v = members[i]
                dv = g_ptr[v + 1] - g_ptr[v]
                if not (dv == du if exact else dv >= du):
                    continue
                if directed:
                    dvi = g_in[v + 1] - g_in[v]
                    if not (dvi == di if exact else dvi >= di):
                        continue
                if not (g_loops[v] >= lu if mono else g_loops[v] == lu):
                    continue
                cand[u, v] = 1
                if listed:
                    lst[off[u] + got] = v
                got += 1
        counts[u] = got
    return lst, off


@njit(cache=True)
def _lists(cand, counts, lists, lst, off):
    """The refinements' candidate lists and their lengths: those :func:`_local_classes`
    handed over (``lst`` not empty; any order within a list will do, a rule's drops do not
    depend on it), else with ``lists`` read from the matrix, else none."""
    if lst.size or not lists or counts.sum() == 0:
        return lst, off, counts.copy()
    return _matrix_lists(cand, counts)


@njit(cache=True)
def _matrix_lists(cand, counts):
    """Each pattern node's candidates read from the matrix as a list, ``lst[off[u] :
    off[u] + cnt[u]]``, in ``counts[u]`` entries of room."""
    k, n = cand.shape
    off = np.zeros(k + 1, dtype=np.int64)
    for u in range(k):
        off[u + 1] = off[u] + counts[u]
    lst = np.empty(off[k], dtype=np.int32)
    cnt = np.zeros(k, dtype=np.int64)
    for u in range(k):
        c = 0
        for v in range(n):
            if cand[u, v]:
                lst[off[u] + c] = v
                c += 1
        cnt[u] = c
    return lst, off, cnt


@njit(cache=True)
def _refine(cand, h_ptr, h_idx, directed, hmult, indptr, indices, mult, in_indptr, in_indices,
            in_mult, out_cls, in_cls, eok, has_el, check_mult, mono, rounds, lists, counts, lst,
            off):
    """Arc consistency to a fixpoint: drop v from cand[u] when no edge of v (in the rule's
    direction) reaches a candidate of w through a compatible edge. Scans stop at the first hit.
    With ``lists``, each rule walks u's candidate list (compacted as nodes drop out) instead of
    every data node; the order of visits, and so every round, is the same either way. A rule
    whose source w lost no candidate since the rule last ran is skipped: u's set has only
    shrunk since, so it would drop nothing (each round's result is the same; the last round,
    which only confirms the fixpoint, mostly skips)."""
    k, n = cand.shape
    # one rule per pattern edge and direction: (target u, source w, pattern entry, in-list?),
    # each edge's in-list rule right after its out-list rule
    rules = np.empty((h_idx.size * (2 if directed else 1), 4), dtype=np.int64)
    r = 0
    for u in range(k):
        for pe in range(h_ptr[u], h_ptr[u + 1]):
            w = h_idx[pe]
            rules[r, 0], rules[r, 1], rules[r, 2], rules[r, 3] = u, w, pe, 0
            r += 1
            if directed:
                rules[r, 0], rules[r, 1], rules[r, 2], rules[r, 3] = w, u, pe, 1
                r += 1
    lst, off, cnt = _lists(cand, counts, lists, lst, off)
    lost = np.zeros(k, dtype=np.int64)  # candidates dropped from each pattern node so far
    seen = np.full(rules.shape[0], -1, dtype=np.int64)  # lost[w] when rule r last ran
    for _ in range(rounds):
        changed = False
        for r in range(rules.shape[0]):
            u, w, pe, incoming = rules[r, 0], rules[r, 1], rules[r, 2], rules[r, 3]
            if seen[r] == lost[w]:
                continue
            seen[r] = lost[w]  # (u != w: pattern self-loops are not in the CSR)
            need = hmult[pe]
            if incoming:
                ptr, idx, em, cls = in_indptr, in_indices, in_mult, in_cls
            else:
                ptr, idx, em, cls = indptr, indices, mult, out_cls
            kept = 0
            for i in range(cnt[u] if lists else n):
                v = lst[off[u] + i] if lists else i
                if cand[u, v] == 0:
                    continue
                ok = False
                for e in range(ptr[v], ptr[v + 1]):
                    if cand[w, idx[e]] and edge_fits(em, cls, e, need, pe, eok, check_mult,
                                                     mono, has_el):
                        ok = True
                        break
                if ok:
                    if lists:
                        lst[off[u] + kept] = v
                        kept += 1
                else:
                    cand[u, v] = 0
                    lost[u] += 1
                    changed = True
            if lists:
                cnt[u] = kept
        if not changed:
            break
    for u in range(k):
        counts[u] -= lost[u]


@njit(cache=True)
def _mark_from(cand, s, lst, lo, hi, lists, n, ptr, idx, mark, stamp):
    """``mark[v] = stamp`` for every node ``v`` one edge of ``(ptr, idx)`` from a candidate of
    ``s`` (its list ``lst[lo:hi]``, or its matrix row)."""
    for i in range(hi - lo if lists else n):
        x = lst[lo + i] if lists else i
        if not lists and cand[s, x] == 0:
            continue
        for e in range(ptr[x], ptr[x + 1]):
            mark[idx[e]] = stamp


@njit(cache=True)
def _keep_marked(cand, t, lst, lo, cnt, lists, n, mark, stamp):
    """Drop from ``t``'s candidates every node not marked ``stamp``; returns how many stay."""
    kept = 0
    for i in range(cnt[t] if lists else n):
        v = lst[lo + i] if lists else i
        if cand[t, v] == 0:
            continue
        if mark[v] == stamp:
            if lists:
                lst[lo + kept] = v
            kept += 1
        else:
            cand[t, v] = 0
    return kept


@njit(cache=True)
def _support(cand, s, lst, off, cnt, lists, n, hp, hi, ptr, idx, mark, stamp, queued):
    """The rules from ``s`` over one pattern adjacency ``(hp, hi)``: mark what ``s``'s
    candidates reach through the data adjacency ``(ptr, idx)`` and keep each pattern neighbour
    ``t``'s marked candidates, queueing ``t`` when it lost any. Returns the stamp used."""
    if hp[s + 1] == hp[s]:
        return stamp
    stamp += 1
    _mark_from(cand, s, lst, off[s], off[s] + cnt[s], lists, n, ptr, idx, mark, stamp)
    for pe in range(hp[s], hp[s + 1]):
        t = hi[pe]
        kept = _keep_marked(cand, t, lst, off[t], cnt, lists, n, mark, stamp)
        if kept < cnt[t]:
            cnt[t] = kept
            queued[t] = True
    return stamp


@njit(cache=True)
def _refine_marks(cand, h_ptr, h_idx, h_in_ptr, h_in_idx, directed, indptr, indices, in_indptr,
                  in_indices, rounds, lists, counts, lst, off):
    """Rule 3 where any edge supports a pattern edge (no multiplicity or edge label to check),
    to the same fixpoint as :func:`_refine` (arc consistency has one: the largest arc-consistent
    candidate sets), by support marks instead of a scan of every candidate's row per rule: a
    source pattern node ``s`` whose set changed marks the data nodes its candidates reach, once
    for all its pattern edges (in each direction), and every neighbour ``t`` keeps its marked
    candidates. On yeast's 16-node patterns 3-4x fewer loads, no early-exit branch per entry.
    The source taken next is the queued one with the fewest candidates (its marks are the
    cheapest and prune most); ``rounds * k`` sources at most, as ``rounds`` passes of
    :func:`_refine`. ``lst``/``off``: as for :func:`_lists`."""
    k, n = cand.shape
    lst, off, cnt = _lists(cand, counts, lists, lst, off)
    queued = np.zeros(k, dtype=np.bool_)
    for s in range(k):
        queued[s] = h_ptr[s + 1] > h_ptr[s] or (directed and h_in_ptr[s + 1] > h_in_ptr[s])
    mark = np.zeros(n, dtype=np.int64)  # == stamp: reached from a candidate of s
    stamp = 0
    for _ in range(rounds * k):
        s = -1
        for u in range(k):
            if queued[u] and (s < 0 or cnt[u] < cnt[s]):
                s = u
        if s < 0:
            break
        queued[s] = False
        # pattern edge s -> t (undirected: every neighbour t): t's candidate v needs a data
        # edge x -> v from a candidate x of s; pattern edge t -> s: a data edge v -> x
        stamp = _support(cand, s, lst, off, cnt, lists, n, h_ptr, h_idx, indptr, indices, mark,
                         stamp, queued)
        if directed:
            stamp = _support(cand, s, lst, off, cnt, lists, n, h_in_ptr, h_in_idx, in_indptr,
                             in_indices, mark, stamp, queued)
    for u in range(k):
        counts[u] = cnt[u]
