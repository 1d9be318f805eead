"""The GPU check's test phases: ``pytest -m gpu`` as parallel processes on the card's host.

The card has one GPU and the host many cores, and most of a card test's time is the host's
(VF2 and the CPU engine as oracles, JIT): ``--tests-jobs`` processes each run a share of the
selected tests (``--shard I/N``: each test file whole, so a process compiles only its engines'
kernels, and the tests marked ``gpu(spread=True)`` dealt one by one), and each appends its
outcomes to a JSON-lines file as they happen (``--outcomes``), so a process killed at the
phase's time still reports what it finished and names the test it was in. Both options are
``tests/conftest.py``'s.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CONFORMANCE = "tests/test_card_conformance.py"
# child processes that compile every kernel from an empty cache: minutes, so a phase of its own
KERNEL_CACHE = "tests/test_card_kernel_cache.py"
COUNTS = ("passed", "failed", "errors", "skipped")


def parse_part(text):
    """``"P/Q"`` as ``(P, Q)`` with ``0 <= P < Q`` (``--tests-part`` here, ``--shard`` in
    ``tests/conftest.py``)."""
    p, _, q = text.partition("/")
    try:
        part = int(p), int(q)
    except ValueError:
        part = None
    if part is None or not 0 <= part[0] < part[1]:
        raise argparse.ArgumentTypeError(f"not P/Q with 0 <= P < Q: {text!r}")
    return part


def read_outcomes(path):
    """(final outcome record per test id, the test started last and never finished)."""
    final, running = {}, None
    if not Path(path).exists():
        return final, running
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        rec = json.loads(line)
        if "start" in rec:
            running = rec["start"]
            continue
        old = final.get(rec["nodeid"])
        # a teardown error after a passed call makes the test an error
        if old is None or rec["outcome"] in ("failed", "error"):
            final[rec["nodeid"]] = rec
        if rec["nodeid"] == running:
            running = None
    return final, running


def run_pytest(name, args, jobs, timeout, out_dir, env=None, log=print, marker="gpu",
               part=(0, 1)):
    """``pytest -m MARKER ARGS`` as ``jobs`` parallel shares within ``timeout`` seconds; returns
    counts, failures, per-file counts, per-share status and each test's recorded properties.
    ``part=(p, q)``: the tests cut into ``jobs * q`` shares, of which this call runs every
    ``q``-th from ``p`` (the rest in the calls for the other parts)."""
    t0 = time.perf_counter()
    p, q = part
    total = jobs * q
    procs = []
    for i in range(p, total, q):
        outcomes = Path(out_dir) / f"{name}_{i}.jsonl"
        outcomes.unlink(missing_ok=True)
        out = open(Path(out_dir) / f"{name}_{i}.log", "w", encoding="utf-8")  # noqa: SIM115
        cmd = [sys.executable, "-m", "pytest", "-m", marker, "-q", "-rfEs", "-p",
               "no:cacheprovider", f"--shard={i}/{total}", f"--outcomes={outcomes}", *args]
        procs.append((subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                       env=dict(os.environ, **(env or {})),
                                       start_new_session=True), outcomes, out))
    while time.perf_counter() < t0 + timeout and any(p.poll() is None for p, _, _ in procs):
        time.sleep(0.5)
    res = {**dict.fromkeys(COUNTS, 0), "failures": [], "files": {}, "shards": {},
           "timed_out": [], "properties": {}}
    for i, (proc, outcomes, out) in zip(range(p, total, q), procs):
        rc = proc.poll()
        if rc is None:
            os.killpg(proc.pid, 9)
            proc.wait()
            rc = "timeout"
        out.close()
        final, running = read_outcomes(outcomes)
        res["shards"][i] = {"rc": rc, "tests": len(final), "running": running}
        if rc == "timeout":
            res["timed_out"].append(f"share {i} in {running}")
        elif rc not in (0, 1, 5):  # 5: nothing selected in this share
            res["failures"].append(f"share {i}: pytest exited with status {rc} ({out.name})")
        for nodeid, rec in final.items():
            key = {"error": "errors"}.get(rec["outcome"], rec["outcome"])
            res[key] = res.get(key, 0) + 1
            per = res["files"].setdefault(nodeid.split("::")[0], dict.fromkeys(COUNTS, 0))
            per[key] = per.get(key, 0) + 1
            if key in ("failed", "errors"):
                res["failures"].append(f"{nodeid}: {(rec.get('message') or '')[-300:]}")
            if rec.get("properties"):
                res["properties"][nodeid] = rec["properties"]
    res["rc"] = 0 if not res["failures"] and not res["timed_out"] else 1
    res["seconds"] = time.perf_counter() - t0
    log(f"{name}: " + ", ".join(f"{res[k]} {k}" for k in COUNTS)
        + f" in {res['seconds']:.0f}s; timed out: {res['timed_out'] or 'none'}")
    for f in res["failures"][:20]:
        log("  FAILED", f[:300])
    return res


def phase_tests(rec, timeout, out_dir, jobs, gamma_cases, log=print, part=(0, 1)):
    """The card tests but conformance and the kernel cache's: ``rec["tests"]``; with
    ``part=(p, q)`` the ``p``-th of ``q`` parts (``"part": "p/q"``), one device call each when
    all of them take longer than a call may run."""
    # GAMMA's random cases in as many blocks as shares (at least 20), dealt one by one
    env = {"GAMMA_CASES": str(gamma_cases), "GAMMA_BLOCKS": str(max(20, jobs * part[1]))}
    res = run_pytest("tests", ["tests", f"--ignore={CONFORMANCE}", f"--ignore={KERNEL_CACHE}"],
                     jobs, timeout, out_dir, env, log, part=part)
    res.pop("properties")
    res["failures"] = res["failures"][:50]
    rec["tests"] = {**res, "gamma_cases": gamma_cases, "part": f"{part[0]}/{part[1]}"}


def phase_cache(rec, timeout, out_dir, log=print, signatures_timeout=180.0):
    """The kernel cache's card tests (a second process and one after ``nx-gsm warmup`` compile
    nothing) in one process: ``rec["kernel_cache"]``, with the figures they print (first and
    second process, warmup, a fresh ``nx-gsm match`` process's wall time). Where a test fails,
    ``python -m gpu.signatures`` over a new cache folder then names the kernel signatures that
    warmup missed (``signatures``: its ``NEW`` and argument lines)."""
    res = run_pytest("cache", [KERNEL_CACHE, "-s"], 1, timeout, out_dir, log=log)
    res.pop("properties")
    text = (Path(out_dir) / "cache_0.log").read_text(encoding="utf-8", errors="replace")
    res["figures"] = [line.strip() for line in text.splitlines()
                      if line.lstrip().startswith(("kernel cache (card)", "fresh `nx-gsm match",
                                                   "compiled in the"))]
    if (res["failed"] or res["errors"]) and signatures_timeout > 0:
        res["signatures"] = missed_signatures(signatures_timeout, log)
    rec["kernel_cache"] = res


def missed_signatures(timeout, log=print):
    """``python -m gpu.signatures`` in a child over a new cache folder: its lines naming a new
    signature or a differing argument, and its last line (or why it did not finish)."""
    with tempfile.TemporaryDirectory(prefix="nx-gsm-signatures-") as cache:
        env = {k: v for k, v in os.environ.items() if k != "NUMBA_CACHE_DIR"}
        env["NX_GSM_CACHE_DIR"] = cache
        try:
            proc = subprocess.run([sys.executable, "-m", "gpu.signatures"], cwd=ROOT, env=env,
                                  capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            return [f"gpu.signatures did not finish within {timeout:.0f} s"]
    lines = proc.stdout.splitlines()
    keep = [line.rstrip() for line in lines if line.startswith(("NEW", "   "))][:60]
    keep.append(lines[-1] if lines else f"gpu.signatures exited with status {proc.returncode}: "
                f"{proc.stderr.strip()[-300:]}")
    for line in keep:
        log("  " + line)
    return keep


def phase_conformance(rec, timeout, out_dir, jobs, engines, cases, full, log=print):
    """The conformance suite on the GPU engines (all, or those labelled in ``engines``):
    ``rec["conformance"]``, per engine label, from what each test recorded."""
    # a test id per engine label: gmatch[gpu-bfs] -> gmatch-gpu-bfs
    node = f"{CONFORMANCE}::test_conformance_suite_on_gpu_engine"
    targets = ([f"{node}[{e.replace('[', '-').rstrip(']')}]" for e in engines] if engines
               else [CONFORMANCE])
    env = {"CONFORMANCE_FULL": "1" if full else "0"}
    if cases is not None:
        env["CONFORMANCE_CASES"] = str(cases)
    res = run_pytest("conformance", targets, jobs, timeout, out_dir, env, log)
    out = {}
    for props in res["properties"].values():
        if "conformance" in props:
            out[props["conformance"]["label"]] = props["conformance"]
    rec["conformance"] = out
    rec["conformance_run"] = {k: res[k] for k in (*COUNTS, "failures", "timed_out", "seconds")}
    for label, r in out.items():
        log(f"conformance[{label}]:", json.dumps(r, default=str)[:600])
