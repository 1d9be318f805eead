"""Readers and writers for the ``t/v/e`` ``.graph`` format of the Sun & Luo benchmark.

Format::

    t <num_vertices> <num_edges>
    v <vertex_id> <label> [<degree>]
    e <u> <v> [<edge_label>]

Vertex ids must be ``0..N-1``. The vertex label becomes node attribute ``label`` and an edge label
edge attribute ``label``. Query files of the benchmark write a fourth field ``0`` on every ``e``
line that carries no information: pass ``edge_labels=False`` to ignore it (the published counts
assume that). Lines starting with ``#`` and blank lines are skipped. Every number is ASCII digits
with an optional sign. Every error names the file and line. The file is read as UTF-8 text (a
byte-order mark is skipped) line by line, so memory stays proportional to the graph.
"""

from __future__ import annotations

import os
import re

import networkx as nx

from .atomic import atomic_open

__all__ = ["read_graph", "write_graph", "GraphFormatError"]


class GraphFormatError(nx.NetworkXError, ValueError):
    """A malformed graph file; the message names the file and line."""


# the formats' integers: ASCII digits with an optional sign. Python's int() also takes other
# scripts' digits ("١٢"), underscores ("1_0") and surrounding spaces
_INT = re.compile(r"[+-]?[0-9]+", re.ASCII)


def _int(tok, what, path, lineno):
    if not _INT.fullmatch(tok):
        raise GraphFormatError(f"{path}:{lineno}: {what} must be an integer, got {tok!r}")
    return parse_int(tok, what, path, lineno)


def parse_int(tok, what, path, lineno):
    """int() of a matched ASCII integer, past Python's digit limit a GraphFormatError."""
    try:
        return int(tok)
    except ValueError:  # more digits than sys.get_int_max_str_digits() allows
        raise GraphFormatError(
            f"{path}:{lineno}: {what} has {len(tok.lstrip('+-'))} digits, more than Python "
            f"reads (sys.set_int_max_str_digits)") from None


def bad_utf8(path, exc):
    """The GraphFormatError for a file that is not UTF-8, naming the first line that is not
    (text files decode in blocks, so the exception itself does not know the line)."""
    with open(path, "rb") as fh:
        for lineno, raw in enumerate(fh, 1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError as bad:
                return GraphFormatError(f"{path}:{lineno}: not UTF-8 text ({bad.reason} at "
                                        f"byte {bad.start + 1} of the line)")
    return GraphFormatError(f"{path}: not a UTF-8 text file ({exc.reason})")


def read_graph(path, *, edge_labels=True, directed=False):
    """Read a ``t/v/e`` ``.graph`` file into a NetworkX graph.

    Parameters
    ----------
    path : str or path-like
    edge_labels : bool
        Store the optional fourth ``e`` field as edge attribute ``label`` (as an int).
    directed : bool
        Build a DiGraph (edges ``u -> v``) instead of a Graph.

    Returns
    -------
    networkx.Graph or networkx.DiGraph
        Nodes ``0..N-1`` with attribute ``label`` (int).

    Raises
    ------
    GraphFormatError
        On a missing or repeated header, unknown line types, non-integer fields, vertex ids out of
        range or repeated, edges to undeclared vertices, duplicate edges, or counts that disagree
        with the header.

    Examples
    --------
    >>> import nx_gsm
    >>> G = nx_gsm.read_graph(nx_gsm.demo_graph_path("yeast"))
    >>> G.number_of_nodes(), G.number_of_edges()
    (3112, 12519)
    """
    path = os.fspath(path)
    G = nx.DiGraph() if directed else nx.Graph()
    n = m = None
    seen_v = 0
    # utf-8-sig: a byte-order mark (Excel and Windows tools write one) is not part of the text
    with open(path, encoding="utf-8-sig", errors="strict") as fh:
        try:
            lines = enumerate(fh, 1)
            for lineno, line in lines:
                parts = line.split()
                if not parts or parts[0].startswith("#"):
                    continue
                tag = parts[0]
                if tag == "t":
                    if n is not None:
                        raise GraphFormatError(f"{path}:{lineno}: second 't' header line")
                    if len(parts) < 3:
                        raise GraphFormatError(f"{path}:{lineno}: 't' needs <vertices> <edges>")
                    n = _int(parts[1], "vertex count", path, lineno)
                    m = _int(parts[2], "edge count", path, lineno)
                    if n < 0 or m < 0:
                        raise GraphFormatError(f"{path}:{lineno}: negative count in header")
                    continue
                if n is None:
                    raise GraphFormatError(f"{path}:{lineno}: expected the 't' header line first")
                if tag == "v":
                    if len(parts) < 3:
                        raise GraphFormatError(f"{path}:{lineno}: 'v' needs <id> <label>")
                    vid = _int(parts[1], "vertex id", path, lineno)
                    if not 0 <= vid < n:
                        raise GraphFormatError(
                            f"{path}:{lineno}: vertex id {vid} outside 0..{n - 1}"
                        )
                    if vid in G:
                        raise GraphFormatError(f"{path}:{lineno}: vertex {vid} declared twice")
                    G.add_node(vid, label=_int(parts[2], "vertex label", path, lineno))
                    seen_v += 1
                elif tag == "e":
                    if len(parts) < 3:
                        raise GraphFormatError(f"{path}:{lineno}: 'e' needs <u> <v>")
                    u = _int(parts[1], "edge endpoint", path, lineno)
                    v = _int(parts[2], "edge endpoint", path, lineno)
                    for x in (u, v):
                        if x not in G:
                            raise GraphFormatError(
                                f"{path}:{lineno}: edge endpoint {x} is not a declared vertex"
                            )
                    if G.has_edge(u, v):
                        raise GraphFormatError(f"{path}:{lineno}: duplicate edge {u} {v}")
                    if edge_labels and len(parts) > 3:
                        G.add_edge(u, v, label=_int(parts[3], "edge label", path, lineno))
                    else:
                        G.add_edge(u, v)
                else:
                    raise GraphFormatError(f"{path}:{lineno}: unknown line type {tag!r}")
        except UnicodeDecodeError as exc:
            raise bad_utf8(path, exc) from None
    if n is None:
        raise GraphFormatError(f"{path}: no 't' header line (empty or not a .graph file)")
    if seen_v != n:
        raise GraphFormatError(f"{path}: header declares {n} vertices, found {seen_v}")
    if G.number_of_edges() != m:
        raise GraphFormatError(f"{path}: header declares {m} edges, found {G.number_of_edges()}")
    return G


def write_graph(G, path, *, label="label"):
    """Write a graph with nodes ``0..N-1`` in the ``t/v/e`` format (labels from ``label``).

    The file is written beside ``path`` and renamed over it once complete, so an error leaves an
    existing file as it was (:mod:`nx_gsm.interop.atomic`).

    Parameters
    ----------
    G : networkx.Graph or networkx.DiGraph
        Nodes ``0..N-1``.
    path : str or path-like
    label : str
        Node and edge attribute written as the label (a node without it gets ``0``).

    Examples
    --------
    >>> import os, tempfile, networkx as nx, nx_gsm
    >>> path = os.path.join(tempfile.mkdtemp(), "p.graph")
    >>> nx_gsm.write_graph(nx.path_graph(3), path)
    >>> nx_gsm.read_graph(path).number_of_edges()
    2
    """
    n = G.number_of_nodes()
    if set(G) != set(range(n)):
        raise nx.NetworkXError("write_graph needs nodes labelled 0..N-1")
    with atomic_open(path, "w", encoding="utf-8") as fh:
        fh.write(f"t {n} {G.number_of_edges()}\n")
        for v in range(n):
            fh.write(f"v {v} {G.nodes[v].get(label, 0)} {G.degree(v)}\n")
        for u, v, d in G.edges(data=True):
            fh.write(f"e {u} {v}" + (f" {d[label]}" if label in d else "") + "\n")
