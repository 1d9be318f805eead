"""nx-gsm conformance suite: nx_gsm's answers against NetworkX's VF2 and published ground truth.

Two oracles:

* **NetworkX VF2** on ~3,500 small generated cases (:mod:`conformance.generator`) spanning the four
  graph classes, monomorphism / induced subgraph isomorphism / isomorphism, eight kinds of label
  matching (including callables that are not equivalences) and the structural edge cases (empty,
  one-node, disconnected and too-large patterns, isolated nodes, self-loops, parallel edges, hubs,
  non-integer node keys). The *set* of mappings must be equal, with no duplicates, and the counts
  must agree (:mod:`conformance.oracle`).
* **Published counts** for the yeast queries of Sun & Luo's study (:mod:`conformance.yeast`).

The engine is a parameter everywhere, so the GPU engines run through the same harness::

    import conformance
    report = conformance.run_suite(engine="gmatch", quick=True)
    assert report["ok"], conformance.format_report(report)

Command line: ``python -m conformance run [--engine cpu] [--quick] ...`` (see ``--help``).
"""

from .generator import (
    CLASSES,
    KEY_KINDS,
    LABEL_KINDS,
    MODES,
    Case,
    generate_cases,
    make_case,
    shapes_for,
)
from .oracle import check_case, repro_code, shrink_case, vf2_mappings
from .suite import engine_unavailable, format_report, run_cases, run_suite
from .yeast import datasets_dir, run_yeast, yeast_files

__all__ = [
    "CLASSES",
    "KEY_KINDS",
    "LABEL_KINDS",
    "MODES",
    "Case",
    "check_case",
    "datasets_dir",
    "engine_unavailable",
    "format_report",
    "generate_cases",
    "make_case",
    "repro_code",
    "run_cases",
    "run_suite",
    "run_yeast",
    "shapes_for",
    "shrink_case",
    "vf2_mappings",
    "yeast_files",
]
