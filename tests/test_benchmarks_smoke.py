"""Smoke tests of the benchmark harness (``benchmarks/``): seconds, no datasets, no extras needed.

Runs ``python -m benchmarks run --suite tiny --quick`` in a subprocess (as CI would) with the CPU
engine, NetworkX VF2 and two plug-in fake peers written to a temporary module: one that returns a
wrong count (the cross-check must flag it and the exit status must be 1) and one that hangs on one
query (the worker must be killed at the timeout, the query reported as a timeout, and the worker
restarted for the next query). Also checks the ratio statistics' timeout handling on a hand-made
record. No performance target is asserted here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

FAKES = '''
import time
from benchmarks.tools import NxVF2


class WrongCount(NxVF2):
    """NetworkX VF2 plus one: must be caught by the count cross-check."""

    name = "wrong-count"

    def count(self, q, *, limit, induced, deadline):
        return super().count(q, limit=limit, induced=induced, deadline=deadline) + 1


class Hangs(NxVF2):
    """Correct, except that it never returns on the triangle (cannot be interrupted)."""

    name = "hangs"

    def count(self, q, *, limit, induced, deadline):
        if q.number_of_edges() == 3 and q.number_of_nodes() == 3:
            time.sleep(600)
        return super().count(q, limit=limit, induced=induced, deadline=deadline)
'''


def _run(tmp_path, *args):
    (tmp_path / "fakepeers.py").write_text(textwrap.dedent(FAKES))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), str(tmp_path), env.get("PYTHONPATH", "")])
    out = tmp_path / "record.json"
    proc = subprocess.run(
        [sys.executable, "-m", "benchmarks", "run", "--suite", "tiny", "--quick",
         "--no-progress", "--out", str(out), "--markdown", str(tmp_path / "report.md"), *args],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=300,
    )
    record = json.loads(out.read_text()) if out.exists() else None
    return proc, record


def test_record_structure_and_agreement(tmp_path):
    proc, rec = _run(tmp_path, "--engines", "cpu", "cpu1", "--peers", "nx-vf2", "no-such-engine",
                     "--timeout", "20", "--figures", str(tmp_path / "figures"))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert rec["schema"] == "nx-gsm-bench/1"
    for key in ("cpu_model", "cpu_count", "python", "versions", "git_commit", "date"):
        assert key in rec["machine"]
    for pkg in ("numpy", "numba", "networkx"):
        assert rec["machine"]["versions"][pkg]
    assert rec["config"]["protocol"] == "first100k" and rec["config"]["limit"] == 100_000
    assert rec["suites"]["tiny"]["status"] == "ok"
    # an unknown engine name is skipped with a visible reason, not fatal
    assert rec["tools"]["no-such-engine"]["status"] == "unavailable"
    assert "no-such-engine" in (tmp_path / "report.md").read_text()
    tools = ["cpu", "cpu1", "nx-vf2"]
    nq = rec["suites"]["tiny"]["queries"]
    assert nq >= 3
    assert len(rec["rows"]) == nq * len(tools)
    for row in rec["rows"]:
        assert row["tool"] in tools
        assert row["status"] == "ok", row
        assert isinstance(row["count"], int) and row["seconds"] >= 0
        assert 1 <= len(row["seconds_all"]) <= 3 and row["seconds"] == min(row["seconds_all"])
        for key in ("suite", "query", "limit", "induced", "timeout", "pattern_nodes"):
            assert key in row
    assert not rec["mismatches"]
    assert all(c["agree"] and len(c["counts"]) == 3 for c in rec["checks"])
    # JIT / first-call time is reported apart from warm time
    load = rec["tools"]["cpu"]["suites"]["tiny"]["loads"][0]
    assert load["first_call_seconds"] > 0 and load["warm_call_seconds"] > 0
    pairs = {(r["engine"], r["baseline"]) for r in rec["summary"]["ratios"]}
    assert {("cpu", "nx-vf2"), ("cpu1", "nx-vf2"), ("cpu", "cpu1")} <= pairs
    # --figures: the report across the run, with a scatter per engine
    assert "scatter-cpu.png" in (tmp_path / "figures" / "report.md").read_text()
    assert (tmp_path / "figures" / "scatter-cpu1.png").stat().st_size > 0


def test_mismatch_and_timeout_are_reported(tmp_path):
    proc, rec = _run(tmp_path, "--engines", "cpu", "--peers", "nx-vf2", "fakepeers:WrongCount",
                     "fakepeers:Hangs", "--timeout", "1")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "MISMATCH" in proc.stdout and "MISMATCH" in proc.stderr
    nq = rec["suites"]["tiny"]["queries"]
    # every query disagrees (wrong-count is off by one everywhere) and the rows are flagged
    assert len(rec["mismatches"]) == nq
    for c in rec["mismatches"]:
        assert c["counts"]["wrong-count"] == c["counts"]["cpu"] + 1
    assert all(r["mismatch"] for r in rec["rows"] if r["tool"] == "wrong-count")
    # the hanging query is a timeout (worker killed), not dropped; the next query still runs
    hangs = [r for r in rec["rows"] if r["tool"] == "hangs"]
    assert len(hangs) == nq
    assert [r["status"] for r in hangs].count("timeout") == 1
    assert sum(r["status"] == "ok" for r in hangs) == nq - 1
    assert rec["tools"]["hangs"]["suites"]["tiny"]["restarts"] == 1
    assert "TO (>1 s)" in (tmp_path / "report.md").read_text()


def test_ratio_statistics_keep_timeouts():
    from benchmarks.report import markdown, ratio_stats

    def row(q, tool, status, seconds):
        return {"suite": "s", "query": q, "tool": tool, "status": status, "seconds": seconds,
                "count": 1 if status == "ok" else None, "timeout": 10.0}

    rows = [row("a", "e", "ok", 0.1), row("a", "p", "ok", 1.0),        # 10x
            row("b", "e", "ok", 0.5), row("b", "p", "timeout", None),  # >= 20x (lower bound)
            row("c", "e", "timeout", None), row("c", "p", "ok", 5.0),  # <= 0.5x (upper bound)
            row("d", "e", "ok", 0.2), row("d", "p", "error", None)]    # excluded
    rec = {"rows": rows}
    st = ratio_stats(rec, "e", "p")
    assert st["n"] == 3 and st["excluded"] == 1
    assert (st["lower_bounds"], st["upper_bounds"], st["both_timed_out"]) == (1, 1, 0)
    assert st["geomean"] == pytest.approx((10 * 20 * 0.5) ** (1 / 3))
    assert st["worst_over_10ms"] == pytest.approx(0.5)
    assert st["worst_over_10ms_query"] == "s/c"
    assert st["n_baseline_over_1s"] == 2  # b (timeout at 10 s) and c (5 s)
    full = {"rows": rows, "tools": {"e": {"kind": "engine", "status": "ok"},
                                    "p": {"kind": "peer", "status": "ok"}},
            "suites": {"s": {"status": "ok"}}, "mismatches": [], "notes": [],
            "checks": [{"suite": "s", "query": q, "counts": {}, "agree": True, "count": 1}
                       for q in "abcd"],
            "config": {"suites": ["s"], "protocol": "all", "limit": None, "induced": False,
                       "timeout": 10.0},
            "machine": {"cpu_model": "x", "cpus_usable": 1, "cpu_count": 1,
                        "numba_num_threads": 1, "python": "3", "versions": {},
                        "git_commit": "abc", "date": "today"}}
    text = markdown(full)
    assert "TO (>10 s)" in text and "| s | e | p | 3 |" in text


# -- report: figures and Markdown across records ------------------------------------------------
def synthetic_record():
    rows = []
    tools = {"cpu": "engine", "cpu1": "engine", "nx-vf2": "peer", "rustworkx": "peer"}
    for i in range(12):
        base = 0.001 * (1.7 ** i)
        times = {"cpu": base / 20, "cpu1": base / 12, "nx-vf2": base, "rustworkx": base / 3}
        for t, s in times.items():
            status = "timeout" if (t == "nx-vf2" and i == 11) else "ok"
            rows.append({"suite": "syn", "query": f"q{i}", "tool": t, "kind": tools[t],
                         "status": status, "seconds": None if status == "timeout" else s,
                         "count": 10 if status == "ok" else None, "timeout": 0.1,
                         "limit": 100000, "induced": False, "peak_rss_bytes": 2**20 * (i + 5)})
    return {
        "schema": "nx-gsm-bench/1",
        "machine": {"cpu_model": "test CPU", "cpus_usable": 2, "cpu_count": 2,
                    "numba_num_threads": 2, "python": "3.12", "versions": {"numpy": "2"},
                    "git_commit": "0" * 40, "date": "2026-01-01"},
        "config": {"suites": ["syn"], "protocol": "first100k", "limit": 100000,
                   "induced": False, "timeout": 0.1},
        "tools": {t: {"kind": k, "status": "ok"} for t, k in tools.items()},
        "suites": {"syn": {"status": "ok"}},
        "rows": rows, "checks": [], "mismatches": [],
    }


def _report(capsys, *argv):
    from benchmarks.cli import main

    rc = main(["report", *map(str, argv)])
    return rc, capsys.readouterr()


def test_report_writes_markdown_and_pngs(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    rec = tmp_path / "rec.json"
    rec.write_text(json.dumps(synthetic_record()))
    out = tmp_path / "rep"
    rc, res = _report(capsys, rec, "--out", out)
    assert rc == 0, res.err
    pngs = sorted(f.name for f in out.glob("*.png"))
    assert pngs == ["memory.png", "scatter-cpu.png", "scatter-cpu1.png", "speedup-cpu.png",
                    "speedup-cpu1.png"]
    for f in out.glob("*.png"):
        assert f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f.stat().st_size > 5000
    md = (out / "report.md").read_text()
    assert "![" in md and "scatter-cpu.png" in md
    assert "| cpu | nx-vf2 | 12 |" in md  # the timeout counts, at the timeout
    # --markdown elsewhere: image links relative to it
    md2 = tmp_path / "docs" / "page.md"
    rc, res = _report(capsys, rec, "--out", out, "--markdown", md2)
    assert rc == 0, res.err
    assert "](../rep/scatter-cpu.png)" in md2.read_text()


def test_report_without_out_prints_each_records_tables(capsys, tmp_path):
    rec = synthetic_record()
    rec["mismatches"] = [{"suite": "syn", "query": "q0", "counts": {"cpu": 10, "nx-vf2": 11}}]
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    paths[0].write_text(json.dumps(synthetic_record()))
    paths[1].write_text(json.dumps(rec))
    rc, res = _report(capsys, *paths)
    assert rc == 1  # the second record holds a count mismatch
    assert res.out.count("## nx-gsm benchmark: syn") == 2


@pytest.mark.parametrize("text,needle", [("{", "not a JSON file"),
                                         ('{"rows": []}', "not an nx-gsm benchmark record")])
def test_report_bad_record_is_one_error_line(capsys, tmp_path, text, needle):
    bad = tmp_path / "bad.json"
    bad.write_text(text)
    rc, res = _report(capsys, bad, "--out", tmp_path / "rep")
    assert rc == 2 and res.out == ""
    lines = res.err.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0] and str(bad) in lines[0], res.err
    rc, res = _report(capsys, tmp_path / "missing.json")
    assert rc == 2 and "missing.json" in res.err


def test_run_figures_needs_a_record(capsys):
    from benchmarks.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["run", "--suite", "tiny", "--figures", "somewhere"])
    assert exc.value.code == 2 and "--figures needs --out" in capsys.readouterr().err


def test_sunluo_peer_writes_graph_files_and_says_when_missing(tmp_path, monkeypatch):
    """The study-code peer's input files and its absence (its binary is never in the repo)."""
    import networkx as nx

    from benchmarks.sunluo import SunLuoCpp, write_graph_file
    from benchmarks.tools import Unavailable

    G = nx.Graph([(0, 1), (1, 2)])
    nx.set_node_attributes(G, {0: "a", 1: "b", 2: "a"}, "label")
    ids = {}
    write_graph_file(G, tmp_path / "g.graph", "label", ids)
    assert (tmp_path / "g.graph").read_text().split("\n") == [
        "t 3 2", "v 0 0 1", "v 1 1 2", "v 2 0 1", "e 0 1", "e 1 2", ""]
    assert ids == {"a": 0, "b": 1}
    monkeypatch.setenv("NX_GSM_SUNLUO_BIN", str(tmp_path / "missing"))
    with pytest.raises(Unavailable, match="peer not available"):
        SunLuoCpp().check()
