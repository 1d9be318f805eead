"""gMatch's host side of a search (Sec. 4.3): the host and GPU BFS levels that fill the task
pool, the DFS and fused launches, the kept device buffers, donation ring and pinned staging
they use, and the wait that polls a running kernel for the budget, Ctrl-C and
``time_limit``. :class:`GMatchSearch` is the base of :class:`~.engine.GMatchEngine`."""

from __future__ import annotations

import math
import time

import numba
import numpy as np

from ...base import UNLIMITED
# (at import: a function-level import is ~15 us a search)
from ...cpu import host_levels, plan_arrays
from .. import faults
from ..common import Launches, exact_sum, host_copy, kernel_array, pow2, quiet, sim_reset
from ..device import device_info, free_and_total, is_simulator, memory_budget
from .config import (C_COUNTS, C_DONATED, C_LEVELS, C_NPOOL, C_OUT, C_POOL, C_STOLEN, C_STOP,
                     C_SUM_HI, C_SUM_LO, FREE_TTL, FUSED_BUF_INTS, FUSED_NARROW, FUSED_REGS, INF,
                     KMAX_LIMIT, LEVEL_ROWS, LEVEL_WPB, N_CTL)
from .kernels import bfs_level_kernel, bucket, dfs_kernel, fused_kernel

__all__ = ["GMatchSearch", "level_grid"]

_SIM = is_simulator()


def level_grid(n):
    """(warps per row, blocks) of a BFS level over ``n`` rows: enough warps per row to fill
    the card when the frontier is narrow (a heavy row split); one block under the simulator
    (the kernel strides over the rows)."""
    info = device_info()
    if info["simulator"]:
        return 1, 1
    g = max(1, min(32, 32 * (info["sm_count"] or 1) // n))
    return g, (n * g + LEVEL_WPB - 1) // LEVEL_WPB


def _zero(a):
    """Zero a contiguous array: on the device one ``cudaMemsetAsync`` on the legacy default
    stream (ordered with the kernels and CuPy's work there; a CuPy ``fill`` is a kernel
    launch, ~10 us of the host's time more)."""
    if isinstance(a, np.ndarray):
        a.fill(0)
        return
    import cupy as cp

    cp.cuda.runtime.memsetAsync(a.data.ptr, 0, a.nbytes, 0)


def _ptr(a):
    """A Numba device array's device pointer."""
    return a.device_ctypes_pointer.value or 0


class _Staging:
    """Pinned host buffers: ``ctl`` (int64) and ``rows`` (int32), each at least the size
    asked and twice the last (``old``) when grown."""

    def __init__(self, xp, ctl_ints, row_ints, old=None):
        if old is not None:
            ctl_ints, row_ints = max(ctl_ints, 2 * old.ctl.size), max(row_ints, 2 * old.rows.size)
        self._mem = (xp.cuda.alloc_pinned_memory(8 * ctl_ints),
                     xp.cuda.alloc_pinned_memory(4 * row_ints))
        self.ctl = np.frombuffer(self._mem[0], dtype=np.int64, count=ctl_ints)
        self.rows = np.frombuffer(self._mem[1], dtype=np.int32, count=row_ints)


class _FusedSetup:
    """What a fused search's launch needs besides the plan and its rows (see
    :meth:`GMatchEngine._fused_setup`): the level buffer, the donation ring and the control
    block as kernel arrays, their device and pinned host addresses as ints, the launch site
    once looked up, and the control block's views that :meth:`GMatchEngine._wait` polls."""

    def __init__(self, key, k_buf, q_rows, q_len, q_org, both, q_ready, k_ctl, qpad, k_out, qc,
                 target, most_warps, stage):
        self.key, self.k_buf, self.both, self.k_ctl, self.qpad = key, k_buf, both, k_ctl, qpad
        self.q_rows, self.q_len, self.q_org, self.q_ready = q_rows, q_len, q_org, q_ready
        self.k_out, self.qc, self.target, self.most_warps = k_out, qc, target, most_warps
        self.stage = stage
        self.site = None
        self.tried = False
        self.blocks = 0
        if stage is not None:  # (a device's: ints, not the ~1-2 us attribute chains a launch)
            self.buf_ptr, self.ctl_ptr = _ptr(k_buf), _ptr(k_ctl)
            self.both_ptr = both.data.ptr
            self.rows_ptr = stage.rows.ctypes.data
            self.ctl_host_ptr = stage.ctl.ctypes.data

    def size(self, blocks, W):
        """The grid (``blocks`` of ``W`` warps): the bytes each launch zeroes (generations,
        control block, the used warps' counts) and the views :meth:`GMatchEngine._wait` reads."""
        self.blocks = blocks
        end = self.qpad + C_COUNTS + blocks * W
        self.zero_bytes = 8 * end
        self.ctl_view = self.both[self.qpad : self.qpad + C_COUNTS]
        self.counts_view = self.both[self.qpad + C_COUNTS : end]


class GMatchSearch(faults.Recovery):
    """The device side of :class:`~.engine.GMatchEngine` (whose ``config``, a
    :class:`~.config.GMatchConfig`, holds the parameters these methods read, and whose
    ``memory_budget`` the budget): BFS levels, DFS and fused launches, their kept buffers and
    the wait."""

    # dropped after a device fault (faults.Recovery)
    _device_caches = ("_gcache", "_acache", "_qbufs", "_kept", "_slots", "_bufs", "_free_memo",
                      "_fused_memo")
    # per thread, shared by the thread's gmatch engines (faults.thread_cache)
    _qbufs = faults.thread_cache("gmatch_ring")  # the donation ring (_queue)
    _kept = faults.thread_cache("gmatch_launches")  # kept launches (common.Launches)
    _slots = faults.thread_cache("gmatch_plan")  # kept plan arrays (residency.PlanSlots)
    _bufs = faults.thread_cache("gmatch_buffers")  # kept small device arrays (_buf)
    _pinned = faults.thread_cache("gmatch_staging")  # the fused search's pinned buffers (_stage)
    _waits = faults.thread_cache("gmatch_wait")  # _wait's event and side stream
    _fused_memo = faults.thread_cache("gmatch_fused")  # the fused search's setup (_fused_setup)
    # (time, free bytes): _budget's last free-memory read, for the API's engine per call too
    _free_memo = faults.thread_cache("gmatch_free")

    def _budget(self):
        # the free-memory read (cudaMemGetInfo, ~35 us of the card's host; a search reads the
        # budget 2-3 times) is kept for FREE_TTL s; the override and the configured budget are
        # read each time, so a change to either applies at once
        now = time.perf_counter()
        memo = self._free_memo
        if memo is None or now - memo[0] > FREE_TTL:
            memo = self._free_memo = (now, free_and_total()[0])
        return memory_budget(self.memory_budget, free=memo[1])

    _grid_cache = {}

    def _grid(self, kern, W):
        if self.config.blocks is not None:
            return int(self.config.blocks)
        key = id(kern)
        if key not in self._grid_cache:
            self._grid_cache[key] = self._grid_uncached(kern, W)
        return self._grid_cache[key]

    def _grid_uncached(self, kern, W):
        info = device_info()
        if info["simulator"]:
            return 1
        sm = info["sm_count"] or 1
        per_sm = 4
        try:
            regs = kern.get_regs_per_thread()
            regs = list(regs.values())[0] if isinstance(regs, dict) else regs
            smem = kern.get_shared_mem_per_block()
            smem = list(smem.values())[0] if isinstance(smem, dict) else smem
            nthreads = 32 * W
            by_regs = info["regs_per_sm"] // max(1, ((regs + 7) // 8 * 8) * nthreads)
            by_smem = info["smem_per_sm"] // max(1, smem + 1024)
            by_thr = info["max_threads_per_sm"] // nthreads
            per_sm = max(1, min(by_regs, by_smem, by_thr, 32))
        except Exception:
            pass
        return sm * per_sm

    def _default_pool_target(self, W):
        if self.config.pool_target is not None:
            return int(self.config.pool_target)
        info = device_info()
        if info["simulator"]:
            return 8
        sm = info["sm_count"] or 1
        return 8 * sm * 16  # ~8 rows per resident warp (about 16 warps per SM)

    # -- BFS prefix -----------------------------------------------------------------------------
    def _expand(self, dp, rows, L, cap=None):
        """One BFS level: frontier rows (n, L) -> feasible rows (n', L+1), or None if too big.

        One launch of :func:`bfs_level_kernel` and one read of the level's size: a level used
        to be two launches, a prefix sum, a compaction and two host reads (~1 ms on the card).
        The output buffer holds every row when ``n`` times the longest local
        candidate set fits :data:`LEVEL_ROWS` (or ``cap`` rows where given: a size already
        known); a level past it runs again into a buffer of its exact size, or is refused when
        that would take more than a quarter of the budget."""
        xp = self.xp
        n = int(rows.shape[0])
        faults.point("bfs")
        if n == 0:
            return xp.zeros((0, L + 1), dtype=np.int32)
        room = self._budget() // 4 // (4 * (L + 1))
        if cap is None:
            cap = min(n * max(dp.longest, 1), room, LEVEL_ROWS)
        elif cap > room:
            return None
        g, blocks = level_grid(n)
        for _ in range(2):
            out = xp.empty((max(cap, 1), L + 1), dtype=np.int32)
            cnt, k_cnt = self._buf("level_count", 2, np.int64)
            self._level_launch(dp, blocks, rows, L, n, 0, n, INF, INF, g, 0, out, cap, k_cnt)
            size = int(cnt[1])
            if size <= cap:
                return out[:size]
            if size > room:
                return None
            cap = size
        raise AssertionError("unreachable: the second run's buffer holds the level")

    def _level_launch(self, dp, blocks, rows, L, n0, ci, cap_in, target, small_from, g, sm,
                      out, cap, k_cnt):
        # rows and out are CuPy arrays: the kept launch marshals them itself (a Numba wrap and
        # Numba's marshalling cost ~0.1 ms an array)
        sim_reset()
        self._launch("bfs_level", bfs_level_kernel, blocks, 32 * LEVEL_WPB, rows, L, n0, ci,
                     cap_in, target, small_from, g, sm, dp.drv_ptr, dp.drv_j, dp.drv_dir,
                     dp.in_indptr, dp.cand_ptr, *dp.space_args(), *dp.check_args(),
                     dp.cut_part, out, cap, k_cnt)

    def _chain(self, dp, rows, L, m, target, gpu_levels):
        """Up to ``m`` BFS levels from ``rows`` (n, L) launched back to back, their sizes read
        once at the end: a chain saves a synchronisation and the host's steps around it, ~0.1
        ms a level after the first on the card. A level reads its
        frontier's size on the device and does nothing where :meth:`_bfs`' loop would have
        stopped before it (see :func:`bfs_level_kernel`), so the result is that loop's.
        Each level's buffer holds its frontier's buffer times the longest local candidate
        set, at most :data:`LEVEL_ROWS` rows and a ``4 m``-th of the budget; a level past its
        buffer is sized and run again alone (:meth:`_expand`), or ends the BFS when it would
        take more than a quarter of the budget.

        Returns (rows, levels done, whether the BFS stops here)."""
        xp = self.xp
        n = int(rows.shape[0])
        faults.point("bfs")
        budget = self._budget()
        info = device_info()
        sim = info["simulator"]
        sm = 0 if sim else int(info["sm_count"] or 1)
        blocks = 1 if sim else 4 * sm  # a resident wave of the level kernel (32 warps per SM)
        cnt, k_cnt = self._buf("level_count", m + 1, np.int64)
        src, cap_in, outs, caps = rows, n, [], []
        for j in range(m):
            cap = min(cap_in * max(dp.longest, 1), budget // (4 * m) // (4 * (L + j + 1)),
                      LEVEL_ROWS)
            if cap <= 0:
                break
            out = xp.empty((cap, L + j + 1), dtype=np.int32)
            self._level_launch(dp, blocks, src, L + j, n, j, cap_in, target, 4 - gpu_levels,
                               1 if sim else 0, sm, out, cap, k_cnt)
            outs.append(out)
            caps.append(cap)
            src, cap_in = out, cap
        sizes = host_copy(cnt[: len(outs) + 1])
        for j, out in enumerate(outs):
            size = int(sizes[j + 1])
            if size < 0:
                return rows, j, False
            if size > caps[j]:
                nxt = self._expand(dp, rows, L + j, cap=size)
                return (rows, j, True) if nxt is None else (nxt, j + 1, False)
            rows = out[:size]
        return rows, len(outs), not outs

    def _host_prefix(self, plan, roots, target, count=False, host_rows=None, work_cap=0):
        """The first BFS levels on the host while they stay under ``host_rows`` rows (and
        ``target``): a GPU level costs 0.1-0.3 ms of the host's time whatever its size,
        the CPU engine's expansion ~0.3 us per row on one thread (levels
        of ``cpu.WIDE_ROWS`` rows and more use every host thread).
        Returns host rows, their depth, the levels done and, with ``count``, the number of
        matches when the host counted the last level (else None; ``host_levels``'
        ``count_last``: its rows are never written); device-resident plans start on the
        device."""
        if not isinstance(plan.cand_flat, np.ndarray) or getattr(plan.G, "on_device", False):
            return roots.reshape(-1, 1), 1, 0, None
        rows = np.ascontiguousarray(roots, dtype=np.int32).reshape(-1, 1)
        cap = min(self.config.host_rows if host_rows is None else host_rows, target)
        most = plan.k if self.config.bfs_levels is None else self.config.bfs_levels
        if plan.k < 2 or not 0 < rows.shape[0] < cap or most < 1:
            return rows, 1, 0, None
        count_cap = max(cap, self.config.host_count_rows)
        got = host_levels(plan_arrays(plan), rows, cap, most, numba.get_num_threads(),
                          count_last=count, count_cap=count_cap, work_cap=work_cap)
        rows, levels, last = got if count else got + (None,)
        if last is not None:
            return None, plan.k, levels, last
        return np.ascontiguousarray(rows), 1 + levels, levels, None

    def _bfs(self, dp, roots, target, L=1, levels=0, growth=None):
        """Initialisation phase: expand ``roots`` (rows of depth ``L``, after ``levels`` levels)
        until ``target`` rows, the last depth, or the budget; a frontier that stays under 32
        rows after 4 GPU levels (a small search) goes to the DFS as it is.

        Levels run in chains (:meth:`_chain`) as long as the levels to ``target`` predicted
        from ``growth`` (rows per row per level so far, where known) plus one, at most
        ``bfs_chain``: a level that would not run costs a launch, one too few a chain."""
        xp = self.xp
        rows = xp.ascontiguousarray(xp.asarray(roots), dtype=np.int32).reshape(-1, L)
        gpu_levels = chains = 0
        while L < dp.k and rows.shape[0] and rows.shape[0] < target:
            most = dp.k - L
            if self.config.bfs_levels is not None:
                most = min(most, self.config.bfs_levels - levels)
            if most <= 0 or (gpu_levels >= 4 and rows.shape[0] < 32):
                break
            n = int(rows.shape[0])
            m = self.config.bfs_chain
            if growth is not None and growth > 1.0:
                m = min(m, 2 + int(math.log(target / n) / math.log(growth)))
            rows, done, stop = self._chain(dp, rows, L, max(1, min(m, most)), target,
                                           gpu_levels)
            chains += 1
            L += done
            levels += done
            gpu_levels += done
            if stop or done == 0:
                break
            if rows.shape[0]:
                growth = (rows.shape[0] / n) ** (1.0 / done)
        self.last_stats.update(gpu_levels=gpu_levels, chains=chains)
        return rows, L

    # -- DFS ------------------------------------------------------------------------------------
    def _dfs(self, dp, pool, collect=False, stop_at=None, cap=0, budget=UNLIMITED):
        """Run the DFS kernel over ``pool`` (n, L) rows.

        Returns ``(ctl, task_count, out, stopped)``: the control block and the per-row counts on
        the host, the output buffer on the device, and why the search was stopped early (None,
        or "budget" / "interrupted" when ``budget`` ended it; ``time_limit`` raises
        TimeoutError).
        """
        xp = self.xp
        KMAX, W = bucket(dp.k)
        kern = dfs_kernel(KMAX, W, dp.wide)
        n_pool, L = pool.shape
        faults.point("dfs_buffers")
        if n_pool == 0:
            pool = xp.zeros((1, L), dtype=np.int32)
        flat = pool.reshape(-1)  # (a view: the kernels read a pool as flat rows)
        ctl, k_ctl = self._buf("ctl", N_CTL, np.int64)
        qc = self.config.queue_capacity if self.config.steal else 1
        q_rows, q_len, q_org, q_ready = self._queue(qc, KMAX)
        task_count, k_tc = self._buf("task_count", max(n_pool, 1), np.int64)
        if collect:
            faults.point("output")
            # never read past the rows the kernel reserved, so not zero-filled (a 256 MB memset)
            out = xp.empty((max(cap, 1), dp.k), dtype=np.int32)
            k_out = kernel_array(out)
        else:  # not written without collect
            out, k_out = self._buf("no_output", (1, KMAX_LIMIT), np.int32, zero=False)
        stop = INF if stop_at is None else int(stop_at)
        sim_reset()
        if _SIM:
            blocks = self.config.blocks or 1
        else:
            if not kern.overloads:
                # compile with a launch over an empty pool; the grid size needs its resources
                with quiet():
                    kern[1, 32 * W](*dp.dfs_args(), kernel_array(flat), L, 0,
                                    kernel_array(xp.zeros(N_CTL, dtype=np.int64)), q_rows,
                                    q_len, q_org, q_ready, qc, k_tc, 0, INF, k_out, 0, 0)
            blocks = self._grid(kern, W)
        t0 = time.perf_counter()
        faults.point("launch")
        self._launch("dfs", kern, blocks, 32 * W, *dp.dfs_args(), flat, L, n_pool,
                     k_ctl, q_rows, q_len, q_org, q_ready, qc, k_tc, int(bool(collect)), stop,
                     k_out, int(cap), int(self.config.steal))
        t_launch = time.perf_counter() - t0
        stopped = None
        if not _SIM and (self.config.time_limit is not None or budget is not UNLIMITED):
            stopped = self._wait(ctl, task_count, n_pool, budget)
        ctl_h, tc_h = host_copy(ctl), host_copy(task_count[:n_pool])
        self.last_stats.update(blocks=int(blocks), warps_per_block=W, kmax=KMAX, wide=dp.wide,
                               donated=int(ctl_h[C_DONATED]), stolen=int(ctl_h[C_STOLEN]),
                               t_dfs_launch=t_launch, t_dfs=time.perf_counter() - t0)
        if stopped == "time_limit":
            self.last_stats["timed_out"] = True
            raise TimeoutError(f"gmatch: search stopped after "
                               f"time_limit={self.config.time_limit} s")
        return ctl_h, tc_h, out, stopped

    def _fused(self, dp, rows, L, limit, budget):
        """The rest of a count from the host's ``rows`` (n, L) in one cooperative launch of
        the fused kernel (:func:`~.kernels.fused_kernel`): the BFS levels to the pool
        target, separated by grid barriers, then the DFS over the last level, every match
        counted in its warp's slot; one zero-fill, one upload of the rows, one launch and one
        read of the control block. Returns ``(total, stopped)``, or None where no cooperative
        launch is available (kept launches off): the caller then launches the levels itself.
        """
        KMAX, W = bucket(dp.k)
        cfg = self.config
        regs = FUSED_REGS.get(KMAX, 0) if cfg.fused_regs is None else cfg.fused_regs
        kern = fused_kernel(KMAX, W, dp.wide, regs)
        t0 = time.perf_counter()
        faults.point("bfs")
        n0 = int(rows.shape[0])
        cap = int(min(FUSED_BUF_INTS, max(1 << 10, self._budget() // 8 // 4)))
        cap = max(cap, (n0 * L + 31) // 32 * 32)  # the host's rows at least
        faults.point("dfs_buffers")
        fs = self._fused_setup(kern, KMAX, W, cap, n0 * L)
        stop = INF if limit is None else int(limit)
        most = dp.k if cfg.bfs_levels is None else max(0, cfg.bfs_levels - (int(L) - 1))
        args = (*dp.dfs_args(), n0, int(L), fs.k_buf, cap, fs.target, most, fs.k_ctl,
                fs.q_rows, fs.q_len, fs.q_org, fs.q_ready, fs.qc, stop, fs.k_out,
                int(cfg.steal), FUSED_NARROW * W if cfg.fused_narrow is None else cfg.fused_narrow)
        faults.point("launch")
        if _SIM:
            sim_reset()
            blocks = self.config.blocks or 1
            fs.k_buf[: n0 * L] = np.asarray(rows, dtype=np.int32).reshape(-1)
            fs.both.fill(0)
            with quiet():
                kern[blocks, 32 * W](*args)
        else:
            site = fs.site
            if site is None:
                if fs.tried:
                    return None
                fs.tried = True
                site = fs.site = self._kept.cooperative("fused", kern, 32 * W, *args)
                if site is None:
                    return None
                fs.size(min(self._grid(kern, W), site.max_blocks(32 * W),
                            fs.most_warps // W), W)
            blocks = fs.blocks
            if blocks < 1:
                return None
            rt = self.xp.cuda.runtime
            # the host's rows through pinned memory (an async copy, ordered before the launch on
            # the legacy stream) and only the control block and the used warps' counts zeroed
            if isinstance(rows, np.ndarray):
                fs.stage.rows[: n0 * L] = rows.reshape(-1)
                rt.memcpyAsync(fs.buf_ptr, fs.rows_ptr, 4 * n0 * L, rt.memcpyHostToDevice, 0)
            else:  # a device-resident plan's roots
                rows = self.xp.ascontiguousarray(rows, dtype=np.int32)
                rt.memcpyAsync(fs.buf_ptr, rows.data.ptr, 4 * n0 * L,
                               rt.memcpyDeviceToDevice, 0)
            # the ring's generations, the control block and the used warps' counts: one memset
            rt.memsetAsync(fs.both_ptr, 0, fs.zero_bytes, 0)
            if not site.launch(blocks, 32 * W, args, cooperative=True):
                return None
            self._kept.kept += 1
        t_launch = time.perf_counter() - t0
        nw = blocks * W
        stopped = None
        if not _SIM and (self.config.time_limit is not None or budget is not UNLIMITED):
            stopped = self._wait(fs.ctl_view, fs.counts_view, nw, budget, npool_slot=C_NPOOL)
        if _SIM:
            c = np.array(fs.both[fs.qpad : fs.qpad + C_COUNTS])
        else:  # waits for the kernel (a synchronous copy on the legacy stream)
            c = fs.stage.ctl
            rt.memcpy(fs.ctl_host_ptr, fs.ctl_ptr, 8 * C_COUNTS, rt.memcpyDeviceToHost)
        total = (int(c[C_SUM_HI]) << 32) + int(c[C_SUM_LO])
        gpu_levels = int(c[C_NPOOL + 1]) - int(L)
        # the sizes of the levels kept, and of one past its buffer where the BFS stopped so
        sizes = c[C_LEVELS : C_LEVELS + gpu_levels + int(c[C_NPOOL + 2])].tolist()
        self.last_stats.update(
            fused=True, blocks=int(blocks), warps_per_block=W, kmax=KMAX, wide=dp.wide,
            gpu_levels=gpu_levels, level_rows=sizes,
            pool_rows=int(c[C_NPOOL]), pool_depth=int(c[C_NPOOL + 1]),
            donated=int(c[C_DONATED]), stolen=int(c[C_STOLEN]), t_dfs_launch=t_launch,
            t_dfs=time.perf_counter() - t0)
        if stopped == "time_limit":
            self.last_stats["timed_out"] = True
            raise TimeoutError(f"gmatch: search stopped after "
                               f"time_limit={self.config.time_limit} s")
        return total, stopped

    def _fused_setup(self, kern, KMAX, W, cap, row_ints):
        """The fused search's kept buffers, pointers and launch site for ``kern`` (a
        :class:`_FusedSetup`), made again only when the kernel, the buffer's size or a knob
        they depend on changed, or the staged rows outgrow their pinned buffer: looked up piece
        by piece they were ~25-45 us of a ~0.29 ms device count's host time on the card's host
        (kept: 0.80x the time of rebuilt each count). An entry holds its
        arrays, so they stay valid while it is kept, whatever :meth:`_buf`, :meth:`_queue` or
        :meth:`_ring_ctl` hand out since."""
        qc = self.config.queue_capacity if self.config.steal else 1
        key = (kern, cap, qc, self.config.blocks, self._default_pool_target(W))
        fs = self._fused_memo
        if fs is not None and fs.key == key and (fs.stage is None or
                                                 fs.stage.rows.size >= row_ints):
            return fs
        info = device_info()
        most_warps = (self.config.blocks or 1) * W if _SIM else \
            max(W, int(info["sm_count"] or 1) * int(info["max_threads_per_sm"] or 2048) // 32)
        _, k_buf = self._buf("fused_levels", cap, np.int32, zero=False, view=False)
        q_rows, q_len, q_org, _ = self._queue(qc, KMAX, zero=False)
        both, q_ready, k_ctl, qpad = self._ring_ctl(qc, C_COUNTS + most_warps)
        _, k_out = self._buf("no_output", (1, KMAX_LIMIT), np.int32, zero=False, view=False)
        if self._kept is None:
            self._kept = Launches()
        fs = self._fused_memo = _FusedSetup(
            key, k_buf, q_rows, q_len, q_org, both, q_ready, k_ctl, qpad, k_out, qc,
            key[4], most_warps, None if _SIM else self._stage(C_COUNTS, row_ints))
        return fs

    def _launch(self, site, kern, blocks, threads, *args):
        """Launch ``kern`` through the thread's kept launches: a call site's later launches
        re-marshal only the arguments that changed (the next BFS level's rows; not the plan)."""
        if self._kept is None:
            self._kept = Launches()
        self._kept(site, kern, blocks, threads, *args)

    def _buf(self, name, shape, dtype, zero=True, view=True):
        """A kept device array for ``name`` of at least ``shape`` (rows by powers of two), its
        first ``shape[0]`` rows zeroed unless ``zero`` is False: (a CuPy view of ``shape``, the
        kernel array of all of it); the view is None unless ``view`` (a CuPy slice costs a few
        microseconds of the host's time). Kernels bound these arrays by counts, not shapes, so
        one kernel array -- marshalled once by the kept launches -- serves every launch instead
        of an allocation, a wrap and a marshalling each. Valid until the
        next call for ``name``: each use reads it back before returning."""
        shape = (shape,) if isinstance(shape, int) else tuple(shape)
        if self._bufs is None:
            self._bufs = {}
        got = self._bufs.get(name)
        if got is None or got[0].shape[0] < shape[0] or got[0].shape[1:] != shape[1:] \
                or got[0].dtype != dtype:
            a = self.xp.zeros((pow2(shape[0]),) + shape[1:], dtype=dtype)
            got = self._bufs[name] = (a, kernel_array(a))
        if not (view or zero):
            return None, got[1]
        v = got[0][: shape[0]]
        if zero:
            _zero(v)
        return (v if view else None), got[1]

    def _stage(self, ctl_ints, row_ints):
        """The thread's pinned host buffers of the fused search (control block and counts
        read back, the host's rows copied in), grown to at least these sizes."""
        st = self._pinned
        if st is None or st.ctl.size < ctl_ints or st.rows.size < row_ints:
            st = self._pinned = _Staging(self.xp, ctl_ints, row_ints, st)
        return st

    def _queue(self, qc, KMAX, zero=True):
        """The donation ring (rows, lengths, origins, generations), its generations zeroed
        unless ``zero`` is False (a slot's row, length and origin are read only after its
        generation says they were written): kept between launches as Numba device arrays (one
        memset instead of four allocations and four CuPy kernel arguments)."""
        key = (qc, KMAX)
        got = self._qbufs
        if got is None or got[0] != key:
            xp = self.xp
            host = (xp.zeros((qc, KMAX), dtype=np.int32), xp.zeros(qc, dtype=np.int32),
                    xp.zeros(qc, dtype=np.int64), xp.zeros(qc, dtype=np.int64))
            got = self._qbufs = (key, host, [kernel_array(a) for a in host])
        elif zero:
            _zero(got[1][3])
        return got[2]

    def _ring_ctl(self, qc, n):
        """The fused search's donation-ring generations (``qc``) and its control block (``n``)
        in one kept int64 device array, the block from a 128-byte line on, so that one memset
        zeroes both: (the array, the generations' and the block's kernel arrays, the block's
        offset). Valid until the next call, as :meth:`_buf`'s arrays."""
        if self._bufs is None:
            self._bufs = {}
        qpad = (qc + 15) // 16 * 16
        got = self._bufs.get("fused_ring_ctl")
        if got is None or got[4] != qc or got[0].shape[0] < qpad + n:
            a = self.xp.zeros(qpad + pow2(n), dtype=np.int64)
            got = self._bufs["fused_ring_ctl"] = (a, kernel_array(a[:qc]),
                                                  kernel_array(a[qpad:]), qpad, qc)
        return got[0], got[1], got[2], got[3]

    def _wait(self, ctl, task_count, n_pool, budget, npool_slot=None):
        """Wait for the running DFS kernel, polling ``time_limit`` and the run budget (deadline,
        progress, Ctrl-C). To stop the search its flag is raised by a DMA copy on a
        non-blocking stream (the warps poll the flag); progress reads the control block and the
        counts the same way (``n_pool`` of them; the fused search's pool size, which the host
        never sees, is ``ctl[npool_slot]``). Returns None or the reason the search was
        stopped."""
        import cupy as cp

        if self._waits is None:  # kept: a stream's creation is ~20 us of the host's time
            self._waits = (cp.cuda.Event(disable_timing=True), cp.cuda.Stream(non_blocking=True))
        done, side = self._waits
        done.record(cp.cuda.Stream.null)
        t0 = time.perf_counter()
        last = t0
        stopped = None
        flag = ctl_buf = tc_buf = None
        while True:
            try:
                while not done.done:
                    now = time.perf_counter()
                    if stopped is None and self.config.time_limit is not None and \
                            now - t0 > self.config.time_limit:
                        stopped = "time_limit"
                    elif stopped is None and budget is not UNLIMITED and now - last >= 0.1:
                        last = now
                        if ctl_buf is None:
                            ctl_buf = cp.cuda.alloc_pinned_memory(8 * ctl.size)
                            tc_buf = cp.cuda.alloc_pinned_memory(8 * max(n_pool, 1))
                        cp.cuda.runtime.memcpyAsync(ctl_buf.ptr, ctl.data.ptr, 8 * ctl.size,
                                                    cp.cuda.runtime.memcpyDeviceToHost,
                                                    side.ptr)
                        cp.cuda.runtime.memcpyAsync(tc_buf.ptr, task_count.data.ptr,
                                                    8 * max(n_pool, 1),
                                                    cp.cuda.runtime.memcpyDeviceToHost,
                                                    side.ptr)
                        side.synchronize()
                        c = np.frombuffer(ctl_buf, dtype=np.int64, count=ctl.size)
                        tc = np.frombuffer(tc_buf, dtype=np.int64, count=max(n_pool, 1))
                        found = exact_sum(tc[:n_pool]) + int(c[C_OUT])
                        rows = n_pool if npool_slot is None else int(c[npool_slot])
                        if not budget.keep_going(found, min(int(c[C_POOL]), rows), rows):
                            stopped = "budget"
                    if stopped is not None and flag is None:
                        flag = cp.cuda.alloc_pinned_memory(8)
                        np.frombuffer(flag, dtype=np.int64, count=1)[0] = 1
                        cp.cuda.runtime.memcpyAsync(ctl.data.ptr + 8 * C_STOP, flag.ptr, 8,
                                                    cp.cuda.runtime.memcpyHostToDevice,
                                                    side.ptr)
                        side.synchronize()
                    # the first 2 ms by polling alone: a sleep of 50 us takes ~100 on Linux
                    # (timer slack), most of a small search's kernel time
                    if now - t0 > 0.002:
                        time.sleep(0.00005 if now - t0 < 0.01 else 0.0005)
                return stopped
            except KeyboardInterrupt:
                budget.stop("interrupted")
                if stopped is None:
                    stopped = "interrupted"
