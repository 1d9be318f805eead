"""The engines side by side on the GPU machine: cpu, gmatch, gsi, geneva and auto, per query.

Run by ``python3 -m gpu.check --phases ...,engines`` (phase ``engines``) or alone::

    python3 -m benchmarks.gpu_engines --sets yeast-4,yeast-8 --per-group 10 --out $OUT/engines.json

For every query of each set, every engine enumerates all matches (``find_subgraph_monomorphisms``
with ``node_label="label"``: the full materialisation the BFS engines are built for) after a
warm-up, with a per-call time cap (``timeout=``; a capped run counts as a lower bound). All
engines must return the same number of rows (and the published count where there is one).
Per set: median and geometric mean of each engine's time over the queries every engine finished,
its ratio to the best engine per query, how often ``auto`` was within 1.25x of the best and its
worst ratio, the peak device memory of each engine (a CuPy memory hook around the call: bytes
held in CuPy's pool at the peak), and the graph's bytes as CSR, PCSR and interval-PCSR.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

ENGINES = ("cpu", "gmatch", "gsi", "geneva", "auto")
DEFAULT_SETS = ("yeast-4", "yeast-8", "human-4", "human-8", "wordnet-4", "wordnet-8",
                "github", "enron")
SNAP_PATTERNS = ("triangle", "4-cycle", "diamond", "4-clique", "P4", "S3")
# calls whose runs add up to less than this many seconds are repeated (median of up to REPEATS)
REPEAT_UNDER = 0.3
REPEATS = 5


class _PeakHook:
    """Bytes held by CuPy allocations during a call, and their peak."""

    def __init__(self):
        import cupy

        class Hook(cupy.cuda.MemoryHook):
            name = "nx_gsm_peak"

            def __init__(self):
                self.cur = 0
                self.peak = 0
                self.sizes = {}

            def malloc_postprocess(self, device_id, size, mem_size, mem_ptr, pmem_id):
                self.sizes[mem_ptr] = mem_size
                self.cur += mem_size
                self.peak = max(self.peak, self.cur)

            def free_postprocess(self, device_id, mem_size, mem_ptr, pmem_id):
                self.cur -= self.sizes.pop(mem_ptr, mem_size)

        self.hook = Hook()

    def __enter__(self):
        self.hook.__enter__()
        return self.hook

    def __exit__(self, *exc):
        return self.hook.__exit__(*exc)


def _format_bytes(G):
    """CSR, PCSR and interval-PCSR bytes of a data graph (NumPy builders of formats.py)."""
    from nx_gsm.engines.gpu.formats import format_nbytes

    b = format_nbytes(G)
    b["interval_vs_pcsr_reduction"] = 1.0 - b["interval_pcsr"] / b["pcsr"] if b["pcsr"] else None
    return b


def _geo(xs):
    xs = [x for x in xs if x and x > 0]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def run_sets(sets, per_group, cap, budget, log=print):
    import nx_gsm

    from .suites import build_suite

    deadline = time.perf_counter() + budget
    out = {"engines": list(ENGINES), "cap_seconds": cap, "sets": {}}
    for name in sets:
        if time.perf_counter() > deadline:
            out["sets"][name] = {"skipped": "time budget"}
            continue
        try:
            if name in ("github", "enron"):
                suite = build_suite(name, labels=16, seed=0, patterns=SNAP_PATTERNS)
            else:
                suite = build_suite(name, queries=per_group)
        except Exception as exc:  # noqa: BLE001 - missing data is reported, not fatal
            out["sets"][name] = {"skipped": f"{type(exc).__name__}: {exc}"}
            continue
        G = suite.load()
        g = nx_gsm.from_networkx(G, node_attrs=[suite.label] if suite.label else None,
                                 preserve_node_attrs=False, preserve_edge_attrs=False)
        res = {"description": suite.description, "nodes": g.n,
               "formats": _format_bytes(g), "queries": []}
        kw = {"node_label": suite.label} if suite.label else {}
        # warm every engine (JIT) on the first query
        if suite.queries:
            q0 = suite.queries[0].load()
            for e in ENGINES:
                try:
                    nx_gsm.find_subgraph_monomorphisms(g, q0, engine=e, timeout=cap, **kw)
                except Exception as exc:  # noqa: BLE001
                    log(f"  warm-up {name}/{e}: {type(exc).__name__}: {exc}")
        for q in suite.queries:
            if time.perf_counter() > deadline:
                res["truncated"] = True
                break
            H = q.load()
            row = {"query": q.name, "published": q.expected, "times": {}, "runs": {}, "rows": {},
                   "peak_device_bytes": {}, "errors": {}}
            for e in ENGINES:
                try:
                    with _PeakHook() as hook:
                        t = time.perf_counter()
                        ms = nx_gsm.find_subgraph_monomorphisms(g, H, engine=e, timeout=cap, **kw)
                        dt = time.perf_counter() - t
                    row["peak_device_bytes"][e] = hook.peak
                    row["rows"][e] = None if ms.partial else ms.count
                    del ms
                    times = [dt]
                    # one run of a ms-scale call is mostly noise (pool growth, host jitter):
                    # short finished calls are repeated (up to REPEATS runs) and their median kept
                    while row["rows"][e] is not None and sum(times) < REPEAT_UNDER and \
                            len(times) < REPEATS:
                        t = time.perf_counter()
                        nx_gsm.find_subgraph_monomorphisms(g, H, engine=e, timeout=cap, **kw)
                        times.append(time.perf_counter() - t)
                    row["times"][e] = statistics.median(times)
                    row["runs"][e] = len(times)
                    if e == "auto":
                        row["auto_choice"] = _auto_choice(g, H, kw)
                except Exception as exc:  # noqa: BLE001
                    row["errors"][e] = f"{type(exc).__name__}: {exc}"[:300]
            done = {e: c for e, c in row["rows"].items() if c is not None}
            row["agree"] = len(set(done.values())) <= 1 and (
                q.expected is None or not done or set(done.values()) == {q.expected})
            res["queries"].append(row)
            log(f"  {name} {q.name}: " + " ".join(
                f"{e}={row['times'].get(e, float('nan')):.4f}" for e in ENGINES)
                + f" rows={sorted(set(done.values()))} agree={row['agree']}")
        res["summary"] = _summary(res["queries"])
        out["sets"][name] = res
    out["auto_vs_best_finished"] = auto_ratios(
        [r for res in out["sets"].values() for r in res.get("queries", [])])
    return out


def _auto_choice(g, H, kw):
    """auto's engine, its reason and the seconds its choice took (probe and cost model)."""
    import nx_gsm
    from nx_gsm.api import prepare
    from nx_gsm.engines import get_engine

    try:
        e = nx_gsm.explain(g, H, collect=True, **kw)
        plan = prepare(g, H, "mono", **kw)[0]
        auto = get_engine("auto")
        t = time.perf_counter()
        if hasattr(auto, "_pick"):
            auto._pick(plan, "collect", None)
        return [e["engine"], e["reason"], time.perf_counter() - t]
    except Exception as exc:  # noqa: BLE001
        return ["?", str(exc), None]


def _summary(rows):
    full = [r for r in rows if all(r["rows"].get(e) is not None for e in ENGINES)]
    s = {"queries": len(rows), "all_finished": len(full),
         "disagreements": sum(1 for r in rows if not r["agree"]), "engines": {}}
    for e in ENGINES:
        ts = [r["times"][e] for r in full]
        ratios = [r["times"][e] / min(r["times"][x] for x in ENGINES if x != "auto")
                  for r in full]
        peaks = [r["peak_device_bytes"].get(e) or 0 for r in rows]
        s["engines"][e] = {
            "median_s": statistics.median(ts) if ts else None,
            "geomean_s": _geo(ts),
            "geomean_ratio_to_best": _geo(ratios),
            "peak_device_bytes_max": max(peaks) if peaks else None,
            "timeouts": sum(1 for r in rows if r["rows"].get(e) is None and e not in r["errors"]),
            "errors": sum(1 for r in rows if e in r["errors"]),
        }
    if full:
        best = [min(r["times"][x] for x in ENGINES if x != "auto") for r in full]
        auto = [r["times"]["auto"] for r in full]
        s["auto_within_1.25x_of_best"] = sum(a <= 1.25 * b for a, b in zip(auto, best)) / len(full)
        s["auto_worst_ratio_to_best"] = max(a / b for a, b in zip(auto, best))
    s["auto_vs_best_finished"] = auto_ratios(rows)
    return s


def auto_ratios(rows):
    """auto against the fastest engine that finished, over every query some engine finished
    (not only those all finished: the CPU's time-outs on heavy queries would otherwise drop
    exactly the queries where choosing matters); an auto time-out counts as a miss."""
    ratios = []
    for r in rows:
        fin = [r["times"][x] for x in ENGINES
               if x != "auto" and r["rows"].get(x) is not None and x in r["times"]]
        if not fin:
            continue
        a = r["times"].get("auto") if r["rows"].get("auto") is not None else None
        ratios.append(math.inf if a is None else a / min(fin))
    if not ratios:
        return None
    return {"queries": len(ratios), "within_1.25x": sum(x <= 1.25 for x in ratios),
            "share_within_1.25x": sum(x <= 1.25 for x in ratios) / len(ratios),
            "worst_ratio": max(ratios)}


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python3 -m benchmarks.gpu_engines", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default=",".join(DEFAULT_SETS))
    ap.add_argument("--per-group", type=int, default=10)
    ap.add_argument("--cap", type=float, default=10.0, help="seconds per engine call")
    ap.add_argument("--budget", type=float, default=400.0)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    res = run_sets(args.sets.split(","), args.per_group, args.cap, args.budget)
    if args.out:
        Path(args.out).write_text(json.dumps(res, indent=1, default=str), encoding="utf-8")
    for name, r in res["sets"].items():
        print(name, json.dumps(r.get("summary", r.get("skipped")), default=str)[:600])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
