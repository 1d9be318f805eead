"""The documentation site builds without a single warning (``mkdocs build --strict``).

A broken link or anchor, a page in ``docs/`` missing from ``nav``, or a figure that
``docs/benchmarks.md`` shows but that is not committed fails this test. mkdocs and
mkdocs-material come with the ``test`` extra.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def test_mkdocs_build_strict(tmp_path):
    pytest.importorskip("mkdocs", reason="mkdocs is in the 'test' extra")
    pytest.importorskip("material", reason="mkdocs-material is in the 'test' extra")
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"),
         "-d", str(site)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (site / "index.html").exists()
    for page in ("getting-started", "cli", "networkx", "semantics", "engines", "incremental",
                 "rapids", "scaling", "benchmarks", "troubleshooting", "architecture"):
        assert (site / page / "index.html").exists(), page
    # the benchmark page's figures are committed and copied into the site
    assert (site / "img" / "bench" / "scatter-cpu.png").exists()
