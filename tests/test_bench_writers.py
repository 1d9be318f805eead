"""Benchmark record writers never destroy an existing record (issue 53, finding 6).

Each script's ``main`` runs with its measurements replaced by a record holding a value whose
``str`` raises half-way through the JSON (as a full disk or Ctrl-C would stop a write): the
file that was there must stay byte for byte as it was, with no temporary file left beside it,
and the same run with a good value must then write the record.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

OLD = b'{"previous": "record"}\n' + bytes(range(256)) * 8


class Value:
    """A record value: its ``str`` (how the writers store what JSON cannot) fails when
    ``fail``."""

    def __init__(self, fail):
        self.fail = fail

    def __str__(self):
        if self.fail:
            raise OSError("disk full")
        return "written"


def _payload(fail):
    # enough JSON before the failing value that a writer without a temporary file would have
    # written (and flushed) part of the record over the old one
    return {"rows": [{"i": i, "pad": "x" * 64} for i in range(2000)], "last": Value(fail)}


def _check(path, write):
    """``write(fail)`` fails leaving ``path`` as it was, then succeeds writing the record."""
    path.write_bytes(OLD)
    with pytest.raises(OSError, match="disk full"):
        write(True)
    assert path.read_bytes() == OLD
    assert [p.name for p in path.parent.iterdir()] == [path.name]
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

    def Pipe(self, duplex=True):  # noqa: N802 - multiprocessing's name
        return _Conn(self.res), None

    def Process(self, target, args):  # noqa: N802 - multiprocessing's name
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
