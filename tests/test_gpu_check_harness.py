"""The GPU check's host logic (``gpu/check.py``, ``gpu/card_tests.py``,
``benchmarks/gpu_suites.py``) on the CPU: the pytest shares and their outcomes (a share killed at
the phase's time still counted, and named with the test it was in), phase selection, the time
budget shared out, the record, the egsm hook, the bench's warm-up and its screened query
lists."""

import json
import sys
import types
from pathlib import Path
from types import SimpleNamespace

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import conftest  # noqa: E402

from benchmarks import gpu_suites as suites  # noqa: E402
from gpu import card_tests, check  # noqa: E402

# a conftest for made-up test files outside tests/: this repository's hooks and options
PLUGIN = f"""
import importlib.util
path = {str(ROOT / "tests" / "conftest.py")!r}
spec = importlib.util.spec_from_file_location("repo_conftest", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
globals().update({{k: v for k, v in vars(mod).items() if k.startswith("pytest_")}})
"""


def _item(nodeid, spread=False):
    mark = SimpleNamespace(kwargs={"spread": True} if spread else {})
    return SimpleNamespace(nodeid=nodeid, get_closest_marker=lambda name: mark)


def test_shares_keep_files_whole_and_deal_spread_tests_one_by_one():
    items = [_item("tests/test_b.py::t1"), _item("tests/test_a.py::t1"),
             _item("tests/test_b.py::t2"), _item("tests/test_c.py::s[0]", spread=True),
             _item("tests/test_c.py::s[1]", spread=True),
             _item("tests/test_c.py::s[2]", spread=True), _item("tests/test_c.py::plain")]
    ids = {id(it): it.nodeid for it in items}
    got = [[ids[x] for x in share] for share in conftest.shard(items, 2)]
    assert got == [["tests/test_a.py::t1", "tests/test_c.py::plain", "tests/test_c.py::s[1]"],
                   ["tests/test_b.py::t1", "tests/test_b.py::t2", "tests/test_c.py::s[0]",
                    "tests/test_c.py::s[2]"]]
    assert sorted(x for share in conftest.shard(items, 5) for x in share) == sorted(ids)
    # a share runs in that order: its files' tests, then its spread ones
    assert [it.nodeid for it in conftest.share(items, 0, 2)] == got[0]  # (s[1] came before plain)


def test_outcomes_read_back_with_the_test_a_killed_process_was_in(tmp_path):
    lines = [{"start": "a"}, {"nodeid": "a", "when": "call", "outcome": "passed"},
             {"nodeid": "a", "when": "teardown", "outcome": "error", "message": "leak"},
             {"start": "b"}, {"nodeid": "b", "when": "setup", "outcome": "skipped"},
             {"start": "c"}]
    path = tmp_path / "o.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    final, running = card_tests.read_outcomes(path)
    assert {k: v["outcome"] for k, v in final.items()} == {"a": "error", "b": "skipped"}
    assert running == "c"
    assert card_tests.read_outcomes(tmp_path / "none.jsonl") == ({}, None)


def test_shares_run_in_parallel_and_a_killed_share_still_counts(tmp_path):
    tests = tmp_path / "t"
    tests.mkdir()
    (tests / "conftest.py").write_text(PLUGIN)
    (tests / "test_ok.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    (tests / "test_bad.py").write_text("def test_c():\n    assert 1 == 2\n")
    (tests / "test_slow.py").write_text("import time\n\ndef test_d():\n    time.sleep(60)\n")
    (tests / "test_prop.py").write_text(
        "def test_e(record_property):\n    record_property('conformance', {'label': 'x'})\n")
    out = tmp_path / "out"
    out.mkdir()
    res = card_tests.run_pytest("t", [str(tests)], 2, 15.0, out, log=lambda *a: None,
                                marker="unit")
    # files in turn: share 0 test_bad, test_prop; share 1 test_ok, test_slow (killed in it)
    assert (res["passed"], res["failed"], res["errors"]) == (3, 1, 0)
    assert res["timed_out"] == ["share 1 in " + res["shards"][1]["running"]]
    assert res["shards"][1]["running"].endswith("test_slow.py::test_d")
    assert res["shards"][0]["rc"] == 1 and res["shards"][1]["rc"] == "timeout"
    assert res["rc"] == 1 and len(res["failures"]) == 1
    # (the node id's folder part depends on where pytest puts its rootdir: the checkout's
    # folder and tmp_path share only /tmp in a clone there)
    node, _, text = res["failures"][0].partition(": ")
    assert node.endswith("test_bad.py::test_c") and "1 == 2" in text
    assert [p["conformance"] for p in res["properties"].values()] == [{"label": "x"}]
    assert {Path(f).name: c["passed"] for f, c in res["files"].items()} == {
        "test_ok.py": 2, "test_bad.py": 0, "test_prop.py": 1}


def test_a_part_runs_every_qth_share_of_the_whole_cut(tmp_path):
    tests = tmp_path / "t"
    tests.mkdir()
    (tests / "conftest.py").write_text(PLUGIN)
    for name in "abcdef":
        (tests / f"test_{name}.py").write_text(f"def test_{name}():\n    pass\n")
    seen = []
    for p in range(3):
        out = tmp_path / f"out{p}"
        out.mkdir()
        res = card_tests.run_pytest("t", [str(tests)], 2, 60.0, out, log=lambda *a: None,
                                    marker="unit", part=(p, 3))
        assert sorted(res["shards"]) == [p, p + 3] and res["rc"] == 0
        seen += [Path(f).name for f in res["files"]]
    # six files in six shares over three calls: each file once
    assert sorted(seen) == [f"test_{n}.py" for n in "abcdef"]


@pytest.mark.parametrize("bad", ["2/2", "x/3", "1", "-1/2"])
def test_a_part_outside_its_count_is_refused(bad, capsys):
    with pytest.raises(SystemExit):
        check.parse_args(["--tests-part", bad])
    assert "--tests-part" in capsys.readouterr().err


def test_a_share_that_pytest_refuses_is_a_failure(tmp_path):
    res = card_tests.run_pytest("t", ["--no-such-option"], 1, 30.0, tmp_path,
                                log=lambda *a: None)
    assert res["rc"] == 1 and "exited with status 4" in res["failures"][0]


def _args(*extra):
    return check.parse_args(["--out", "unused", *extra])


def test_phases_run_in_order_only_when_chosen_and_not_without_a_device(tmp_path, monkeypatch):
    monkeypatch.setattr(check, "_write", lambda rec, out: None)
    ran = []
    steps = [(name, lambda rec, name=name: ran.append(name)) for name in check.PHASES]
    rec = {"phases": {}}
    check.run_phases(rec, steps, ["bench", "tests"], tmp_path, lambda: 100.0)
    assert ran == ["tests", "bench"] and list(rec["phases"]) == ["tests", "bench"]
    # a phase that raises is recorded and the next still runs
    steps[1] = ("tests", lambda rec: 1 / 0)
    rec = {"phases": {}}
    check.run_phases(rec, steps, ["tests", "bench"], tmp_path, lambda: 100.0)
    assert not rec["phases"]["tests"]["ok"] and "ZeroDivisionError" in rec["phases"]["tests"][
        "error"] and rec["phases"]["bench"]["ok"]
    # no device: the warm-up says why, and nothing after it runs
    ran.clear()
    steps[0] = ("warmup", lambda rec: rec.update(device_reason="no card"))
    check.run_phases({"phases": {}}, steps, list(check.PHASES), tmp_path, lambda: 100.0)
    assert ran == []
    with pytest.raises(SystemExit):
        check.parse_args(["--phases", "warmup,tsets"])


def test_the_budget_is_shared_out_as_the_phases_start(monkeypatch):
    got = {}
    monkeypatch.setattr(check, "phase_tests", lambda rec, t, *a: got.setdefault("tests", t))
    monkeypatch.setattr(check, "phase_conformance",
                        lambda rec, t, *a: got.setdefault("conformance", t))
    monkeypatch.setattr(suites, "yeast", lambda rec, t, *a: got.setdefault("yeast", t))
    monkeypatch.setattr(suites, "bench", lambda rec, t, *a: got.setdefault("bench", t))
    monkeypatch.setattr(suites, "engines", lambda rec, t, *a: got.setdefault("engines", t))
    # the lead's protocol: 520 s, tests at most 110 s, no phase after the bench
    args = _args("--tests-timeout", "110", "--cpu-timeout", "10", "--gpu-limit", "5")
    phases = ["warmup", "tests", "conformance", "yeast", "bench"]
    steps = dict(check.plan(args, phases, lambda: 400.0))
    for name in ("tests", "conformance", "yeast", "bench"):
        steps[name]({})
    assert got == {"tests": 110.0, "conformance": 200.0, "yeast": 60.0, "bench": 395.0}
    # little time left: every phase shrinks, to its floor; phases after the bench keep theirs
    got.clear()
    steps = dict(check.plan(args, phases + ["engines", "sanitize"], lambda: 50.0))
    for name in ("tests", "conformance", "yeast", "bench", "engines"):
        steps[name]({})
    assert got == {"tests": 30.0, "conformance": 30.0, "yeast": 10.0, "bench": 20.0,
                   "engines": 20.0}
    # the tests alone take all that is left, up to their timeout
    got.clear()
    dict(check.plan(_args("--tests-timeout", "500"), ["tests"], lambda: 300.0))["tests"]({})
    assert got == {"tests": 300.0}


def _fake_run(name, args, jobs, timeout, out_dir, env=None, log=print, marker="gpu",
              part=(0, 1)):
    """What ``run_pytest`` returns, per phase, as a card would."""
    base = {"passed": 0, "failed": 0, "errors": 0, "skipped": 0, "failures": [],
            "files": {}, "shards": {}, "timed_out": [], "properties": {}, "rc": 0,
            "seconds": 1.0}
    if name == "tests":
        assert env["GAMMA_CASES"] == "50" and env["GAMMA_BLOCKS"] == "24"
        assert args == ["tests", f"--ignore={card_tests.CONFORMANCE}",
                        f"--ignore={card_tests.KERNEL_CACHE}"] and jobs == 4
        assert part == (1, 6)
        return {**base, "passed": 400, "failed": 1, "skipped": 2, "rc": 1,
                "failures": ["tests/test_card_gsi.py::t: AssertionError"]}
    assert name == "conformance" and env["CONFORMANCE_FULL"] == "0"
    assert args == [f"{card_tests.CONFORMANCE}::test_conformance_suite_on_gpu_engine[gsi]",
                    f"{card_tests.CONFORMANCE}::test_conformance_suite_on_gpu_engine"
                    "[gmatch-dfs]"]
    props = {f"x[{lab}]": {"conformance": {"label": lab, "ok": True, "passed": 784,
                                           "failed": 0, "yeast_matched": 528,
                                           "yeast_checked": 528}}
             for lab in ("gsi", "gmatch[dfs]")}
    return {**base, "passed": 2, "properties": props}


def test_the_record_has_the_commit_date_counts_and_ratios(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(card_tests, "run_pytest", _fake_run)
    monkeypatch.setenv("GSM_COMMIT", "abc123")
    monkeypatch.setenv("NX_GSM_DATASETS", str(tmp_path / "data"))

    def bench(rec, *a):
        rows = [{"suite": "yeast-16", "baseline": "cpu", "ratio": r, "gmatch_s": 0.1,
                 "matches_per_s": 1e6, "count": 5} for r in (10.0, 40.0)]
        rec["benchmarks"] = [suites.suite_summary("yeast-16", rows)]
        rec["benchmark_rows"] = rows

    monkeypatch.setattr(suites, "bench", bench)
    monkeypatch.setattr(suites, "yeast",
                        lambda rec, *a: rec.update(yeast_gmatch={"matched": 9, "checked": 9}))
    assert check.main(["--phases", "tests,conformance,yeast,bench", "--tests-jobs", "4",
                       "--tests-part", "1/6",
                       "--gamma-cases", "50", "--conformance-engines", "gsi,gmatch[dfs]",
                       "--out", str(tmp_path)]) == 0
    rec = json.loads((tmp_path / "gpu_check.json").read_text())
    assert rec["commit"] == "abc123" and rec["date"] and rec["schema"] == "nx-gsm-gpu-check/2"
    assert list(rec["phases"]) == ["tests", "conformance", "yeast", "bench"]
    assert all(p["ok"] for p in rec["phases"].values())
    assert (rec["tests"]["passed"], rec["tests"]["failed"], rec["tests"]["gamma_cases"]) == (
        400, 1, 50)
    assert rec["tests"]["part"] == "1/6"
    assert set(rec["conformance"]) == {"gsi", "gmatch[dfs]"}
    assert rec["engines"]["gsi"] == {
        "tests_passed": 400, "tests_failed": 1, "conformance_passed": 784,
        "conformance_failed": 0, "conformance_yeast_matched": 528,
        "conformance_yeast_checked": 528, "yeast_published_matched": None,
        "yeast_published_checked": None}
    # the yeast phase runs gmatch alone
    assert rec["engines"]["gmatch"]["yeast_published_matched"] == 9
    assert set(rec["engines"]) == {"gmatch", "gsi", "gmatch[dfs]"}
    b = rec["benchmarks"][0]
    assert b["median_ratio"] == 25.0 and b["geomean_ratio"] == pytest.approx(20.0)
    out = capsys.readouterr().out
    assert "record: " in out and "yeast-16" in out and "phase bench" in out


def test_the_cache_phase_runs_the_kernel_cache_tests_alone_and_keeps_their_figures(
        tmp_path, monkeypatch):
    seen = {}

    def run(name, args, jobs, timeout, out_dir, env=None, log=print, marker="gpu"):
        seen.update(name=name, args=args, jobs=jobs, timeout=timeout)
        (Path(out_dir) / "cache_0.log").write_text(
            "kernel cache (card): first process 80.0 s, 40 kernels compiled; ...\n"
            "fresh `nx-gsm match yeast.graph q.graph --label label --count --engine auto` "
            "after warmup: median 0.90 s\n1 passed\n", encoding="utf-8")
        return {"passed": 4, "failed": 0, "errors": 0, "skipped": 0, "failures": [],
                "files": {}, "shards": {}, "timed_out": [], "properties": {}, "rc": 0}

    monkeypatch.setattr(card_tests, "run_pytest", run)
    rec = {}
    dict(check.plan(check.parse_args(["--cache-timeout", "200", "--out", str(tmp_path)]), ["cache"],
                    lambda: 500.0))["cache"](rec)
    assert seen == {"name": "cache", "args": [card_tests.KERNEL_CACHE, "-s"], "jobs": 1,
                    "timeout": 200.0}
    assert rec["kernel_cache"]["passed"] == 4 and "signatures" not in rec["kernel_cache"]
    assert [f[:12] for f in rec["kernel_cache"]["figures"]] == ["kernel cache", "fresh `nx-gs"]


def test_a_failed_cache_phase_names_the_signatures_warmup_missed(tmp_path, monkeypatch):
    import subprocess

    def run(name, args, jobs, timeout, out_dir, env=None, log=print, marker="gpu"):
        (Path(out_dir) / "cache_0.log").write_text("F\n", encoding="utf-8")
        return {"passed": 3, "failed": 1, "errors": 0, "skipped": 0, "failures": ["x"],
                "files": {}, "shards": {}, "timed_out": [], "properties": {}, "rc": 1}

    seen = {}

    def child(cmd, cwd, env, capture_output, text, timeout):
        seen.update(cmd=cmd[1:], cache=env["NX_GSM_CACHE_DIR"], timeout=timeout)
        out = ("gpu steps: [...]\nNEW in workload step 'gsi count q': dfs (16, 4, False)\n"
               "   argument 16: array(uint8, 2d, C) -> array(uint8, 2d, A)\n"
               "1 signature(s) launched by the workload that warmup did not launch\n")
        return subprocess.CompletedProcess(cmd, 2, out, "")

    monkeypatch.setattr(card_tests, "run_pytest", run)
    monkeypatch.setattr(card_tests.subprocess, "run", child)
    rec = {}
    card_tests.phase_cache(rec, 100.0, tmp_path, log=lambda *a: None, signatures_timeout=50.0)
    assert seen["cmd"] == ["-m", "gpu.signatures"] and seen["timeout"] == 50.0
    assert "nx-gsm-signatures-" in seen["cache"]  # a new, empty cache folder
    assert rec["kernel_cache"]["signatures"] == [
        "NEW in workload step 'gsi count q': dfs (16, 4, False)",
        "   argument 16: array(uint8, 2d, C) -> array(uint8, 2d, A)",
        "1 signature(s) launched by the workload that warmup did not launch"]

    # --signatures-timeout 0: the failure is recorded without running gpu.signatures
    seen.clear()
    rec = {}
    card_tests.phase_cache(rec, 100.0, tmp_path, log=lambda *a: None, signatures_timeout=0)
    assert not seen and "signatures" not in rec["kernel_cache"]
    assert rec["kernel_cache"]["failed"] == 1

    def slow(cmd, **kw):
        raise subprocess.TimeoutExpired(cmd, kw["timeout"])

    monkeypatch.setattr(card_tests.subprocess, "run", slow)
    assert card_tests.missed_signatures(5.0, log=lambda *a: None) == [
        "gpu.signatures did not finish within 5 s"]


def test_the_egsm_phase_calls_the_peer_where_it_is(monkeypatch):
    from benchmarks.tools import Unavailable

    calls = []
    fake = types.ModuleType("benchmarks.egsm")

    def vs_egsm(**kw):
        calls.append(kw)
        return {"yeast-16": {"geomean": 2.0}}

    fake.vs_egsm = vs_egsm
    # (the package's attribute too: another test may have imported the real module)
    import benchmarks

    monkeypatch.setitem(sys.modules, "benchmarks.egsm", fake)
    monkeypatch.setattr(benchmarks, "egsm", fake, raising=False)
    rec = {}
    check.phase_egsm(rec, 7, 3.0, 120.0)
    assert rec["vs_egsm"] == {"yeast-16": {"geomean": 2.0}}
    assert (calls[0]["queries"], calls[0]["timeout"], calls[0]["budget"]) == (7, 3.0, 120.0)
    # in the check's plan the sets share the time left, less the sanitizer's where it runs
    steps = dict(check.plan(check.parse_args(["--sanitize-timeout", "40"]),
                            ["egsm", "sanitize"], lambda: 300.0))
    steps["egsm"]({})
    assert calls[-1]["budget"] == 250.0 and calls[-1]["engine"] == "gmatch"
    # several engines of ours share the time; the first's result keeps the plain key
    rec = {}
    steps = dict(check.plan(check.parse_args(["--egsm-engines", "gmatch,auto"]), ["egsm"],
                            lambda: 205.0))
    steps["egsm"](rec)
    assert [(c["engine"], c["budget"]) for c in calls[-2:]] == [("gmatch", 100.0),
                                                                 ("auto", 100.0)]
    assert set(rec) == {"vs_egsm", "vs_egsm[auto]"}

    def unavailable(**kw):
        raise Unavailable("EGSM is not built")

    fake.vs_egsm = unavailable
    check.phase_egsm(rec, 7, 3.0)
    assert rec["vs_egsm"] == {"skipped": "EGSM is not built"}


def test_each_suite_warms_its_engines_and_the_baseline_worker_first(tmp_path):
    """The bench's per-suite warm-up (on a fresh card host the first timed yeast-16
    query compiled host-level code inside its timing) runs the default engine, every variant
    and the baseline worker once on the dataset's warm-up query, untimed."""
    import networkx as nx

    import nx_gsm

    base = tmp_path / "yeast"
    (base / "query_graph").mkdir(parents=True)
    (base / "query_graph" / "query_dense_16_1.graph").write_text(
        "t 3 2\nv 0 1 1\nv 1 1 2\nv 2 1 1\ne 0 1\ne 1 2\n")
    Gx = nx.path_graph(5)
    nx.set_node_attributes(Gx, 1, "label")
    G = nx_gsm.from_networkx(Gx, node_attrs=["label"])

    class Eng:
        def __init__(self):
            self.plans = []

        def count(self, plan):
            self.plans.append(plan)
            return 0

    class Worker:
        calls = []

        def run(self, *args):
            self.calls.append(args)
            return ("ok", 6, 0.0)

    quiet = lambda *a: None  # noqa: E731
    eng, variants, worker = Eng(), {"a": Eng(), "b": Eng()}, Worker()
    suites.warm_suite("yeast", base, G, eng, variants, worker, "cpu", quiet)
    assert [len(e.plans) for e in (eng, *variants.values())] == [1, 1, 1]
    assert eng.plans[0].k == 3
    assert [(a[0], Path(a[2]).name) for a in worker.calls] == [("cpu", "query_dense_16_1.graph")]
    # the VF2 suite: the engines, not the (NetworkX) baseline
    suites.warm_suite("yeast", base, G, eng, variants, worker, "vf2", quiet)
    assert [len(e.plans) for e in (eng, *variants.values())] == [2, 2, 2]
    assert len(worker.calls) == 1
    # a dataset without a warm-up query (or without the file) warms nothing
    suites.warm_suite("wordnet", base, G, eng, variants, worker, "cpu", quiet)
    suites.warm_suite("human", base, G, eng, variants, worker, "cpu", quiet)
    assert len(eng.plans) == 2 and len(worker.calls) == 1


def test_screened_queries_go_to_their_dataset_and_size_suite():
    # what benchmarks.vf2_screen prints, plus the older yeast lists without a dataset
    entries = ["dense_8_5", "yeast:dense_16_6", "human:sparse_8_3", "human:dense_8_12",
               "sparse_16_2", "yeast:sparse_8_9", "human:dense_16_1"]
    assert suites.screened(entries, "yeast", ["dense_8", "sparse_8"]) == ["dense_8_5",
                                                                          "sparse_8_9"]
    assert suites.screened(entries, "yeast", ["dense_16", "sparse_16"]) == ["dense_16_6",
                                                                            "sparse_16_2"]
    assert suites.screened(entries, "human", ["dense_8", "sparse_8"]) == ["sparse_8_3",
                                                                          "dense_8_12"]
    assert suites.screened(entries, "wordnet", ["dense_8", "sparse_8"]) == []


def test_the_committed_screens_give_the_issue_sets_finished_queries():
    got = suites.screened_queries()
    assert len(got) == len(set(got)) and all(e.count(":") == 1 for e in got)
    y16 = suites.screened(got, "yeast", ["dense_16", "sparse_16"])
    # the 15 yeast 16-vertex queries VF2 finished within the card-host screen's 13 s cap
    assert y16[:3] == ["dense_16_6", "dense_16_9", "dense_16_14"] and len(y16) == 15
    assert suites.screened(got, "human", ["dense_8", "sparse_8"]) == []
    y8 = suites.screened(got, "yeast", ["dense_8", "sparse_8"])
    assert len(y8) == 108 and y8[0] == "dense_8_4"
    assert suites.vf2_queries("screened") == got
    assert suites.vf2_queries("dense_8_4,human:sparse_8_3") == ["dense_8_4", "human:sparse_8_3"]
    assert suites.vf2_queries(None) is None




def test_the_ablations_and_device_paths_are_gmatch_configs():
    """The bench's ablations and the conformance test's gmatch device paths are valid
    GMatchConfig changes (the card would find out only after its other phases)."""
    from test_card_conformance import RUNS

    from nx_gsm.engines.gpu.gmatch import GMatchConfig

    variants = [f for _, _, f in RUNS.values() if f] + list(suites.ABLATIONS.values())
    assert len(variants) == 8
    defaults = GMatchConfig()
    for fields in variants:
        cfg = GMatchConfig(**fields)
        assert cfg != defaults and all(getattr(cfg, k) == v for k, v in fields.items())


def test_the_cache_phase_keeps_the_compile_report_lines(tmp_path, monkeypatch):
    def run(name, args, jobs, timeout, out_dir, env=None, log=print, marker="gpu"):
        (Path(out_dir) / "cache_0.log").write_text(
            "kernel cache (card): first process 60 s\n"
            "compiled in the after process: gsi count q: _make_dfs_kernel.<locals>.dfs: "
            "argument 1: a -> b\nother output\n", encoding="utf-8")
        return {"passed": 3, "failed": 1, "errors": 0, "skipped": 0, "failures": ["x"],
                "files": {}, "shards": {}, "timed_out": [], "properties": {}, "rc": 1}

    monkeypatch.setattr(card_tests, "run_pytest", run)
    rec = {}
    card_tests.phase_cache(rec, 100.0, tmp_path, log=lambda *a: None, signatures_timeout=0)
    assert rec["kernel_cache"]["figures"] == [
        "kernel cache (card): first process 60 s",
        "compiled in the after process: gsi count q: _make_dfs_kernel.<locals>.dfs: "
        "argument 1: a -> b"]


def test_the_compile_report_names_the_step_and_the_closest_signature():
    from tests.test_card_kernel_cache import compile_report

    new = ["array(int32, 1d, C)", "int64", "array(uint8, 2d, A)"]
    child = {"compiled": {"kernels": [["gsi count q", "_make_dfs_kernel.<locals>.dfs", new],
                                      ["gamma update", "delta_kernel", ["int64"]]]},
             "signatures": {"_make_dfs_kernel.<locals>.dfs": [
                 ["array(int64, 1d, C)", "int32", "array(uint8, 2d, C)"],
                 ["array(int32, 1d, C)", "int64", "array(uint8, 2d, C)"], new],
                 "bfs_level_kernel": [["int64"]]}}
    assert compile_report(child) == [
        "gsi count q: _make_dfs_kernel.<locals>.dfs: "
        "argument 2: array(uint8, 2d, C) -> array(uint8, 2d, A)",
        "gamma update: delta_kernel: no other signature of this kernel; arguments: int64"]
    assert compile_report({"compiled": {"kernels": [], "cuda": 0}, "signatures": {}}) == []
    # after warmup: every variant holds only the new signature, warmup's report the old one
    after = {"compiled": {"kernels": [["compile_variants", "dfs", new]]},
             "signatures": {"dfs": [new, new]}}
    warmup = {"signatures": {"dfs": [["array(int32, 1d, C)", "int64", "array(uint8, 2d, C)"]]}}
    assert compile_report(after, warmup) == [
        "compile_variants: dfs: argument 2: array(uint8, 2d, C) -> array(uint8, 2d, A)"]


def test_signature_diff_names_the_arguments_that_changed():
    from gpu.signatures import added

    old = ("array(int32, 1d, C)", "int64", "array(uint8, 2d, C)")
    new = ("array(int32, 1d, C)", "int64", "array(uint8, 2d, A)")
    before = {"dfs (8, 8, False)": {str(old): old}}
    after = {"dfs (8, 8, False)": {str(old): old, str(new): new},
             "dfs (16, 4, False)": {str(new): new}}
    lines = []
    assert added(before, after, "step x", before, out=lines.append) == 2
    assert "NEW in step x: dfs (8, 8, False)" in lines
    assert "NEW in step x: dfs (16, 4, False)" in lines  # compared with its sibling's
    assert lines.count("   argument 2: array(uint8, 2d, C) -> array(uint8, 2d, A)") == 2
    assert added(after, after, "step y", before, out=lines.append) == 0
