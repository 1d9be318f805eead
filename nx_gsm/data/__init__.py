"""Bundled demo data: the Sun & Luo yeast graph and ten of its queries with published counts.

Source: the yeast protein-interaction graph and queries of Sun & Luo's subgraph-matching study, as
redistributed by chang2000/openGraphMatching (MIT licence); counts from
SNUCSE-CTA/Subgraph-Cardinality-Estimation (computed with DAF). Files are unmodified.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["demo_graph_path", "demo_queries"]

_HERE = Path(__file__).resolve().parent


def demo_graph_path(name="yeast"):
    """Path of a bundled data graph (``"yeast"``)."""
    if name != "yeast":
        raise ValueError(f"no bundled graph {name!r}; available: 'yeast'")
    return _HERE / "yeast" / "yeast.graph"


def demo_queries():
    """List of ``(path, published_count)`` for the bundled yeast queries."""
    out = []
    with open(_HERE / "yeast" / "answers.txt", encoding="utf-8") as fh:
        for line in fh:
            name, count = line.split()
            out.append((_HERE / "yeast" / "queries" / name, int(count)))
    return out
