"""The ``t/v/e`` graph files the native peers read (Sun & Luo's study code, EGSM).

Both read the same text format: ``t N M``, then one ``v <id> <label> <degree>`` line per vertex
with ids ``0..N-1`` in order, then one ``e <u> <v>`` line per undirected edge, every vertex
before the first edge. Labels are small non-negative ints, so the writer maps the suite's label
values through one dict shared by the data graph and its patterns: equal values get equal ints
on both sides.
"""

from __future__ import annotations

from pathlib import Path

__all__ = ["write_graph_file"]


def write_graph_file(G, path, label, ids):
    """``G`` as a ``t/v/e`` file with nodes numbered in iteration order and labels mapped to
    small ints through ``ids`` (a dict shared by the data graph and its patterns; without a
    ``label`` every vertex gets the int of label ``0``)."""
    pos = {v: i for i, v in enumerate(G)}
    lines = [f"t {len(pos)} {G.number_of_edges()}"]
    for v, d in G.nodes(data=True):
        lab = ids.setdefault(d.get(label) if label else 0, len(ids))
        lines.append(f"v {pos[v]} {lab} {G.degree(v)}")
    lines += [f"e {pos[u]} {pos[v]}" for u, v in G.edges()]
    Path(path).write_text("\n".join(lines) + "\n")
