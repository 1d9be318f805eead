"""gMatch's engine object: :class:`GMatchEngine`, its parameters and the public protocol
(count, collect, partial-match pools made elsewhere, streaming in batches)."""

from __future__ import annotations

import logging
import time

import numpy as np

from ....plan.space import build_space, space_visits
from ...base import UNLIMITED, PartialCount
# (at import: a function-level import is ~15 us a search)
from ...cpu import check_chunk, check_prefixes, count_probe, trivial_answer, trivial_rows
from ...catalog import capabilities_of
from .. import faults
from ..common import exact_sum, to_host
from ..device import array_module
from ..residency import DevPlan, PlanSlots
from .config import (BFS_CHAIN, C_OUT, C_STOP, FUSED_HOST_ROWS, HOST_BFS_ROWS, HOST_COUNT_ROWS,
                     HOST_WORK, KMAX_LIMIT, SMALL_HOST_ROWS, SMALL_SPACE, SMALL_STEPS,
                     SPACE_VISITS, flag, knob)
from .host import GMatchSearch
from .kernels import bucket

__all__ = ["GMatchEngine"]

log = logging.getLogger("nx_gsm.gpu")

_UNREAD = object()  # (GMatchEngine._dev_plan: the candidate space not looked up yet)


class GMatchEngine(GMatchSearch):
    """gMatch on the GPU: ``count(plan, limit, budget)`` and ``iter_chunks(plan, chunk, limit,
    budget)`` (the engine protocol of :mod:`nx_gsm.engines`; ``budget`` carries the API's timeout,
    progress and Ctrl-C, which stop a running kernel through its stop flag).

    Parameters (all optional):

    * ``pool_target``: rows for the BFS prefix (default: 8 per resident warp);
    * ``bfs_levels``: the most BFS levels (default: until the target, or until a frontier stays
      under 32 rows after 4 levels);
    * ``host_rows``: BFS levels of at most this many rows run on the host (default
      :data:`HOST_BFS_ROWS`; 0: every level on the GPU);
    * ``bfs_chain``: GPU BFS levels launched before their sizes are read (default
      :data:`BFS_CHAIN`; 1: a read after every level);
    * ``host_count_rows``: a count's last level is counted on the host up to this many
      matches (default :data:`HOST_COUNT_ROWS`, never fewer than ``host_rows``; it writes no
      rows, so it may go past them; without host levels, ``host_rows=0``, none is counted);
    * ``out_capacity``: rows of the device output buffer (default from the memory budget, at most
      256 MB); larger outputs are counted per pool row and collected in batches that fit;
    * ``steal``: work donation between warps (default True); ``queue_capacity``: ring slots;
    * ``memory_budget``: bytes (default: ``nx.config.backends.gsm.device_memory_budget`` or 80% of
      the free device memory);
    * ``blocks``: grid size override;
    * ``time_limit``: seconds per DFS launch, after which the kernel is stopped and
      ``TimeoutError`` raised (for benchmarks);
    * ``candidate_space``: local candidate sets from the plan's candidate space (default True;
      False: raw adjacency rows, as device-resident plans always use);
    * ``fused``: a count runs its device levels and its DFS in one cooperative launch
      (default True; see :meth:`_fused`), after host levels of fewer than
      ``fused_host_rows`` rows (default :data:`FUSED_HOST_ROWS` by stack depth, never more than
      ``host_rows``: ``host_rows=0`` starts it from the roots); False: BFS levels
      launched from the host (``host_rows``, ``bfs_chain``), then the DFS, as collects do;
      ``fused_regs``: the fused kernel's register cap (default :data:`FUSED_REGS`; 0: none);
      ``host_work``: those host levels stop once they examined this many candidates
      (default :data:`HOST_WORK`; 0: no bound); ``fused_narrow``: the fused search's levels
      of fewer rows than this run in one block, without grid barriers (default
      :data:`FUSED_NARROW` per warp of a block; 0: none); ``small_space``: a count whose
      candidate space holds at most this many entries per pattern node is the CPU engine's
      sequential search's (up to :data:`SMALL_STEPS` candidates), else keeps its levels on
      the host to :data:`SMALL_HOST_ROWS` rows (default :data:`SMALL_SPACE`; 0: never);
    * ``adjacency_bits``: a simple data graph of at most ~11,500 nodes without edge labels
      has its edges tested through a bitmap, one load a test, instead of a binary search of
      the row (default True; see :func:`~nx_gsm.engines.gpu.formats.adjacency_bits`);

    ``NX_GSM_GMATCH_POOL_TARGET``, ``NX_GSM_GMATCH_STEAL`` (0/1), ``NX_GSM_GMATCH_HOST_ROWS``,
    ``NX_GSM_GMATCH_HOST_COUNT_ROWS``, ``NX_GSM_GMATCH_BFS_CHAIN``, ``NX_GSM_GMATCH_SPACE``
    (0/1), ``NX_GSM_GMATCH_FUSED`` (0/1), ``NX_GSM_GMATCH_FUSED_HOST_ROWS``,
    ``NX_GSM_GMATCH_FUSED_REGS``, ``NX_GSM_GMATCH_FUSED_NARROW``,
    ``NX_GSM_GMATCH_SMALL_SPACE``, ``NX_GSM_GMATCH_HOST_WORK``, ``NX_GSM_GMATCH_ADJ_BITS`` (0/1)
    and ``NX_GSM_GMATCH_TIME_LIMIT``
    set the defaults of the corresponding parameters (for
    harnesses that pick engines by name).
    Patterns deeper than :data:`KMAX_LIMIT` run on the CPU engine (logged). ``last_stats`` holds
    the last run's pool size, grid, donations and timings.
    """

    name = "gmatch"
    capabilities = capabilities_of("gmatch")

    def __init__(self, *, pool_target=None, bfs_levels=None, out_capacity=None, steal=None,
                 queue_capacity=1 << 15, memory_budget=None, blocks=None, time_limit=None,
                 host_rows=None, candidate_space=None, host_count_rows=None, bfs_chain=None,
                 fused=None, fused_host_rows=None, fused_regs=None, host_work=None,
                 fused_narrow=None, small_space=None, adjacency_bits=None):
        self.xp = array_module()
        # NX_GSM_GMATCH_* knobs let test harnesses reach engines by name
        pool_target = knob(pool_target, "POOL_TARGET", None)
        self.host_rows = knob(host_rows, "HOST_ROWS", HOST_BFS_ROWS)
        self.host_count_rows = knob(host_count_rows, "HOST_COUNT_ROWS", HOST_COUNT_ROWS)
        self.bfs_chain = knob(bfs_chain, "BFS_CHAIN", BFS_CHAIN)
        if self.bfs_chain < 1:
            raise ValueError(f"bfs_chain must be at least 1, got {self.bfs_chain}")
        steal = knob(steal, "STEAL", True, flag)
        self.candidate_space = knob(candidate_space, "SPACE", True, flag)
        self.fused = knob(fused, "FUSED", True, flag)
        self.fused_host_rows = knob(fused_host_rows, "FUSED_HOST_ROWS", None)
        self.host_work = knob(host_work, "HOST_WORK", HOST_WORK)
        self.fused_narrow = knob(fused_narrow, "FUSED_NARROW", None)
        self.fused_regs = knob(fused_regs, "FUSED_REGS", None)
        self.small_space = knob(small_space, "SMALL_SPACE", SMALL_SPACE)
        self.adjacency_bits = knob(adjacency_bits, "ADJ_BITS", True, flag)
        time_limit = knob(time_limit, "TIME_LIMIT", None, float)
        self.pool_target = pool_target
        self.bfs_levels = None if bfs_levels is None else int(bfs_levels)
        self.out_capacity = out_capacity
        self.steal = bool(steal)
        self.queue_capacity = int(queue_capacity)
        self.memory_budget = memory_budget
        self.blocks = blocks
        self.time_limit = time_limit
        self.last_stats = {}
        self._faults = []
        self._plan = None

    # -- helpers --------------------------------------------------------------------------------
    def _fallback(self, plan):
        if plan.k > KMAX_LIMIT:
            reason = (f"pattern has {plan.k} nodes; gmatch's shared-memory stack holds at most "
                      f"{KMAX_LIMIT} levels")
            log.warning("gmatch: falling back to the CPU engine: %s", reason)
            self.last_stats = {"fallback": reason}
            from ...cpu import CpuEngine

            return CpuEngine()
        return None

    # -- public protocol ------------------------------------------------------------------------
    def _prepare(self, plan, count=False, fused=False):
        """Device plan, task pool and its depth; the device plan is None when the host prefix
        (:meth:`_host_prefix`) reached the last depth: its rows are then every match -- or,
        with ``count``, the "rows" may be the number of matches (an int) when the host counted
        the last level. With ``fused`` the host levels stop at ``fused_host_rows`` and no GPU
        level runs: the rows are the fused search's start (:meth:`_fused`)."""
        t0 = time.perf_counter()
        KMAX, W = bucket(plan.k)
        fh = None
        space = _UNREAD
        if fused:
            fh = self.fused_host_rows
            if fh is None:
                fh = FUSED_HOST_ROWS[KMAX]
                if count:
                    # unchecked against the budget (a free-memory read: ~8-35 us of the card's
                    # host, more than the probe's own glue) until it goes to the device
                    space = self._space(plan, fit=False)
                    if space is not None and space.val.size <= self.small_space * plan.k:
                        # a small search: the CPU engine's sequential search counts it, else
                        # its levels run on the host
                        got = count_probe(plan, SMALL_STEPS)
                        if got is not None:
                            self.last_stats = {"host_levels": 0, "host_counted": True,
                                               "k": plan.k, "probe": True, "pool_rows": 0,
                                               "pool_depth": plan.k,
                                               "t_host_bfs": time.perf_counter() - t0}
                            return None, got, plan.k
                        fh = SMALL_HOST_ROWS
                    space = self._fitting(space)
            fh = min(self.host_rows, fh)
        target = self._default_pool_target(W)
        roots = plan.cand_flat[plan.cand_ptr[0] : plan.cand_ptr[1]]
        rows, L, levels, last = self._host_prefix(plan, roots, target, count, fh,
                                                  self.host_work if fused else 0)
        t1 = time.perf_counter()
        self.last_stats = {"host_levels": levels, "t_host_bfs": t1 - t0, "k": plan.k}
        if last is not None:
            self.last_stats.update(pool_rows=0, pool_depth=int(L), host_counted=True)
            return None, last, L
        dp = None
        if L < plan.k and rows.shape[0]:
            dp = self._dev_plan(plan, point="plan_upload", space=space)
            t2 = time.perf_counter()
            if fused:
                self.last_stats.update(t_upload=t2 - t1, host_rows=int(rows.shape[0]))
                return dp, rows, L
            growth = None  # rows per row per host level (sizes the GPU levels' chains)
            if levels and roots.shape[0]:
                growth = (rows.shape[0] / roots.shape[0]) ** (1.0 / levels)
            rows, L = self._bfs(dp, rows, target, L, levels, growth)
            self.last_stats.update(t_upload=t2 - t1, t_bfs=time.perf_counter() - t2)
        self.last_stats.update(pool_rows=int(rows.shape[0]), pool_depth=int(L))
        return dp, rows, L

    def count(self, plan, limit=None, budget=UNLIMITED):
        """Number of matches (exact Python int), at most ``limit``; a :class:`PartialCount`
        lower bound when ``budget`` (deadline, Ctrl-C) stopped the search.

        A device fault (out of memory, failed launch) is not the caller's problem: an
        out-of-memory is retried once with half the memory budget, then (or for any other fault)
        the CPU engine counts the whole search; ``last_stats["recovered"]`` says which.
        """
        limit, known = trivial_answer(plan, limit)
        if known is not None:
            return known
        return self._count_recovering(self._count, plan, limit, budget)

    def _count(self, plan, limit, budget):
        dp, rows, L = self._prepare(plan, count=True, fused=self.fused)
        if isinstance(rows, int):
            return rows if limit is None else min(rows, limit)
        if L == plan.k or rows.shape[0] == 0:
            n = int(rows.shape[0])
            return n if limit is None else min(n, limit)
        got = self._fused(dp, rows, L, limit, budget) if self.fused else None
        if got is not None:
            total, stopped = got
        else:
            if self.fused:  # no cooperative launch here: the GPU levels from the host
                t2 = time.perf_counter()
                rows, L = self._bfs(dp, rows, self._default_pool_target(bucket(dp.k)[1]), L,
                                    L - 1)
                self.last_stats.update(t_bfs=time.perf_counter() - t2,
                                       pool_rows=int(rows.shape[0]), pool_depth=int(L))
                if L == plan.k or rows.shape[0] == 0:
                    n = int(rows.shape[0])
                    return n if limit is None else min(n, limit)
            ctl, tc, _, stopped = self._dfs(dp, rows, collect=False, stop_at=limit,
                                            budget=budget)
            total = exact_sum(to_host(tc))
        if limit is not None:
            total = min(total, limit)
        if stopped is not None and (limit is None or total < limit):
            return PartialCount(total)
        return total

    def device_rows(self, plan, limit=None, budget=UNLIMITED):
        """Every match (at most ``limit``) as one device array ``(rows, k)`` in matching order,
        never copied to the host: the zero-copy output of a DeviceGraph search.

        Counts first, then collects into a buffer of exactly that size; returns None when that
        buffer would not fit the memory budget or the device failed (the caller then streams
        through the host with :meth:`iter_chunks`).
        """
        xp = self.xp
        self._faults = []
        limit, known = trivial_answer(plan, limit)
        if known is not None:
            return xp.zeros((known, plan.k), dtype=np.int32)
        if plan.k > KMAX_LIMIT:
            return None
        try:
            dp, rows, L = self._prepare(plan)
            if L == plan.k or rows.shape[0] == 0:
                rows = xp.asarray(rows)
                return rows if limit is None else rows[:limit]
            _, tc, _, stopped = self._dfs(dp, rows, stop_at=limit, budget=budget)
            total = exact_sum(to_host(tc))
            if limit is not None:
                total = min(total, limit)
            if stopped is not None or 4 * plan.k * total > self._budget() // 2:
                return None
            ctl, _, out, stopped = self._dfs(dp, rows, collect=True, stop_at=total, cap=total,
                                             budget=budget)
            if stopped is not None:
                return None
            return out[: min(int(ctl[C_OUT]), total)]
        except faults.device_errors() as exc:
            self._recover(exc)
            return None

    def count_per_row(self, plan):
        """(pool rows on host, exact count per row) -- for tests and diagnostics."""
        dp, rows, L = self._prepare(plan)
        if L == plan.k or rows.shape[0] == 0:
            return to_host(rows), np.ones(rows.shape[0], dtype=np.int64)
        _, tc, _, _ = self._dfs(dp, rows)
        return to_host(rows), to_host(tc)

    # -- task pools made elsewhere ----------------------------------------------------------------
    def count_from(self, plan, rows, limit=None, budget=UNLIMITED, cut_part=None):
        """Matches below the partial matches ``rows`` -- an ``(n, L)`` int32 NumPy or CuPy array,
        ``1 <= L <= k``, column d the data node of ``plan.order[d]`` -- each row's subtree
        counted once, at most ``limit``; a :class:`PartialCount` when ``budget`` stopped it.

        The rows are the DFS's task pool as given (a CuPy array is used in place): the public
        entry for a pool another engine built, such as GSI's BFS levels when the next one
        would not fit the device. Every row must be a feasible partial match, as every engine's levels are.

        ``cut_part`` (int32 part id per data node) keeps only the matches whose pattern pairs
        at depths >= 2 map onto no cut pair smaller than the one of depths 0 and 1 (PBE's
        DUPREMOVE): the partitioned engine's cross search, whose rows are seeded cut pairs.
        ``last_stats["t_upload"]`` is the time spent uploading the graph (if not cached), the
        plan, ``cut_part`` and the rows.
        """
        rows = self._checked_rows(plan, rows)
        limit, _ = trivial_answer(plan, limit)
        if plan.empty or limit == 0:
            return 0
        fb = self._fallback(plan)
        if fb is not None:
            self._no_filter_on_cpu(cut_part)
            got = fb.count_from(plan, to_host(rows), budget=budget)
            return got if limit is None else min(got, limit)
        t0 = time.perf_counter()
        dp = self._dev_plan(plan, cut_part)
        return self._count_from(dp, rows, limit, budget, t0=t0)

    def iter_from(self, plan, rows, chunk=4096, limit=None, budget=UNLIMITED, cut_part=None):
        """Like :meth:`iter_chunks`, restricted to the subtrees of ``rows`` (see
        :meth:`count_from`, also for ``cut_part``): host int32 arrays of up to ``chunk`` rows, at
        most ``limit``. With ``cut_part`` a device fault reaches the caller (as from
        :meth:`count_from`) instead of being finished on the CPU engine, which has no DUPREMOVE:
        the caller recovers and redoes the rows."""
        rows = self._checked_rows(plan, rows)
        chunk = check_chunk(chunk)
        limit, _ = trivial_answer(plan, limit)
        if plan.empty or limit == 0:
            return
        fb = self._fallback(plan)
        if fb is not None:
            self._no_filter_on_cpu(cut_part)
            yield from fb.iter_from(plan, to_host(rows), chunk=chunk, limit=limit, budget=budget)
            return
        t0 = time.perf_counter()
        dp = self._dev_plan(plan, cut_part)
        yield from self._iter_from(dp, plan, rows, chunk, limit, budget, t0=t0)

    def _checked_rows(self, plan, rows):
        """``rows`` checked as far as memory safety needs before any kernel indexes by them:
        ``(n, L)`` integers with ``1 <= L <= k`` and data node ids in range (a host array
        becomes int32 here; a device array is checked where it lies)."""
        if isinstance(rows, np.ndarray) or not hasattr(rows, "__cuda_array_interface__"):
            rows = check_prefixes(plan, rows)
        elif rows.ndim == 2 and rows.dtype.kind in "iu" and rows.size and (
                int(rows.min()) < 0 or int(rows.max()) >= plan.G.n):
            raise ValueError(f"partial matches hold data node ids outside 0..{plan.G.n - 1}")
        if rows.ndim != 2 or not 1 <= rows.shape[1] <= plan.k or rows.dtype.kind not in "iu":
            raise ValueError(f"partial matches must be an integer array of shape (n, L) with "
                             f"1 <= L <= {plan.k}; got shape {tuple(rows.shape)} of "
                             f"{rows.dtype}")
        return rows

    @staticmethod
    def _no_filter_on_cpu(cut_part):
        if cut_part is not None:
            raise ValueError(f"cut_part needs the device search (patterns of at most "
                             f"{KMAX_LIMIT} nodes); the CPU engine has no DUPREMOVE filter")

    def _dev_plan(self, plan, cut_part=None, point=None, space=_UNREAD):
        """The plan on the device, in the thread's kept slots when no other plan holds them
        (``point``: the fault point between the graph's upload and the plan's; ``space``:
        :meth:`_space`'s answer where the caller has it, else :data:`_UNREAD`)."""
        garrs = self._graph_arrays(plan.G)
        if point:
            faults.point(point)
        if self._slots is None:
            self._slots = PlanSlots(self.xp)
        if space is _UNREAD:
            space = self._space(plan)
        self.last_stats["space"] = space is not None
        adj = self._adjacency(plan.G) if self.adjacency_bits else None
        self.last_stats["adj_bits"] = adj is not None and not plan.has_elabels
        return DevPlan(plan, self.xp, garrs, cut_part, self._slots, space, adj)

    def _space(self, plan, fit=True):
        """The plan's candidate space for the kernels' local candidate sets, or None (raw
        adjacency rows): a host plan's space, built here unless its build would visit more than
        ``SPACE_VISITS`` adjacency entries, and kept off the device past an eighth of the
        memory budget (unless ``fit`` is False: the caller then checks it with
        :meth:`_fitting` before it goes to the device). The host levels have built it already
        for every search they start."""
        if not self.candidate_space or not isinstance(plan.cand_flat, np.ndarray) or \
                getattr(plan.G, "on_device", False) or plan.drv_j.size == 0:
            return None
        if plan.__dict__.get("_space") is None and space_visits(plan) > SPACE_VISITS:
            return None
        space = build_space(plan)
        return self._fitting(space) if fit else space

    def _fitting(self, space):
        """``space`` where it fits an eighth of the memory budget, else None."""
        return space if space is not None and space.nbytes <= self._budget() // 8 else None

    def _pool(self, dp, rows, t0=None):
        xp = self.xp
        rows = xp.ascontiguousarray(xp.asarray(rows), dtype=np.int32)
        if rows.ndim != 2 or not 1 <= rows.shape[1] <= dp.k:
            raise ValueError(f"partial matches must be an (n, L) array with 1 <= L <= {dp.k}; "
                             f"got shape {tuple(rows.shape)}")
        n, L = rows.shape
        self.last_stats = {"pool_rows": int(n), "pool_depth": int(L), "k": dp.k,
                           "pool_given": True}
        if t0 is not None:
            self.last_stats["t_upload"] = time.perf_counter() - t0
        return rows

    def _count_from(self, dp, rows, limit, budget, t0=None):
        """:meth:`count_from` on an uploaded plan (GSI passes its own, with its signature-pruned
        candidate bits); ``t0``: when the caller's uploads began."""
        rows = self._pool(dp, rows, t0)
        n, L = rows.shape
        if n == 0 or L == dp.k:
            return n if limit is None else min(n, limit)
        _, tc, _, stopped = self._dfs(dp, rows, stop_at=limit, budget=budget)
        total = exact_sum(to_host(tc))
        if limit is not None:
            total = min(total, limit)
        if stopped is not None and (limit is None or total < limit):
            return PartialCount(total)
        return total

    def _iter_from(self, dp, plan, rows, chunk, limit, budget, t0=None):
        """:meth:`iter_from` on an uploaded plan. A pool handed over is usually one whose output
        did not fit a BFS level, so it is counted per row and collected in batches at once
        rather than first tried in one buffer; a ``limit`` that fits the buffer is one pass."""
        self._faults = []
        self._plan = plan  # _collect_batches finishes a faulted batch's prefixes on the CPU
        rows = self._pool(dp, rows, t0)
        n, L = rows.shape
        remaining = [limit]
        if n == 0 or L == dp.k:
            yield from self._emit(rows, n, chunk, remaining)
            return
        cap = self._capacity(plan)
        if limit is not None and limit <= cap:
            yield from self._collect_limit(dp, rows, limit, chunk, remaining, budget)
            return
        yield from self._collect_batches(dp, rows, cap, chunk, remaining, budget)

    def _capacity(self, plan):
        if self.out_capacity is not None:
            return max(1, int(self.out_capacity))
        return max(1024, min(self._budget() // 4, 256 << 20) // (4 * plan.k))

    def iter_chunks(self, plan, chunk=4096, limit=None, budget=UNLIMITED):
        """Matches as int32 arrays of up to ``chunk`` rows (column d: the data node of pattern
        node ``plan.order[d]``), at most ``limit`` in all; ``budget`` can end it early.

        Device faults are recovered as in :meth:`count`; once rows have been emitted, the
        partial matches not yet emitted are finished by the CPU engine (``_collect_batches``),
        so every match is still produced exactly once.
        """
        chunk = check_chunk(chunk)
        limit, known = trivial_answer(plan, limit)
        if known is not None:
            return iter([trivial_rows(known)] if known else [])
        self._plan = plan
        return self._iter_recovering(self._iter, plan, chunk, limit, budget, hold=False)

    def _iter(self, plan, chunk, limit, budget):
        dp, rows, L = self._prepare(plan)
        remaining = [limit]
        if L == plan.k or rows.shape[0] == 0:
            yield from self._emit(rows, rows.shape[0], chunk, remaining)
            return
        cap = self._capacity(plan)
        if limit is not None and limit <= cap:
            yield from self._collect_limit(dp, rows, limit, chunk, remaining, budget)
            return
        ctl, _, out, stopped = self._dfs(dp, rows, collect=True, stop_at=None, cap=cap,
                                         budget=budget)
        n_out = int(ctl[C_OUT])
        if stopped is not None or (n_out <= cap and ctl[C_STOP] == 0):
            # complete, or cut short by the budget: every reserved row below cap was written
            yield from self._emit(out, min(n_out, cap), chunk, remaining)
            return
        del out
        self.last_stats["streamed"] = True
        yield from self._collect_batches(dp, rows, cap, chunk, remaining, budget)

    def _collect_limit(self, dp, rows, limit, chunk, remaining, budget):
        """One pass for a ``limit`` that fits a buffer: the kernel stops at ``limit`` rows."""
        ctl, _, out, _ = self._dfs(dp, rows, collect=True, stop_at=limit, cap=limit,
                                   budget=budget)
        yield from self._emit(out, min(int(ctl[C_OUT]), limit), chunk, remaining)

    def _emit(self, out, n, chunk, remaining):
        """Stream the first ``n`` rows of a device buffer to the host in ``chunk``-row arrays."""
        if remaining[0] is not None:
            n = min(n, remaining[0])
        if n <= 0:
            return
        host = np.ascontiguousarray(to_host(out[:n]), dtype=np.int32)
        if remaining[0] is not None:
            remaining[0] -= n
        for a in range(0, n, chunk):
            yield host[a : a + chunk]

    def _collect_batches(self, dp, rows, cap, chunk, remaining, budget):
        """Count per pool row, then collect batches that fit ``cap`` (heavy rows re-expanded).

        Each batch's device work finishes before any of its rows is emitted, so after a device
        fault the batches not yet emitted are exactly the work left: the CPU engine finishes them
        from their partial matches (:meth:`CpuEngine.iter_from`), each match once.
        """
        xp = self.xp
        L = rows.shape[1]
        errs = faults.device_errors()
        try:
            _, tc, _, stopped = self._dfs(dp, rows, budget=budget)
            if stopped is not None:
                return
            counts = to_host(tc).astype(np.int64)
        except errs as exc:
            if dp.cut_part.shape[0]:
                raise
            self._recover(exc)
            yield from self._cpu_rest(to_host(rows), chunk, remaining, budget)
            return
        half = max(1, cap // 2)
        heavy = np.flatnonzero(counts > half)
        light = np.flatnonzero((counts > 0) & (counts <= half))
        items = []
        if light.size:
            excl = np.concatenate([[0], np.cumsum(counts[light])[:-1]])
            batch = excl // half
            cuts = np.flatnonzero(np.diff(batch)) + 1
            items += [("light", part) for part in np.split(light, cuts)]
        items += [("heavy", np.array([i])) for i in heavy]
        for n_item, (kind, part) in enumerate(items):
            if remaining[0] is not None and remaining[0] <= 0:
                return
            if budget.partial or not budget.keep_going():
                return
            stopped = None
            try:
                sub = rows[xp.asarray(part)]
                if kind == "light":
                    want = int(counts[part].sum())
                    ctl, _, out, stopped = self._dfs(dp, sub, collect=True, cap=cap,
                                                     budget=budget)
                    got = int(ctl[C_OUT])
                    if stopped is None and got != want:
                        raise RuntimeError(f"gmatch: batch produced {got} rows, counted {want}")
                    done = to_host(out[: min(got, cap)])
                else:
                    done = self._expand(dp, sub, L)
                    if done is None:
                        raise MemoryError("gmatch: cannot split a heavy task within the "
                                          "memory budget")
                    if L + 1 == dp.k:
                        done = to_host(done)
            except errs as exc:
                if dp.cut_part.shape[0]:
                    raise
                self._recover(exc)
                rest = np.concatenate([p for _, p in items[n_item:]])
                yield from self._cpu_rest(to_host(rows)[rest], chunk, remaining, budget)
                return
            if kind == "light" or L + 1 == dp.k:
                yield from self._emit(done, done.shape[0], chunk, remaining)
                if stopped is not None:
                    return
            elif done.shape[0]:
                yield from self._collect_batches(dp, done, cap, chunk, remaining, budget)

    def _cpu_rest(self, prefixes, chunk, remaining, budget):
        """Finish the subtrees of ``prefixes`` on the CPU engine (after a device fault)."""
        from ...cpu import CpuEngine

        self._note_recovery("finished the unemitted partial matches on the CPU engine")
        for rows in CpuEngine().iter_from(self._plan, prefixes, chunk=chunk,
                                          limit=remaining[0], budget=budget):
            if remaining[0] is not None:
                remaining[0] -= rows.shape[0]
            yield rows
