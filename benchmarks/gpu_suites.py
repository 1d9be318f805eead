"""The benchmark phases of the GPU check (``python3 -m gpu.check``), on the card's host.

Each phase fills its part of the check's record (a dict) and logs as it goes:

* :func:`warmup`: compile the gmatch kernels (JIT), time a small count's fixed costs, read the
  kernels' resources (registers, shared and local memory) and the occupancy they allow.
* :func:`yeast`: gmatch on the published yeast counts (4-, 8- and 16-vertex queries), within a
  time budget.
* :func:`bench`: the count-all protocol, after JIT warm-up, transfers included: gmatch's
  ``count`` on the same MatchPlan as the CPU engine (run in a worker process with a hard
  timeout) on human 8-vertex and yeast 16-vertex queries (the first N of each group); and the
  API's gmatch end to end against NetworkX VF2 on the queries VF2 finishes within 10 s
  (``yeast-16-vf2``, ``human-8-vf2``, ``yeast-8-vf2``; screened off the device,
  :func:`screened_queries`). CPU/VF2 timeouts are kept as lower bounds of the ratio
  (``geo+lb``). Queries gmatch finishes in under a second run again under the
  :data:`ABLATIONS` (each a :class:`~nx_gsm.engines.gpu.gmatch.GMatchConfig` change). Each suite
  first runs its engines and the CPU worker once, untimed, on a warm-up query of its dataset (a
  fresh host's Numba cache is empty: the toy counts of ``warmup`` do not compile every
  host-level specialisation).
* :func:`engines`: cpu, gmatch, gsi, geneva and auto side by side (:mod:`benchmarks.gpu_engines`).
* :func:`streaming`: a 10^8-row result streamed to pandas frames within a stated memory bound
  (:mod:`benchmarks.streaming`).
* :func:`scaling`: the CPU engine's count-all on 2 threads against 1, pinned to two cores.
* :func:`sanitize`: ``compute-sanitizer`` memcheck, racecheck and synccheck on a tiny case
  (``gpu/sanitize_case.py``).

Datasets come from ``$NX_GSM_DATASETS`` or ``.gpudata/`` (a git-ignored copy carried to the
machine). Record fields (``benchmarks``: per suite ``median_ratio``, ``geomean_ratio``,
``geomean_ratio_with_lower_bounds``, ``median_matches_per_s``, ``disagree``,
``variants_geomean_time_ratio``; ``benchmark_rows``: per query) are those of earlier records.
"""

from __future__ import annotations

import json
import math
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def data_root():
    env = os.environ.get("NX_GSM_DATASETS")
    return Path(env) if env else ROOT / ".gpudata"


# the bench's ablations: GMatchConfig fields changed from the defaults, each run on the same plan
# as the default engine
ABLATIONS = {
    "no-steal": {"steal": False},
    # the BFS levels past the host's launched from the host (chains), then the DFS -- against
    # the fused search's one launch
    "chained": {"fused": False},
    # every 16-level stack from the roots, however small its candidate space (the default
    # searches small ones on the host)
    "no-small": {"small_space": 0},
    # every level over the grid (the default runs narrow ones in one block)
    "no-narrow": {"fused_narrow": 0},
    # every edge test a binary search of the row (the default: the bitmap)
    "no-adj": {"adjacency_bits": False},
}


def gmatch_engine(**fields):
    """A gmatch engine whose :class:`~nx_gsm.engines.gpu.gmatch.GMatchConfig` differs from the
    default in ``fields``."""
    from nx_gsm.engines.gpu.gmatch import GMatchConfig, GMatchEngine

    return GMatchEngine(config=GMatchConfig(**fields))


# ------------------------------------------------------------------------------------------------
# worker process: the CPU engine and NetworkX VF2 with hard timeouts
# ------------------------------------------------------------------------------------------------
def _worker(conn):
    from networkx.algorithms import isomorphism as iso

    import nx_gsm
    from nx_gsm.api import prepare
    from nx_gsm.engines.cpu import CpuEngine

    graphs = {}

    def load(p):
        if p not in graphs:
            graphs[p] = nx_gsm.read_graph(p, edge_labels=False)
        return graphs[p]

    eng = CpuEngine()
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg is None:
            return
        kind, gpath, hpath = msg
        try:
            G, H = load(gpath), nx_gsm.read_graph(hpath, edge_labels=False)
            if kind == "cpu":
                plan, _, _ = prepare(G, H, "mono", node_label="label")

                def once(plan=plan):
                    return eng.count(plan)
            elif kind == "vf2":
                def once(G=G, H=H):
                    gm = iso.GraphMatcher(G, H,
                                          node_match=iso.categorical_node_match("label", None))
                    return sum(1 for _ in gm.subgraph_monomorphisms_iter())
            else:
                raise ValueError(kind)
            times = []
            while len(times) < 3 and sum(times) < 0.5:  # median of up to 3 when fast
                t = time.perf_counter()
                c = once()
                times.append(time.perf_counter() - t)
            times.sort()
            conn.send(("ok", c, times[len(times) // 2]))
        except Exception as exc:  # noqa: BLE001 - reported to the parent
            conn.send(("error", f"{type(exc).__name__}: {exc}", None))


class Worker:
    """The CPU engine or VF2 on one query, in a process killed at its timeout."""

    def __init__(self):
        self.ctx = mp.get_context("spawn")
        self.proc = None
        self.conn = None

    def _start(self):
        a, b = self.ctx.Pipe()
        self.proc = self.ctx.Process(target=_worker, args=(b,), daemon=True)
        self.proc.start()
        self.conn = a

    def run(self, kind, gpath, hpath, timeout):
        if self.proc is None or not self.proc.is_alive():
            self._start()
        try:
            self.conn.send((kind, str(gpath), str(hpath)))
            if self.conn.poll(timeout):
                return self.conn.recv()
        except (EOFError, OSError) as exc:
            self.proc.kill()
            self.proc.join()
            self.proc = None
            return ("error", f"worker died: {type(exc).__name__}: {exc}", None)
        self.proc.kill()
        self.proc.join()
        self.proc = None
        return ("timeout", None, timeout)

    def close(self):
        if self.proc is not None and self.proc.is_alive():
            try:
                self.conn.send(None)
                self.proc.join(5)
            except (OSError, ValueError):
                pass
            if self.proc.is_alive():
                self.proc.kill()


# ------------------------------------------------------------------------------------------------
# warmup
# ------------------------------------------------------------------------------------------------
def warmup(rec, log=print):
    """JIT of every KMAX bucket, a small count's fixed costs, the kernels' resources; then
    :func:`nx_gsm.warmup` (every kernel variant compiled into the disk cache or loaded)."""
    import networkx as nx

    import nx_gsm
    from nx_gsm.api import prepare
    from nx_gsm.engines.gpu import device_reason, gmatch
    from nx_gsm.engines.gpu.device import device_info, free_and_total

    reason = device_reason()
    rec["device_reason"] = reason
    if reason is not None:
        raise RuntimeError(f"no usable device: {reason}")
    info = dict(device_info())
    info["free_bytes"], info["total_bytes"] = free_and_total()
    rec["device"] = info
    t = time.perf_counter()
    G = nx.cycle_graph(100)  # P_k into C_100: 200 matches, for every k < 100
    jit = {}
    dfs = gmatch_engine(pool_target=1)  # stop the BFS at depth 1: the DFS kernel runs
    gpu_bfs = gmatch_engine(host_rows=0)  # every BFS level on the GPU's kernels
    for k in (3, 5, 12, 20):  # every KMAX bucket (8, 8, 16, 32)
        H = nx.path_graph(k)
        t1 = time.perf_counter()
        got = nx_gsm.count_subgraph_monomorphisms(G, H, engine="gmatch")
        assert got == 200, got
        for mode in ("mono", "induced"):
            plan, _, _ = prepare(G, H, mode)
            for eng in (dfs, gpu_bfs):
                got = eng.count(plan)
                assert got == 200, (k, mode, got)
            got = sum(len(c) for c in dfs.iter_chunks(plan))
            assert got == 200, (k, mode, got)
        jit[k] = time.perf_counter() - t1
    rec["jit_seconds"] = time.perf_counter() - t
    rec["jit_seconds_by_k"] = jit
    # fixed costs of one small count (after JIT): upload, BFS levels, DFS launch
    plan, _, _ = prepare(G, nx.path_graph(5), "mono")
    over = {}
    for name, eng in (("default", gmatch_engine()), ("dfs_only", dfs)):
        ts = []
        for _ in range(20):
            t1 = time.perf_counter()
            eng.count(plan)
            ts.append(time.perf_counter() - t1)
        over[name] = {"median_s": statistics.median(ts), "stats": dict(eng.last_stats)}
    rec["overhead_small_count"] = over
    log("overhead:", json.dumps(over, default=str))
    res = gmatch.kernel_resources()
    for r_name, r in res.items():
        _occupancy(r_name, r, info)
    rec["kernels"] = res
    log("kernels:", json.dumps(res))
    # every kernel variant into the disk cache: the test phases' processes then load the CPU
    # and GPU kernels instead of each compiling them, all at once on one host
    t = time.perf_counter()
    report = nx_gsm.warmup(progress=False)
    rec["nx_gsm_warmup"] = {"seconds": time.perf_counter() - t, "skipped": report["skipped"],
                            "gpu_kernels": report["gpu_kernels"]}
    log("nx_gsm.warmup:", json.dumps(rec["nx_gsm_warmup"]))


def _occupancy(name, r, info):
    """Blocks and warps per SM that a kernel's registers and shared memory allow."""
    if "registers" not in r or not info.get("sm_count"):
        return
    try:
        # names: bfs_level, dfs_k16_w4, fused_k16_w4_r0 (warps per block after "_w")
        nthreads = 256 if name.startswith("bfs") else 32 * int(name.split("_w")[1].split("_")[0])
        regs = int(r["registers"])
        by_regs = info["regs_per_sm"] // max(1, ((regs + 7) // 8 * 8) * nthreads)
        by_smem = (info["smem_per_sm"] // (int(r["shared_bytes"]) + 1024)
                   if r["shared_bytes"] else 10**9)
        by_thr = info["max_threads_per_sm"] // nthreads
        blocks = max(0, min(by_regs, by_smem, by_thr, 32))
        r["blocks_per_sm"] = blocks
        r["warps_per_sm"] = blocks * nthreads // 32
        r["limited_by"] = min((("registers", by_regs), ("shared memory", by_smem),
                               ("threads", by_thr), ("blocks", 32)), key=lambda x: x[1])[0]
    except (KeyError, ValueError, IndexError, TypeError) as exc:
        r["occupancy_error"] = str(exc)


# ------------------------------------------------------------------------------------------------
# yeast published counts
# ------------------------------------------------------------------------------------------------
def yeast_answers(root):
    from conformance.yeast import load_answers

    return dict(load_answers(root / "sun-luo" / "yeast" / "yeast_ans.txt"))


def qsize(name):
    try:
        return int(name.split("_")[2])
    except (IndexError, ValueError):
        return None


def qkey(name):
    p = name.replace(".graph", "").split("_")
    return (p[1], int(p[2]), int(p[3]))


def yeast(rec, budget, max_count, sizes, log=print):
    """gmatch on published yeast counts beyond the conformance quick subset (time-bounded)."""
    import nx_gsm
    from nx_gsm.api import prepare

    root = data_root()
    base = root / "sun-luo" / "yeast"
    ans = yeast_answers(root)
    G = nx_gsm.read_graph(base / "data_graph" / "yeast.graph", edge_labels=False)
    sel = sorted((q for q, c in ans.items() if c <= max_count and qsize(q) in sizes
                  and (base / "query_graph" / q).exists()), key=qkey)
    eng = gmatch_engine(time_limit=20.0)
    t0 = time.perf_counter()
    checked = matched = 0
    mism, errs, timeouts = [], [], []
    for q in sel:
        if time.perf_counter() - t0 > budget:
            break
        H = nx_gsm.read_graph(base / "query_graph" / q, edge_labels=False)
        try:
            plan, _, _ = prepare(G, H, "mono", node_label="label")
            got = eng.count(plan)
        except TimeoutError:
            timeouts.append(q)
            continue
        except Exception as exc:  # noqa: BLE001 - recorded per query
            errs.append({"query": q, "error": f"{type(exc).__name__}: {exc}"})
            continue
        checked += 1
        if got == ans[q]:
            matched += 1
        else:
            mism.append({"query": q, "expected": ans[q], "got": got})
    rec["yeast_gmatch"] = {"selected": len(sel), "checked": checked, "matched": matched,
                           "mismatches": mism[:20], "errors": errs[:20], "timeouts": timeouts,
                           "max_count": max_count, "sizes": sorted(sizes),
                           "seconds": time.perf_counter() - t0}
    log("yeast_gmatch:", json.dumps({k: v for k, v in rec["yeast_gmatch"].items()
                                     if k != "timeouts"})[:1500])


# ------------------------------------------------------------------------------------------------
# bench
# ------------------------------------------------------------------------------------------------
def ratio_stats(ratios):
    """(median, geometric mean) of the finite positive ratios, or (None, None)."""
    r = [x for x in ratios if x and x > 0 and math.isfinite(x)]
    if not r:
        return None, None
    return statistics.median(r), math.exp(sum(math.log(x) for x in r) / len(r))


# per dataset, a query of a few milliseconds whose search reaches the host levels' parallel
# path, the GPU BFS and the DFS: the warm-up phase's unlabelled toy counts do not compile those
# specialisations, and on a fresh card host (empty Numba cache) the first timed yeast-16 query
# took 8.7 s
WARM_QUERY = {"yeast": "query_dense_16_1.graph", "human": "query_sparse_8_16.graph"}


def warm_suite(ds, base, G, eng, variants, worker, baseline, log=print):
    """Run a suite's engines once, untimed, on its dataset's warm-up query."""
    import nx_gsm
    from nx_gsm.api import prepare

    q = WARM_QUERY.get(ds)
    hpath = base / "query_graph" / q if q else None
    if hpath is None or not hpath.exists():
        return
    H = nx_gsm.read_graph(hpath, edge_labels=False)
    t = time.perf_counter()
    # the API's engine (VF2 suite) shares these compiled kernels and host-level functions
    plan, _, _ = prepare(G, H, "mono", node_label="label")
    for e in (eng, *variants.values()):
        e.count(plan)
    warm = worker.run("cpu", base / "data_graph" / f"{ds}.graph", hpath, 300) \
        if baseline == "cpu" else "-"
    log(f"suite warm-up {ds} {q}: {time.perf_counter() - t:.2f}s, baseline", warm)


# the VF2 screens (benchmarks/vf2_screen.py) that ``--vf2-queries screened`` reads: the issue's
# two sets (screened on the card host, 13 s cap) and yeast 8-vertex (the dev VM, 16 s cap); the
# suites' own 10 s VF2 timeout decides "finishes within 10 s"
VF2_SCREENS = ("benchmarks/results/2026-12-03-vf2-screen-yeast16-h200host.jsonl",
               "benchmarks/results/2026-12-03-vf2-screen-human8-h200host.jsonl",
               "benchmarks/results/2026-11-26-vf2-screen-yeast8.jsonl")


def screened_queries(paths=VF2_SCREENS):
    """``dataset:query`` of every query the screens saw VF2 finish, in the screens' order."""
    got = []
    for p in paths:
        with open(ROOT / p, encoding="utf-8") as fh:
            for line in fh:
                row = json.loads(line)
                if row.get("vf2_s") is not None:
                    got.append(f"{row['dataset']}:{row['query']}")
    return got


def vf2_queries(arg):
    """``--vf2-queries``: None, ``"screened"`` (:func:`screened_queries`) or a comma list."""
    if not arg:
        return None
    return screened_queries() if arg == "screened" else arg.split(",")


def screened(entries, ds, groups):
    """The screened queries (``[dataset:]query``, yeast where no dataset is named) of one
    dataset and query groups, in the given order."""
    got = []
    for e in entries:
        d, _, q = e.rpartition(":")
        if (d or "yeast") == ds and q.rsplit("_", 1)[0] in groups:
            got.append(q)
    return got


SUITES = [  # (name, dataset, query groups, baseline, share of the budget)
    ("human-8", "human", ["dense_8", "sparse_8"], "cpu", 0.45),
    ("yeast-16", "yeast", ["dense_16", "sparse_16"], "cpu", 0.25),
    # the target's sets against VF2 ("20x over the CPU engine on the human 8-vertex and the
    # yeast 16-vertex sets, and 1000x over NetworkX VF2 on the queries VF2 finishes within
    # 10 s"), then yeast-8, where VF2 finishes many queries in 10-30 ms
    ("yeast-16-vf2", "yeast", ["dense_16", "sparse_16"], "vf2", 0.15),
    ("human-8-vf2", "human", ["dense_8", "sparse_8"], "vf2", 0.15),
    ("yeast-8-vf2", "yeast", ["dense_8", "sparse_8"], "vf2", 0.2),
]


def _suite_queries(base, groups, per_group, names):
    """A suite's query files: the screened ``names`` in their order, or the first
    ``per_group`` of each group, dense and sparse interleaved so that a cut-off keeps both."""
    if names is not None:
        return [q for q in names if (base / "query_graph" / q).exists()]
    queries = [q for q in (f"query_{grp}_{i}.graph" for grp in groups
                           for i in range(1, per_group + 1))
               if (base / "query_graph" / q).exists()]
    if len(groups) == 2:
        half = len(queries) // 2
        a, b = queries[:half], queries[half:]
        queries = [x for pair in zip(a, b) for x in pair] + a[len(b):] + b[len(a):]
    return queries


def _time_gmatch(G, H, baseline, eng, variants, row):
    """gmatch's time on one query (median of up to 3 runs), its ablations where it is fast;
    returns the count."""
    import nx_gsm
    from nx_gsm.api import prepare

    times = []
    if baseline == "cpu":
        tp = time.perf_counter()
        plan, _, _ = prepare(G, H, "mono", node_label="label")
        row["plan_s"] = time.perf_counter() - tp

        def once():
            return eng.count(plan)
    else:
        def once():
            return nx_gsm.count_subgraph_monomorphisms(G, H, node_label="label",
                                                       engine="gmatch")
    for _ in range(3):
        t = time.perf_counter()
        c = once()
        times.append(time.perf_counter() - t)
        if sum(times) > 0.5:
            break
    row["gmatch_s"] = statistics.median(times)
    # every run: the card host's timing noise is visible per query (host-only queries were
    # seen 0.14-13x apart between calls)
    row["gmatch_runs_s"] = [round(x, 6) for x in times]
    row["count"] = c
    if baseline != "cpu":
        return c
    if row["gmatch_s"] < 1.0:
        # ablations on the same plan, against the default's warm runs: its first run built the
        # plan's space and slots, so its median was the slower of two warm runs and every
        # ablation looked 5-10% faster
        t = time.perf_counter()
        eng.count(plan)
        row["gmatch_warm_s"] = statistics.median(times[1:] + [time.perf_counter() - t])
        row["variants"] = {}
        for vname, veng in variants.items():
            vt = []
            for _ in range(3):
                t = time.perf_counter()
                vc = veng.count(plan)
                vt.append(time.perf_counter() - t)
                if sum(vt) > 0.5:
                    break
            row["variants"][vname] = {"s": statistics.median(vt), "agree": vc == c,
                                      "stolen": veng.last_stats.get("stolen")}
    row["stats"] = {k: v for k, v in eng.last_stats.items()
                    if k in ("pool_rows", "pool_depth", "blocks", "donated", "adj_bits",
                             "stolen", "host_levels", "t_host_bfs", "t_upload", "t_bfs",
                             "t_dfs", "t_dfs_launch")}
    return c


def _baseline(row, worker, baseline, gpath, hpath, cpu_timeout, vf2_timeout):
    status, bc, bt = worker.run(baseline, gpath, hpath,
                                cpu_timeout if baseline == "cpu" else vf2_timeout)
    row["baseline_status"] = status
    c = row["count"]
    if status == "ok":
        row["baseline_s"] = bt
        row["baseline_count"] = bc
        row["agree"] = bc == c
        row["ratio"] = bt / row["gmatch_s"] if row["gmatch_s"] > 0 else None
    else:
        row["baseline_s"] = None
        row["baseline_note"] = bc if status == "error" else f">{bt}s"
        if status == "timeout" and row["gmatch_s"]:
            row["ratio_lower_bound"] = bt / row["gmatch_s"]
    if row["published"] is not None:
        row["agree_published"] = row["published"] == c
    row["matches_per_s"] = c / row["gmatch_s"] if row["gmatch_s"] else None


def bench(rec, budget, per_group, cpu_timeout, vf2_timeout, gpu_limit, only=None,
          vf2_list=None, log=print):
    """The count-all suites (:data:`SUITES`, or those named in ``only``) within ``budget``
    seconds, each its share; ``vf2_list``: the screened queries of the VF2 suites."""
    import nx_gsm

    root = data_root()
    ans = yeast_answers(root)
    suites = [s for s in SUITES if not only or s[0] in only]
    worker = Worker()
    # warm the worker (JIT of the CPU engine) on tiny queries
    ybase = root / "sun-luo" / "yeast"
    ygraph = ybase / "data_graph" / "yeast.graph"
    for wq in ("query_dense_4_1.graph", "query_dense_8_3.graph", "query_dense_16_2.graph"):
        log("worker warm-up:", wq, worker.run("cpu", ygraph, ybase / "query_graph" / wq, 300))
    eng = gmatch_engine(time_limit=gpu_limit)
    variants = {name: gmatch_engine(time_limit=2 * gpu_limit, **fields)
                for name, fields in ABLATIONS.items()}
    rows = []
    t_all = time.perf_counter()
    total_share = sum(s[4] for s in suites)
    spent_share = 0.0
    for suite, ds, groups, baseline, frac in suites:
        share = budget * frac / total_share
        spent_share += share
        t_suite = time.perf_counter()
        base = root / "sun-luo" / ds
        gpath = base / "data_graph" / f"{ds}.graph"
        G = nx_gsm.read_graph(gpath, edge_labels=False)
        # the queries VF2 finishes (screened beforehand) are the target's set, without spending
        # the device's time on VF2 timeouts; kept in the given order
        names = None
        if baseline == "vf2" and vf2_list:
            names = [f"query_{q}.graph" for q in screened(vf2_list, ds, groups)]
        queries = _suite_queries(base, groups, per_group, names)
        allowed = share + max(0.0, spent_share - share - (time.perf_counter() - t_all)) * 0.5
        warm_suite(ds, base, G, eng, variants, worker, baseline, log)
        for q in queries:
            if time.perf_counter() - t_suite > allowed:
                break
            hpath = base / "query_graph" / q
            H = nx_gsm.read_graph(hpath, edge_labels=False)
            row = {"suite": suite, "query": q, "baseline": "cpu" if baseline == "cpu" else
                   "networkx-vf2", "published": ans.get(q) if ds == "yeast" else None}
            rows.append(row)
            try:
                _time_gmatch(G, H, baseline, eng, variants, row)
            except TimeoutError:
                row["gmatch_s"] = None
                row["gmatch_timeout"] = gpu_limit
                log(f"{suite} {q}: gmatch timeout")
                continue
            except Exception as exc:  # noqa: BLE001 - recorded per query
                row["gmatch_error"] = f"{type(exc).__name__}: {exc}"
                log(f"{suite} {q}: gmatch error {row['gmatch_error']}")
                continue
            _baseline(row, worker, baseline, gpath, hpath, cpu_timeout, vf2_timeout)
            log(f"{suite} {q}: count={row['count']} gmatch={row['gmatch_s']:.4f}s "
                f"{row['baseline']}={row.get('baseline_s')} ratio={row.get('ratio')}")
    worker.close()
    rec["benchmarks"] = [suite_summary(suite, [r for r in rows if r["suite"] == suite])
                         for suite, *_ in suites]
    rec["benchmark_rows"] = rows


def suite_summary(suite, rs):
    """One suite's figures from its rows."""
    done = [r for r in rs if r.get("ratio")]
    lbs = [r["ratio_lower_bound"] for r in rs if r.get("ratio_lower_bound")]
    med, geo = ratio_stats([r["ratio"] for r in done])
    mps = [r["matches_per_s"] for r in rs if r.get("matches_per_s")]
    return {
        "suite": suite, "engine": "gmatch", "baseline": rs[0]["baseline"] if rs else None,
        "queries": len(rs), "compared": len(done),
        "baseline_timeouts": sum(1 for r in rs if r.get("baseline_status") == "timeout"),
        "gmatch_timeouts": sum(1 for r in rs if r.get("gmatch_timeout")),
        "disagree": sum(1 for r in rs if r.get("agree") is False
                        or r.get("agree_published") is False),
        "median_ratio": med, "geomean_ratio": geo,
        "lower_bounds": len(lbs),
        "geomean_ratio_with_lower_bounds": ratio_stats([r["ratio"] for r in done] + lbs)[1],
        "median_matches_per_s": statistics.median(mps) if mps else None,
        "gmatch_total_s": sum(r["gmatch_s"] for r in rs if r.get("gmatch_s")),
        "variants_geomean_time_ratio": {
            v: ratio_stats([r["variants"][v]["s"] / r["gmatch_warm_s"] for r in rs
                            if r.get("variants") and v in r["variants"]
                            and r.get("gmatch_warm_s")])[1]
            for v in ABLATIONS},
        "variants_disagree": sum(1 for r in rs for v in (r.get("variants") or {}).values()
                                 if not v["agree"]),
    }


# ------------------------------------------------------------------------------------------------
# the other phases: engines side by side, streaming, CPU scaling, sanitizers
# ------------------------------------------------------------------------------------------------
def engines(rec, budget, per_group, cap, sets, log=print):
    """cpu, gmatch, gsi, geneva and auto side by side (:mod:`benchmarks.gpu_engines`)."""
    from . import gpu_engines

    rec["engines_bench"] = gpu_engines.run_sets(sets, per_group, cap, budget, log=log)
    for name, r in rec["engines_bench"]["sets"].items():
        log(f"engines[{name}]:", json.dumps(r.get("summary", r.get("skipped")),
                                            default=str)[:1500])
    log("engines, auto vs the best finished engine over all sets:",
        json.dumps(rec["engines_bench"]["auto_vs_best_finished"], default=str))


def run_sub(cmd, timeout, env=None):
    """Run a command from the repository root in its own process group (killed whole at the
    timeout: an orphan left on the GPU would skew every later timing); return (status or
    ``"timeout"``, output tail)."""
    p = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True, env=env, start_new_session=True)
    try:
        text, _ = p.communicate(timeout=timeout)
        return p.returncode, (text or "")[-3000:]
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, 9)
        text, _ = p.communicate()
        return "timeout", (text or "")[-3000:]


def streaming(rec, timeout, out_dir, log=print):
    """> 10^8 rows streamed to pandas within a stated memory bound."""
    out = Path(out_dir) / "streaming.json"
    rc, tail = run_sub([sys.executable, "-m", "benchmarks.streaming", "--rows", "1e8",
                        "--engine", "gmatch", "--out", str(out)], timeout)
    rec["streaming"] = {"rc": rc, "tail": tail[-1500:]}
    if out.exists():
        rec["streaming"]["record"] = json.loads(out.read_text(encoding="utf-8"))
    log(tail[-1500:])


def scaling(rec, timeout, out_dir, queries, log=print):
    """The CPU engine on 2 threads against 1 (count-all), pinned to two cores of this host."""
    out = Path(out_dir) / "cpu_scaling.json"
    md = Path(out_dir) / "cpu_scaling.md"
    env = dict(os.environ, NUMBA_NUM_THREADS="2")
    cmd = ["taskset", "-c", "0,1", sys.executable, "-m", "benchmarks", "run", "--suite",
           "yeast-8", "human-8", "--engines", "cpu2", "cpu1", "--peers", "--protocol", "all",
           "--timeout", "20", "--repeat", "1", "--queries", str(queries), "--datasets",
           str(data_root()), "--out", str(out), "--markdown", str(md), "--no-progress"]
    rc, tail = run_sub(cmd, timeout, env)
    rec["cpu_scaling"] = {"rc": rc, "tail": tail[-1500:], "record": out.name,
                          "report": md.read_text(encoding="utf-8")[-4000:] if md.exists()
                          else None}
    log(tail[-1500:])


def sanitize(rec, timeout, log=print):
    """compute-sanitizer memcheck, racecheck and synccheck over gpu/sanitize_case.py (tiny)."""
    out = {}
    for tool in ("memcheck", "racecheck", "synccheck"):
        # memcheck without API errors: Numba's driver start-up probes produce ~34 benign ones
        extra = ["--report-api-errors", "no"] if tool == "memcheck" else []
        cmd = ["compute-sanitizer", f"--tool={tool}", *extra, "--error-exitcode=3",
               sys.executable, "-m", "gpu.sanitize_case"]
        t = time.perf_counter()
        try:
            rc, text = run_sub(cmd, timeout)
        except FileNotFoundError as exc:
            out[tool] = {"rc": None, "error": str(exc)}
        else:
            summary = [ln for ln in text.splitlines() if "ERROR SUMMARY" in ln
                       or "RACECHECK SUMMARY" in ln or "hazard" in ln.lower()][:10]
            out[tool] = {"rc": rc, "summary": summary, "tail": text[-1500:],
                         "seconds": time.perf_counter() - t}
        log(f"sanitize[{tool}]:", json.dumps({k: v for k, v in out[tool].items()
                                              if k != "tail"})[:800])
    rec["sanitize"] = out


def summary_lines(rec):
    """The benchmark part of the check's closing table."""
    lines = []
    for k, r in (rec.get("kernels") or {}).items():
        lines.append(f"  kernel {k}: regs={r.get('registers')} smem={r.get('shared_bytes')} "
                     f"local={r.get('local_bytes')} warps/SM={r.get('warps_per_sm')} "
                     f"({r.get('limited_by')})")

    def f(x):
        return f"{x:9.2f}" if isinstance(x, (int, float)) else f"{'-':>9s}"

    if rec.get("benchmarks"):
        lines.append(f"  {'suite':14s} {'baseline':13s} {'n':>3s} {'cmp':>4s} {'to':>3s} "
                     f"{'median':>9s} {'geomean':>9s} {'geo+lb':>9s} {'matches/s':>10s} "
                     f"{'bad':>3s}")
    for b in rec.get("benchmarks") or []:
        mps = b.get("median_matches_per_s")
        lines.append(f"  {b['suite']:14s} {str(b['baseline']):13s} {b['queries']:3d} "
                     f"{b['compared']:4d} {b['baseline_timeouts']:3d} {f(b['median_ratio'])} "
                     f"{f(b['geomean_ratio'])} {f(b.get('geomean_ratio_with_lower_bounds'))} "
                     f"{(f'{mps:10.3g}' if mps else '-'):>10s} {b['disagree']:3d}")
        if any(v is not None for v in (b.get("variants_geomean_time_ratio") or {}).values()):
            lines.append(f"    variants (time / default, geomean): "
                         f"{b['variants_geomean_time_ratio']} "
                         f"disagree={b.get('variants_disagree')}")
    return lines
