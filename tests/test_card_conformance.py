"""The conformance suite on the GPU engines, on the card: ``conformance.run_suite`` (generated
cases of every graph class, mode and label kind against NetworkX VF2, and the yeast published
counts of 4- and 8-vertex queries) for gmatch, gsi and geneva, and for gmatch configured so that
the small cases, which its host BFS prefix would finish alone, reach the device: every prefix
level on the GPU (``gpu-bfs``), the prefix stopped at the roots so every case goes through the
warp DFS (``dfs``), and counts on the chained path (``chained``: levels launched from the host,
then the DFS).

Quick mode by default; ``CONFORMANCE_FULL=1`` runs the full suite, ``CONFORMANCE_CASES=N`` only
the first N generated cases. The yeast queries are read from ``$NX_GSM_DATASETS`` (else
``.gpudata/``); without them the suite checks the generated cases alone. Each test records its
counts as the ``conformance`` property (``python -m gpu.check`` copies them into its record).
"""

import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu  # the card: tests/conftest.py skips it without a device

ROOT = Path(__file__).resolve().parents[1]
# id -> (record label, engine name, GMatchConfig fields or None for the engine's defaults)
RUNS = {
    "gmatch": ("gmatch", "gmatch", None),
    "gsi": ("gsi", "gsi", None),
    "geneva": ("geneva", "geneva", None),
    "gmatch-gpu-bfs": ("gmatch[gpu-bfs]", "gmatch", {"host_rows": 0}),
    "gmatch-dfs": ("gmatch[dfs]", "gmatch", {"pool_target": 1}),
    "gmatch-chained": ("gmatch[chained]", "gmatch", {"fused": False, "host_rows": 0}),
}


def _engine(name, fields):
    if fields is None:
        return name
    from nx_gsm.engines.gpu.gmatch import GMatchConfig, GMatchEngine

    return GMatchEngine(config=GMatchConfig(**fields))


# a minute or two each, mostly VF2 on the host: gpu.check deals them over its processes
@pytest.mark.gpu(spread=True)
@pytest.mark.parametrize("run", list(RUNS))
def test_conformance_suite_on_gpu_engine(run, record_property):
    import conformance

    label, name, fields = RUNS[run]
    cases = os.environ.get("CONFORMANCE_CASES")
    rep = conformance.run_suite(
        engine=_engine(name, fields), quick=os.environ.get("CONFORMANCE_FULL") != "1",
        cases=int(cases) if cases else None,
        datasets=os.environ.get("NX_GSM_DATASETS") or str(ROOT / ".gpudata"), shrink=True)
    c = rep["cases"]
    y = rep.get("yeast") or {}
    fails = c.get("failures") or c.get("differences") or []
    record_property("conformance", {
        "label": label, "ok": rep["ok"], "passed": c.get("passed"), "failed": c.get("failed"),
        "cases": c.get("total", c.get("checked")),
        "yeast_checked": y.get("checked"), "yeast_matched": y.get("matched"),
        "yeast_mismatches": (y.get("mismatches") or [])[:20],
        "yeast_errors": (y.get("errors") or [])[:20], "yeast_skipped": y.get("skipped"),
        "seconds": rep.get("total_s"),
        "failures": fails[:10] if isinstance(fails, list) else fails,
    })
    assert rep["ok"], conformance.format_report(rep)[-3000:]
