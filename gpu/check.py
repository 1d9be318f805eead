"""The GPU check, on the card's machine: ``python3 -m gpu.check`` from the repository root.

Phases (``--phases``, run in this order; ``--budget`` seconds in all, later phases shrink to fit):

* ``warmup``: JIT of the gmatch kernels, a small count's fixed costs, kernel resources, then
  ``nx_gsm.warmup()`` (every kernel into the disk cache the test processes load from);
* ``tests``: ``pytest -m gpu`` (``tests/test_card_*.py`` but the conformance and the kernel
  cache files) as
  ``--tests-jobs`` parallel processes, each a share of the tests (``--shard``, whole files
  together) writing its outcomes as they happen (``--outcomes``; both in ``tests/conftest.py``):
  a process past the phase's time is killed and named with the test it was in;
  ``--tests-part P/Q`` runs the P-th of Q parts (the tests cut into ``jobs * Q`` shares), so
  tests that take longer than one device call run over Q calls;
* ``conformance``: ``pytest -m gpu tests/test_card_conformance.py``, the conformance suite on
  every GPU engine and gmatch's device paths, the same way;
* ``cache``: ``tests/test_card_kernel_cache.py`` in one process (``--cache-timeout``): child
  processes over an empty cache folder compile every kernel, then a second one and one after
  ``nx-gsm warmup`` must compile none; ``kernel_cache`` holds the outcomes and the figures the
  tests print (a fresh ``nx-gsm match`` process's wall time after warmup);
* ``yeast``, ``bench``, ``engines``, ``streaming``, ``scaling``, ``sanitize``: the benchmark
  phases of ``benchmarks/gpu_suites.py`` (its docstring gives their protocol);
* ``egsm``: EGSM against our API on the same queries (``benchmarks.egsm.vs_egsm``; the sets
  share the time left, less the sanitizer's), as ``vs_egsm``; ``--egsm-engines gmatch,auto``
  adds ``vs_egsm[auto]``, the engine a call without ``engine=`` runs.

The lead's full protocol::

    python3 -m gpu.check --budget 520 --tests-timeout 110 --phases \\
        warmup,tests,conformance,yeast,bench --cpu-timeout 10 --gpu-limit 5 \\
        --vf2-queries screened --out $OUT

Writes ``$OUT/gpu_check.json`` after every phase: commit, date, device, versions, each phase's
time and error, ``tests`` (passed, failed, errors, skipped, failures, per file and per process),
``conformance`` (per engine), ``yeast_gmatch``, ``benchmarks`` (per suite: ratios, matches per
second), ``benchmark_rows``, ``engines`` (per engine: tests, conformance and yeast counts);
then prints a short table. Datasets: ``$NX_GSM_DATASETS`` or ``.gpudata/``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import subprocess
import sys
import time
import traceback
from pathlib import Path

from benchmarks import gpu_suites as suites
from gpu.card_tests import parse_part, phase_cache, phase_conformance, phase_tests

ROOT = Path(__file__).resolve().parents[1]
GPU_ENGINES = ("gmatch", "gsi", "geneva")
PHASES = ("warmup", "tests", "conformance", "cache", "yeast", "bench", "engines", "streaming",
          "scaling", "egsm", "sanitize")


def _log(*a):
    print(*a, flush=True)


def _commit():
    if os.environ.get("GSM_COMMIT"):
        return os.environ["GSM_COMMIT"]
    try:
        return subprocess.check_output(["git", "rev-parse", "HEAD"], cwd=ROOT, text=True,
                                       stderr=subprocess.DEVNULL).strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def phase_egsm(rec, queries, timeout, budget=None, engines=("gmatch",)):
    """EGSM against our API call on the same queries, where its binary is built, once per
    engine of ours (``engines``; the first's result is ``vs_egsm``, another's
    ``vs_egsm[NAME]``: ``auto`` is what a call without ``engine=`` runs); they share
    ``budget`` seconds."""
    from benchmarks import egsm
    from benchmarks.tools import Unavailable

    for i, engine in enumerate(engines):
        key = "vs_egsm" if i == 0 else f"vs_egsm[{engine}]"
        share = None if budget is None else budget / len(engines)
        try:
            rec[key] = egsm.vs_egsm(engine=engine, queries=queries, timeout=timeout,
                                    budget=share, root=suites.data_root(), log=_log)
        except Unavailable as exc:
            rec[key] = {"skipped": str(exc)}


def engine_counts(rec):
    """Per engine (and gmatch device path): the card tests', conformance and yeast counts (the
    published yeast counts of the ``yeast`` phase are gmatch's alone)."""
    out = {}
    t, conf = rec.get("tests") or {}, rec.get("conformance") or {}
    for eng in [*GPU_ENGINES, "gmatch[gpu-bfs]", "gmatch[dfs]", "gmatch[chained]"]:
        if eng not in conf and eng != "gmatch":
            continue
        c = conf.get(eng) or {}
        y = (rec.get("yeast_gmatch") or {}) if eng == "gmatch" else {}
        out[eng] = {
            "tests_passed": t.get("passed"),
            "tests_failed": (t.get("failed") or 0) + (t.get("errors") or 0),
            "conformance_passed": c.get("passed"), "conformance_failed": c.get("failed"),
            "conformance_yeast_matched": c.get("yeast_matched"),
            "conformance_yeast_checked": c.get("yeast_checked"),
            "yeast_published_matched": y.get("matched"),
            "yeast_published_checked": y.get("checked"),
        }
    return out


def new_record():
    from importlib.metadata import PackageNotFoundError, version

    versions = {"python": platform.python_version()}
    for key, pkg in (("numpy", "numpy"), ("numba", "numba"), ("networkx", "networkx"),
                     ("numba_cuda", "numba-cuda"), ("cupy", "cupy-cuda13x"),
                     ("cupy", "cupy-cuda12x")):
        try:
            versions[key] = version(pkg)
        except PackageNotFoundError:
            pass
    try:
        import cupy

        versions["cuda_runtime"] = cupy.cuda.runtime.runtimeGetVersion()
        versions["driver"] = cupy.cuda.runtime.driverGetVersion()
    except Exception:  # noqa: BLE001 - no CuPy or no driver: the record says so by omission
        pass
    return {"schema": "nx-gsm-gpu-check/2", "commit": _commit(),
            "dirty": os.environ.get("GSM_DIRTY"),
            "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "host": platform.node(), "versions": versions, "phases": {}}


def _write(rec, out_dir):
    # rewritten after every phase: a write that fails half-way must not cost the last good record
    from nx_gsm.interop.atomic import atomic_open

    path = Path(out_dir) / "gpu_check.json"
    with atomic_open(path, "w", encoding="utf-8") as fh:
        json.dump(rec, fh, indent=1, default=str)
    return path


def plan(args, phases, left):
    """(phase, callable) in order; each callable reads the time left when its phase starts."""
    later = {"engines", "streaming", "scaling", "egsm", "sanitize"} & set(phases)
    # the tests a share of what is left, so the later phases run too; all of it when alone
    share = 0.3 if set(phases) - {"warmup", "tests"} else 1.0
    vf2 = suites.vf2_queries(args.vf2_queries)
    engines = args.conformance_engines.split(",") if args.conformance_engines else None
    out = args.out
    return [
        ("warmup", lambda rec: suites.warmup(rec, _log)),
        ("tests", lambda rec: phase_tests(
            rec, min(args.tests_timeout, max(30.0, left() * share)), out, args.tests_jobs,
            args.gamma_cases, _log, args.tests_part)),
        ("conformance", lambda rec: phase_conformance(
            rec, min(args.conformance_timeout, max(30.0, left() * 0.5)), out, args.tests_jobs,
            engines, args.conformance_cases, args.full_conformance, _log)),
        ("cache", lambda rec: phase_cache(rec, min(args.cache_timeout, max(60.0, left() - 30.0)),
                                          out, _log, args.signatures_timeout)),
        ("yeast", lambda rec: suites.yeast(rec, min(args.yeast_budget, max(10.0, left() * 0.2)),
                                           args.yeast_max_count, {4, 8, 16}, _log)),
        # time kept for the phases after the bench, when any of them runs
        ("bench", lambda rec: suites.bench(
            rec, max(20.0, left() - (15.0 + 3 * args.sanitize_timeout if later else 5.0)),
            args.per_group, args.cpu_timeout, args.vf2_timeout, args.gpu_limit,
            args.suites.split(","), vf2, _log)),
        ("engines", lambda rec: suites.engines(
            rec, min(args.engines_budget, max(20.0, left() - 60.0)), args.engines_per_group,
            args.engines_cap, args.engines_sets.split(","), _log)),
        ("streaming", lambda rec: suites.streaming(rec, min(240.0, max(30.0, left() - 30.0)),
                                                   out, _log)),
        ("scaling", lambda rec: suites.scaling(rec, min(240.0, max(30.0, left() - 30.0)), out,
                                               args.scaling_queries, _log)),
        ("egsm", lambda rec: phase_egsm(
            rec, args.egsm_queries, args.egsm_timeout,
            max(30.0, left() - (10.0 + args.sanitize_timeout if "sanitize" in phases else 5.0)),
            args.egsm_engines.split(","))),
        # last: a sanitizer run is slow, and nothing it leaves behind may touch the timings
        ("sanitize", lambda rec: suites.sanitize(rec, args.sanitize_timeout, _log)),
    ]


def run_phases(rec, steps, phases, out_dir, left):
    for name, fn in steps:
        if name not in phases or (name != "warmup" and rec.get("device_reason") is not None):
            continue
        t = time.perf_counter()
        _log(f"=== {name} (left {left():.0f}s)")
        try:
            fn(rec)
            rec["phases"][name] = {"ok": True, "seconds": time.perf_counter() - t}
        except Exception as exc:  # noqa: BLE001 - a phase's failure is recorded, the rest run
            rec["phases"][name] = {"ok": False, "seconds": time.perf_counter() - t,
                                   "error": f"{type(exc).__name__}: {exc}",
                                   "traceback": traceback.format_exc()[-4000:]}
            _log(rec["phases"][name]["traceback"])
        _write(rec, out_dir)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(prog="python -m gpu.check", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    a = ap.add_argument
    a("--budget", type=float, default=540.0, help="seconds for all phases")
    a("--phases", default=",".join(PHASES), help="comma-separated, from: " + ", ".join(PHASES))
    a("--out", default=os.environ.get("OUT", str(ROOT / "gpu" / "results")))
    a("--tests-timeout", type=float, default=150.0)
    a("--tests-jobs", type=int, default=8, help="parallel pytest processes (tests, conformance)")
    a("--tests-part", type=parse_part, default=(0, 1), metavar="P/Q",
      help="the P-th of Q parts of the tests phase (one device call each; from 0)")
    a("--cache-timeout", type=float, default=360.0, help="the kernel cache's tests (cache)")
    a("--signatures-timeout", type=float, default=180.0,
      help="gpu.signatures after a failed cache test (0: not run)")
    a("--gamma-cases", type=int, default=200, help="GAMMA's random cases in the tests phase")
    a("--conformance-timeout", type=float, default=240.0)
    a("--conformance-cases", type=int, default=None)
    a("--full-conformance", action="store_true")
    a("--conformance-engines", default=None, help="comma-separated subset of gmatch,gsi,geneva,"
      "gmatch[gpu-bfs],gmatch[dfs],gmatch[chained] (default all)")
    a("--yeast-budget", type=float, default=60.0)
    a("--yeast-max-count", type=int, default=10**9)
    a("--per-group", type=int, default=20)
    a("--cpu-timeout", type=float, default=20.0)
    a("--vf2-timeout", type=float, default=10.0)
    a("--gpu-limit", type=float, default=20.0)
    a("--suites", default=",".join(s[0] for s in suites.SUITES))
    a("--vf2-queries", default=None, help="queries of the VF2 suites, [dataset:]query (e.g. "
      "dense_8_9,human:sparse_8_3), or 'screened': every query the committed VF2 screens saw "
      "finish (benchmarks/vf2_screen.py)")
    a("--engines-sets", default="yeast-4,yeast-8,human-4,human-8,wordnet-4,wordnet-8,github,"
      "enron")
    a("--engines-per-group", type=int, default=8)
    a("--engines-cap", type=float, default=10.0)
    a("--engines-budget", type=float, default=240.0)
    a("--scaling-queries", type=int, default=20)
    a("--egsm-queries", type=int, default=10, help="queries per EGSM set")
    a("--egsm-timeout", type=float, default=20.0)
    a("--egsm-engines", default="gmatch", help="our engines against EGSM, comma-separated "
      "(e.g. gmatch,auto)")
    a("--sanitize-timeout", type=float, default=45.0)
    args = ap.parse_args(argv)
    unknown = set(args.phases.split(",")) - set(PHASES)
    if unknown:
        ap.error(f"unknown phases: {', '.join(sorted(unknown))}")
    return args


def main(argv=None):
    args = parse_args(argv)
    os.environ.setdefault("NX_GSM_DATASETS", str(suites.data_root()))
    Path(args.out).mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    deadline = t0 + args.budget

    def left():
        return deadline - time.perf_counter()

    rec = new_record()
    phases = args.phases.split(",")
    run_phases(rec, plan(args, phases, left), phases, args.out, left)
    rec["engines"] = engine_counts(rec)
    rec["total_seconds"] = time.perf_counter() - t0
    path = _write(rec, args.out)
    _log(f"\nrecord: {path}")
    _log(f"device: {(rec.get('device') or {}).get('name')}  commit: {rec['commit']}  "
         f"total {rec['total_seconds']:.0f}s")
    for name, ph in rec["phases"].items():
        _log(f"  phase {name:12s} {'ok ' if ph['ok'] else 'ERR'} {ph['seconds']:7.1f}s "
             f"{ph.get('error', '')[:100]}")
    for eng, c in rec["engines"].items():
        _log(f"  {eng}: {c}")
    for line in suites.summary_lines(rec):
        _log(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
