"""Interleaved A/B of gmatch configurations on one card (the card host's timing noise between
runs is larger than most changes, so only an interleaved A/B tells them apart).

On the GPU machine::

    python3 -m gpu.variants --suite yeast-16 --variants default,chained,fh0 --out ab.json

Per query: one plan (``api.prepare``, as the bench), every variant run once (compile, and
its count checked against the published count where the dataset has one, else against the
first variant's), then ``--reps`` rounds in which each variant
counts once, in order; the median per variant. Queries whose first default count takes
longer than ``--max-ms`` are timed once. Prints a table and writes a JSON record (per query:
count, median milliseconds per variant, the default variant's ``last_stats``; summary:
geometric means and their ratios to the first variant).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

# name -> the GMatchConfig fields it changes ("cpu" is the CPU engine on the same plan, in this
# process); every variant runs with TIME_LIMIT
VARIANTS = {
    "default": {},
    "chained": {"fused": False},
    "fh0": {"fused_host_rows": 0},
    "fh16": {"fused_host_rows": 16},
    "fh32": {"fused_host_rows": 32},
    "fh64": {"fused_host_rows": 64},
    "nar0": {"fused_narrow": 0},
    "nar64": {"fused_narrow": 64},
    "small0": {"small_space": 0},
    "small8": {"small_space": 8},
    "bl4": {"bfs_levels": 4},
    "bl6": {"bfs_levels": 6},
    "bl8": {"bfs_levels": 8},
    "pt256": {"pool_target": 256},
    "pt1k": {"pool_target": 1024},
    "pt4k": {"pool_target": 4096},
    "hw0": {"host_work": 0},
    "hw256": {"host_work": 256},
    "hw512": {"host_work": 512},
    "hw1k": {"host_work": 1024},
    "fh1k": {"fused_host_rows": 1024},
    "fh4k": {"fused_host_rows": 4096},
    "no-steal": {"steal": False},
    "regs0": {"fused_regs": 0},
    "regs80": {"fused_regs": 80},
    "b132": {"blocks": 132},
    "b264": {"blocks": 264},
    "b396": {"blocks": 396},
    "cpu": None,
}
SUITES = {  # name -> (dataset, query groups)
    "yeast-16": ("yeast", ("dense_16", "sparse_16")),
    "yeast-8": ("yeast", ("dense_8", "sparse_8")),
    "human-8": ("human", ("dense_8", "sparse_8")),
}
TIME_LIMIT = 30.0  # seconds a variant's launch may run (GMatchConfig.time_limit)


def _geo(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def config_of(name):
    """The :class:`GMatchConfig` of variant ``name`` (None for the CPU engine)."""
    from nx_gsm.engines.gpu.gmatch import GMatchConfig

    if name not in VARIANTS:
        raise SystemExit(f"unknown variant {name!r}; known: {', '.join(VARIANTS)}")
    fields = VARIANTS[name]
    return None if fields is None else GMatchConfig(time_limit=TIME_LIMIT, **fields)


def _engines(names):
    from nx_gsm.engines.cpu import CpuEngine
    from nx_gsm.engines.gpu.gmatch import GMatchEngine

    configs = {n: config_of(n) for n in names}  # every name checked before any engine is made
    return {n: CpuEngine() if c is None else GMatchEngine(config=c) for n, c in configs.items()}


def run(suite, names, reps, per_group, max_ms, root, queries=None, out=None):
    import nx_gsm
    from nx_gsm.api import prepare

    ds, groups = SUITES[suite]
    base = Path(root) / "sun-luo" / ds
    G = nx_gsm.read_graph(base / "data_graph" / f"{ds}.graph", edge_labels=False)
    if queries:
        qs = list(queries)
    else:
        qs = [f"{g}_{i}" for i in range(1, per_group + 1) for g in groups]
    engs = _engines(names)
    answers = {}
    if (base / f"{ds}_ans.txt").exists():
        from conformance.yeast import load_answers

        answers = {Path(q).stem.removeprefix("query_"): int(c)
                   for q, c in load_answers(base / f"{ds}_ans.txt")}
    rows = []
    for q in qs:
        path = base / "query_graph" / f"query_{q}.graph"
        if not path.exists():
            continue
        H = nx_gsm.read_graph(path, edge_labels=False)
        plan, _, _ = prepare(G, H, "mono", node_label="label")
        row = {"query": q, "ms": {}, "agree": {}, "published": answers.get(q)}
        want = answers.get(q)
        first = {}
        for n, e in engs.items():
            t = time.perf_counter()
            try:
                c = e.count(plan)
            except Exception as exc:  # noqa: BLE001
                row["agree"][n] = f"error: {exc!r}"
                continue
            first[n] = (time.perf_counter() - t) * 1e3
            if want is None:
                want = int(c)
            row["agree"][n] = int(c) == want
            row.setdefault("count", int(c))
        times = {n: [] for n in first}
        heavy = max(first.values(), default=0) > max_ms
        for _ in range(1 if heavy else reps):
            for n in first:
                t = time.perf_counter()
                engs[n].count(plan)
                times[n].append((time.perf_counter() - t) * 1e3)
        row["ms"] = {n: round(statistics.median(v), 4) for n, v in times.items()}
        lead = next(iter(first), None)
        if lead is not None and VARIANTS[lead] is not None:
            engs[lead].count(plan)
            row["stats"] = {k: v for k, v in engs[lead].last_stats.items()
                            if isinstance(v, (int, float, bool, str, list))}
        rows.append(row)
        print(q, row.get("count"), row["ms"], flush=True)
        if out:  # so far (a run cut short by its time limit keeps its rows)
            Path(out).write_text(json.dumps({"suite": suite, "rows": rows}, indent=1))
    summary = {}
    lead = names[0]
    for n in names:
        common = [r for r in rows if n in r["ms"] and lead in r["ms"]]
        g = _geo([r["ms"][n] for r in common])
        g0 = _geo([r["ms"][lead] for r in common])
        summary[n] = {"geomean_ms": g, "vs_first": (g / g0) if g and g0 else None,
                      "queries": len(common),
                      "disagree": sum(1 for r in rows if r["agree"].get(n) is not True)}
    from nx_gsm.engines.gpu.gmatch import kernel_resources

    return {"suite": suite, "variants": {n: VARIANTS[n] for n in names}, "reps": reps,
            "rows": rows, "summary": summary, "kernels": kernel_resources()}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m gpu.variants", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default="yeast-16", choices=sorted(SUITES))
    ap.add_argument("--variants", default="default,chained")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--per-group", type=int, default=20)
    ap.add_argument("--queries", default=None, help="comma-separated, e.g. dense_16_1")
    ap.add_argument("--max-ms", type=float, default=500.0)
    ap.add_argument("--datasets", default=os.environ.get("NX_GSM_DATASETS", ".gpudata"))
    ap.add_argument("--out", default=None)
    a = ap.parse_args(argv)
    rec = run(a.suite, a.variants.split(","), a.reps, a.per_group, a.max_ms, a.datasets,
              a.queries.split(",") if a.queries else None, a.out)
    print("kernels:", json.dumps(rec["kernels"]))
    for n, s in rec["summary"].items():
        print(f"{n:>12}: geomean {s['geomean_ms']} ms, x{s['vs_first']} of the first, "
              f"{s['queries']} queries, {s['disagree']} disagreements")
    if a.out:
        Path(a.out).write_text(json.dumps(rec, indent=1))
    return 0 if all(s["disagree"] == 0 for s in rec["summary"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
