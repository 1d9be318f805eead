"""Where a small gmatch count spends its time (the fixed per-search cost of issue 4).

On the GPU machine: ``python3 -m gpu.profile_fixed [--out FILE]``. For small Sun & Luo yeast
queries it times the CPU engine and gmatch on the same plan (median of several runs) and splits
gmatch's time into plan upload, each BFS level, the DFS launch call and the wait; then it times the
pieces a search is made of in isolation: an empty Numba launch, the DFS kernel's launch with its
real arguments (CuPy arrays, and the same wrapped as Numba device arrays), small CuPy operations
and a device-to-host read. Prints one JSON document. ``--api QUERIES`` times whole API calls
instead (:func:`profile_api`).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np


def _median_time(fn, reps):
    ts = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t)
    return statistics.median(ts)


def _queries(base, names):
    return [(q, base / "query_graph" / f"query_{q}.graph") for q in names
            if (base / "query_graph" / f"query_{q}.graph").exists()]


def profile_queries(G, base, names, reps):
    import cupy as cp

    import nx_gsm
    from nx_gsm.api import prepare
    from nx_gsm.engines.cpu import CpuEngine
    from nx_gsm.engines.gpu.gmatch import GMatchEngine

    cpu, eng = CpuEngine(), GMatchEngine()
    levels = []
    expand = eng._expand

    def timed_expand(dp, rows, L):
        cp.cuda.runtime.deviceSynchronize()
        t = time.perf_counter()
        out = expand(dp, rows, L)
        cp.cuda.runtime.deviceSynchronize()
        levels.append((int(rows.shape[0]), time.perf_counter() - t))
        return out

    rows = []
    for q, path in _queries(base, names):
        H = nx_gsm.read_graph(path, edge_labels=False)
        t = time.perf_counter()
        plan, _, _ = prepare(G, H, "mono", node_label="label")
        t_plan = time.perf_counter() - t
        c_cpu = cpu.count(plan)
        t_cpu = _median_time(lambda: cpu.count(plan), reps)
        c_gpu = eng.count(plan)
        t_gpu = _median_time(lambda: eng.count(plan), reps)
        stats = dict(eng.last_stats)
        eng._expand = timed_expand
        levels.clear()
        eng.count(plan)
        eng._expand = expand
        rows.append({"query": q, "count": int(c_gpu), "agree": c_gpu == c_cpu,
                     "plan_s": t_plan, "cpu_s": t_cpu, "gmatch_s": t_gpu,
                     "ratio": t_cpu / t_gpu,
                     "stats": {k: v for k, v in stats.items()
                               if k in ("pool_rows", "pool_depth", "host_levels",
                                        "t_host_bfs", "t_upload", "t_bfs", "t_dfs_launch",
                                        "t_dfs", "blocks", "stolen")},
                     "bfs_levels": [{"rows": n, "s": s} for n, s in levels]})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def profile_pieces(G, base, reps):
    import cupy as cp
    from numba import cuda

    import nx_gsm
    from nx_gsm.api import prepare
    from nx_gsm.engines.gpu import gmatch as gm
    from nx_gsm.engines.gpu.common import quiet
    from nx_gsm.engines.gpu.gmatch import config, kernels
    from nx_gsm.engines.gpu.residency import DevPlan, PlanSlots

    @cuda.jit
    def nop(x):
        pass

    x = cp.zeros(1, dtype=np.int64)
    sync = cp.cuda.runtime.deviceSynchronize
    nop[1, 32](x)
    sync()
    out = {}

    def launches(fn, n=50):
        sync()
        t = time.perf_counter()
        for _ in range(n):
            fn()
        t_call = (time.perf_counter() - t) / n
        sync()
        return t_call, (time.perf_counter() - t) / n

    out["nop_cupy_arg"] = launches(lambda: nop[1, 32](x))
    xd = cuda.as_cuda_array(x)
    out["nop_numba_arg"] = launches(lambda: nop[1, 32](xd))
    out["cupy_zeros_small"] = launches(lambda: cp.zeros(160, dtype=np.int64))
    y = cp.arange(5000, dtype=np.int64)
    out["cupy_cumsum_5000"] = launches(lambda: cp.cumsum(y))
    out["cupy_item_read"] = launches(lambda: int(y[-1]))
    f = (y % 3 == 0).astype(np.uint8)
    out["cupy_flatnonzero_5000"] = launches(lambda: cp.flatnonzero(f))
    out["cupy_get_160"] = launches(lambda: cp.zeros(160, dtype=np.int64).get())

    H = nx_gsm.read_graph(base / "query_graph" / "query_dense_16_1.graph", edge_labels=False)
    plan, _, _ = prepare(G, H, "mono", node_label="label")
    eng = gm.GMatchEngine()
    eng.count(plan)
    garrs = eng._graph_arrays(plan.G)
    out["devplan_upload"] = launches(lambda: DevPlan(plan, cp, garrs), 20)
    slots = PlanSlots(cp)  # the kept slots: one copy, no wraps
    out["devplan_slots"] = launches(lambda: DevPlan(plan, cp, garrs, slots=slots), 20)
    dp = DevPlan(plan, cp, garrs)
    KMAX, W = kernels.bucket(dp.k)
    kern = kernels.dfs_kernel(KMAX, W, dp.wide)
    blocks = eng._grid(kern, W)
    qc = eng.config.queue_capacity
    pool = cp.zeros(1, dtype=np.int32)  # one flat row of one entry

    def bufs(wrap):
        a = [pool, 1, 0, cp.zeros(config.N_CTL, dtype=np.int64),
             cp.zeros((qc, KMAX), dtype=np.int32), cp.zeros(qc, dtype=np.int32),
             cp.zeros(qc, dtype=np.int64), cp.zeros(qc, dtype=np.int64), qc,
             cp.zeros(1, dtype=np.int64), 0, config.INF, cp.zeros((1, dp.k), dtype=np.int32), 0, 1]
        return [cuda.as_cuda_array(v) if wrap and hasattr(v, "__cuda_array_interface__") else v
                for v in a]

    args_cp, args_nb = bufs(False), bufs(True)
    with quiet():
        out["dfs_launch_cupy_args"] = launches(
            lambda: kern[blocks, 32 * W](*dp.dfs_args(), *args_cp), 20)
        out["dfs_launch_numba_args"] = launches(
            lambda: kern[blocks, 32 * W](*dp.dfs_args(), *args_nb), 20)
        out["dfs_buffers_alloc"] = launches(lambda: bufs(False), 20)
    out["as_cuda_array"] = launches(lambda: cuda.as_cuda_array(x), 50)
    out["as_cuda_array_nosync"] = launches(lambda: cuda.as_cuda_array(x, sync=False), 50)
    rows = cp.asarray(plan.cand_flat[plan.cand_ptr[0]:plan.cand_ptr[1]],
                      dtype=np.int32).reshape(-1, 1)
    out["bfs_level_1"] = launches(lambda: eng._expand(dp, rows, 1), 20)
    out["dfs_args"] = len(dp.dfs_args()) + len(args_cp)
    return {k: ({"call_s": v[0], "with_sync_s": v[1]} if isinstance(v, tuple) else v)
            for k, v in out.items()}


def cprofile_counts(G, base, names, reps, top=25):
    """cProfile of ``reps`` gmatch counts per query (after a warm-up count): the host-side
    functions a small search spends its time in, as text."""
    import cProfile
    import io
    import pstats

    import nx_gsm
    from nx_gsm.api import prepare
    from nx_gsm.engines.gpu.gmatch import GMatchEngine

    eng = GMatchEngine()
    plans = []
    for q, path in _queries(base, names):
        plan, _, _ = prepare(G, nx_gsm.read_graph(path, edge_labels=False), "mono",
                             node_label="label")
        eng.count(plan)
        plans.append(plan)
    prof = cProfile.Profile()
    prof.enable()
    for plan in plans:
        for _ in range(reps):
            eng.count(plan)
    prof.disable()
    buf = io.StringIO()
    st = pstats.Stats(prof, stream=buf)
    st.sort_stats("tottime").print_stats(top)
    st.sort_stats("cumulative").print_stats(top)
    return buf.getvalue()


def profile_api(Gnx, base, names, reps):
    """End to end through the API as a user calls it (``engine="gmatch"``: an engine object per
    call) against one kept GMatchEngine counting a fresh plan each time, the CPU engine through
    the API, and the planning alone; median of ``reps`` per query, geometric means last."""
    import nx_gsm
    from benchmarks.gpu_engines import _geo
    from nx_gsm.api import prepare
    from nx_gsm.engines.gpu.gmatch import GMatchEngine

    kept = GMatchEngine()
    rows = []
    for q, path in _queries(base, names):
        H = nx_gsm.read_graph(path, edge_labels=False)

        def api(engine):
            return nx_gsm.count_subgraph_monomorphisms(Gnx, H, node_label="label", engine=engine)

        def plan():
            return prepare(Gnx, H, "mono", node_label="label")[0]

        def kept_count():
            return kept.count(plan())

        c = api("gmatch")
        assert api("cpu") == c == kept_count(), q
        row = {"query": q, "count": c, "device": "t_upload" in kept.last_stats,
               "api_cpu_s": _median_time(lambda: api("cpu"), reps),
               "api_gmatch_s": _median_time(lambda: api("gmatch"), reps),
               "kept_gmatch_s": _median_time(kept_count, reps),
               "prepare_s": _median_time(plan, reps)}
        rows.append(row)
    geo = {}
    for key in ("api_cpu_s", "api_gmatch_s", "kept_gmatch_s", "prepare_s"):
        for part, sel in (("all", rows), ("device", [r for r in rows if r["device"]]),
                          ("host", [r for r in rows if not r["device"]])):
            if sel:
                geo[f"{key}_{part}"] = _geo([r[key] for r in sel])
    return {"rows": rows, "geomean": geo}


def main(argv=None):
    import nx_gsm
    from benchmarks.gpu_suites import data_root as _data_root
    from nx_gsm.interop.networkx import as_gsm

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=7)
    ap.add_argument("--queries", default="dense_16_1,dense_16_2,dense_16_3,dense_16_4,"
                    "sparse_16_1,sparse_16_2,sparse_16_3,sparse_16_4,dense_8_1,sparse_8_1")
    ap.add_argument("--out", default=None)
    ap.add_argument("--cprofile", default=None,
                    help="queries to profile with cProfile instead (e.g. dense_16_1,dense_8_7)")
    ap.add_argument("--api", default=None,
                    help="queries to time end to end through the API instead (profile_api)")
    args = ap.parse_args(argv)
    base = _data_root() / "sun-luo" / "yeast"
    Gnx = nx_gsm.read_graph(base / "data_graph" / "yeast.graph", edge_labels=False)
    G = as_gsm(Gnx)
    if args.api:
        rec = profile_api(Gnx, base, args.api.split(","), args.reps)
        text = json.dumps(rec, indent=1)
        print(json.dumps(rec["geomean"], indent=1))
        if args.out:
            with open(args.out, "w") as fh:
                fh.write(text)
        return
    if args.cprofile:
        print(cprofile_counts(G, base, args.cprofile.split(","), args.reps))
        return
    rec = {"queries": profile_queries(G, base, args.queries.split(","), args.reps),
           "pieces": profile_pieces(G, base, 3)}
    text = json.dumps(rec, indent=1)
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
