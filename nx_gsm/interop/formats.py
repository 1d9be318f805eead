"""Graph files the command line reads, chosen by extension (or ``fmt``).

=============  ==========================  ==================================================
format         extensions                  contents
=============  ==========================  ==================================================
``graph``      ``.graph``                  Sun & Luo ``t/v/e`` (vertex label -> ``label``,
                                           optional edge label -> ``label``)
``csv``        ``.csv``, ``.tsv``          header row; one edge per row (see :func:`read_csv`)
``graphml``    ``.graphml``, ``.xml``      GraphML via :func:`networkx.read_graphml`
``gml``        ``.gml``                    GML via :func:`networkx.read_gml` (node ids as keys,
                                           a ``label`` field stays a node attribute)
``edgelist``   anything else               ``u v [edge_label]`` per line, whitespace separated
=============  ==========================  ==================================================

Node ids and attribute values written as Python writes an int (ASCII digits, an optional minus
sign, no leading zero) become ints, so ``3`` in a CSV and ``3`` in a ``.graph`` file are the same
label; everything else stays a string, so ``01``, ``+1``, ``1_0`` or ``١٢`` never merge with
another node. Text files are UTF-8; a byte-order mark is skipped. Every error is a
:class:`~nx_gsm.interop.files.GraphFormatError` (a ``ValueError``) that names the file and, where
there is one, the line.

Edge lists and CSV files are read line by line; with pandas installed (the ``frames`` extra;
pyarrow makes it faster still) a large file of integers is parsed by pandas instead, into the
same graph (:mod:`nx_gsm.interop.fastread`). ``as_gsm=True`` returns nx-gsm's own graph
(:class:`~nx_gsm.graph.GsmGraph`) instead of a NetworkX graph: built from arrays for such files,
it skips building a NetworkX graph that the matching functions would convert again.
"""

from __future__ import annotations

import csv
import os
import re

import networkx as nx

from . import fastread
from .files import GraphFormatError, bad_utf8, parse_int, read_graph
from .networkx import from_networkx

__all__ = ["FORMATS", "guess_format", "read_any", "read_csv", "read_edgelist"]

FORMATS = ("graph", "edgelist", "csv", "graphml", "gml")

_BY_EXT = {
    ".graph": "graph",
    ".csv": "csv",
    ".tsv": "csv",
    ".graphml": "graphml",
    ".xml": "graphml",
    ".gml": "gml",
}


def guess_format(path):
    """The format name for ``path`` from its extension (``edgelist`` when none matches)."""
    ext = os.path.splitext(os.fspath(path))[1].lower()
    return _BY_EXT.get(ext, "edgelist")


# an integer is written as Python writes one: ASCII digits, an optional minus sign, no leading
# zero. Any other spelling stays a string, so two different tokens never become one key
# ("01" and "1", "+1" and "1", "-0" and "0"; and int() would read "١٢", "1_0" or "²")
_INT = re.compile(r"-?(?:0|[1-9][0-9]*)", re.ASCII)


def _value(tok, path, lineno):
    """``"12"`` -> 12, ``"-3"`` -> -3, anything else unchanged (a string, stripped)."""
    t = tok.strip()
    if _INT.fullmatch(t) and t != "-0":
        return parse_int(t, "a number", path, lineno)
    return t


def _empty(directed):
    return nx.DiGraph() if directed else nx.Graph()


def read_edgelist(path, *, directed=False, as_gsm=False):
    """``u v [edge_label]`` per line; ``#`` and ``%`` start comments; blank lines are skipped.

    A third field becomes edge attribute ``label``. Repeated edges are merged (the graph is
    simple); nodes appear only through their edges. A first line ``N M`` that gives the number
    of nodes and edges (as SNAP and other edge-list files do; ``M`` lines follow, on at most
    ``N`` nodes numbered up to ``N``) is a header, not an edge. ``as_gsm``: return a GsmGraph.
    """
    path = os.fspath(path)
    G = fastread.read_edgelist(path, directed=directed, as_gsm=as_gsm)
    if G is not None:
        return G
    G = _empty(directed)
    edges = []
    try:
        # utf-8-sig: a byte-order mark (Excel and Windows tools write one) is not the first key
        with open(path, encoding="utf-8-sig") as fh:
            for lineno, line in enumerate(fh, 1):
                line = line.split("#", 1)[0].split("%", 1)[0]
                parts = line.split()
                if not parts:
                    continue
                if len(parts) not in (2, 3):
                    raise GraphFormatError(
                        f"{path}:{lineno}: expected 'u v' or 'u v label', got {len(parts)} fields"
                    )
                u, v = _value(parts[0], path, lineno), _value(parts[1], path, lineno)
                if len(parts) == 3:
                    edges.append((u, v, {"label": _value(parts[2], path, lineno)}))
                else:
                    edges.append((u, v))
    except UnicodeDecodeError as exc:
        raise bad_utf8(path, exc) from None
    if edges and _is_count_header(edges[0], edges[1:]):
        del edges[0]
    G.add_edges_from(edges)
    return from_networkx(G) if as_gsm else G


def _is_count_header(first, rest):
    """Whether an edge list's first line ``N M`` counts the nodes and edges of the rest."""
    if len(first) != 2 or not all(type(x) is int and x >= 0 for x in first[:2]):
        return False
    n, m = first
    if m != len(rest):
        return False
    nodes = {x for e in rest for x in e[:2]}
    return len(nodes) <= n and all(type(x) is int and 0 <= x <= n for x in nodes)


def _csv_columns(path, header, source, target):
    """``(source index, target index, role per column)`` of a CSV header; a role is None for
    the end node columns, else ``("s" | "t", node attribute)`` or ``("e", edge attribute)``."""
    low = [h.lower() for h in header]

    def col(name, default_index, what):
        if name is not None:
            if name not in header:
                raise GraphFormatError(f"{path}: no {what} column {name!r} in the header {header}")
            return header.index(name)
        if what in low:
            return low.index(what)
        if len(header) < 2:
            raise GraphFormatError(
                f"{path}:1: the header needs at least two columns (source, target)"
            )
        return default_index

    si = col(source, 0, "source")
    ti = col(target, 1, "target")
    if si == ti:
        raise GraphFormatError(f"{path}: source and target are the same column")
    spre, tpre = header[si] + "_", header[ti] + "_"
    roles = []
    for i, h in enumerate(header):
        if i in (si, ti):
            roles.append(None)
        elif h.startswith(spre) and len(h) > len(spre):
            roles.append(("s", h[len(spre):]))
        elif h.startswith(tpre) and len(h) > len(tpre):
            roles.append(("t", h[len(tpre):]))
        else:
            roles.append(("e", h))
    return si, ti, roles


def read_csv(path, *, directed=False, source=None, target=None, delimiter=None, as_gsm=False):
    """One edge per row of a CSV file with a header row.

    Columns:

    * ``source`` / ``target`` (or the names given): the edge's end nodes. Without such columns
      the first two columns are the end nodes.
    * ``<source column>_<attr>`` / ``<target column>_<attr>`` (e.g. ``source_label``,
      ``target_label``): node attribute ``attr`` of that end node. A node given two different
      values for one attribute is an error.
    * any other column: an edge attribute of that name (empty cells are left out).

    ``delimiter`` defaults to a tab for ``.tsv`` files and a comma otherwise. ``as_gsm``: return
    a GsmGraph.
    """
    path = os.fspath(path)
    if delimiter is None:
        delimiter = "\t" if path.lower().endswith(".tsv") else ","
    G = fastread.read_csv(path, delimiter,
                          lambda header: _csv_columns(path, header, source, target),
                          directed=directed, as_gsm=as_gsm)
    if G is not None:
        return G
    G = _empty(directed)
    node_attr_line = {}
    reader = None
    try:
        # utf-8-sig: with a byte-order mark the first header name would not be found
        with open(path, newline="", encoding="utf-8-sig") as fh:
            reader = csv.reader(fh, delimiter=delimiter)
            header = None
            for row in reader:
                if row and any(c.strip() for c in row):
                    header = [c.strip() for c in row]
                    break
            if header is None:
                raise GraphFormatError(f"{path}: empty CSV file (a header row is needed)")
            si, ti, roles = _csv_columns(path, header, source, target)
            for row in reader:
                lineno = reader.line_num
                if not row or not any(c.strip() for c in row):
                    continue
                if len(row) != len(header):
                    raise GraphFormatError(
                        f"{path}:{lineno}: {len(row)} fields, the header has {len(header)}"
                    )
                u, v = _value(row[si], path, lineno), _value(row[ti], path, lineno)
                if u == "" or v == "":
                    raise GraphFormatError(f"{path}:{lineno}: empty source or target")
                eattrs = {}
                for cell, role in zip(row, roles):
                    if role is None or cell.strip() == "":
                        continue
                    kind, name = role
                    val = _value(cell, path, lineno)
                    if kind == "e":
                        eattrs[name] = val
                        continue
                    node = u if kind == "s" else v
                    if node not in G:
                        G.add_node(node)
                    old = G.nodes[node].get(name, val)
                    if old != val:
                        raise GraphFormatError(
                            f"{path}:{lineno}: node {node!r} has {name}={val!r} here but "
                            f"{name}={old!r} on line {node_attr_line[node, name]}"
                        )
                    if name not in G.nodes[node]:
                        node_attr_line[node, name] = lineno
                    G.nodes[node][name] = val
                G.add_edge(u, v, **eattrs)
    except UnicodeDecodeError as exc:
        raise bad_utf8(path, exc) from None
    except csv.Error as exc:
        where = f"{path}:{reader.line_num}" if reader is not None and reader.line_num else path
        raise GraphFormatError(f"{where}: malformed CSV ({exc})") from None
    return from_networkx(G) if as_gsm else G


def read_any(path, fmt=None, *, directed=False, edge_labels=True, csv_source=None,
             csv_target=None, csv_delimiter=None, as_gsm=False):
    """Read a graph file in any of :data:`FORMATS` (``fmt=None``: by extension).

    ``directed`` applies to the formats that do not say (``graph``, ``edgelist``, ``csv``);
    GraphML and GML files carry their own directedness. ``edge_labels=False`` drops the fourth
    field of ``.graph`` edge lines (the Sun & Luo queries write a meaningless ``0`` there).
    ``as_gsm=True`` returns a :class:`~nx_gsm.graph.GsmGraph` (the graph the matching functions
    would convert the NetworkX graph to), read straight from arrays where the file allows.
    """
    path = os.fspath(path)
    fmt = fmt or guess_format(path)
    if fmt not in FORMATS:
        raise ValueError(f"unknown graph format {fmt!r}; choose one of {', '.join(FORMATS)}")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{path}: no such file")
    if os.path.isdir(path):
        raise IsADirectoryError(f"{path}: is a directory, not a graph file")
    if fmt == "edgelist":
        return read_edgelist(path, directed=directed, as_gsm=as_gsm)
    if fmt == "csv":
        return read_csv(path, directed=directed, source=csv_source, target=csv_target,
                        delimiter=csv_delimiter, as_gsm=as_gsm)
    G = _read_nx(path, fmt, directed, edge_labels)
    return from_networkx(G) if as_gsm else G


def _read_nx(path, fmt, directed, edge_labels):
    if fmt == "graph":
        return read_graph(path, edge_labels=edge_labels, directed=directed)
    try:
        if fmt == "graphml":
            return nx.read_graphml(path)
        # label=None: node ids become the keys and a "label" field stays an attribute, so
        # --label label works on GML files as on the other formats. NetworkX reads GML as
        # ASCII, so a byte-order mark is skipped here
        with open(path, "rb") as fh:
            if fh.read(3) != b"\xef\xbb\xbf":
                fh.seek(0)
            return nx.read_gml(fh, label=None)
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - NetworkX's parsers raise many kinds on junk
        # (found by tests/test_fuzz_readers.py: AttributeError, TypeError, UnicodeDecodeError)
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise GraphFormatError(f"{path}: malformed {fmt.upper()} file ({msg})") from None
