"""gMatch's engine object: :class:`GMatchEngine`, its parameters and the public protocol
(count, collect, partial-match pools made elsewhere, streaming in batches)."""

from __future__ import annotations

import dataclasses
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
from .config import (C_OUT, C_STOP, FUSED_HOST_ROWS, KMAX_LIMIT, SMALL_HOST_ROWS, SMALL_STEPS,
                     SPACE_VISITS, GMatchConfig)
from .host import GMatchSearch
from .kernels import bucket

__all__ = ["GMatchConfig", "GMatchEngine"]

log = logging.getLogger("nx_gsm.gpu")

_UNREAD = object()  # (GMatchEngine._dev_plan: the candidate space not looked up yet)


class GMatchEngine(GMatchSearch):
    """gMatch on the GPU: ``count(plan, limit, budget)`` and ``iter_chunks(plan, chunk, limit,
    budget)`` (the engine protocol of :mod:`nx_gsm.engines`; ``budget`` carries the API's timeout,
    progress and Ctrl-C, which stop a running kernel through its stop flag), and the prefix
    protocol ``count_from`` / ``iter_from`` over partial matches made elsewhere.

    Parameters
    ----------
    config : GMatchConfig, optional
        Every tuning parameter (see :class:`~.config.GMatchConfig` for each field, its
        default and why); default ``GMatchConfig()``.
    **options
        Shortcuts for fields of ``config``: ``GMatchEngine(steal=False)`` is
        ``GMatchEngine(config=GMatchConfig(steal=False))``, and with ``config`` given they
        replace its fields (:func:`dataclasses.replace`). An option passed as None is left
        out (the config's value stands), so callers can pass optional values through.

    Attributes
    ----------
    config : GMatchConfig
        The parameters, fixed for the engine's life.
    memory_budget : int or None
        The budget searches run under now: ``config.memory_budget``, halved while a search is
        retried after running out of memory; an engine that drives this one (GSI's switch to
        the DFS, the partitioned engine) sets it to what its own search leaves.
    last_stats : dict
        The last run's pool size, grid, donations and timings.

    Patterns deeper than :data:`KMAX_LIMIT` run on the CPU engine (logged).

    Examples
    --------
    >>> import networkx as nx, nx_gsm                                      # doctest: +SKIP
    >>> from nx_gsm.engines.gpu.gmatch import GMatchConfig, GMatchEngine   # doctest: +SKIP
    >>> eng = GMatchEngine(config=GMatchConfig(memory_budget=4 << 30))     # doctest: +SKIP
    >>> nx_gsm.count_subgraph_monomorphisms(nx.cycle_graph(5), nx.path_graph(3),
    ...                                     engine=eng)                    # doctest: +SKIP
    10
    """

    name = "gmatch"
    capabilities = capabilities_of("gmatch")

    def __init__(self, *, config=None, **options):
        if config is None:
            config = GMatchConfig()
        elif not isinstance(config, GMatchConfig):
            raise TypeError(f"config must be a GMatchConfig, got {type(config).__name__}")
        unknown = sorted(set(options) - set(GMatchConfig.field_names()))
        if unknown:
            raise TypeError(f"GMatchEngine got unknown options {', '.join(unknown)}; the "
                            f"options are GMatchConfig's fields: "
                            f"{', '.join(GMatchConfig.field_names())}")
        given = {k: v for k, v in options.items() if v is not None}
        self.config = dataclasses.replace(config, **given) if given else config
        self.xp = array_module()
        self.memory_budget = self.config.memory_budget
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
            fh = self.config.fused_host_rows
            if fh is None:
                fh = FUSED_HOST_ROWS[KMAX]
                if count:
                    # unchecked against the budget (a free-memory read: ~8-35 us of the card's
                    # host, more than the probe's own glue) until it goes to the device
                    space = self._space(plan, fit=False)
                    if space is not None and space.val.size <= self.config.small_space * plan.k:
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
            fh = min(self.config.host_rows, fh)
        target = self._default_pool_target(W)
        roots = plan.cand_flat[plan.cand_ptr[0] : plan.cand_ptr[1]]
        rows, L, levels, last = self._host_prefix(plan, roots, target, count, fh,
                                                  self.config.host_work if fused else 0)
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
        dp, rows, L = self._prepare(plan, count=True, fused=self.config.fused)
        if isinstance(rows, int):
            return rows if limit is None else min(rows, limit)
        if L == plan.k or rows.shape[0] == 0:
            n = int(rows.shape[0])
            return n if limit is None else min(n, limit)
        got = self._fused(dp, rows, L, limit, budget) if self.config.fused else None
        if got is not None:
            total, stopped = got
        else:
            if self.config.fused:  # no cooperative launch here: the GPU levels from the host
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
    def count_from(self, plan, prefixes, limit=None, budget=UNLIMITED, cut_part=None,
                   device_plan=None):
        """Matches below the partial matches ``prefixes`` -- an ``(n, L)`` integer NumPy or
        CuPy array, ``1 <= L <= k``, column d the data node of ``plan.order[d]`` -- each row's
        subtree counted once, at most ``limit``; a :class:`PartialCount` when ``budget``
        stopped it (the :class:`~nx_gsm.engines.base.PrefixEngine` contract).

        The rows are the DFS's task pool as given (a CuPy array is used in place): the public
        entry for a pool another engine built, such as GSI's BFS levels when the next one
        would not fit the device. Every row must be a feasible partial match, as every
        engine's levels are.

        ``cut_part`` (int32 part id per data node) keeps only the matches whose pattern pairs
        at depths >= 2 map onto no cut pair smaller than the one of depths 0 and 1 (PBE's
        DUPREMOVE): the partitioned engine's cross search, whose rows are seeded cut pairs.

        ``device_plan`` is ``plan`` already on the device (a
        :class:`~nx_gsm.engines.gpu.residency.DevPlan` the caller made of it), searched as
        given instead of uploading ``plan`` here: GSI hands over its own, whose candidate bits
        its signature filter pruned, so the DFS below its levels checks the same candidates
        and the device holds one copy of the plan. A device plan carries its own part ids, so
        it is not combined with ``cut_part``.

        ``last_stats["t_upload"]`` is the time spent uploading the graph (if not cached), the
        plan, ``cut_part`` and the rows (absent with ``device_plan``).
        """
        rows = self._checked_rows(plan, prefixes)
        limit, _ = trivial_answer(plan, limit)
        if plan.empty or limit == 0:
            return 0
        self._check_device_plan(plan, device_plan, cut_part)
        fb = self._fallback(plan)
        if fb is not None:
            self._no_filter_on_cpu(cut_part)
            got = fb.count_from(plan, to_host(rows), budget=budget)
            return got if limit is None else min(got, limit)
        dp, t0 = self._given_or_uploaded(plan, device_plan, cut_part)
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

    def iter_from(self, plan, prefixes, chunk=4096, limit=None, budget=UNLIMITED, cut_part=None,
                  device_plan=None):
        """Like :meth:`iter_chunks`, restricted to the subtrees of ``prefixes`` (see
        :meth:`count_from`, also for ``cut_part`` and ``device_plan``): host int32 arrays of up
        to ``chunk`` rows, at most ``limit``. With ``cut_part`` a device fault reaches the
        caller (as from :meth:`count_from`) instead of being finished on the CPU engine, which
        has no DUPREMOVE: the caller recovers and redoes the rows.

        A pool handed over is usually one whose output did not fit a BFS level, so it is
        counted per row and collected in batches at once rather than first tried in one
        buffer; a ``limit`` that fits the buffer is one pass."""
        rows = self._checked_rows(plan, prefixes)
        chunk = check_chunk(chunk)
        limit, _ = trivial_answer(plan, limit)
        if plan.empty or limit == 0:
            return
        self._check_device_plan(plan, device_plan, cut_part)
        fb = self._fallback(plan)
        if fb is not None:
            self._no_filter_on_cpu(cut_part)
            yield from fb.iter_from(plan, to_host(rows), chunk=chunk, limit=limit, budget=budget)
            return
        dp, t0 = self._given_or_uploaded(plan, device_plan, cut_part)
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

    @staticmethod
    def _check_device_plan(plan, device_plan, cut_part):
        if device_plan is None:
            return
        if cut_part is not None:
            raise ValueError("cut_part and device_plan exclude each other: a device plan "
                             "carries its own part ids")
        if device_plan.k != plan.k:
            raise ValueError(f"device_plan has {device_plan.k} depths, the plan {plan.k}: "
                             f"it is not this plan's")

    def _given_or_uploaded(self, plan, device_plan, cut_part):
        """(the device plan, when its upload began): ``device_plan`` where given (no upload),
        else ``plan`` uploaded now."""
        if device_plan is not None:
            return device_plan, None
        t0 = time.perf_counter()
        return self._dev_plan(plan, cut_part), t0

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
        adj = self._adjacency(plan.G) if self.config.adjacency_bits else None
        self.last_stats["adj_bits"] = adj is not None and not plan.has_elabels
        return DevPlan(plan, self.xp, garrs, cut_part, self._slots, space, adj)

    def _space(self, plan, fit=True):
        """The plan's candidate space for the kernels' local candidate sets, or None (raw
        adjacency rows): a host plan's space, built here unless its build would visit more than
        ``SPACE_VISITS`` adjacency entries, and kept off the device past an eighth of the
        memory budget (unless ``fit`` is False: the caller then checks it with
        :meth:`_fitting` before it goes to the device). The host levels have built it already
        for every search they start."""
        if not self.config.candidate_space or not isinstance(plan.cand_flat, np.ndarray) or \
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

    def _capacity(self, plan):
        if self.config.out_capacity is not None:
            return max(1, int(self.config.out_capacity))
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
