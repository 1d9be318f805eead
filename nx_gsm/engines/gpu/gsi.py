"""The GSI engine: a vertex-at-a-time BFS join on the GPU (GSI, ICDE 2020; SGSI, TKDE 35(11)).

Implements, over a :class:`~nx_gsm.plan.planner.MatchPlan` (Zeng, Zou, Ozsu, *SGSI - A Scalable
GPU-friendly Subgraph Isomorphism Algorithm*, IEEE TKDE 35(11), 2023):

* **Filtering (GSI Sec. 3.1).** GSI's N-bit signature is a hashed neighbourhood-label count that
  saturates at 2. The plan's candidates are the source of truth; a small device kernel applies the
  exact form of the signature test on top of them
  (:func:`~nx_gsm.engines.gpu.gsi_kernels.signature_kernel`): for every pattern node u and
  every group of u's neighbours with equal (edge compatibility, candidate set) -- the unhashed
  key ``L_E(e) + L_V(v')`` -- a data node needs at least as many distinct neighbours that fit
  the group. Without hashing there are no collisions, so it prunes at least what GSI's does.
* **Join (GSI Sec. 5, Algs. 2-3).** BFS in ``plan.order``, one level per pattern node. The linking
  edge of a row is the backward neighbour with the shortest list, chosen per row (GSI picks the
  globally rarest label; the per-row minimum is the tighter exact bound). Lists come from GSI's PCSR
  (:class:`~nx_gsm.engines.gpu.formats.PCSR`, one partition per edge class) where the linking
  edge's pattern edge admits exactly one data edge class, else from the plain CSR/CSC (a pattern
  edge compatible with several classes would need a union of partitions; the CSR row is then the
  exact bound, and ``feasible`` checks classes).
* **Prealloc-Combine (GSI Sec. 5).** Per row the bound is the length of that list; one prefix sum
  (CuPy ``cumsum``) reserves every row's slice of one buffer (GBA); one warp per row checks its
  candidates with :func:`~nx_gsm.engines.gpu.common.feasible` (exact NetworkX semantics, which
  subsumes GSI's later intersections with the other linking edges) and appends the valid ones to
  a 32-entry **write cache** in shared memory, flushed as one coalesced 128-byte write. No second
  join: a link kernel compacts the GBA into the next level.
* **Column-wise intermediate table (SGSI Sec. 6.2).** Level L stores one vertex column and one
  parent pointer per row (row i of level L = (row ``par[i]`` of level L-1, ``col[i]``)). A join
  reads a row's partial match by following parent pointers; full rows are materialised only when
  emitted.
* **Memory (SGSI Sec. 6, digest pitfall 4).** Before each level the exact GBA size is known from the
  prefix sum; when it (plus the next level's columns) exceeds the budget, the frontier is cut into
  chunks that fit -- rows whose own list is too long are split into list ranges -- and each chunk is
  joined and descended depth-first, so the device never holds more than the budget.
* **BFS -> DFS switch (``dfs_switch``).** That same exact bound is
  the switch test: where a level would not fit and more than the next level remains, the
  frontier becomes gMatch's task pool (:meth:`GMatchEngine.count_from` / ``iter_from`` on
  GSI's device plan) instead of being chunked; BFS levels run only while they fit.
* **Work granularity (SGSI+ Sec. 7, Eq. 1).** A histogram of the per-row bounds (bins of 32) and
  SGSI's cost model choose per row: a warp, 4 warps, a block, or the whole grid (the paper's
  dynamic-parallelism tier; Numba has none, so those rows run one at a time on every warp of a
  launch). Several warps on one row reserve write-cache flushes by an atomic add on the row's count.

Semantics are exactly the CPU engine's; outputs are exact Python ints (per-row counts int64).
"""

from __future__ import annotations

import logging
import time
import weakref

import numpy as np
from numba import cuda

from ..base import UNLIMITED, PartialCount
from ..cpu import check_chunk, trivial_answer, trivial_rows
from ..catalog import capabilities_of
from . import faults
from .common import to_host, quiet, sim_reset
from .device import array_module, device_info, is_simulator, memory_budget
from .formats import PCSR
from .gmatch import KMAX_LIMIT as DFS_KMAX_LIMIT
from .gmatch import GMatchConfig, GMatchEngine
from .gsi_kernels import JOIN_BUCKETS, join_kernels, link_kernel, signature_kernel
from .residency import DevPlan

__all__ = ["GsiEngine", "KMAX_LIMIT", "choose_tiers"]

log = logging.getLogger("nx_gsm.gpu")

_SIM = is_simulator()
KMAX_LIMIT = 64  # longest partial match a thread rebuilds in local memory (deeper: CPU engine)
# bytes per GBA slot (4) plus the next level's column and parent pointer (12)
_SLOT_BYTES = 16
# bytes per task: row, list start, length, kind, GBA offset, count, output offset, tier index
_TASK_BYTES = 57
_MULTI_WARP = 4  # warps per row in SGSI's multi-warp tier
# GBA slots per join launch at most: the budget and Ctrl-C are checked between launches, so this
# bounds the latency of a timeout (a launch of 2**26 candidate checks takes well under a second)
_MAX_SLOTS = 1 << 26


# ---------------------------------------------------------------------------------------------
# host side
# ---------------------------------------------------------------------------------------------
def choose_tiers(hist, sms, t_sn=0.1, t_kl=5.0):
    """SGSI Sec. 7, Eq. 1: the cheapest (x3, x1) bin thresholds for a histogram of row bounds.

    Parameters
    ----------
    hist : array of int
        ``hist[i]`` = rows whose bound lies in ``[32 i, 32 (i + 1))``.
    sms : int
        Streaming multiprocessors (the model assumes 32 warps per SM).
    t_sn, t_kl : float
        A block synchronisation and a kernel launch, in warp-iterations.

    Returns
    -------
    (x3, x1) : rows in bins ``<= x3`` run one warp per row, bins ``x3+1..31`` several warps per
    row, bins ``32..x1`` one block per row and bins ``> x1`` the whole grid per row. The total
    cost is separable in x3 and x1, so each is minimised alone (the paper brute-forces pairs).

    Example
    -------
    >>> choose_tiers([1000] + [0] * 40 + [3] + [0] * 200 + [1], sms=132)
    (0, 41)
    """
    h = np.asarray(hist, dtype=np.float64)
    b = h.size - 1
    i = np.arange(b + 1, dtype=np.float64)
    per_sm = np.ceil(h / sms)
    fa = i * np.ceil(h / (32 * sms))
    fm = (1 + 2 * t_sn) * np.ceil(32 * i * per_sm / 1024)
    fb = (1 + t_sn) * per_sm * np.ceil(32 * i / 1024)
    fk = h * (t_kl + np.ceil(32 * i / (1024 * sms)))
    top = min(31, b)
    ca = np.cumsum(fa[: top + 1])
    cm = np.cumsum(fm[: top + 1][::-1])[::-1]  # cm[x] = sum fm[x..top]
    cost3 = ca + np.append(cm[1:], 0.0)
    x3 = int(np.argmin(cost3))
    if b < 32:
        return (b if x3 == top else x3), b
    cb = np.cumsum(fb[32:])
    ck = np.cumsum(fk[32:][::-1])[::-1]
    cost1 = cb + np.append(ck[1:], 0.0)
    x1 = 32 + int(np.argmin(cost1))
    return x3, x1


class _Table:
    """SGSI's column-wise intermediate table: every level's vertex column and parent pointers
    in two device buffers used as a stack (a chunk's deeper levels are pushed and popped)."""

    def __init__(self, xp):
        self.xp = xp
        self.col = xp.empty(1, dtype=np.int32)
        self.par = xp.empty(1, dtype=np.int64)
        self.used = 0

    @property
    def nbytes(self):
        return 12 * int(self.col.size)

    def push(self, n):
        """Reserve ``n`` rows; returns their first (absolute) index."""
        need = self.used + n
        if need > self.col.size:
            xp = self.xp
            col = xp.empty(need, dtype=np.int32)
            par = xp.empty(need, dtype=np.int64)
            col[: self.used] = self.col[: self.used]
            par[: self.used] = self.par[: self.used]
            self.col, self.par = col, par
        base = self.used
        self.used = need
        return base


class _Stop(Exception):
    """Raised inside the level walk when the limit or the budget ends the search."""


class GsiEngine(faults.Recovery):
    """GSI/SGSI on the GPU: ``count(plan, limit, budget)`` and ``iter_chunks(plan, chunk, limit,
    budget)`` (the engine protocol of :mod:`nx_gsm.engines`; ``budget`` -- timeout, progress,
    Ctrl-C -- is checked between levels and chunks).

    Parameters (all optional)
    -------------------------
    memory_budget : int
        Bytes (default: ``nx.config.backends.gsm.device_memory_budget`` or 80% of free memory).
    max_chunk : int
        At most this many GBA slots per join launch (default: from the memory budget); small
        values force the chunked, depth-first path (tests).
    tiers : (int, int, int)
        Fixed list-length thresholds ``(W3, W2, W1)``: rows with bound <= W3 get a warp, <= W2
        4 warps, <= W1 a block, longer the whole grid (default: SGSI's histogram cost model with
        W2 = 1023, i.e. SGSI's 1024-thread limit; tests force small values).
    signatures : bool
        Apply the signature filter kernel (default True).
    dfs_switch : bool
        Where a level would not fit (where the frontier would otherwise be chunked), hand it to
        gmatch's warp DFS as its task pool (default True); False keeps the chunked BFS.
    block_warps, blocks : int
        Warps per block and the most blocks per launch (defaults from the device).
    t_sn, t_kl : float
        The cost model's synchronisation and launch costs in warp-iterations.

    ``last_stats`` holds levels, rows per level, chunks, tiers, peak device bytes and timings;
    after a switch to the DFS, ``switched_to_dfs_at_level`` (else None), ``dfs_pool_rows`` and
    ``dfs_stats`` (gmatch's ``last_stats`` of its last launch); ``rows_per_level`` then counts
    the BFS levels only.

    Example
    -------
    >>> from nx_gsm.api import prepare                                  # doctest: +SKIP
    >>> plan, _, _ = prepare(nx.cycle_graph(5), nx.path_graph(3), "mono")  # doctest: +SKIP
    >>> GsiEngine().count(plan)                                         # doctest: +SKIP
    10
    """

    name = "gsi"
    capabilities = capabilities_of("gsi")
    _device_caches = ("_gcache", "_acache", "_pcache", "_gm")

    def __init__(self, *, memory_budget=None, max_chunk=None, tiers=None, signatures=True,
                 dfs_switch=True, block_warps=None, blocks=None, t_sn=0.1, t_kl=5.0):
        self.xp = array_module()
        self.memory_budget = memory_budget
        self.max_chunk = None if max_chunk is None else max(1, int(max_chunk))
        self.tiers = tiers
        self.signatures = bool(signatures)
        self.dfs_switch = bool(dfs_switch)
        self.W = int(block_warps) if block_warps else (2 if _SIM else 8)
        self.blocks = blocks
        self.t_sn = float(t_sn)
        self.t_kl = float(t_kl)
        self.last_stats = {}
        self._pcache = None
        self._gm = None

    # -- helpers --------------------------------------------------------------------------------
    def _fallback(self, plan):
        if plan.k == 0 or plan.k > KMAX_LIMIT:
            reason = (f"pattern has {plan.k} nodes; gsi rebuilds partial matches of 1 to "
                      f"{KMAX_LIMIT} nodes")
            log.warning("gsi: falling back to the CPU engine: %s", reason)
            self.last_stats = {"fallback": reason}
            from ..cpu import CpuEngine

            return CpuEngine()
        return None

    def _max_blocks(self):
        if self.blocks is not None:
            return max(1, int(self.blocks))
        info = device_info()
        if info["simulator"]:
            return 1
        return (info["sm_count"] or 1) * max(1, 2048 // (32 * self.W))

    def _launch_blocks(self, warps):
        return max(1, min(self._max_blocks(), (warps + self.W - 1) // self.W))

    def _mem(self, extra=0):
        """Track the peak: our own accounting and, on a device, CuPy's pool."""
        own = self._static + self._tab.nbytes + int(extra)
        used = own
        if not _SIM:
            try:
                used = max(own, int(self.xp.get_default_memory_pool().used_bytes()))
            except Exception:  # pragma: no cover - a CuPy without a default pool
                pass
        if used > self.last_stats["peak_bytes"]:
            self.last_stats["peak_bytes"] = used

    def _pcsr(self, plan):
        """Per-driver PCSR partition index (-1: plain CSR) and the packed out/in PCSR arrays."""
        xp = self.xp
        nd = plan.drv_j.size
        cls = np.full(max(nd, 1), -1, dtype=np.int32)
        single = {}
        if plan.has_elabels:
            for t in range(nd):
                ok = np.flatnonzero(plan.eok[plan.drv_pe[t]])
                if ok.size == 1:
                    single[t] = int(ok[0])
        dummy = (xp.full((1, 16, 2), -1, dtype=np.int32), xp.zeros(1, dtype=np.int64),
                 xp.ones(1, dtype=np.int64), xp.zeros(1, dtype=np.int64),
                 xp.zeros(1, dtype=np.int32))
        if not single:
            return xp.asarray(cls), dummy, dummy, 0
        key = (plan.eclass.size, hash(plan.eclass.tobytes()))
        c = self._pcache
        if c is not None and c[0]() is plan.G and c[1] == key:
            packs = c[2]
        else:
            dirs = ("out", "in") if plan.G.directed else ("out",)
            packs = {}
            for dname in dirs:
                P = PCSR(plan.G, elabels=plan.eclass, direction=dname, xp=np)
                groups = [np.asarray(g) for g in P.groups]
                ci = [np.asarray(a) for a in P.ci]
                gbase = np.concatenate([[0], np.cumsum([g.shape[0] for g in groups])[:-1]])
                cbase = np.concatenate([[0], np.cumsum([a.size for a in ci])[:-1]])
                ci_all = np.concatenate(ci) if ci else np.zeros(0, np.int32)
                packs[dname] = (
                    {int(lv): i for i, lv in enumerate(P.label_values)},
                    (xp.asarray(np.concatenate(groups) if groups else dummy[0]),
                     xp.asarray(gbase.astype(np.int64)),
                     xp.asarray(np.asarray(P.delta, dtype=np.int64)),
                     xp.asarray(cbase.astype(np.int64)),
                     xp.asarray(ci_all if ci_all.size else np.zeros(1, np.int32))))
            if "in" not in packs:
                packs["in"] = packs["out"]
            try:
                self._pcache = (weakref.ref(plan.G), key, packs)
            except TypeError:
                self._pcache = None
        for t, c_ in single.items():
            index = packs["out" if plan.drv_dir[t] == 0 else "in"][0]
            # a class no data edge has: its list is empty, the CSR row is still an exact bound
            cls[t] = index.get(c_, -1)
        used = bool((cls >= 0).any())
        return xp.asarray(cls), packs["out"][1], packs["in"][1], int(used)

    def _signature_filter(self, plan, dp):
        """Candidate bits after the exact signature test (GSI Sec. 3.1); None if nothing pruned."""
        H = plan.H
        xp = self.xp
        bits = plan.cand_bits.copy()
        cand = plan.cand
        changed = False
        eok = plan.eok
        for u in range(H.n):
            # pattern out-neighbours of u grouped by (edge compatibility, multiplicity, cand row)
            groups = {}
            for pe in range(int(H.indptr[u]), int(H.indptr[u + 1])):
                w = int(H.indices[pe])
                if w == u:
                    continue
                key = (eok[pe].tobytes() if plan.has_elabels else b"", int(H.mult[pe]),
                       cand[w].tobytes())
                groups.setdefault(key, []).append((pe, w, int(H.mult[pe])))
            multi = [g for g in groups.values() if len(g) >= 2]
            if not multi:
                continue  # one neighbour per key: arc consistency already guarantees it
            verts = np.flatnonzero(cand[u]).astype(np.int32)
            if verts.size == 0:
                continue
            need = np.array([len(g) for g in multi], dtype=np.int32)
            ent = np.array([g[0] for g in multi], dtype=np.int32).reshape(-1, 3)
            ok = xp.zeros(verts.size, dtype=np.uint8)
            threads = 128
            blocks = max(1, min(4096, (verts.size + threads - 1) // threads))
            with quiet():
                signature_kernel[blocks, threads](
                    verts.size, xp.asarray(verts), len(multi), xp.asarray(need),
                    xp.asarray(ent), dp.cand_bits, dp.indptr, dp.indices, dp.mult, dp.eclass,
                    dp.eok, dp.has_el, ok)
            bad = verts[to_host(ok) == 0]
            if bad.size:
                changed = True
                bits[u, bad >> 3] &= ~(np.uint8(1) << (bad & 7).astype(np.uint8))
        self.last_stats["signature_pruned"] = int(
            np.unpackbits(plan.cand_bits, bitorder="little").sum()
            - np.unpackbits(bits, bitorder="little").sum()) if changed else 0
        return bits if changed else None

    # -- the level walk -------------------------------------------------------------------------
    def _setup(self, plan):
        t0 = time.perf_counter()
        xp = self.xp
        garrs = self._graph_arrays(plan.G)
        faults.point("plan_upload")
        dp = DevPlan(plan, xp, garrs, adj=self._adjacency(plan.G))
        self.last_stats = {"k": plan.k, "levels": plan.k, "rows_per_level": [0] * plan.k,
                           "chunks": 0, "split_rows": 0, "tiers": {"warp": 0, "multi_warp": 0,
                                                                   "block": 0, "grid": 0},
                           "peak_bytes": 0, "t_join": 0.0, "switched_to_dfs_at_level": None,
                           "dfs_pool_rows": 0}
        self._bits = plan.cand_bits
        if self.signatures and plan.k > 1:
            bits = self._signature_filter(plan, dp)
            if bits is not None:
                self._bits = np.ascontiguousarray(bits)
                dp.cand_bits = xp.asarray(self._bits)
        self._drv_cls, self._pcsr_out, self._pcsr_in, used = self._pcsr(plan)
        self.last_stats["pcsr"] = bool(used)
        G = plan.G
        self._static = int(G.indptr.nbytes + G.indices.nbytes + G.mult.nbytes
                           + plan.cand_bits.nbytes + plan.cand_flat.nbytes)
        if G.directed:
            self._static += int(G.in_indptr.nbytes + G.in_indices.nbytes)
        if used:
            self._static += sum(int(a.nbytes) for a in self._pcsr_out + self._pcsr_in)
        self._tab = _Table(xp)
        KMAX = next(b for b in JOIN_BUCKETS if b >= plan.k)
        self._bound, self._join = join_kernels(KMAX, self.W)
        self.last_stats["t_setup"] = time.perf_counter() - t0
        return dp

    def _avail(self):
        """GBA slots one join may use: half of what the budget leaves after the table, at most
        ``_MAX_SLOTS``."""
        if self.max_chunk is not None:
            return self.max_chunk
        left = memory_budget(self.memory_budget) - self._static - self._tab.nbytes
        return max(64, min(_MAX_SLOTS, left // (2 * (_SLOT_BYTES + _TASK_BYTES))))

    def _bounds(self, dp, L, base, n):
        """GSI's pre-allocation for the frontier rows ``base:base+n`` (L columns): each row's
        linking list (start, length, kind) and the prefix-sum total, the exact upper bound on
        the next level's rows, known before any of them is materialised."""
        xp = self.xp
        faults.point("bfs")
        lo = xp.empty(max(n, 1), dtype=np.int64)
        ln = xp.zeros(max(n, 1), dtype=np.int64)
        kd = xp.empty(max(n, 1), dtype=np.int8)
        threads = 128
        sim_reset()
        faults.point("launch")
        with quiet():
            self._bound[max(1, min(4096, (n + threads - 1) // threads)), threads](
                n, base, L, self._tab.col, self._tab.par, dp.drv_ptr, dp.drv_j, dp.drv_dir,
                self._drv_cls, dp.indptr, dp.in_indptr, dp.cand_ptr, *self._pcsr_out[:4],
                *self._pcsr_in[:4], lo, ln, kd)
        lo, ln, kd = lo[:n], ln[:n], kd[:n]
        return lo, ln, kd, (int(ln.sum()) if n else 0)

    def _tasks(self, L, base, n, lo, ln, kd, total, cap):
        """The frontier rows ``base:base+n`` (L columns, bounds from :meth:`_bounds`) as join
        tasks, in chunks of about ``cap`` slots.

        Yields (t_row, t_lo, t_len, t_kind, total slots) device arrays per chunk; rows whose list
        alone exceeds a chunk are split into list ranges.
        """
        xp = self.xp
        if total <= cap and n <= cap:
            yield xp.arange(base, base + n, dtype=np.int64), lo, ln, kd, total
            return
        # SGSI Sec. 6 / digest pitfall 4: cut the frontier by the exact prefix sum, on the device,
        # into row ranges of under 2 * cap slots + rows; a row longer than cap is left out of the
        # ranges and joined in list ranges of cap slots
        long_rows = ln > cap
        n_long = int(long_rows.sum())
        short = xp.where(long_rows, 0, ln) if n_long else ln
        incl = xp.cumsum(short)
        excl = incl - short
        key = (excl + xp.arange(n, dtype=np.int64)) // cap
        cuts = xp.flatnonzero(key[1:] != key[:-1]) + 1
        del key
        starts = xp.concatenate([xp.zeros(1, dtype=cuts.dtype), cuts])
        ends = xp.concatenate([cuts, xp.full(1, n, dtype=cuts.dtype)])
        sums = to_host(incl[ends - 1] - excl[starts])
        starts, ends = to_host(starts), to_host(ends)
        del incl, excl
        for a, b, tot in zip(starts.tolist(), ends.tolist(), sums.tolist()):
            if tot:
                yield (xp.arange(base + a, base + b, dtype=np.int64), lo[a:b], short[a:b],
                       kd[a:b], int(tot))
        if not n_long:
            return
        self.last_stats["split_rows"] += n_long
        rows = xp.flatnonzero(long_rows)
        r_h, lo_h, ln_h, kd_h = (to_host(x) for x in (rows, lo[rows], ln[rows], kd[rows]))
        pieces = (ln_h + cap - 1) // cap
        row = np.repeat(r_h, pieces)
        j = np.arange(row.size, dtype=np.int64) - np.repeat(np.cumsum(pieces) - pieces, pieces)
        t_lo = np.repeat(lo_h, pieces) + j * cap
        t_len = np.minimum(cap, np.repeat(ln_h, pieces) - j * cap)
        t_kind = np.repeat(kd_h, pieces)
        # pieces of cap slots (the last of a row shorter), batched under 2 * cap slots per launch
        first = np.cumsum(t_len) - t_len
        for part in np.split(np.arange(row.size), np.flatnonzero(np.diff(first // cap)) + 1):
            yield (xp.asarray(base + row[part].astype(np.int64)), xp.asarray(t_lo[part]),
                   xp.asarray(t_len[part]), xp.asarray(t_kind[part]), int(t_len[part].sum()))

    def _join_chunk(self, dp, L, t_row, t_lo, t_len, t_kind, total):
        """Prealloc-Combine for one chunk: (GBA, exclusive offsets F, valid count per task)."""
        xp = self.xp
        n_t = int(t_len.size)
        F = xp.cumsum(t_len) - t_len
        faults.point("bfs")
        gba = xp.empty(max(total, 1), dtype=np.int32)
        cnt = xp.zeros(max(n_t, 1), dtype=np.int64)
        self._mem(4 * total + _TASK_BYTES * n_t)
        W = self.W
        args = (t_row, t_lo, t_len, t_kind, F, L, self._tab.col, self._tab.par,
                *dp.check_args(), self._pcsr_out[4], self._pcsr_in[4], gba, cnt)
        t0 = time.perf_counter()
        faults.point("launch")
        tiers = self.last_stats["tiers"]
        if n_t:
            longest = int(t_len.max())
            if self.tiers is not None:
                w3, w2, w1 = self.tiers
            elif longest < 32:
                w3 = w2 = w1 = longest
            else:
                hist = to_host(xp.bincount(t_len // 32))
                x3, x1 = choose_tiers(hist, device_info()["sm_count"] or 1, self.t_sn, self.t_kl)
                w3, w2, w1 = 32 * x3 + 31, 1023, 32 * x1 + 31
            if longest <= w3:
                tiers["warp"] += n_t
                sim_reset()
                with quiet():
                    self._join[self._launch_blocks(n_t), 32 * W](n_t, cnt, 0, 1, *args)
            else:
                grid_warps = self._max_blocks() * W
                w2 = max(w2, w3)
                w1 = max(w1, w2)
                for name, sel, wpr in (
                        ("warp", t_len <= w3, 1),
                        ("multi_warp", (t_len > w3) & (t_len <= w2), _MULTI_WARP),
                        ("block", (t_len > w2) & (t_len <= w1), W),
                        ("grid", t_len > w1, grid_warps)):
                    idx = xp.flatnonzero(sel).astype(np.int64)
                    ns = int(idx.size)
                    if ns == 0:
                        continue
                    tiers[name] += ns
                    sim_reset()
                    with quiet():
                        self._join[self._launch_blocks(ns * wpr), 32 * W](ns, idx, 1, wpr, *args)
        if not _SIM:
            cuda.synchronize()
        self.last_stats["t_join"] += time.perf_counter() - t0
        return gba, F, cnt[:n_t]

    def _walk(self, dp, plan, L, base, n, collect, state, budget):
        """Extend the level-L rows ``base:base+n`` to complete matches, depth-first over chunks.

        Counting adds to ``state["found"]``; collecting yields device arrays of complete rows
        (column d = the data node of ``plan.order[d]``).
        """
        xp = self.xp
        k = plan.k
        lo, ln, kd, total = self._bounds(dp, L, base, n)
        cap = self._avail()
        if (total > cap or n > cap) and self._switches(plan, L):
            del lo, ln, kd
            yield from self._handoff(dp, plan, L, base, n, cap, collect, state, budget)
            return
        for t_row, t_lo, t_len, t_kind, total in self._tasks(L, base, n, lo, ln, kd, total, cap):
            self.last_stats["chunks"] += 1
            gba, F, cnt = self._join_chunk(dp, L, t_row, t_lo, t_len, t_kind, total)
            m = int(cnt.sum()) if cnt.size else 0
            self.last_stats["rows_per_level"][L] += m
            last = L + 1 == k
            if last and not collect:
                state["found"] += m
            elif m:
                excl = xp.cumsum(cnt) - cnt
                nb = self._tab.push(m)
                self._mem(4 * total + _TASK_BYTES * int(cnt.size))
                n_t = int(cnt.size)
                with quiet():
                    link_kernel[self._launch_blocks(n_t), 32 * self.W](
                        n_t, t_row, F, cnt, excl, gba, self._tab.col, self._tab.par, nb)
                del gba, F, cnt, excl, t_row, t_lo, t_len, t_kind
                if last:
                    state["found"] += m
                    yield self._rows(nb, m, k)
                else:
                    yield from self._walk(dp, plan, L + 1, nb, m, collect, state, budget)
                self._tab.used = nb
            self._check(state, budget)

    def _switches(self, plan, L):
        """Hand the level-L frontier to the DFS rather than chunk it? Only with ``dfs_switch``,
        where gmatch's stack holds the pattern, and while more than the next level remains: a
        last level is never stored, so its chunked join is already one flat pass per chunk."""
        return self.dfs_switch and L + 2 <= plan.k <= DFS_KMAX_LIMIT

    def _handoff(self, dp, plan, L, base, n, cap, collect, state, budget):
        """The BFS -> DFS switch: the exact Prealloc bound says the next level does not fit,
        so the level-L rows become gmatch's task pool (its warp DFS needs memory per warp, not per
        partial match). The column-wise rows are made row-major on the device ``cap`` rows at a
        time -- at most 4 L bytes a row against the 146 bytes a join slot would take, so each
        slice fits where a join chunk would -- and gmatch gets what the budget leaves."""
        st = self.last_stats
        st["switched_to_dfs_at_level"] = L
        st["dfs_pool_rows"] = n
        gm = self._dfs_engine()
        for a in range(0, n, cap):
            rows = self._rows(base + a, min(cap, n - a), L)
            self._mem(rows.nbytes)
            gm.memory_budget = max(1 << 20, memory_budget(self.memory_budget) - self._static
                                   - self._tab.nbytes - int(rows.nbytes))
            left = None if state["limit"] is None else state["limit"] - state["found"]
            # gmatch searches GSI's device plan as it is (its signature-pruned candidate bits,
            # no second upload of the plan)
            if collect:
                for out in gm.iter_from(plan, rows, chunk=1 << 16, limit=left, budget=budget,
                                        device_plan=dp):
                    state["found"] += out.shape[0]
                    yield out
            else:
                # a partial count means the budget stopped it, and _check sees that budget
                state["found"] += int(gm.count_from(plan, rows, limit=left, budget=budget,
                                                    device_plan=dp))
            del rows
            st["dfs_stats"] = dict(gm.last_stats)
            self._check(state, budget)

    def _dfs_engine(self):
        if self._gm is None:
            blocks = None if self.blocks is None else max(1, int(self.blocks))  # as _max_blocks
            self._gm = GMatchEngine(config=GMatchConfig(blocks=blocks))
        return self._gm

    def _check(self, state, budget):
        lim = state["limit"]
        if lim is not None and state["found"] >= lim:
            raise _Stop()
        if budget.partial or not budget.keep_going(state["found"], self.last_stats["chunks"], 0):
            state["stopped"] = True
            raise _Stop()

    def _rows(self, base, m, k):
        """Materialise complete rows ``base:base+m`` of the last level from the parent chains."""
        xp = self.xp
        faults.point("output")
        out = xp.empty((m, k), dtype=np.int32)
        idx = xp.arange(base, base + m, dtype=np.int64)
        for j in range(k - 1, -1, -1):
            out[:, j] = self._tab.col[idx]
            if j:
                idx = self._tab.par[idx]
        return out

    def _run(self, plan, collect, limit, budget):
        """Generator over complete-row device arrays (collect) with ``state`` holding the count."""
        state = {"found": 0, "limit": limit, "stopped": False}
        t0 = time.perf_counter()
        dp = self._setup(plan)
        roots = np.ascontiguousarray(plan.cand_flat[plan.cand_ptr[0] : plan.cand_ptr[1]])
        bits = self._bits[int(plan.order[0])]  # the signature filter may prune roots
        roots = roots[(bits[roots >> 3] >> (roots & 7)) & 1 == 1]
        n0 = int(roots.size)
        self.last_stats["rows_per_level"][0] = n0
        self._state = state

        def gen():
            try:
                if n0 == 0:
                    return
                base = self._tab.push(n0)
                self._tab.col[base : base + n0] = self.xp.asarray(roots.astype(np.int32))
                self._tab.par[base : base + n0] = -1
                self._mem()
                if plan.k == 1:
                    state["found"] = n0
                    if collect:
                        yield self._rows(base, n0, 1)
                    return
                yield from self._walk(dp, plan, 1, base, n0, collect, state, budget)
            except _Stop:
                return
            except KeyboardInterrupt:
                budget.stop("interrupted")
                state["stopped"] = True
            finally:
                self.last_stats["t_total"] = time.perf_counter() - t0
                self.last_stats["stopped"] = state["stopped"]
                self._tab = _Table(self.xp)

        return gen(), state

    # -- public protocol ------------------------------------------------------------------------
    def count(self, plan, limit=None, budget=UNLIMITED):
        """Number of matches (exact Python int), at most ``limit``; a :class:`PartialCount`
        lower bound when ``budget`` (deadline, Ctrl-C) stopped the search.

        A device fault is retried once with half the memory budget (out-of-memory only), then
        counted on the CPU engine; ``last_stats["recovered"]`` says which
        (:class:`~.faults.Recovery`)."""
        limit, known = trivial_answer(plan, limit)
        if known is not None:
            return known
        return self._count_recovering(self._count, plan, limit, budget)

    def _count(self, plan, limit, budget):
        gen, state = self._run(plan, False, limit, budget)
        for _ in gen:
            pass
        total = state["found"] if limit is None else min(state["found"], limit)
        if state["stopped"] and (limit is None or total < limit):
            return PartialCount(total)
        return total

    def iter_chunks(self, plan, chunk=4096, limit=None, budget=UNLIMITED):
        """Matches as int32 arrays of up to ``chunk`` rows (column d: the data node of pattern
        node ``plan.order[d]``), at most ``limit`` in all; ``budget`` can end it early.

        The rows of a search are held on the host until its device work is complete
        (``last_stats["held_rows"]``): a device fault then never follows an emitted row, so the
        half-budget retry or the CPU engine redoes the search from nothing, each match once.
        Outputs too large to hold belong to gmatch, which streams (``engine="auto"`` sends gsi
        only searches whose output fits a share of the device budget)."""
        chunk = check_chunk(chunk)
        limit, known = trivial_answer(plan, limit)
        if known is not None:
            return iter([trivial_rows(known)] if known else [])
        return self._iter_recovering(self._iter, plan, chunk, limit, budget, hold=True)

    def _iter(self, plan, chunk, limit, budget):
        left = limit
        gen, _ = self._run(plan, True, limit, budget)
        try:
            for rows in gen:
                host = np.ascontiguousarray(to_host(rows), dtype=np.int32)
                if left is not None:
                    host = host[:left]
                    left -= host.shape[0]
                for a in range(0, host.shape[0], chunk):
                    yield host[a : a + chunk]
                if left is not None and left <= 0:
                    return
        finally:
            gen.close()
