"""First-run costs: the first ``nx-gsm demo`` with an empty kernel cache, then fresh processes.

    python benchmarks/first_run.py [--repeat 5] [--out benchmarks/results/first-run.json]

Measures, each in new processes over a new, empty cache folder (``NX_GSM_CACHE_DIR``):

1. ``demo``: the first-ever ``nx-gsm demo`` (compiles the kernels it needs; wall time, and
   whether it printed the one-time-cost line);
2. ``fresh_count``: after it, a fresh process's first count, import included, on bundled yeast
   queries (``nx_gsm.demo_queries()``): process wall time from spawn to exit, and the child's
   own split into import, reading the graphs and the count (which loads the cached kernels);
3. ``fresh_count_without_scipy``: the same with SciPy hidden, as in a default install (SciPy
   comes with the ``test`` extra; Numba imports ``scipy.linalg`` to look for BLAS when it loads
   its first compiled function);
4. ``warmup_after_demo``: ``nx-gsm warmup`` after the demo (the kernels the demo did not need).

The record holds no machine paths; the load average is read before and after (other work on
the machine slows every figure).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path

# the child: import, read the bundled data graph and one query, count; prints its phases
CHILD = r"""
import time
t0 = time.perf_counter()
import sys
if {hide_scipy}:
    sys.modules["scipy"] = None  # an install without SciPy: importing it raises ImportError
import networkx as nx
import nx_gsm
from nx_gsm.interop.formats import read_any
t1 = time.perf_counter()
path, published = nx_gsm.demo_queries()[{index}]
G = read_any(nx_gsm.demo_graph_path("yeast"))
H = read_any(path, edge_labels=False)
t2 = time.perf_counter()
count = nx_gsm.count_subgraph_monomorphisms(G, H, node_label="label")
t3 = time.perf_counter()
assert count == published, (count, published)
print({{"query": path.name, "count": int(count), "import_s": t1 - t0, "read_s": t2 - t1,
       "count_s": t3 - t2}})
"""

NOTICE = "compiling the CPU kernels once"


def _env(cache):
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NX_GSM_CACHE_DIR")}
    env["NX_GSM_CACHE_DIR"] = str(cache)
    return env


def _cli(args, cache):
    """Run the ``nx-gsm`` command (the console script beside this Python, else the module)."""
    script = Path(sys.executable).with_name("nx-gsm")
    cmd = [str(script)] if script.exists() else \
        [sys.executable, "-c", "from nx_gsm.cli import main; raise SystemExit(main())"]
    t = time.perf_counter()
    proc = subprocess.run(cmd + args, env=_env(cache), capture_output=True, text=True,
                          check=True)
    return time.perf_counter() - t, proc


def _fresh_counts(cache, index, repeat, hide_scipy):
    """``repeat`` fresh processes counting query ``index``: wall times and the child's phases."""
    import ast

    code = CHILD.format(hide_scipy=hide_scipy, index=index)
    runs = []
    for _ in range(repeat):
        t = time.perf_counter()
        proc = subprocess.run([sys.executable, "-c", code], env=_env(cache), capture_output=True,
                              text=True, check=True)
        wall = time.perf_counter() - t
        got = ast.literal_eval(proc.stdout.strip().splitlines()[-1])
        got["process_s"] = wall
        got["notice"] = NOTICE in proc.stderr
        runs.append(got)
    med = {k: round(statistics.median(r[k] for r in runs), 3)
           for k in ("process_s", "import_s", "read_s", "count_s")}
    return {"query": runs[0]["query"], "count": runs[0]["count"], "median": med,
            "process_s": [round(r["process_s"], 3) for r in runs],
            "notice_printed": any(r["notice"] for r in runs)}


def _versions():
    out = {"python": platform.python_version()}
    for dist in ("nx-gsm", "numba", "numpy", "networkx", "scipy"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--repeat", type=int, default=5, help="fresh processes per figure")
    p.add_argument("--queries", type=int, nargs="+", default=[0, 2],
                   help="indices into nx_gsm.demo_queries() (default: dense_4_1, dense_8_1)")
    p.add_argument("--skip-warmup", action="store_true", help="do not time nx-gsm warmup")
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "first-run.json"))
    args = p.parse_args(argv)

    record = {"schema": "nx-gsm-first-run/1",
              "machine": {"cpus": os.cpu_count(), "load_before": os.getloadavg(),
                          "system": platform.system(), "machine": platform.machine()},
              "versions": _versions()}
    with tempfile.TemporaryDirectory(prefix="nx-gsm-cache-") as cache:
        wall, proc = _cli(["demo"], cache)
        record["demo"] = {"first_run_s": round(wall, 2), "notice_printed": NOTICE in proc.stderr,
                          "all_counts_ok": proc.returncode == 0}
        print(f"first nx-gsm demo: {wall:.1f} s (one-time-cost line: "
              f"{record['demo']['notice_printed']})", flush=True)
        for key, hide in (("fresh_count", False), ("fresh_count_without_scipy", True)):
            record[key] = [_fresh_counts(cache, i, args.repeat, hide) for i in args.queries]
            for r in record[key]:
                print(f"{key}: {r['query']}: process {r['median']['process_s']:.3f} s median "
                      f"(import {r['median']['import_s']:.3f}, read {r['median']['read_s']:.3f},"
                      f" count {r['median']['count_s']:.3f})", flush=True)
        if not args.skip_warmup:
            wall, _ = _cli(["warmup", "--no-progress"], cache)
            record["warmup_after_demo_s"] = round(wall, 1)
            print(f"nx-gsm warmup after the demo: {wall:.1f} s", flush=True)
    record["machine"]["load_after"] = os.getloadavg()
    # imported here, after the measurements: the parent's import never warms what they time
    from nx_gsm.interop.atomic import atomic_open

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(out, "w", encoding="utf-8") as fh:  # a failed write keeps the last record
        json.dump(record, fh, indent=1)
        fh.write("\n")
    print(f"wrote {out.name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
