"""CI slice of the conformance suite (``conformance/``): nx_gsm against VF2 and published counts.

* ``test_generated_cases[cls-mode]``: the *quick* generated suite (one case per class x mode x
  label kind x shape, ~780 cases, every node-key kind) checked against NetworkX's VF2, split by
  graph class and mode so a failure names its category. A failure message carries each
  difference, shrunk, as runnable Python.
* ``test_generator_*``: the full generator yields >= 3,000 cases covering every category (no
  matching, just generation), deterministically.
* ``test_yeast_ground_truth``: the 4- and 8-vertex yeast queries with a published count <= 10**6
  (528 queries) against the published counts, in a fixed order interleaving the dense/sparse and
  size groups, time-bounded (``NX_GSM_CONFORMANCE_YEAST_BUDGET``, default 60 s) but never fewer
  than 200 queries; skipped with the reason when the datasets are not beside the clone.

The full suite (~3,500 cases and all 1,052 yeast queries with count <= 10**6) is
``python -m conformance run``. ``NX_GSM_CONFORMANCE_ENGINE`` picks the engine (default ``cpu``),
so the same slice checks a GPU engine on a GPU machine.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path

import pytest

_ROOT = Path(__file__).resolve().parents[1]
if str(_ROOT) not in sys.path:  # conformance/ is a folder of the repo, not an installed package
    sys.path.insert(0, str(_ROOT))

import conformance  # noqa: E402
from conformance import generator as gen  # noqa: E402

ENGINE = os.environ.get("NX_GSM_CONFORMANCE_ENGINE", "cpu")
#: after this many seconds of yeast matching no further query starts (at least 200 always run)
YEAST_BUDGET_S = float(os.environ.get("NX_GSM_CONFORMANCE_YEAST_BUDGET", "60"))


@pytest.fixture(scope="module")
def quick_cases():
    return list(conformance.generate_cases(seed=0, quick=True))


@pytest.fixture(scope="module")
def engine():
    reason = conformance.engine_unavailable(ENGINE)
    if reason is not None:
        pytest.skip(f"engine {ENGINE!r} cannot run here: {reason}")
    return ENGINE


def _failure_text(rep):
    out = []
    for f in rep["failures"]:
        out.append(f"DIFFERENCE {f['description']}")
        out += [f"    {p}" for p in f["problems"]]
        if f.get("shrunk"):
            out.append(f"  shrunk to {f['shrunk_description']}")
            out += [f"    {p}" for p in f["shrunk_problems"]]
        out += ["    " + line for line in f["repro"].splitlines()]
    return "\n".join(out)


@pytest.mark.parametrize("mode", gen.MODES)
@pytest.mark.parametrize("cls", gen.CLASSES)
def test_generated_cases(quick_cases, engine, cls, mode):
    cases = [c for c in quick_cases if c.cls == cls and c.mode == mode]
    # every label kind and every shape of this class/mode is in the slice
    assert {c.labels for c in cases} == set(gen.LABEL_KINDS)
    assert {c.shape for c in cases} == set(gen.shapes_for(cls, mode))
    rep = conformance.run_cases(cases, engine=engine, shrink=True)
    assert rep["total"] == len(cases)
    assert rep["failed"] == 0, (
        f"{rep['failed']} of {rep['total']} {cls}/{mode} cases differ from VF2:\n"
        + _failure_text(rep))


def test_generator_full_size_and_coverage():
    cases = list(conformance.generate_cases(seed=0, quick=False))
    assert len(cases) >= 3000
    assert len({c.id for c in cases}) == len(cases)
    combos = Counter((c.cls, c.mode, c.labels, c.shape) for c in cases)
    for cls in gen.CLASSES:
        for mode in gen.MODES:
            for labels in gen.LABEL_KINDS:
                for shape in gen.shapes_for(cls, mode):
                    assert combos[cls, mode, labels, shape] >= 3, (cls, mode, labels, shape)
        assert {c.keys for c in cases if c.cls == cls} == set(gen.KEY_KINDS)
    # structural edge cases actually present (measured on the graphs, not the shape names)
    want = {"empty_pattern", "empty_data", "one_node_pattern", "disconnected_pattern",
            "pattern_larger", "isolated_data", "isolated_pattern", "selfloop_data",
            "selfloop_pattern", "hub_data"}
    for cls in gen.CLASSES:
        for mode in ("mono", "induced"):
            feats = set().union(*(c.features for c in cases if c.cls == cls and c.mode == mode))
            need = want | ({"parallel_data", "parallel_pattern"} if cls.startswith("Multi")
                           else set())
            assert need <= feats, (cls, mode, need - feats)
    # the matcher forms the issue asks for
    src = " ".join(s for c in cases for s in c.matchers.values())
    for form in ("node_label", "edge_label"):
        assert any(form in c.matchers for c in cases), form
    for helper in ("categorical_node_match", "categorical_edge_match",
                   "categorical_multiedge_match", "numerical_node_match",
                   "numerical_edge_match", "numerical_multiedge_match", "generic_node_match",
                   "generic_edge_match", "generic_multiedge_match", "lambda a, b"):
        assert helper in src, helper
    # isomorphism cases with equal sizes and a non-empty answer exist for every class
    for cls in gen.CLASSES:
        assert any(c.mode == "iso" and c.shape == "copy" and c.cls == cls for c in cases)


def test_generator_quick_is_prefix_and_deterministic(quick_cases):
    full = conformance.generate_cases(seed=0, quick=False)
    for q, f in zip(quick_cases[:200], full):
        assert q.id == f.id
        assert list(q.G.nodes(data=True)) == list(f.G.nodes(data=True))
        assert list(q.H.edges(data=True)) == list(f.H.edges(data=True))
    # another seed: same coordinates (ids), other graphs
    other = list(conformance.generate_cases(seed=1, reps=(1, 1)))[:50]
    assert [c.id for c in other] == [c.id for c in quick_cases[:50]]
    assert any(list(a.G.edges()) != list(b.G.edges()) for a, b in zip(other, quick_cases))
    a = conformance.make_case(0, quick_cases[5].id)
    assert list(a.G.edges(data=True)) == list(quick_cases[5].G.edges(data=True))


def test_yeast_ground_truth(engine):
    rep = conformance.run_yeast(engine, quick=True, time_budget=YEAST_BUDGET_S, min_queries=200)
    if rep["skipped"]:
        pytest.skip(rep["skipped"])
    assert rep["selected"] >= 500
    assert rep["checked"] >= 200
    assert rep["mismatches"] == [] and rep["errors"] == [] and rep["missing_files"] == [], (
        rep["mismatches"][:20], rep["errors"][:5], rep["missing_files"][:5])
    assert rep["matched"] == rep["checked"]


def test_run_suite_takes_an_engine_object():
    """The card's gmatch variants reach the suite as configured engine objects; the report
    (a JSON record) names the engine rather than holding the object."""
    from nx_gsm.engines import get_engine

    rep = conformance.run_suite(engine=get_engine("cpu"), quick=True, cases=40, yeast=False,
                                shrink=False)
    assert rep["ok"] and rep["cases"]["passed"] == 40
    assert rep["engine"] == "cpu"
