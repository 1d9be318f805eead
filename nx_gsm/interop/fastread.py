"""Integer edge lists and CSV files read by pandas, straight into NumPy arrays.

The line-by-line readers of :mod:`nx_gsm.interop.formats` define what a file means; this module
reads a file only where pandas is certain to read the same thing, and answers ``None`` for every
other file: the caller then reads it line by line, which also names the line of any error. A file
qualifies when, past its header (a CSV header row, or an edge list's leading comment and blank
lines), it holds only ASCII digits, minus signs, the separator and line ends (LF or CRLF), every
number is written as Python writes an int within int64 (``01``, ``-0`` or ``+1`` are string keys
to the line readers, so they never qualify), every row has as many fields as the first (and, in
a CSV file, no cell is empty). Those are the big graphs: SNAP and karateclub edge lists, numeric
CSV exports. pandas parses with its pyarrow engine when pyarrow is installed and the separators
allow (one field separator character between fields), else with its C engine.

The graphs built here are the ones the line readers build: the same node keys in the same order
(the order in which the file first mentions them), the same attribute dicts, repeated edges
merged as NetworkX merges them (the last row's attribute values win), self-loops kept. Files
smaller than :data:`FAST_MIN_BYTES` are left to the line readers: importing pandas costs more than
reading them.
"""

from __future__ import annotations

import csv
import gc
import io
import os
import warnings

import networkx as nx
import numpy as np

from ..graph import GsmGraph, in_csr
from ..plan.labels import index_node_labels

__all__ = ["FAST_MIN_BYTES", "read_csv", "read_edgelist"]

# below this size the line readers finish before pandas has been imported (about 0.4 s)
FAST_MIN_BYTES = 1 << 20

_BOM = b"\xef\xbb\xbf"
_CHUNK = 1 << 24  # bytes scanned per NumPy pass (bounds the temporaries to a few times this)
_NL, _CR, _MINUS, _ZERO = 10, 13, 45, 48


def _pandas(size):
    """pandas, when it is installed and worth importing for a file of ``size`` bytes."""
    if size < FAST_MIN_BYTES:
        return None
    try:
        import pandas as pd
    except ImportError:
        return None
    return pd


def _has_pyarrow():
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def _read_bytes(path):
    with open(path, "rb") as fh:
        data = fh.read()
    return data[3:] if data.startswith(_BOM) else data


def _scan(buf, seps):
    """``(ok, tight)`` for the bytes of ``buf``: ``ok`` when they are only digits, minus signs,
    ``seps``, CRs and LFs (the caller has checked that every CR precedes an LF), every number an
    int as Python writes one; ``tight`` when moreover no separator starts or ends a line or
    follows another (no empty field)."""
    allowed = np.zeros(256, dtype=bool)
    allowed[list(b"0123456789-\r\n" + seps)] = True
    is_sep = np.zeros(256, dtype=bool)
    is_sep[list(seps)] = True
    tight = True
    for lo in range(0, len(buf), _CHUNK):
        hi = min(lo + _CHUNK, len(buf))
        # the byte before and after the chunk (a line end outside the buffer)
        ext = np.empty(hi - lo + 2, dtype=np.uint8)
        ext[0] = buf[lo - 1] if lo else _NL
        ext[-1] = buf[hi] if hi < len(buf) else _NL
        ext[1:-1] = np.frombuffer(buf, dtype=np.uint8, count=hi - lo, offset=lo)
        cur, prv, nxt = ext[1:-1], ext[:-2], ext[2:]
        if not allowed[cur].all():
            return False, False
        digit_prv, digit_nxt = (prv - _ZERO) < 10, (nxt - _ZERO) < 10
        minus = cur == _MINUS
        zero = cur == _ZERO
        # a minus sign starts a number: "1-2", "--1", "-" and "-0..." are not ints of Python's
        if (minus & (digit_prv | (prv == _MINUS) | ~digit_nxt)).any() or \
                (zero & (prv == _MINUS)).any():
            return False, False
        # a leading zero: "01" is a string key to the line readers
        if (zero & digit_nxt & ~(digit_prv | (prv == _MINUS))).any():
            return False, False
        if tight:
            sep = is_sep[cur]
            edge = is_sep[prv] | is_sep[nxt] | (prv == _NL) | (nxt == _NL) | (nxt == _CR)
            tight = not (sep & edge).any()
    return True, tight


def _parse(pd, buf, sep, engine):
    """The int64 columns pandas reads from ``buf``, or None (any doubt: not int64, an error)."""
    kw = {"header": None, "sep": sep, "engine": engine}
    if engine == "c":
        kw["na_filter"] = False  # "" stays a string: a short row makes a column not int64
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            df = pd.read_csv(io.BytesIO(buf), **kw)
    except Exception:  # noqa: BLE001 - whatever pandas objects to, the line reader decides
        return None
    cols = [df[c].to_numpy() for c in df.columns]
    if not cols or len(cols[0]) == 0 or any(c.dtype != np.int64 for c in cols):
        return None
    return cols


def _first_content_line(data):
    """Offset of an edge list's first line that is not blank or a comment (as the line reader
    sees them), or None where a skipped line is not UTF-8 (the line reader names it)."""
    pos = 0
    while pos < len(data):
        end = data.find(b"\n", pos)
        end = len(data) if end < 0 else end + 1
        try:
            line = data[pos:end].decode("utf-8")
        except UnicodeDecodeError:
            return None
        if line.split("#", 1)[0].split("%", 1)[0].split():
            return pos
        pos = end
    return pos


# -- edge lists -------------------------------------------------------------------------------
def read_edgelist(path, *, directed=False, as_gsm=False):
    """The graph of a whitespace edge list (see :func:`nx_gsm.interop.formats.read_edgelist`),
    or None where the file is small, pandas is missing or the file does not qualify."""
    pd = _pandas(os.path.getsize(path))
    if pd is None:
        return None
    cols = _edgelist_columns(pd, path)
    if cols is None:
        return None
    return _edgelist_graph(pd, _drop_count_header(pd, cols), directed, as_gsm)


def _edgelist_columns(pd, path):
    """``[u, v]`` or ``[u, v, label]`` int64 columns of an edge list, a count header included."""
    data = _read_bytes(path)
    if data.count(b"\r") != data.count(b"\r\n"):
        return None  # a lone CR ends a line for Python, not for every parser
    start = _first_content_line(data)
    if start is None or start == len(data):
        return None
    body = data[start:]
    ok, tight = _scan(body, b" \t")
    if not ok:
        return None
    # pyarrow splits on one character: a file with one kind of separator, never doubled
    seps = [s for s in (" ", "\t") if s.encode() in body]
    if tight and len(seps) == 1 and _has_pyarrow():
        cols = _parse(pd, body, seps[0], "pyarrow")
    else:
        cols = _parse(pd, body, r"\s+", "c")
    return cols if cols is not None and len(cols) in (2, 3) else None


def _drop_count_header(pd, cols):
    """``cols`` without a first row ``N M`` that counts the nodes and edges of the rest (the
    rule of :func:`nx_gsm.interop.formats.read_edgelist`)."""
    if len(cols) != 2:
        return cols
    u, v = cols
    n, m = int(u[0]), int(v[0])
    if n < 0 or m < 0 or m != len(u) - 1:
        return cols
    rest = [u[1:], v[1:]]
    if m and (min(c.min() for c in rest) < 0 or max(c.max() for c in rest) > n or
              len(pd.unique(np.concatenate(rest))) > n):
        return cols
    return rest


def _first_seen(pd, first, second):
    """Node ids of ``first[i]`` / ``second[i]`` numbered in order of first mention (``first[i]``
    before ``second[i]``), and the node keys (Python ints) in that order."""
    flat = np.empty(2 * len(first), dtype=np.int64)
    flat[0::2], flat[1::2] = first, second
    codes, uniques = pd.factorize(flat)
    codes = codes.astype(np.int64, copy=False)
    return codes[0::2], codes[1::2], uniques.tolist()


def _last_of_each_edge(pd, s, d, n, directed):
    """Rows of ``s -> d`` (ids), one per distinct edge: the last row naming it (NetworkX merges
    a repeated edge's attributes into the first's dict, so the last values win)."""
    a, b = (s, d) if directed else (np.minimum(s, d), np.maximum(s, d))
    key = a * np.int64(max(n, 1)) + b
    return np.flatnonzero(~pd.Series(key, copy=False).duplicated(keep="last").to_numpy())


def _dicts(n, columns):
    """``n`` new dicts; ``columns``: ``{name: int64 array}`` values in column order."""
    if not columns:
        return [{} for _ in range(n)]
    names = list(columns)
    return [dict(zip(names, t)) for t in zip(*(columns[c].tolist() for c in names))]


def _gsm(keys, s, d, directed, node_data, edge_data):
    """A simple GsmGraph from distinct edges ``s -> d`` (ids) and their attribute dicts, laid out
    as :func:`~nx_gsm.interop.networkx.from_networkx` lays out the same NetworkX graph."""
    n = len(keys)
    loop = s == d
    loops = np.zeros(n, dtype=np.int32)
    loops[s[loop]] = 1
    loop_data = {int(s[r]): edge_data[r] for r in np.flatnonzero(loop).tolist()}
    rows = np.flatnonzero(~loop)
    src, dst = s[rows], d[rows]
    if not directed:  # every edge in both rows, sharing one dict as NetworkX's adjacency does
        src, dst, rows = (np.concatenate([src, dst]), np.concatenate([dst, src]),
                          np.concatenate([rows, rows]))
    order = np.argsort(src * np.int64(max(n, 1)) + dst)
    src, dst, rows = src[order], dst[order], rows[order]
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    mult = np.ones(dst.size, dtype=np.int32)
    data = np.empty(len(edge_data), dtype=object)
    data[:] = edge_data
    kw = in_csr(n, src, dst, mult) if directed else {}
    g = GsmGraph(indptr=indptr, indices=dst, mult=mult, loops=loops, node_keys=keys,
                 directed=directed, node_data=node_data, edge_data=data[rows].tolist(),
                 loop_data=loop_data, **kw)
    g.owns_node_data = True
    index_node_labels(g, node_data[0] if node_data else ())
    return g


def _edgelist_graph(pd, cols, directed, as_gsm):
    """The graph of an edge list's columns (count header already dropped): a NetworkX Graph or
    DiGraph built as the line reader builds it, or with ``as_gsm`` the GsmGraph of that graph."""
    u, v = cols[0], cols[1]
    labels = {"label": cols[2]} if len(cols) == 3 else {}
    gc_was = gc.isenabled()
    gc.disable()  # hundreds of thousands of new dicts: the collector would walk them again
    try:
        if not as_gsm:
            G = nx.DiGraph() if directed else nx.Graph()
            if labels:
                G.add_edges_from(zip(u.tolist(), v.tolist(), _dicts(len(u), labels)))
            else:
                G.add_edges_from(zip(u.tolist(), v.tolist()))
            return G
        s, d, keys = _first_seen(pd, u, v)
        rows = _last_of_each_edge(pd, s, d, len(keys), directed)
        edge_data = _dicts(rows.size, {k: c[rows] for k, c in labels.items()})
        return _gsm(keys, s[rows], d[rows], directed, [{} for _ in keys], edge_data)
    finally:
        if gc_was:
            gc.enable()


# -- CSV --------------------------------------------------------------------------------------
def read_csv(path, delimiter, columns, *, directed=False, as_gsm=False):
    """The graph of a CSV file (see :func:`nx_gsm.interop.formats.read_csv`), or None where the
    file is small, pandas is missing or the file does not qualify. ``columns(header)`` gives
    ``(source index, target index, role per column)`` as the line reader assigns them (and
    raises its errors about the header)."""
    if not isinstance(delimiter, str) or len(delimiter) != 1 or \
            delimiter in "0123456789-\r\n\"" or not delimiter.isascii():
        return None
    pd = _pandas(os.path.getsize(path))
    if pd is None:
        return None
    table = _csv_table(pd, path, delimiter)
    if table is None:
        return None
    header, cols = table
    si, ti, roles = columns(header)
    return _csv_graph(pd, cols, si, ti, roles, directed, as_gsm)


def _csv_table(pd, path, delimiter):
    """``(header, columns)`` of a CSV file of integers: the stripped header cells as the line
    reader reads them and one int64 array per column."""
    data = _read_bytes(path)
    if data.count(b"\r") != data.count(b"\r\n"):
        return None  # a lone CR ends a line for Python, not for every parser
    end = data.find(b"\n") + 1
    if end <= 0 or b'"' in data[:end]:
        return None
    try:
        row = next(csv.reader([data[:end].decode("utf-8")], delimiter=delimiter))
    except (UnicodeDecodeError, csv.Error, StopIteration):
        return None
    header = [c.strip() for c in row]
    body = data[end:]
    if not any(header) or not _scan(body, delimiter.encode())[1]:
        return None
    engine = "pyarrow" if _has_pyarrow() else "c"
    cols = _parse(pd, body, delimiter, engine)
    if cols is None or len(cols) != len(header):
        return None
    return header, cols


def _csv_graph(pd, cols, si, ti, roles, directed, as_gsm):
    """The graph of a CSV table (``si``/``ti``: end node columns; ``roles`` per column as
    :func:`nx_gsm.interop.formats.read_csv` assigns them), or None where a node is given two
    values of one attribute (the line reader names both lines)."""
    u, v = cols[si], cols[ti]
    node_cols = [(i, r) for i, r in enumerate(roles) if r is not None and r[0] != "e"]
    edge_cols = {r[1]: cols[i] for i, r in enumerate(roles) if r is not None and r[0] == "e"}
    # each row mentions its nodes in column order (attribute cells first, then the edge)
    t_first = bool(node_cols) and node_cols[0][1][0] == "t"
    a, b = (v, u) if t_first else (u, v)
    ida, idb, keys = _first_seen(pd, a, b)
    s, d = (idb, ida) if t_first else (ida, idb)
    n = len(keys)
    gc_was = gc.isenabled()
    gc.disable()  # hundreds of thousands of new dicts: the collector would walk them again
    try:
        node_data = [{} for _ in range(n)]
        for name in dict.fromkeys(r[1] for _, r in node_cols):
            got = [(s if r[0] == "s" else d, cols[i]) for i, r in node_cols if r[1] == name]
            ids = np.concatenate([x for x, _ in got])
            vals = np.concatenate([x for _, x in got])
            order = np.lexsort((vals, ids))
            ids, vals = ids[order], vals[order]
            first = np.ones(ids.size, dtype=bool)
            first[1:] = ids[1:] != ids[:-1]
            starts = np.flatnonzero(first)
            ends = np.append(starts[1:], ids.size) - 1
            if (vals[starts] != vals[ends]).any():
                return None
            for i, x in zip(ids[starts].tolist(), vals[starts].tolist()):
                node_data[i][name] = x
        if not as_gsm:
            G = nx.DiGraph() if directed else nx.Graph()
            G.add_nodes_from(zip(keys, node_data))
            uk, vk = u.tolist(), v.tolist()
            G.add_edges_from(zip(uk, vk, _dicts(len(uk), edge_cols)))
            return G
        rows = _last_of_each_edge(pd, s, d, n, directed)
        edge_data = _dicts(rows.size, {k: c[rows] for k, c in edge_cols.items()})
        return _gsm(keys, s[rows], d[rows], directed, node_data, edge_data)
    finally:
        if gc_was:
            gc.enable()
