"""GPU kernels cached across processes, on the card: a second process over the same cache
launches every kernel it uses without compiling one, and after ``nx-gsm warmup`` a fresh
process compiles no kernel variant at all.

Each check runs child processes over one new, empty cache folder (``NX_GSM_CACHE_DIR``), in
this order: a workload twice (the first compiles, the second must not), ``nx-gsm warmup``,
then the workload and every gmatch and GSI variant in a fresh process (nothing compiled), and
last the wall time of a fresh ``nx-gsm match ... --count`` process (printed, for the record:
``-s`` shows it).

A child counts its compilations itself, with a counter the cache cannot fool: it wraps
numba-cuda's ``_Kernel.__init__`` (every kernel compile builds one; a kernel loaded from the
cache is rebuilt without it) and ``compile_cuda`` (every compile of a kernel or device
function calls it).
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

import nx_gsm

pytestmark = pytest.mark.gpu  # the card; skipped below where no CUDA device is usable

ROOT = Path(__file__).resolve().parents[1]

COUNTING = r"""
import json, sys, time
t_start = time.perf_counter()
from numba.cuda import dispatcher
compiled = {"kernels": [], "cuda": 0}  # kernels: [step, kernel, argument types] per compile
step = ["import"]
_init, _compile_cuda = dispatcher._Kernel.__init__, dispatcher.compile_cuda

def _counted_init(self, py_func, argtypes=None, *a, **kw):
    # which step compiled it, with what arguments (the signature warmup did not launch)
    compiled["kernels"].append(
        [step[0], py_func.__qualname__, [str(t) for t in (argtypes or ())]])
    return _init(self, py_func, argtypes, *a, **kw)

def _counted_compile(*a, **kw):
    compiled["cuda"] += 1
    return _compile_cuda(*a, **kw)

dispatcher._Kernel.__init__ = _counted_init
dispatcher.compile_cuda = _counted_compile
"""

# the child's report: what it compiled, its counts and every kernel's signatures
REPORT = r"""
from gpu.signatures import dispatchers
sigs = {}  # every signature of every kernel, by the kernel's name
for d in dispatchers().values():
    sigs.setdefault(d.py_func.__qualname__, []).extend(
        [str(t) for t in sig] for sig in d.overloads)
stats = kernel_cache.gpu_kernel_stats()
print(json.dumps({"compiled": compiled, "counts": counts, "variants": variants, "empty": empty,
                  "signatures": sigs,
                  "loaded": stats["loaded"], "stats_compiled": stats["compiled"],
                  "by_kernel": stats["by_kernel"], "seconds": time.perf_counter() - t_start}))
"""

# every GPU engine on the bundled yeast graph (``gpu.signatures.workload``: gmatch at stack
# depths 8 and 16 -- its fused count, an enumeration, and a count with every level on the
# device and no fused kernel --, GSI, GENEVA, and GAMMA's incremental count)
WORKLOAD = COUNTING + r"""
sys.path.insert(0, sys.argv[1])
from gpu.signatures import workload
from nx_gsm import kernel_cache

counts = {}
for label, run in workload():
    step[0] = label
    counts[label] = run()
variants, empty = 0, []
if "--variants" in sys.argv:
    from nx_gsm.engines.gpu import gsi_kernels
    from nx_gsm.engines.gpu.gmatch import kernels
    from nx_gsm.engines.gpu.gmatch.config import BUCKETS, FUSED_REGS
    step[0] = "compile_variants"
    variants = kernels.compile_variants() + gsi_kernels.compile_variants()
    every = {f"dfs {K} {w}": kernels.dfs_kernel(K, W, w) for K, W in BUCKETS for w in (0, 1)}
    every.update({f"fused {K} {w}": kernels.fused_kernel(K, W, w, FUSED_REGS.get(K, 0))
                  for K, W in BUCKETS for w in (0, 1)})
    for K in gsi_kernels.JOIN_BUCKETS:
        every[f"gsi bound {K}"], every[f"gsi join {K}"] = gsi_kernels.join_kernels(
            K, gsi_kernels.JOIN_WARPS)
    empty = sorted(name for name, d in every.items() if not d.overloads)
""" + REPORT


# ``nx-gsm warmup`` (the CLI's own entry point), then the same report: the signatures warmup
# launched are what a compile after it is compared with
WARMUP = COUNTING + r"""
sys.path.insert(0, sys.argv[1])
from nx_gsm.cli import main
from nx_gsm import kernel_cache
assert main(["warmup", "--no-progress"]) == 0
counts, variants, empty = {}, 0, []
""" + REPORT


def _env(cache):
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_CACHE_DIR", "NX_GSM_CACHE_DIR", "NUMBA_ENABLE_CUDASIM")}
    env["NX_GSM_CACHE_DIR"] = str(cache)
    return env


def _child(code, cache, *args, timeout=600):
    proc = subprocess.run([sys.executable, "-c", code, str(ROOT), *args], env=_env(cache),
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """The children's reports, over one new cache folder: the workload twice, warmup, the
    workload with every variant."""
    from nx_gsm.engines.gpu import device_reason

    reason = device_reason()
    if reason is not None:
        pytest.skip(f"no usable CUDA device: {reason}")
    cache = tmp_path_factory.mktemp("nx-gsm-cache")
    out = {"cache": cache}
    out["first"], out["first_err"] = _child(WORKLOAD, cache)
    out["second"], out["second_err"] = _child(WORKLOAD, cache)
    t = time.perf_counter()
    out["warmup"], _ = _child(WARMUP, cache, timeout=900)
    out["warmup_s"] = time.perf_counter() - t
    out["after"], out["after_err"] = _child(WORKLOAD, cache, "--variants")
    print(f"\nkernel cache (card): first process {out['first']['seconds']:.1f} s, "
          f"{len(out['first']['compiled']['kernels'])} kernels compiled; second "
          f"{out['second']['seconds']:.1f} s, {out['second']['loaded']} loaded; warmup "
          f"{out['warmup_s']:.0f} s; after it {out['after']['variants']} variants loaded")
    for proc, ref in (("second", out["first"]), ("after", out["warmup"])):
        for line in compile_report(out[proc], ref):
            print(f"compiled in the {proc} process: {line}")
    return out


def compile_report(child, reference=None):
    """One line per kernel a child compiled: the step, the kernel, and the arguments where its
    signature differs from the closest other signature of a kernel of that name, in the child
    or in the ``reference`` child's report (the process before it: the first process, or
    warmup, whose signatures the cache holds); the whole signature where there is none."""
    lines = []
    for step, name, args in child["compiled"]["kernels"]:
        others = [sig for sig in child["signatures"].get(name, []) +
                  (reference or {}).get("signatures", {}).get(name, []) if sig != args]
        # (against the closest one: the fewest arguments differ)
        near = min(others, key=lambda sig: sum(a != b for a, b in zip(sig, args)), default=None)
        diff = "; ".join(f"argument {i}: {a} -> {b}" for i, (a, b) in
                         enumerate(zip(near, args)) if a != b) if near else \
            "no other signature of this kernel; arguments: " + ", ".join(args)
        lines.append(f"{step}: {name}: {diff}")
    return lines


def test_a_second_process_launches_every_kernel_without_compiling(runs):
    first, second = runs["first"], runs["second"]
    assert first["compiled"]["kernels"], "the first process compiled nothing: not a cold cache"
    assert "compiling GPU kernels once" in runs["first_err"]
    assert not second["compiled"]["kernels"] and not second["compiled"]["cuda"], (
        second["by_kernel"], compile_report(second))
    assert second["stats_compiled"] == 0
    assert second["loaded"] >= len({name for _, name, _ in first["compiled"]["kernels"]})
    assert "compiling GPU kernels once" not in runs["second_err"]


def test_kernels_loaded_from_the_cache_give_the_same_counts(runs):
    assert runs["second"]["counts"] == runs["first"]["counts"]
    assert runs["after"]["counts"] == runs["first"]["counts"]


def test_after_warmup_no_kernel_variant_compiles(runs):
    after = runs["after"]
    assert not after["compiled"]["kernels"] and not after["compiled"]["cuda"], (
        after["by_kernel"], compile_report(after))
    # every gmatch DFS and fused variant and every GSI length has a kernel, loaded from the
    # cache: those the workload did not launch by compile_variants
    assert after["empty"] == [] and after["variants"] > 0, after


def _match_files():
    """The issue's yeast query (``query_dense_16_1``, from ``$NX_GSM_DATASETS`` or the
    checkout's ``.gpudata``), else the bundled ``query_dense_16_2``."""
    for base in (os.environ.get("NX_GSM_DATASETS"), ROOT / ".gpudata"):
        if base:
            yeast = Path(base) / "sun-luo" / "yeast"
            q = yeast / "query_graph" / "query_dense_16_1.graph"
            if q.exists():
                return yeast / "data_graph" / "yeast.graph", q
    queries = {p.stem: p for p, _ in nx_gsm.demo_queries()}
    return nx_gsm.demo_graph_path("yeast"), queries["query_dense_16_2"]


def test_probe_a_fresh_match_process_after_warmup(runs):
    """The record's figure: wall time of a fresh ``nx-gsm match ... --label label --count``
    process (spawn to exit) after ``nx-gsm warmup``; printed, not asserted."""
    data, query = _match_files()
    exe = shutil.which("nx-gsm")
    cmd = [exe] if exe else [sys.executable, "-c",
                             "import sys; from nx_gsm.cli import main; sys.exit(main())"]
    # Python's bytecode kept in the cache folder: a pip install compiles it, while the card's
    # kit installs without it into folders Python does not write (about 1 s of each process)
    env = {**_env(runs["cache"]), "PYTHONPYCACHEPREFIX": str(runs["cache"] / "pycache")}
    lines = []
    for engine in ("auto", "gmatch"):
        times, out = [], None
        for _ in range(4):
            t = time.perf_counter()
            proc = subprocess.run([*cmd, "match", str(data), str(query), "--label", "label",
                                   "--count", "--engine", engine], env=env,
                                  capture_output=True, text=True, timeout=300)
            times.append(time.perf_counter() - t)
            assert proc.returncode == 0, proc.stderr
            assert "compiling" not in proc.stderr, proc.stderr
            out = proc.stdout.strip()
        lines.append(f"fresh `nx-gsm match {data.name} {query.name} --label label --count "
                     f"--engine {engine}` after warmup: median {statistics.median(times[1:]):.2f}"
                     f" s of {', '.join(f'{x:.2f}' for x in times)} s (the first writes the "
                     f"bytecode); count {out}")
    print("\n" + "\n".join(lines))
