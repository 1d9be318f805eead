"""The CUDA-simulator cases: each case of a ``tests/gpu_sim_*_cases.py`` script is a pytest test.

The simulator must be switched on before numba.cuda is imported, so the cases run in a child
process with ``NUMBA_ENABLE_CUDASIM=1``. A script registers its cases with :func:`sim_case`
and ends with ``run_cases()``; a case fails by raising (``assert``, ``sys.exit(1)``).

* :func:`sim_cases` lists a script's cases by reading its source (nothing is imported, so
  collecting them needs neither numba.cuda nor the simulator), one ``pytest.param`` per case.
* A case belongs to a group (``group=``, ``"main"`` by default): the first test of a group runs
  the whole group in one child process, in the script's order, and each case's outcome (its
  traceback and output) comes back in a JSON-lines file; the group's other tests read theirs.
  Cases of one group may share state (a random stream drawn in order), which is why a group
  always runs whole, and why one group is one process: the simulator's start-up is paid once.

By hand: ``NUMBA_ENABLE_CUDASIM=1 python tests/gpu_sim_gsi_cases.py [--group G] [--case ID]``
prints each case's output and ``SIM OK`` when every case it ran passed.
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import os
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
# seconds one group's process may take (CI's 2-core machine; the longest groups take ~13 min)
GROUP_TIMEOUT = 900
OUTPUT_TAIL = 20_000  # characters of a case's output kept in its record


# ------------------------------------------------------------------------------------------------
# in the child: registration and running
# ------------------------------------------------------------------------------------------------
_REGISTRY: list[tuple[str, str, object, tuple]] = []  # (id, group, function, args)


def case_id(name, param=None):
    return name if param is None else f"{name}-{param}"


def sim_case(fn=None, *, params=None, group="main"):
    """Register ``fn`` as a case (``fn()``), or one case per parameter (``fn(p)``) with
    ``params``. ``group`` may name the parameter, ``"{param}"``, to give each its own process.
    ``params`` is a literal or a ``range(...)`` of literals: the parent reads it from the source."""
    def register(f):
        for p in ([None] if params is None else list(params)):
            _REGISTRY.append((case_id(f.__name__, p), group.format(param=p), f,
                              () if p is None else (p,)))
        return f

    return register if fn is None else register(fn)


class _Tee:
    """Writes to the process's stream and keeps a copy for the case's record."""

    def __init__(self, stream, copy):
        self.stream, self.copy = stream, copy

    def write(self, s):
        self.copy.write(s)
        return self.stream.write(s)

    def flush(self):
        self.stream.flush()

    def __getattr__(self, name):  # encoding, isatty, fileno: the stream's
        return getattr(self.stream, name)


def _run_one(cid, fn, args):
    buf = io.StringIO()
    out, err = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _Tee(out, buf), _Tee(err, buf)
    t = time.perf_counter()
    error = None
    try:
        fn(*args)
    except SystemExit as exc:
        if exc.code not in (None, 0):
            error = traceback.format_exc()
    except Exception:  # noqa: BLE001 - every failure is the case's outcome
        error = traceback.format_exc()
    finally:
        sys.stdout, sys.stderr = out, err
    text = buf.getvalue()
    return {"case": cid, "ok": error is None, "seconds": round(time.perf_counter() - t, 3),
            "error": error, "output": text[-OUTPUT_TAIL:]}


def run_cases(argv=None):
    """The script's entry point: run its cases (one group, chosen ones or all) in order."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--group", help="run this group's cases")
    ap.add_argument("--case", action="append", help="run this case (repeatable)")
    ap.add_argument("--results", help="append one JSON line per case to this file")
    ap.add_argument("--list", action="store_true", help="print the case ids and groups")
    args = ap.parse_args(argv)
    if args.list:
        for cid, group, _, _ in _REGISTRY:
            print(cid, group)
        return 0
    todo = [c for c in _REGISTRY if (args.group is None or c[1] == args.group)
            and (not args.case or c[0] in args.case)]
    if not todo:
        print("no case selected", file=sys.stderr)
        return 2
    failed = []
    for cid, _, fn, fargs in todo:
        print(f"--- case {cid}", flush=True)
        if args.results:
            _append(args.results, {"case": cid, "started": True})
        rec = _run_one(cid, fn, fargs)
        if args.results:
            _append(args.results, rec)
        if not rec["ok"]:
            print(rec["error"], flush=True)
            failed.append(cid)
    if failed:
        print(f"SIM FAILED: {len(failed)} of {len(todo)} cases: {', '.join(failed)}", flush=True)
        return 1
    print(f"SIM OK ({len(todo)} cases)", flush=True)
    return 0


def _append(path, rec):
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(rec) + "\n")


# ------------------------------------------------------------------------------------------------
# in pytest: listing and checking
# ------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class SimCase:
    script: str
    id: str
    group: str

    def __str__(self):
        return self.id

    def check(self):
        """Run this case's group (once per pytest process) and fail with the case's traceback
        and output if it failed."""
        import importlib.util

        import pytest

        if importlib.util.find_spec("numba.cuda") is None:
            pytest.skip("numba.cuda is not installed")
        run = _group_run(self.script, self.group)
        rec = run["results"].get(self.id)
        if rec is not None and rec.get("ok"):
            return
        if rec is not None and "error" in rec:
            out = rec["output"][-5000:]
            pytest.fail(f"case {self.id} of {self.script} failed:\n{rec['error']}"
                        + (f"\n--- its output (tail) ---\n{out}" if out.strip() else ""),
                        pytrace=False)
        if rec is not None:  # started, never finished: the process died or ran out of time
            why = (f"ran past {GROUP_TIMEOUT} s" if run["timed_out"]
                   else f"exited with status {run['rc']}")
            pytest.fail(f"case {self.id} of {self.script}: the group's process {why} in this "
                        f"case\n--- process output (tail) ---\n{run['output'][-5000:]}",
                        pytrace=False)
        pytest.fail(f"case {self.id} of {self.script} did not run (group {self.group!r}: "
                    f"last case started {run['last']!r}, status {run['rc']}, timed out "
                    f"{run['timed_out']})\n--- process output (tail) ---\n"
                    f"{run['output'][-5000:]}", pytrace=False)


def _literal(node):
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
            and node.func.id == "range" and not node.keywords):
        return list(range(*(ast.literal_eval(a) for a in node.args)))
    return ast.literal_eval(node)


def list_cases(script):
    """The :class:`SimCase` objects of ``script`` (a file name in tests/, or a path), in the
    script's order, read from its ``@sim_case`` decorators."""
    tree = ast.parse((HERE / script).read_text(encoding="utf-8"), filename=script)
    cases = []
    for node in tree.body:
        if not isinstance(node, ast.FunctionDef):
            continue
        # decorators apply bottom-up: the one nearest the function registers first
        for dec in reversed(node.decorator_list):
            call = dec if isinstance(dec, ast.Call) else None
            name = (call.func if call else dec)
            if not (isinstance(name, ast.Name) and name.id == "sim_case"):
                continue
            kw = {k.arg: _literal(k.value) for k in (call.keywords if call else [])}
            params = kw.get("params")
            group = kw.get("group", "main")
            for p in ([None] if params is None else params):
                cases.append(SimCase(script, case_id(node.name, p), group.format(param=p)))
    if not cases:
        raise ValueError(f"{script} registers no @sim_case")
    if len({c.id for c in cases}) != len(cases):
        raise ValueError(f"{script}: two cases have one id")
    return cases


def sim_cases(script):
    """``pytest.param`` per case of ``script``, its id the case's."""
    import pytest

    return [pytest.param(c, id=c.id) for c in list_cases(script)]


_RUNS: dict[tuple[str, str], dict] = {}


def _group_run(script, group):
    key = (script, group)
    if key not in _RUNS:
        _RUNS[key] = _run_group(script, group)
    return _RUNS[key]


def _run_group(script, group):
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", NX_GSM_SIM_TIMEOUT="300")
    # the package from this checkout, and sim_runner for the script
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), str(HERE), env.get("PYTHONPATH", "")])
    fd, results = tempfile.mkstemp(prefix="sim-", suffix=".jsonl")
    os.close(fd)
    cmd = [sys.executable, str(HERE / script), "--group", group, "--results", results]
    timed_out = False
    try:
        proc = subprocess.run(cmd, env=env, capture_output=True, text=True,
                              timeout=GROUP_TIMEOUT)
        rc, output = proc.returncode, proc.stdout + proc.stderr
    except subprocess.TimeoutExpired as exc:
        timed_out, rc = True, None
        output = "".join(x.decode(errors="replace") if isinstance(x, bytes) else (x or "")
                         for x in (exc.stdout, exc.stderr))
    try:
        lines = Path(results).read_text(encoding="utf-8").splitlines()
    finally:
        os.unlink(results)
    recs, last = {}, None
    for line in lines:
        rec = json.loads(line)
        if rec.get("started"):
            last = rec["case"]
        recs[rec["case"]] = rec
    if rc not in (0, None) and recs and all(r.get("ok") for r in recs.values()):
        # every case passed, yet the process failed (at exit, say): its last case carries it
        recs[last] = {"case": last, "started": True}
    return {"results": recs, "rc": rc, "timed_out": timed_out, "output": output, "last": last}
