"""Benchmark record writers never destroy an existing record (issue 53, finding 6).

Each script's ``main`` runs with its measurements replaced, and its write fails half-way in
two ways: a record value that stops the JSON (its ``str`` raises, or JSON cannot hold it), and
a full disk (a file size limit, so the write itself fails with EFBIG). The file that was there
must stay byte for byte as it was, with no temporary file left beside it, and the same run
without the failure must then write the record.
"""

from __future__ import annotations

import contextlib
import json
import signal
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

OLD = b'{"previous": "record"}\n' + bytes(range(256)) * 8


class Failing:
    """A record value JSON cannot hold, whose ``str`` (how most writers store such values)
    fails."""

    def __str__(self):
        raise OSError("disk full")


def _payload(fail):
    # enough JSON before the failing value that a writer without a temporary file would have
    # written (and flushed) part of the record over the old one
    return {"rows": [{"i": i, "pad": "x" * 64} for i in range(2000)],
            "last": Failing() if fail else "written"}


@pytest.fixture(autouse=True)
def _output_in_memory(capsys):
    """The scripts' prints go to memory, not to a capture file the size limit would stop."""
    return capsys


@contextlib.contextmanager
def _disk_full(size):
    """Writes that would grow a file past ``size`` bytes fail with EFBIG (OSError), as on a
    full disk."""
    resource = pytest.importorskip("resource")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # else the signal ends the process
    resource.setrlimit(resource.RLIMIT_FSIZE, (size, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old)


def _check(path, write):
    """``write(fail)`` fails leaving ``path`` as it was (a bad value, then a full disk), then
    succeeds writing the record."""
    for how in ("value", "disk"):
        path.write_bytes(OLD)
        with pytest.raises((OSError, TypeError)) as err:
            if how == "value":
                write(True)
            else:
                with _disk_full(len(OLD) + 4096):
                    write(False)
        assert how == "disk" or "disk full" in str(err.value) or "JSON" in str(err.value)
        assert path.read_bytes() == OLD, how
        assert [p.name for p in path.parent.iterdir()] == [path.name], how
    write(False)
    text = path.read_text(encoding="utf-8")
    assert '"last": "written"' in text and json.loads(text)
    assert [p.name for p in path.parent.iterdir()] == [path.name]


def test_runner_save(tmp_path):
    from benchmarks.runner import save

    path = tmp_path / "rec.json"
    _check(path, lambda fail: save(_payload(fail), path))


def test_runner_save_creates_the_folder(tmp_path):
    from benchmarks.runner import save

    path = tmp_path / "a" / "b" / "rec.json"
    save({"x": 1}, path)
    assert json.loads(path.read_text()) == {"x": 1}


def test_incremental_record(tmp_path, monkeypatch):
    from benchmarks import incremental

    box = {}
    monkeypatch.setattr(incremental, "_warm_up", lambda engine: None)
    monkeypatch.setattr(incremental, "machine_info", dict)
    monkeypatch.setattr(incremental, "run", lambda *a, **k: [_payload(box["fail"])])
    path = tmp_path / "incremental.json"

    def write(fail):
        box["fail"] = fail
        incremental.main(["--out", str(path)])

    _check(path, write)


def test_partitioned_record(tmp_path, monkeypatch):
    from benchmarks import partitioned

    box = {}
    monkeypatch.setattr(partitioned, "datasets_root", lambda root: tmp_path)
    monkeypatch.setattr(partitioned, "machine_info", dict)
    monkeypatch.setattr(partitioned, "partition_rows", lambda *a: [_payload(box["fail"])])
    monkeypatch.setattr(partitioned, "worker_rows", lambda *a: [])
    out = tmp_path / "out"
    out.mkdir()
    path = out / "partitioned.json"

    def write(fail):
        box["fail"] = fail
        partitioned.main(["--out", str(path), "--quick"])

    _check(path, write)


class _Conn:
    def __init__(self, res):
        self.res = res

    def recv(self):
        return self.res


class _Context:
    """A multiprocessing context whose one process has already measured ``res``."""

    def __init__(self, res):
        self.res = res

    def Pipe(self, duplex=True):  # multiprocessing's name
        return _Conn(self.res), None

    def Process(self, target, args):  # multiprocessing's name
        class _P:
            def start(self):
                pass

            def join(self):
                pass

        return _P()


def test_streaming_record(tmp_path, monkeypatch):
    from benchmarks import machine, streaming

    box = {}

    def context(method):
        return _Context({"rows": 6, "frames": 1, "seconds": 1.0, "rows_per_second": 6.0,
                         "peak_over_baseline_bytes": 0, "extra": _payload(box["fail"])})

    monkeypatch.setattr(machine, "machine_info", dict)
    monkeypatch.setattr(streaming.mp, "get_context", context)
    path = tmp_path / "streaming.json"

    def write(fail):
        box["fail"] = fail
        streaming.main(["--rows", "6", "--ways", "match_frames", "--out", str(path)])

    _check(path, write)


def test_multigpu_record(tmp_path, monkeypatch):
    from benchmarks import multigpu

    box = {}
    monkeypatch.setattr(multigpu, "run", lambda *a, **k: _payload(box["fail"]))
    path = tmp_path / "multigpu.json"

    def write(fail):
        box["fail"] = fail
        multigpu.main(["--out", str(path)])

    _check(path, write)


def test_gpu_check_record(tmp_path):
    from gpu import check

    path = tmp_path / "gpu_check.json"
    _check(path, lambda fail: check._write(_payload(fail), tmp_path))


def test_first_run_record(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from benchmarks import first_run

    box = {}
    times = {"process_s": 1.0, "import_s": 0.5, "read_s": 0.1, "count_s": 0.1}
    monkeypatch.setattr(first_run, "_versions", dict)
    monkeypatch.setattr(first_run, "_cli",
                        lambda args, cache: (0.1, SimpleNamespace(stderr="", returncode=0)))
    monkeypatch.setattr(first_run, "_fresh_counts", lambda *a: {
        "query": "q", "median": times, "extra": _payload(box["fail"])})
    path = tmp_path / "first-run.json"

    def write(fail):
        box["fail"] = fail
        first_run.main(["--queries", "0", "--skip-warmup", "--out", str(path)])

    _check(path, write)
