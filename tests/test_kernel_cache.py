"""Compiled kernels are cached in a per-user folder, never inside the package.

Numba picks a function's cache folder when its decorator runs, so the check runs in a fresh
process: it imports every module that compiles with ``cache=True`` and reads where each
dispatcher would write.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nx_gsm

PACKAGE = Path(nx_gsm.__file__).resolve().parent
MODULES = ["nx_gsm.plan.order", "nx_gsm.plan.filter", "nx_gsm.plan.space", "nx_gsm.plan.planner",
           "nx_gsm.engines.cpu", "nx_gsm.engines.partitioned"]
PROBE = f"""
import importlib, json
paths = []
for name in {MODULES!r}:
    mod = importlib.import_module(name)
    paths += [v._cache._cache_path for v in vars(mod).values()
              if getattr(v, "_cache", None) is not None and hasattr(v._cache, "_cache_path")]
print(json.dumps(paths))
"""


def _cache_paths(**env):
    clean = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NX_GSM_CACHE_DIR")}
    proc = subprocess.run([sys.executable, "-c", PROBE], env={**clean, **env}, capture_output=True,
                          text=True, timeout=120, check=True)
    return [Path(p) for p in json.loads(proc.stdout)]


def test_kernels_cache_in_the_folder_nx_gsm_cache_dir_names(tmp_path):
    paths = _cache_paths(NX_GSM_CACHE_DIR=str(tmp_path))
    assert len(paths) >= 10  # every cached kernel of the planner and the CPU engines
    for p in paths:
        assert p.is_relative_to(tmp_path / "numba"), p
        assert not p.is_relative_to(PACKAGE), p


def test_default_cache_folder_is_the_user_cache_not_the_package(tmp_path):
    paths = _cache_paths(XDG_CACHE_HOME=str(tmp_path))
    assert paths
    for p in paths:
        assert not p.is_relative_to(PACKAGE), p
        if sys.platform.startswith("linux"):
            assert p.is_relative_to(tmp_path / "nx-gsm" / "numba"), p


def test_a_numba_cache_dir_the_user_set_is_kept(tmp_path):
    paths = _cache_paths(NUMBA_CACHE_DIR=str(tmp_path / "mine"), NX_GSM_CACHE_DIR=str(tmp_path))
    assert paths and all(p.is_relative_to(tmp_path / "mine") for p in paths)


def test_cpu_kernels_cache_in_a_folder_named_by_every_source_file(tmp_path):
    # a kernel's entry holds the code of what it calls from other files (the parallel driver
    # holds the search), which Numba's own per-file check does not see
    from nx_gsm.kernel_cache import source_stamp

    paths = _cache_paths(NX_GSM_CACHE_DIR=str(tmp_path))
    assert paths and all(p.is_relative_to(tmp_path / "numba" / f"cpu-{source_stamp()}")
                         for p in paths)


def test_an_edit_to_any_source_file_names_a_new_folder(tmp_path):
    from nx_gsm.kernel_cache import source_stamp

    (tmp_path / "sub").mkdir()
    (tmp_path / "a.py").write_text("x = 1\n")
    (tmp_path / "sub" / "b.py").write_text("y = 2\n")
    seen = {source_stamp.__wrapped__(tmp_path)}
    (tmp_path / "sub" / "__pycache__").mkdir()
    (tmp_path / "sub" / "__pycache__" / "c.py").write_text("")
    (tmp_path / "notes.txt").write_text("")
    assert source_stamp.__wrapped__(tmp_path) in seen  # bytecode and other files do not count
    st = (tmp_path / "sub" / "b.py").stat()
    os.utime(tmp_path / "sub" / "b.py", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    seen.add(source_stamp.__wrapped__(tmp_path))
    (tmp_path / "a.py").write_text("x = 10\n")
    seen.add(source_stamp.__wrapped__(tmp_path))
    (tmp_path / "sub" / "d.py").write_text("")
    seen.add(source_stamp.__wrapped__(tmp_path))
    assert len(seen) == 4


def test_old_cpu_folders_are_pruned_to_the_most_recent(tmp_path):
    from nx_gsm.kernel_cache import prune

    for i in range(11):
        (tmp_path / f"cpu-{i:02d}").mkdir()
        os.utime(tmp_path / f"cpu-{i:02d}", (1000 + i, 1000 + i))
    (tmp_path / "cuda").mkdir()
    os.utime(tmp_path / "cuda", (0, 0))
    prune(tmp_path, keep=8)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cpu-03", "cpu-04", "cpu-05", "cpu-06",
                                                          "cpu-07", "cpu-08", "cpu-09", "cpu-10",
                                                          "cuda"]
