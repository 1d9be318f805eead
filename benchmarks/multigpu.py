"""One GPU against several: a count that runs over ``--min-seconds`` on one GPU, split by root
candidates over one Dask worker per GPU (issue 7's >= 1.8x on two GPUs).

``python -m benchmarks.multigpu [--suite human-8] [--min-seconds 10] [--gpus 2] [--tasks 64]
[--query NAME] [--out FILE]``

1. The workload: the suite's queries are counted with gmatch in this process, in order, until
   one takes at least ``--min-seconds`` (a query over ``--max-seconds`` is cut by a deadline and
   skipped); that query and its one-GPU time are the baseline.
2. The same count through :func:`nx_gsm.distributed.gpu_client` with 1 worker, then with
   ``--gpus`` workers (one GPU each), ``--tasks`` root shares (:func:`count_plan`); each worker
   is warmed first on a small count (its JIT compile is not part of the time).
3. Every count must equal the baseline's. The record holds the three times, the speedups over
   the in-process GPU and over the one-worker cluster, and each worker's device.
4. With ``--find-query``, that query's mappings are found on each cluster (``find_plan``,
   gmatch) and must equal one in-process gmatch run's, row for row after sorting.
"""

from __future__ import annotations

import argparse
import json
import time


def _pick(suite, min_s, max_s, log, only=None):
    import nx_gsm
    from nx_gsm.api import prepare
    from nx_gsm.engines.base import Budget
    from nx_gsm.engines.gpu.gmatch import GMatchEngine

    G = suite.load()
    g = nx_gsm.from_networkx(G, node_attrs=[suite.label] if suite.label else None,
                             preserve_node_attrs=False, preserve_edge_attrs=False)
    kw = {"node_label": suite.label} if suite.label else {}
    eng = GMatchEngine()
    tried = []
    for q in suite.queries:
        if only is not None and q.name != only:
            continue
        plan = prepare(g, q.load(), "mono", **kw)[0]
        t = time.perf_counter()
        got = eng.count(plan, budget=Budget(timeout=max_s))
        dt = time.perf_counter() - t
        partial = getattr(got, "partial", False)
        tried.append({"query": q.name, "seconds": dt, "count": int(got), "partial": partial})
        log(f"  {q.name}: {int(got)} in {dt:.2f}s{' (cut)' if partial else ''}")
        if not partial and dt >= min_s:
            return plan, q.name, int(got), dt, tried
    return None, None, None, None, tried


def _timed_count(plan, client, tasks):
    from nx_gsm.distributed import count_plan

    t = time.perf_counter()
    got = count_plan(plan, client, engine="gmatch", tasks=tasks)
    return int(got), time.perf_counter() - t


def _warm(client, plan):
    """Compile every worker's kernels on a small count of the same pattern size."""
    import networkx as nx

    from nx_gsm.api import prepare
    from nx_gsm.distributed import count_plan

    small = prepare(nx.complete_graph(12), nx.path_graph(plan.k), "mono")[0]
    n = len(client.scheduler_info()["workers"])
    count_plan(small, client, engine="gmatch", tasks=4 * n)


def run(suite_name, min_s, max_s, gpus, tasks, log=print, query=None, find_query=None):
    from benchmarks.suites import build_suite
    from nx_gsm.distributed import gpu_client, visible_gpus

    rec = {"suite": suite_name, "min_seconds": min_s, "gpus_visible": visible_gpus(),
           "tasks": tasks}
    suite = build_suite(suite_name)
    plan, name, want, t1, tried = _pick(suite, min_s, max_s, log, query)
    rec["tried"] = tried
    if plan is None:
        rec["error"] = f"no query of {suite_name} ran {min_s}-{max_s} s on one GPU"
        return rec
    rec.update(query=name, count=want, one_gpu_in_process_s=t1)
    found = None
    if find_query:
        fplan, ref, tf = _find_reference(suite, find_query, log)
        found = (fplan, ref)
        rec.update(find_query=find_query, find_rows=int(ref.shape[0]), find_in_process_s=tf)
    for n in (1, gpus):
        with gpu_client(n_gpus=n) as client:
            devs = client.run(_device_name)
            _warm(client, plan)
            got, dt = _timed_count(plan, client, tasks)
            if found is not None:
                ok, tf, nrows = find_exact(found[0], client, "gmatch", found[1])
                rec[f"dask_{n}_gpu_find_exact"] = ok
                rec[f"dask_{n}_gpu_find_s"] = tf
                log(f"  dask, {n} GPU worker(s), find {find_query}: {nrows} rows in {tf:.2f}s "
                    f"({'the same mappings' if ok else 'DIFFERENT mappings'})")
            client.cluster.close()
        rec[f"dask_{n}_gpu_s"] = dt
        rec[f"dask_{n}_gpu_devices"] = sorted(devs.values())
        rec[f"dask_{n}_gpu_exact"] = got == want
        log(f"  dask, {n} GPU worker(s) {sorted(devs.values())}: {got} in {dt:.2f}s "
            f"({'exact' if got == want else 'WRONG'})")
    rec["speedup_vs_in_process"] = t1 / rec[f"dask_{gpus}_gpu_s"]
    rec["speedup_vs_one_worker"] = rec["dask_1_gpu_s"] / rec[f"dask_{gpus}_gpu_s"]
    return rec


def canonical_rows(rows):
    """The rows sorted lexicographically: two finds agree iff these are equal."""
    import numpy as np

    rows = np.asarray(rows)
    return rows[np.lexsort(rows.T[::-1])] if rows.size else rows.reshape(0, rows.shape[-1])


def find_exact(plan, client, engine, ref):
    """``(equal, seconds, rows)``: the cluster's mappings of ``plan`` against ``ref`` (canonical
    rows of a single run), every row once."""
    import numpy as np

    from nx_gsm.distributed import find_plan

    t = time.perf_counter()
    rows, cut = find_plan(plan, client, engine=engine)
    dt = time.perf_counter() - t
    return (not cut and np.array_equal(canonical_rows(rows), ref)), dt, int(rows.shape[0])


def _find_reference(suite, name, log):
    """The plan of query ``name`` and gmatch's rows for it in this process (canonical)."""
    import numpy as np

    import nx_gsm
    from nx_gsm.api import prepare
    from nx_gsm.engines.gpu.gmatch import GMatchEngine

    G = suite.load()
    g = nx_gsm.from_networkx(G, node_attrs=[suite.label] if suite.label else None,
                             preserve_node_attrs=False, preserve_edge_attrs=False)
    kw = {"node_label": suite.label} if suite.label else {}
    q = next(q for q in suite.queries if q.name == name)
    plan = prepare(g, q.load(), "mono", **kw)[0]
    t = time.perf_counter()
    chunks = list(GMatchEngine().iter_chunks(plan))
    dt = time.perf_counter() - t
    ref = canonical_rows(np.concatenate(chunks) if chunks else np.zeros((0, plan.k), np.int32))
    log(f"  find {name}: {ref.shape[0]} rows in {dt:.2f}s on one GPU in-process")
    return plan, ref, dt


def _device_name():
    import os

    import cupy

    props = cupy.cuda.runtime.getDeviceProperties(0)
    return f"{os.environ.get('CUDA_VISIBLE_DEVICES')}:{props['name'].decode()}"


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.multigpu", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default="human-8")
    ap.add_argument("--min-seconds", type=float, default=10.0)
    ap.add_argument("--max-seconds", type=float, default=60.0)
    ap.add_argument("--gpus", type=int, default=2)
    ap.add_argument("--tasks", type=int, default=64)
    ap.add_argument("--query", default=None, help="this query of the suite only")
    ap.add_argument("--find-query", default=None,
                    help="also find this query's mappings on every cluster and compare them "
                         "with one in-process GPU run (pick one with ~1e6 rows)")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    rec = run(args.suite, args.min_seconds, args.max_seconds, args.gpus, args.tasks,
              query=args.query, find_query=args.find_query)
    if args.out:
        from .runner import save

        save(rec, args.out)
    print(json.dumps(rec, indent=1, default=str)[-2000:])
    finds = [v for k, v in rec.items() if k.endswith("_find_exact")]
    ok = rec.get("error") is None and rec.get(f"dask_{args.gpus}_gpu_exact") and all(finds)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
