"""The simulator harness (``sim_runner``) on a made-up script: cases listed from the source
without running it, one child process per group, each case's outcome (traceback and output)
reported under its own id, and a group that dies or runs out of time named in its cases."""

import sys

import pytest
import sim_runner

SCRIPT = '''
import sys, time
from sim_runner import run_cases, sim_case

STATE = []


@sim_case
def first():
    STATE.append(1)
    print("first ran")


@sim_case(params=range(3))
def numbered(i):
    assert i != 1, f"case {i} disagrees"


@sim_case
def exits():
    print("about to exit", flush=True)
    sys.exit(1)


@sim_case
def sees_state():
    assert STATE == [1]  # the group ran in order, in one process


@sim_case(params=("a", "b"), group="{param}")
def own_group(p):
    if p == "b":
        time.sleep(60)


def helper():
    pass


if __name__ == "__main__":
    sys.exit(run_cases())
'''


@pytest.fixture
def script(tmp_path):
    path = tmp_path / "fake_cases.py"
    path.write_text(SCRIPT)
    return path


def test_cases_are_read_from_the_source_in_order(script):
    cases = sim_runner.list_cases(script)
    assert [(c.id, c.group) for c in cases] == [
        ("first", "main"), ("numbered-0", "main"), ("numbered-1", "main"),
        ("numbered-2", "main"), ("exits", "main"), ("sees_state", "main"),
        ("own_group-a", "a"), ("own_group-b", "b")]
    assert [p.id for p in sim_runner.sim_cases(script)][:2] == ["first", "numbered-0"]


def test_the_child_registers_what_the_parent_lists(script, tmp_path):
    import subprocess

    out = subprocess.run([sys.executable, str(script), "--list"], capture_output=True,
                         text=True, env={"PYTHONPATH": str(sim_runner.HERE)}, check=True)
    assert [line.split() for line in out.stdout.splitlines()] == [
        [c.id, c.group] for c in sim_runner.list_cases(script)]


def test_each_case_reports_its_own_outcome(script, monkeypatch):
    monkeypatch.setattr(sim_runner, "_RUNS", {})
    cases = {c.id: c for c in sim_runner.list_cases(script)}
    for ok in ("first", "numbered-0", "numbered-2", "sees_state", "own_group-a"):
        cases[ok].check()
    with pytest.raises(pytest.fail.Exception) as err:
        cases["numbered-1"].check()
    msg = str(err.value)
    assert "case numbered-1 of" in msg and "AssertionError: case 1 disagrees" in msg
    assert ", in numbered" in msg  # the traceback, into the script
    with pytest.raises(pytest.fail.Exception) as err:
        cases["exits"].check()
    assert "SystemExit: 1" in str(err.value) and "about to exit" in str(err.value)
    # the main group ran once, in one process, for all of its cases
    assert [k for k in sim_runner._RUNS] == [(script, "main"), (script, "a")]


def test_a_group_past_its_time_names_the_case_it_was_in(script, monkeypatch):
    monkeypatch.setattr(sim_runner, "_RUNS", {})
    monkeypatch.setattr(sim_runner, "GROUP_TIMEOUT", 5)
    case = {c.id: c for c in sim_runner.list_cases(script)}["own_group-b"]
    with pytest.raises(pytest.fail.Exception) as err:
        case.check()
    assert "own_group-b" in str(err.value) and "ran past 5 s in this case" in str(err.value)


def test_a_case_the_child_never_ran_fails(script, monkeypatch, tmp_path):
    monkeypatch.setattr(sim_runner, "_RUNS", {})
    # the parent lists a case the child does not register (a decorator it cannot read)
    bad = tmp_path / "bad_cases.py"
    bad.write_text(SCRIPT.replace("@sim_case(params=(\"a\", \"b\"), group=\"{param}\")",
                                  "@sim_case(params=(\"a\",), group=\"{param}\")"))
    case = sim_runner.SimCase(bad, "own_group-b", "b")
    with pytest.raises(pytest.fail.Exception, match="did not run"):
        case.check()
