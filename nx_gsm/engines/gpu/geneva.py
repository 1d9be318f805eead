"""The GENEVA engine: breadth-first parallel vertex matching, one extension kernel per phase.

Implements GENEVA (Lu et al., *Fast GPU-based Subgraph Search Using Parallel Vertex Matching*,
IEEE TPDS manuscript, 2023) over
a :class:`~nx_gsm.plan.planner.MatchPlan`:

* **Graph store (Sec. 4).** With edge labels the local candidate sets ``N(v, l)`` are read from an
  interval-PCSR per direction (:class:`~.formats.IntervalPCSR`: GENMAP renumbering, per label an
  interval index ``(start, length, first row)``, row offsets and columns, flattened into one array
  each). A plan's pattern edge accepts a set of data edge classes (``eok``), so a candidate set is
  the concatenation of ``N(v, l)`` over the accepted labels (disjoint: every data edge has one
  class). Without edge labels there is a single edge-label partition, and interval-PCSR
  degenerates to the CSR rows themselves (one partition, row offsets = ``indptr``), which is what
  the kernels then read. The feasibility tests binary-search the plain CSR (``common.feasible``).
* **Phases (Sec. 5.5, Alg. 8).** :func:`phase_plan` cuts the plan's order into runs of consecutive
  depths whose pattern vertices all have a backward neighbour matched *before* the run -- the
  paper's multi-vertex patterns: two new vertices on one source (patterns 1/3) or on two sources
  (2/4), three or more (5-7). Larger patterns take priority; runs that contain a vertex of the
  pattern's 2-core hold at most two vertices (patterns 0-4 only inside the core, Sec. 6), runs of
  tree vertices up to ``group_max``.
* **One extension kernel per phase (Sec. 5.1-5.4, Algs. 3-6).** A sizing kernel sizes every new
  vertex's candidate set (the shortest driver list); a filter kernel tests each candidate once
  against the matched prefix (DOUEXT validates C1 and C2 once); then :func:`_extend_kernel` -- one
  warp per partial match, round-robin -- enumerates the product of the filtered sets 32 tuples at
  a time, runs only the checks among the new vertices, and writes valid rows into slots reserved
  with one ``atomicAdd`` per warp batch. The output is sized by the exact product bound, so the
  table never overflows and holds no placeholder rows.
* **Exactness.** Every new vertex passes the ``feasible`` tests of its depth (candidate bit,
  injectivity, multiplicities ``>=`` in mono and ``==`` in induced mode, edge classes, both
  directions) split into prefix and in-phase parts; this adds the injectivity and equality checks
  the printed Algs. 4-6 miss. Automorphisms are not broken: all mappings are returned, as NetworkX
  does. Closing edges are checked when their later end is matched, not in elimination phases.
* **Memory.** Every table is sized before it is allocated; frontiers are split into chunks that fit
  :func:`~.device.memory_budget` and processed depth-first (chunk by chunk through the remaining
  phases); a heavy partial match runs its phase one vertex at a time, and a single row whose one
  vertex extension is still too large is enumerated in windows of its candidate range.
"""

from __future__ import annotations

import logging
import time
import weakref

import numpy as np
from numba import cuda, int32, int64

from ...kernel_cache import cached_kernel
from ..base import UNLIMITED, PartialCount
from ..cpu import check_chunk, trivial_answer, trivial_rows
from ..catalog import capabilities_of
from . import faults
from .common import (ballot, exact_sum, feasible_range, to_host, kernel_array, quiet,
                     sim_reset, upload_packed, wsync)
from .device import array_module, is_simulator, memory_budget
from .formats import IntervalPCSR, format_nbytes
from .geneva_phases import GROUP_MAX, phase_plan

__all__ = ["GenevaEngine", "phase_plan", "format_bytes", "GROUP_MAX"]

log = logging.getLogger("nx_gsm.gpu")

_SIM = is_simulator()
_WPB = 4  # warps per block of the extension kernel
_SAT = 1 << 62  # saturation of product bounds (never materialised)
_INF = np.iinfo(np.int64).max
_WORK = 1 << 30  # most tuples one counting launch enumerates (bounds the time between checks)


class _Stopped(Exception):
    """The run budget (deadline, Ctrl-C) ended the search between two launches."""


# ---------------------------------------------------------------------------------------------
# device functions: local candidate sets through interval-PCSR or CSR rows
# ---------------------------------------------------------------------------------------------
@cuda.jit(device=True)
def _ip_row(x, p, mp, ivp, iv, ro):
    """GENEVA Sec. 4.1 lookup: ``(a, b)`` of ``N(x, label p)`` in the column array, by binary
    search of ``x``'s new id among the label's interval starts (empty if ``x`` is not there)."""
    vn = mp[x]
    lo = ivp[p]
    hi = ivp[p + 1]
    while lo < hi:  # last interval whose start <= vn
        mid = (lo + hi) >> 1
        if iv[mid, 0] <= vn:
            lo = mid + 1
        else:
            hi = mid
    t = lo - 1
    if t < ivp[p] or vn >= iv[t, 0] + iv[t, 1]:
        return ro[0] * 0, ro[0] * 0
    r = iv[t, 2] + (vn - iv[t, 0])
    return ro[r], ro[r + 1]


@cuda.jit(device=True)
def _drv_size(t, x, drv_dir, drv_pe, indptr, in_indptr, has_el, pe_ptr, pe_cls, o_map, o_ivp,
              o_iv, o_ro, i_map, i_ivp, i_iv, i_ro):
    """|LC| through driver ``t`` from data node ``x``: a CSR row, or with edge labels the sum of
    ``|N(x, l)|`` over the labels ``l`` the driver's pattern edge accepts."""
    if has_el == 0:
        if drv_dir[t] == 0:
            return indptr[x + 1] - indptr[x]
        return in_indptr[x + 1] - in_indptr[x]
    pe = drv_pe[t]
    s = indptr[0] * 0
    for c in range(pe_ptr[pe], pe_ptr[pe + 1]):
        if drv_dir[t] == 0:
            a, b = _ip_row(x, pe_cls[c], o_map, o_ivp, o_iv, o_ro)
        else:
            a, b = _ip_row(x, pe_cls[c], i_map, i_ivp, i_iv, i_ro)
        s += b - a
    return s


@cuda.jit(device=True)
def _drv_get(t, x, q, drv_dir, drv_pe, indptr, indices, in_indptr, in_indices, has_el, pe_ptr,
             pe_cls, o_map, o_ivp, o_iv, o_ro, o_col, o_inv, i_map, i_ivp, i_iv, i_ro, i_col,
             i_inv):
    """Candidate ``q`` of driver ``t``'s list from ``x`` (the labels' lists concatenated)."""
    if has_el == 0:
        if drv_dir[t] == 0:
            return indices[indptr[x] + q]
        return in_indices[in_indptr[x] + q]
    pe = drv_pe[t]
    for c in range(pe_ptr[pe], pe_ptr[pe + 1]):
        if drv_dir[t] == 0:
            a, b = _ip_row(x, pe_cls[c], o_map, o_ivp, o_iv, o_ro)
            if q < b - a:
                return o_inv[o_col[a + q]]
        else:
            a, b = _ip_row(x, pe_cls[c], i_map, i_ivp, i_iv, i_ro)
            if q < b - a:
                return i_inv[i_col[a + q]]
        q -= b - a
    return -1


# ---------------------------------------------------------------------------------------------
# kernels
# ---------------------------------------------------------------------------------------------
@cached_kernel
@cuda.jit
def _size_kernel(rows, n, d0, g, cand_ptr, drv_ptr, drv_j, drv_dir, drv_pe, indptr, in_indptr,
                 has_el, pe_ptr, pe_cls, o_map, o_ivp, o_iv, o_ro, i_map, i_ivp, i_iv, i_ro,
                 size_out, drv_out):
    """GENEVA Alg. 3 l.2-3: per partial match and new vertex, the shortest candidate list among
    drivers matched before the phase (-1: the plan's candidate list, no backward neighbour)."""
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for s in range(start, n * g, stride):
        r = s // g
        d = d0 + s % g
        best = cand_ptr[d + 1] - cand_ptr[d]
        bt = -1
        for t in range(drv_ptr[d], drv_ptr[d + 1]):
            if drv_j[t] < d0:
                sz = _drv_size(t, rows[r, drv_j[t]], drv_dir, drv_pe, indptr, in_indptr, has_el,
                               pe_ptr, pe_cls, o_map, o_ivp, o_iv, o_ro, i_map, i_ivp, i_iv,
                               i_ro)
                if bt < 0 or sz < best:
                    best = sz
                    bt = t
        size_out[s] = best
        drv_out[s] = bt


@cached_kernel
@cuda.jit
def _filter_kernel(rows, d0, g, nseg, T, incl, size_arr, drv_arr, order, cand_bits, cand_ptr,
                   cand_flat, chk_ptr, chk_j, chk_out, chk_in, chk_peo, chk_pei, drv_j, drv_dir,
                   drv_pe, indptr, indices, emult, in_indptr, in_indices, eclass, eok, has_el,
                   mono, directed, pe_ptr, pe_cls, o_map, o_ivp, o_iv, o_ro, o_col, o_inv, i_map,
                   i_ivp, i_iv, i_ro, i_col, i_inv, ok, vout):
    """GENEVA Alg. 3 l.4-7 / Alg. 4 l.1-3: each candidate of each new vertex is tested once
    against the matched prefix (labels, injectivity, edges to depths < d0); one thread per
    candidate, task ``t`` of segment ``s`` = (partial match ``s // g``, new depth ``d0 + s % g``).
    """
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for t in range(start, T, stride):
        a = 0
        b = nseg - 1
        while a < b:
            mid = (a + b) >> 1
            if incl[mid] > t:
                b = mid
            else:
                a = mid + 1
        s = a
        r = s // g
        d = d0 + s % g
        q = t - (incl[s] - size_arr[s])
        dt = drv_arr[s]
        if dt < 0:
            v = cand_flat[cand_ptr[d] + q]
        else:
            v = _drv_get(dt, rows[r, drv_j[dt]], q, drv_dir, drv_pe, indptr, indices, in_indptr,
                         in_indices, has_el, pe_ptr, pe_cls, o_map, o_ivp, o_iv, o_ro, o_col,
                         o_inv, i_map, i_ivp, i_iv, i_ro, i_col, i_inv)
        good = feasible_range(d, v, rows[r], 0, 0, d0, 1, order, cand_bits, chk_ptr, chk_j,
                              chk_out, chk_in, chk_peo, chk_pei, indptr, indices, emult, eclass,
                              eok, has_el, mono, directed)
        ok[t] = 1 if good else 0
        vout[t] = v


@cached_kernel
@cuda.jit
def _extend_kernel(rows, n, d0, g, F, fcnt, foff, P, tlo, thi, order, cand_bits, chk_ptr, chk_j,
                   chk_out, chk_in, chk_peo, chk_pei, indptr, indices, emult, eclass, eok, has_el,
                   mono, directed, collect, out, ctl, cnt):
    """GENEVA Sec. 5.1-5.4 (EXTPHASEKERNEL with DOUEXT/OPTDOUEXT/NEXT): one warp per partial
    match (round-robin). Lanes take tuples ``base + lane`` of the product of the filtered sets
    (window ``tlo <= t < thi``), test them among the new vertices only (injectivity, equality and
    the edges/non-edges between them: the checks the printed algorithms miss), and write valid
    rows into slots reserved by one ``atomicAdd`` per 32 tuples; ``collect == 0`` counts instead.
    """
    B = cuda.shared.array(_WPB, int64)
    tup = cuda.local.array(GROUP_MAX, int32)
    tid = cuda.threadIdx.x
    lane = tid & 31
    w = tid >> 5
    wid = cuda.blockIdx.x * _WPB + w
    nw = cuda.gridDim.x * _WPB
    lt_mask = (1 << lane) - 1
    for r in range(wid, n, nw):
        hi = P[r]
        if thi < hi:
            hi = thi
        acc = P[r] * 0
        base = tlo
        while base < hi:
            t = base + lane
            valid = t < hi
            if valid:
                x = t
                for i in range(g - 1, -1, -1):
                    c = fcnt[r * g + i]
                    tup[i] = F[foff[r * g + i] + x % c]
                    x //= c
                for i in range(1, g):
                    if valid:
                        valid = feasible_range(d0 + i, tup[i], tup, d0, d0, d0 + i, 0, order,
                                               cand_bits, chk_ptr, chk_j, chk_out, chk_in,
                                               chk_peo, chk_pei, indptr, indices, emult, eclass,
                                               eok, has_el, mono, directed)
            mask = ballot(valid)
            nv = cuda.popc(mask)
            if nv > 0:
                if collect != 0:
                    if lane == 0:
                        B[w] = cuda.atomic.add(ctl, 0, nv)
                    wsync()
                    s0 = B[w]
                    if valid:
                        slot = s0 + cuda.popc(mask & lt_mask)
                        for j in range(d0):
                            out[slot, j] = rows[r, j]
                        for i in range(g):
                            out[slot, d0 + i] = tup[i]
                    wsync()
                else:
                    acc += nv
            base += 32
        if lane == 0 and collect == 0:
            cnt[r] = acc


# ---------------------------------------------------------------------------------------------
# host side
# ---------------------------------------------------------------------------------------------
def format_bytes(G, elabels=None):
    """Device bytes of ``G`` as plain CSR, GSI's PCSR and GENEVA's interval-PCSR (NumPy builders,
    no GPU needed); CSC/in-direction bytes are added for directed graphs.

    Parameters
    ----------
    G : GsmGraph
    elabels : array, optional
        Edge label per out-CSR entry (e.g. ``MatchPlan.eclass``); None for unlabelled edges.

    Returns
    -------
    dict with ``csr``, ``pcsr``, ``interval_pcsr`` (bytes), ``largest_partition`` (interval-PCSR
    bytes of the largest edge-label partition: what GENEVA keeps on the card at once) and
    ``reduction`` (``1 - interval_pcsr / pcsr``, GENEVA Table 2).

    Examples
    --------
    >>> import networkx as nx, nx_gsm
    >>> b = format_bytes(nx_gsm.from_networkx(nx.path_graph(4)))
    >>> sorted(b)
    ['csr', 'interval_pcsr', 'largest_partition', 'pcsr', 'reduction']
    >>> b["interval_pcsr"] < b["pcsr"]
    True
    """
    b = format_nbytes(G, elabels)

    def both(key):
        return int(b[key] + b.get(key + "_in", 0))

    csr = b["csr"]
    if G.directed:
        csr += int(G.in_indptr.nbytes + G.in_indices.nbytes) + \
            (int(G.in_indices.size) * 4 if elabels is not None else 0)
    pcsr, ipb = both("pcsr"), both("interval_pcsr")
    return {"csr": int(csr), "pcsr": pcsr, "interval_pcsr": ipb,
            "largest_partition": int(b["largest_interval_partition"]),
            "reduction": 1.0 - ipb / pcsr if pcsr else 0.0}


def _flatten(ip):
    """An :class:`IntervalPCSR`'s per-label arrays as one array each (label ``p``'s intervals are
    ``iv[ivp[p]:ivp[p+1]]``; their third field and the row offsets index the flat arrays)."""
    ivs, ros, cols, ivp = [], [], [], [0]
    rbase = cbase = 0
    for iv, ro, col in zip(ip.intervals, ip.row_offsets, ip.col):
        iv = np.array(iv, dtype=np.int64).reshape(-1, 3)
        iv[:, 2] += rbase
        ivs.append(iv)
        ros.append(np.asarray(ro, dtype=np.int64) + cbase)
        cols.append(np.asarray(col, dtype=np.int32))
        ivp.append(ivp[-1] + iv.shape[0])
        rbase += ro.size
        cbase += col.size

    def cat(xs, shape, dt):
        return np.concatenate(xs).astype(dt) if xs else np.zeros(shape, dt)

    return (np.asarray(ip.MAP, dtype=np.int32), np.asarray(ivp, dtype=np.int64),
            cat(ivs, (0, 3), np.int64).reshape(-1, 3), cat(ros, 0, np.int64),
            cat(cols, 0, np.int32), np.asarray(ip.inv, dtype=np.int32))


def _splits(w, cap):
    """Contiguous ranges of items whose weights sum to at most ``cap`` (an item heavier than
    ``cap`` alone)."""
    n = len(w)
    if n == 0:
        return []
    cs = np.cumsum(np.minimum(np.asarray(w, dtype=np.int64), cap + 1))
    out, a, base = [], 0, 0
    while a < n:
        b = int(np.searchsorted(cs, base + cap, side="right"))
        b = max(b, a + 1)
        out.append((a, b))
        base = int(cs[b - 1])
        a = b
    return out


def _products(fc):
    """Per row, the product of its filtered set sizes (saturated at 2**62)."""
    p = np.prod(fc, axis=1, dtype=np.int64)
    big = np.prod(fc.astype(np.float64), axis=1) >= float(_SAT)
    p[big] = _SAT
    return p


class _Run:
    """One search: the plan's arrays on the device, the phase table, memory accounting, stats."""

    def __init__(self, eng, plan, budget, collect):
        self.k = plan.k
        self.budget = budget
        self.collect = collect
        self.phases = phase_plan(plan, eng.group_max)
        self.g_at = np.ones(max(self.k, 1), dtype=np.int64)
        for d0, g, _ in self.phases:
            self.g_at[d0 : d0 + g] = np.arange(g, 0, -1)
        self.rows_at = {}
        self.launches = 0
        self.found = 0
        self.held = 0
        self.peak = 0
        self.chunks = 0  # frontier chunks filtered (one per phase when everything fits)
        self.one_vertex = 0  # heavy rows whose phase ran one vertex at a time
        self.windows = 0  # single rows enumerated in windows of their candidate range


class GenevaEngine(faults.Recovery):
    """GENEVA on the GPU: ``count(plan, limit, budget)`` and ``iter_chunks(plan, chunk, limit,
    budget)`` (the engine protocol of :mod:`nx_gsm.engines`).

    Parameters (all optional):

    * ``group_max``: most pattern vertices per phase (default :data:`GROUP_MAX`; 1 runs the
      paper's SV-match baseline, one vertex per phase);
    * ``memory_budget``: device bytes one search may use (default:
      ``nx.config.backends.gsm.device_memory_budget`` or 80% of the free device memory);
    * ``blocks``: grid size of the extension kernel;
    * ``format_stats``: report PCSR vs interval-PCSR bytes of each data graph in ``last_stats``
      (built once per graph on the host; default True).

    ``last_stats`` holds the phases ``(first depth, size, pattern)``, rows produced per phase,
    kernel launches, peak device bytes (graph + plan + live tables, as allocated) and the
    graph's format bytes.

    Examples
    --------
    >>> import networkx as nx
    >>> from nx_gsm.api import prepare
    >>> plan = prepare(nx.complete_graph(4), nx.path_graph(3), "mono")[0]
    >>> GenevaEngine().count(plan)  # doctest: +SKIP
    24
    """

    name = "geneva"
    capabilities = capabilities_of("geneva")
    _device_caches = ("_gcache", "_ecache")

    def __init__(self, *, group_max=GROUP_MAX, memory_budget=None, blocks=None,
                 format_stats=True):
        self.xp = array_module()
        self.group_max = int(group_max)
        self.memory_budget = memory_budget
        self.blocks = blocks
        self.format_stats = bool(format_stats)
        self.last_stats = {}
        self._ecache = None
        self._fcache = None

    # -- device state ---------------------------------------------------------------------------
    def _dev(self, x, dtype, shape=None):
        x = np.ascontiguousarray(x, dtype=dtype)
        if x.size == 0:
            x = np.zeros(shape or (1,) * max(x.ndim, 1), dtype=dtype)
        return kernel_array(self.xp.asarray(x))

    def _label_arrays(self, plan):
        """Interval-PCSR of both directions on the device (cached for the last graph and edge
        classes) and, per pattern edge, the label partitions it accepts."""
        G = plan.G
        key = hash(plan.eclass.tobytes())
        c = self._ecache
        if c is not None and c[0]() is G and c[1] == key:
            labels, dev, nbytes = c[2]
        else:
            ips = [IntervalPCSR(G, plan.eclass, "out")]
            if G.directed:
                ips.append(IntervalPCSR(G, plan.eclass, "in"))
            labels = {int(l): i for i, l in enumerate(ips[0].label_values)}
            dev = []
            for mp, ivp, iv, ro, col, inv in (_flatten(ip) for ip in ips):
                dev.append((self._dev(mp, np.int32), self._dev(ivp, np.int64),
                            self._dev(iv, np.int64, (1, 3)), self._dev(ro, np.int64),
                            self._dev(col, np.int32), self._dev(inv, np.int32)))
            if len(dev) == 1:  # undirected: the in-direction is the out-direction
                dev.append(dev[0])
            nbytes = sum(ip.nbytes for ip in ips)
            try:
                self._ecache = (weakref.ref(G), key, (labels, dev, nbytes))
            except TypeError:
                self._ecache = None
        ptr, cls = [0], []
        for pe in range(plan.eok.shape[0]):
            cls.extend(labels[int(c)] for c in np.flatnonzero(plan.eok[pe]) if int(c) in labels)
            ptr.append(len(cls))
        return (self._dev(ptr, np.int32), self._dev(cls, np.int32)), dev, nbytes

    def _format_bytes(self, plan):
        G = plan.G
        key = hash(plan.eclass.tobytes()) if plan.has_elabels else None
        c = self._fcache
        if c is not None and c[0]() is G and c[1] == key:
            return c[2]
        fb = format_bytes(G, plan.eclass if plan.has_elabels else None)
        try:
            self._fcache = (weakref.ref(G), key, fb)
        except TypeError:
            self._fcache = None
        return fb

    def _setup(self, plan, budget, collect):
        st = _Run(self, plan, budget, collect)
        G = plan.G
        indptr, indices, mult, in_indptr, in_indices = self._graph_arrays(G)
        d = self._dev

        def h(x, dtype, shape=None):
            x = np.ascontiguousarray(x, dtype=dtype)
            return x if x.size else np.zeros(shape or (1,), dtype=dtype)

        eclass = plan.eclass if plan.has_elabels else np.zeros(1, dtype=np.int32)
        faults.point("plan_upload")
        (st.order, st.cand_bits, st.cand_ptr, st.cand_flat, *chk, st.drv_ptr, st.drv_j,
         st.drv_dir, st.drv_pe, st.eclass, st.eok) = upload_packed(
            [h(plan.order, np.int32), h(plan.cand_bits, np.uint8, (1, 1)),
             h(plan.cand_ptr, np.int64), h(plan.cand_flat, np.int32),
             *[h(getattr(plan, f), np.int32) for f in
               ("chk_ptr", "chk_j", "chk_out", "chk_in", "chk_peo", "chk_pei")],
             h(plan.drv_ptr, np.int32), h(plan.drv_j, np.int32), h(plan.drv_dir, np.int32),
             h(plan.drv_pe, np.int32), h(eclass, np.int32), h(plan.eok, np.uint8, (1, 1))],
            self.xp)  # one transfer: a search's fixed cost is mostly launches and copies
        st.indptr, st.indices, st.mult = indptr, indices, mult
        st.in_indptr, st.in_indices = in_indptr, in_indices
        st.has_el = int(bool(plan.has_elabels))
        st.mono, st.directed = int(bool(plan.mono)), int(bool(G.directed))
        ip_bytes = 0
        if st.has_el:
            st.pe, (o, i), ip_bytes = self._label_arrays(plan)
        else:
            z32, z64 = d([], np.int32), d([], np.int64)
            st.pe = (z32, z32)
            o = i = (z32, z64, d([], np.int64, (1, 3)), z64, z32, z32)
        st.o4, st.o_col, st.o_inv = o[:4], o[4], o[5]
        st.i4, st.i_col, st.i_inv = i[:4], i[4], i[5]
        st.chk = (st.order, st.cand_bits, *chk)
        st.feas = (st.indptr, st.indices, st.mult, st.eclass, st.eok, st.has_el, st.mono,
                   st.directed)
        plan_bytes = sum(int(getattr(plan, f).nbytes) for f in (
            "order", "cand_bits", "cand_ptr", "cand_flat", "chk_ptr", "chk_j", "chk_out",
            "chk_in", "chk_peo", "chk_pei", "drv_ptr", "drv_j", "drv_dir", "drv_pe", "eok"))
        graph_bytes = int(G.indptr.nbytes + G.indices.nbytes + G.mult.nbytes)
        if G.directed:
            graph_bytes += int(G.in_indptr.nbytes + G.in_indices.nbytes)
        if st.has_el:
            graph_bytes += int(plan.eclass.nbytes)
        st.static = graph_bytes + plan_bytes + ip_bytes
        st.peak = st.static
        st.limit_bytes = memory_budget(self.memory_budget)
        self.last_stats = {
            "k": plan.k, "phases": list(st.phases), "group_max": self.group_max,
            "edge_labels": bool(st.has_el), "graph_bytes": graph_bytes,
            "interval_pcsr_device_bytes": ip_bytes}
        if self.format_stats:
            fb = self._format_bytes(plan)
            self.last_stats.update(pcsr_bytes=fb["pcsr"], interval_pcsr_bytes=fb["interval_pcsr"],
                                   csr_bytes=fb["csr"], format_reduction=fb["reduction"])
        return st

    # -- memory ---------------------------------------------------------------------------------
    def _allow(self, st):
        """Bytes the next step may allocate: the budget less the graph, plan and live tables.

        A floor keeps the search going when the graph alone exceeds a tiny configured budget
        (the budget is a target; a minimal step -- one row, one vertex -- is always taken)."""
        return max(st.limit_bytes - st.static - st.held, 1 << 16)

    def _account(self, st, nbytes):
        st.peak = max(st.peak, st.static + st.held + int(nbytes))

    def _tick(self, st):
        """Between launches: the run budget (deadline, progress) and Ctrl-C."""
        if st.budget is not UNLIMITED and not st.budget.keep_going(st.found, 0, 0):
            raise _Stopped()

    def _release(self):
        """Hand CuPy's cached blocks back before a smaller retry."""
        if not _SIM:
            import cupy

            cupy.get_default_memory_pool().free_all_blocks()

    def _grid(self, n, threads):
        if _SIM:
            return 1
        return max(1, min(65535, (n + threads - 1) // threads))

    # -- kernels --------------------------------------------------------------------------------
    def _sizes(self, st, rows, d0, g):
        xp = self.xp
        n = rows.shape[0]
        faults.point("bfs")
        sz = xp.empty(n * g, dtype=np.int64)
        dv = xp.empty(n * g, dtype=np.int32)
        threads = 32 if _SIM else 256
        sim_reset()
        faults.point("launch")
        with quiet():
            _size_kernel[self._grid(n * g, threads), threads](
                rows, n, d0, g, st.cand_ptr, st.drv_ptr, st.drv_j, st.drv_dir, st.drv_pe,
                st.indptr, st.in_indptr, st.has_el, *st.pe, *st.o4, *st.i4, sz, dv)
        st.launches += 1
        return sz, dv

    def _filter(self, st, rows, d0, g, sz, dv):
        """Filtered candidate sets: (F, per-segment counts on device and host, offsets)."""
        xp = self.xp
        n = rows.shape[0]
        incl = xp.cumsum(sz)
        T = int(incl[-1])
        self._account(st, T * 5 + n * g * 32)
        faults.point("bfs")
        ok = xp.zeros(max(T, 1), dtype=np.uint8)
        vout = xp.zeros(max(T, 1), dtype=np.int32)
        if T:
            threads = 32 if _SIM else 256
            sim_reset()
            with quiet():
                _filter_kernel[self._grid(T, threads), threads](
                    rows, d0, g, n * g, T, incl, sz, dv, *st.chk[:2], st.cand_ptr, st.cand_flat,
                    *st.chk[2:], st.drv_j, st.drv_dir, st.drv_pe, st.indptr, st.indices, st.mult,
                    st.in_indptr, st.in_indices, st.eclass, st.eok, st.has_el, st.mono,
                    st.directed, *st.pe, *st.o4, st.o_col, st.o_inv, *st.i4, st.i_col, st.i_inv,
                    ok, vout)
            st.launches += 1
        okc = xp.zeros(T + 1, dtype=np.int64)
        if T:
            okc[1:] = xp.cumsum(ok[:T], dtype=np.int64)
        fcnt = okc[incl] - okc[incl - sz]
        foff = xp.cumsum(fcnt) - fcnt
        F = vout[xp.flatnonzero(ok[:T])] if T else vout[:0]
        return F, fcnt, foff, to_host(fcnt).reshape(n, g)

    def _extend(self, st, rows, d0, g, F, fcnt, foff, P, tlo=0, thi=_INF, cap=0):
        """One GENEVA extension launch; returns the new table (collect) or per-row counts."""
        xp = self.xp
        n = rows.shape[0]
        collect = cap > 0
        width = d0 + g
        if collect:
            faults.point("output")
        out = xp.empty((max(cap, 1), width), dtype=np.int32)
        ctl = xp.zeros(1, dtype=np.int64)
        cnt = xp.zeros(max(n, 1), dtype=np.int64)
        self._account(st, cap * width * 4 + int(F.nbytes) + n * 24)
        blocks = self.blocks or (1 if _SIM else max(1, min(65535, (n + _WPB - 1) // _WPB)))
        sim_reset()
        faults.point("launch")
        with quiet():
            _extend_kernel[blocks, 32 * _WPB](
                rows, n, d0, g, F, fcnt, foff, xp.asarray(P), int(tlo), int(thi), *st.chk,
                *st.feas, int(collect), out, ctl, cnt)
        st.launches += 1
        if not collect:
            return cnt[:n]
        got = int(to_host(ctl)[0])
        if got > cap:
            raise RuntimeError(f"geneva: extension wrote {got} rows into {cap} slots")
        return out[:got]

    # -- the breadth-first walk -----------------------------------------------------------------
    def _walk(self, st, rows, d, g=None):
        """Run the phases from depth ``d`` on the table ``rows`` chunk by chunk; yields complete
        tables (collect) or match counts (count mode)."""
        if d == st.k:
            yield rows
            return
        n = rows.shape[0]
        if n == 0:
            return
        g = int(st.g_at[d]) if g is None else g
        self._tick(st)
        self._account(st, n * g * 12)
        sz, dv = self._sizes(st, rows, d, g)
        tasks = to_host(sz).reshape(n, g).sum(axis=1)
        task_cap = max(1, self._allow(st) // 4 // 16)
        for a, b in _splits(tasks, task_cap):
            if b - a == 1 and g > 1 and tasks[a] > task_cap:
                st.one_vertex += 1
                yield from self._walk(st, rows[a:b], d, 1)  # a heavy row: one vertex at a time
                continue
            yield from self._phase(st, rows[a:b], d, g, sz[a * g : b * g], dv[a * g : b * g])

    def _phase(self, st, rows, d, g, sz, dv):
        self._tick(st)
        st.chunks += 1
        try:
            F, fcnt, foff, fc = self._filter(st, rows, d, g, sz, dv)
        except MemoryError:  # the device had less free memory than the budget assumed
            n = rows.shape[0]
            if n == 1:
                raise
            self._release()
            h = n // 2
            yield from self._phase(st, rows[:h], d, g, sz[: h * g], dv[: h * g])
            yield from self._phase(st, rows[h:], d, g, sz[h * g :], dv[h * g :])
            return
        width = d + g
        last = width == st.k
        if last and not st.collect:
            P = _products(fc)
            if g == 1 or not P.any():
                c = exact_sum(P)
                st.rows_at[d] = st.rows_at.get(d, 0) + c
                st.found += c
                yield c
                return
            # launches of at most _WORK tuples, so deadlines and Ctrl-C are seen between them
            for a, b in _splits(P, _WORK):
                if b - a == 1 and P[a] >= _SAT:  # the product overflows: one vertex at a time
                    st.one_vertex += 1
                    yield from self._walk(st, rows[a:b], d, 1)
                    continue
                starts = range(0, int(P[a]), _WORK) if b - a == 1 and P[a] > _WORK else (-1,)
                for t0 in starts:
                    tlo, thi = (0, _INF) if t0 < 0 else (t0, t0 + _WORK)
                    self._tick(st)
                    c = exact_sum(to_host(self._extend(st, rows[a:b], d, g, F, fcnt[a * g : b * g],
                                                       foff[a * g : b * g], P[a:b], tlo, thi)))
                    st.rows_at[d] = st.rows_at.get(d, 0) + c
                    st.found += c
                    yield c
            return
        P = _products(fc)
        st.held += int(F.nbytes)
        try:
            cap_rows = max(1, self._allow(st) // 4 // (4 * width))
            for a, b in _splits(P, cap_rows):
                if b - a == 1 and P[a] > cap_rows:
                    if g > 1:
                        st.one_vertex += 1
                        yield from self._walk(st, rows[a:b], d, 1)
                        continue
                    for t0 in range(0, int(P[a]), cap_rows):  # one row, one vertex: windows
                        st.windows += 1
                        yield from self._next(st, rows[a:b], d, g, F, fcnt[a:b], foff[a:b],
                                              P[a:b], t0, t0 + cap_rows, cap_rows)
                    continue
                tot = int(P[a:b].sum())
                if tot:
                    yield from self._next(st, rows[a:b], d, g, F, fcnt[a * g : b * g],
                                          foff[a * g : b * g], P[a:b], 0, _INF, tot)
        finally:
            st.held -= int(F.nbytes)

    def _next(self, st, rows, d, g, F, fcnt, foff, P, tlo, thi, cap):
        self._tick(st)
        try:
            out = self._extend(st, rows, d, g, F, fcnt, foff, P, tlo, thi, cap)
        except MemoryError:  # split the chunk (or the window) and retry with half the table
            n = rows.shape[0]
            self._release()
            if n > 1:
                h = n // 2
                for a, b in ((0, h), (h, n)):
                    tot = int(P[a:b].sum())
                    if tot:
                        yield from self._next(st, rows[a:b], d, g, F, fcnt[a * g : b * g],
                                              foff[a * g : b * g], P[a:b], tlo, thi, tot)
                return
            hi = min(int(P[0]), thi)
            if hi - tlo <= 1:
                raise
            mid = tlo + (hi - tlo) // 2
            yield from self._next(st, rows, d, g, F, fcnt, foff, P, tlo, mid, mid - tlo)
            yield from self._next(st, rows, d, g, F, fcnt, foff, P, mid, hi, hi - mid)
            return
        st.rows_at[d] = st.rows_at.get(d, 0) + int(out.shape[0])
        if d + g == st.k:
            st.found += int(out.shape[0])
        nb = int(out.nbytes)
        st.held += nb
        try:
            yield from self._walk(st, out, d + g)
        finally:
            st.held -= nb

    # -- public protocol ------------------------------------------------------------------------
    def _fallback(self, plan):
        if plan.k == 0:
            from ..cpu import CpuEngine

            self.last_stats = {"fallback": "empty pattern"}
            return CpuEngine()
        return None

    def _roots(self, st, plan):
        roots = plan.cand_flat[plan.cand_ptr[0] : plan.cand_ptr[1]]
        return self.xp.asarray(np.ascontiguousarray(roots, dtype=np.int32).reshape(-1, 1))

    def _finish(self, st, t0):
        self.last_stats.update(
            rows_per_phase={int(d): int(c) for d, c in sorted(st.rows_at.items())},
            launches=st.launches, peak_device_bytes=int(st.peak), chunks=st.chunks,
            one_vertex_rows=st.one_vertex, windows=st.windows,
            memory_budget=int(st.limit_bytes), t_total=time.perf_counter() - t0)
        if not _SIM:
            try:
                import cupy

                self.last_stats["pool_bytes"] = int(cupy.get_default_memory_pool().total_bytes())
            except Exception:  # pragma: no cover - CuPy missing on a device machine
                pass

    def count(self, plan, limit=None, budget=UNLIMITED):
        """Number of matches (exact Python int), at most ``limit``; a :class:`PartialCount`
        lower bound when ``budget`` (deadline, Ctrl-C) stopped the search.

        A device fault that splitting a chunk does not absorb is retried once with half the
        memory budget (out-of-memory only), then counted on the CPU engine;
        ``last_stats["recovered"]`` says which (:class:`~.faults.Recovery`)."""
        limit, known = trivial_answer(plan, limit)
        if known is not None:
            return known
        return self._count_recovering(self._count, plan, limit, budget)

    def _count(self, plan, limit, budget):
        t0 = time.perf_counter()
        st = self._setup(plan, budget, collect=False)
        total = 0
        stopped = False
        walk = self._walk(st, self._roots(st, plan), 1)
        try:
            for x in walk:
                total += x if isinstance(x, int) else int(x.shape[0])
                if limit is not None and total >= limit:
                    break
        except _Stopped:
            stopped = True
        except KeyboardInterrupt:
            budget.stop("interrupted")
            stopped = True
        finally:
            walk.close()
            self._finish(st, t0)
        if limit is not None:
            total = min(total, limit)
        return PartialCount(total) if stopped and (limit is None or total < limit) else total

    def iter_chunks(self, plan, chunk=4096, limit=None, budget=UNLIMITED):
        """Matches as int32 arrays of up to ``chunk`` rows (column d: the data node of pattern
        node ``plan.order[d]``), at most ``limit`` in all; ``budget`` can end it early.

        The rows of a search are held on the host until its device work is complete
        (``last_stats["held_rows"]``): a device fault then never follows an emitted row, so the
        half-budget retry or the CPU engine redoes the search from nothing, each match once.
        Outputs too large to hold belong to gmatch, which streams (``engine="auto"`` sends
        geneva only searches whose tables and output fit a share of the device budget)."""
        chunk = check_chunk(chunk)
        limit, known = trivial_answer(plan, limit)
        if known is not None:
            return iter([trivial_rows(known)] if known else [])
        return self._iter_recovering(self._iter, plan, chunk, limit, budget, hold=True)

    def _iter(self, plan, chunk, limit, budget):
        t0 = time.perf_counter()
        st = self._setup(plan, budget, collect=True)
        left = limit
        walk = self._walk(st, self._roots(st, plan), 1)
        try:
            for table in walk:
                n = int(table.shape[0])
                if left is not None:
                    n = min(n, left)
                    left -= n
                if n:
                    host = np.ascontiguousarray(to_host(table[:n]), dtype=np.int32)
                    for a in range(0, n, chunk):
                        yield host[a : a + chunk]
                if left is not None and left <= 0:
                    break
        except _Stopped:
            return
        except KeyboardInterrupt:
            budget.stop("interrupted")
            return
        finally:
            walk.close()
            self._finish(st, t0)
