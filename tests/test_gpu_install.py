"""The GPU extras resolve to one consistent CUDA major each (asks PyPI, installs nothing).

``pip install --dry-run --report`` resolves an extra's requirements as a user's install would;
every CUDA-versioned package it picks (CuPy's wheel, cuda-bindings, the CUDA toolkit wheels that
numba-cuda's extra brings) must belong to the extra's CUDA major, or kernels fail at run time
on a machine where the install looked fine.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow  # resolves against the package index: .ci/run runs it

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _cuda_major(name, version):
    """The CUDA major a package is built for, or None when it is not CUDA-versioned."""
    if m := re.fullmatch(r"cupy-cuda(\d+)x", name):
        return int(m[1])
    if m := re.fullmatch(r"nvidia-.*-cu(\d+)", name):
        return int(m[1])
    if name in ("cuda-bindings", "cuda-toolkit") or name.startswith("nvidia-"):
        return int(version.split(".")[0])
    return None


@pytest.mark.parametrize("extra, major", [("gpu", 13), ("gpu-cuda12", 12)])
def test_gpu_extra_resolves_to_one_cuda_major(extra, major, tmp_path):
    reqs = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"][extra]
    report = tmp_path / "report.json"
    proc = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet",
                           "--ignore-installed", "--report", str(report), *reqs],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    picked = {i["metadata"]["name"].lower(): i["metadata"]["version"]
              for i in json.loads(report.read_text())["install"]}
    majors = {n: _cuda_major(n, v) for n, v in picked.items()}
    versioned = {n: m for n, m in majors.items() if m is not None}
    assert f"cupy-cuda{major}x" in versioned and "cuda-bindings" in versioned, picked
    # numba-cuda's CUDA extra is what brings NVVM and NVRTC (plain numba-cuda has neither)
    assert any(n.startswith("nvidia-nvvm") or n.startswith("nvidia-cuda-nvcc") for n in picked)
    assert set(versioned.values()) == {major}, versioned
    assert tuple(int(x) for x in picked["numpy"].split(".")[:2]) < (2, 5)
