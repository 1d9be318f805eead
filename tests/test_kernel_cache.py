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
