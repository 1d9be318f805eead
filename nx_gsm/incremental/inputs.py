"""Reading a batch's inputs: edge tuples, ``(m, 2)`` arrays, pandas or cudf DataFrames of
edges or nodes, into rows ``(u, v, key, attrs)`` following NetworkX's conventions; and the
fast reading of plain ``(u, v)`` rows (:func:`plain_side`, :func:`row_ends`,
:func:`distinct_pairs`)."""

from __future__ import annotations

import collections.abc as cabc
from itertools import chain

import numpy as np

from .batch import BatchError
from .values import NOKEY

__all__ = ["is_frame", "to_pandas", "node_frame", "check_node", "edge_rows", "plain_side",
           "row_ends", "distinct_pairs"]


# -- input parsing --------------------------------------------------------------------------------
def is_frame(obj):
    mod = type(obj).__module__ or ""
    return mod.split(".")[0] == "pandas" and hasattr(obj, "columns")


def to_pandas(obj):
    """pandas DataFrames pass through; cudf (or any frame with ``to_pandas``) is converted."""
    if is_frame(obj):
        return obj
    conv = getattr(obj, "to_pandas", None)
    if callable(conv) and not isinstance(obj, (list, tuple, dict, str)):
        df = conv()
        if not is_frame(df):
            raise TypeError(f"{type(obj).__name__}.to_pandas() did not return a pandas DataFrame")
        return df
    return None


def _frame_rows(df, what, source, target, edge_key, edge_attr):
    """Rows ``(u, v, key, attrs)`` of a DataFrame (``key`` is ``NOKEY`` without ``edge_key``)."""
    cols = list(df.columns)
    for role, c in (("source", source), ("target", target), ("edge_key", edge_key)):
        if c is not None and c not in cols:
            raise BatchError(f"{what}: the DataFrame has no {role} column {c!r} (columns: {cols})")
    used = {source, target} | ({edge_key} if edge_key is not None else set())
    attr_cols = attr_columns(what, cols, used, edge_attr, "edge")
    src = df[source].tolist()
    dst = df[target].tolist()
    keys = df[edge_key].tolist() if edge_key is not None else [NOKEY] * len(src)
    vals = [df[c].tolist() for c in attr_cols]
    rows = []
    for i in range(len(src)):
        rows.append((src[i], dst[i], keys[i], {c: v[i] for c, v in zip(attr_cols, vals)}))
    return rows


def attr_columns(what, cols, used, attr, kind):
    """The attribute columns of a frame: ``attr`` True = every column not in ``used``, None or
    False = none, else a name or a list of names (each must exist)."""
    if attr is True:
        return [c for c in cols if c not in used]
    if attr is None or attr is False:
        return []
    names = [attr] if isinstance(attr, (str, int)) else list(attr)
    for c in names:
        if c not in cols:
            raise BatchError(f"{what}: the DataFrame has no {kind} attribute column {c!r}")
    return names


def node_frame(df, what, node_key, node_attr):
    """``[(n, attrs), ...]`` from a node DataFrame (``node_key`` column, attribute columns), or
    the keys alone for ``delete_nodes``."""
    cols = list(df.columns)
    if node_key not in cols:
        raise BatchError(f"{what}: the DataFrame has no node column {node_key!r} (columns: "
                         f"{cols}); name it with node_key=")
    keys = df[node_key].tolist()
    if what == "delete_nodes":
        return keys
    attr_cols = attr_columns(what, cols, {node_key}, node_attr, "node")
    vals = [df[c].tolist() for c in attr_cols]
    return [(n, {c: v[i] for c, v in zip(attr_cols, vals)}) for i, n in enumerate(keys)]


def check_node(n, where):
    if n is None:
        raise BatchError(f"{where}: None cannot be a node")
    try:
        hash(n)
    except TypeError:
        raise BatchError(f"{where}: node {n!r} is not hashable") from None
    return n


def _tuple_rows(rows, what, multigraph, inserting):
    """Normalise tuple rows to ``(u, v, key, attrs)`` following NetworkX's conventions.

    insert: ``(u, v)``, ``(u, v, attrs)``, and for multigraphs ``(u, v, key)`` and
    ``(u, v, key, attrs)``; delete: ``(u, v)`` (``(u, v, attrs)`` ignores attrs), for multigraphs
    ``(u, v, key)`` and ``(u, v, key, data)`` (data ignored).
    """
    if isinstance(rows, (str, bytes, cabc.Mapping)) or not isinstance(rows, cabc.Iterable):
        raise BatchError(f"{what}: expected a list of edge tuples or a DataFrame, "
                         f"got {type(rows).__name__}")
    out = []
    for i, r in enumerate(rows):
        if type(r) is tuple and len(r) == 2:  # the common row, without the checks below
            out.append((r[0], r[1], NOKEY, {}))
            continue
        where = f"{what}[{i}]"
        if isinstance(r, (str, bytes)) or not isinstance(r, (tuple, list)):
            raise BatchError(f"{where}: expected an edge tuple (u, v[, ...]), got {r!r}")
        if not 2 <= len(r) <= (4 if multigraph else 3):
            raise BatchError(f"{where}: an edge tuple has 2 to {4 if multigraph else 3} items, "
                             f"got {len(r)}: {r!r}")
        u, v = r[0], r[1]
        key, attrs = NOKEY, {}
        if len(r) == 3:
            if multigraph and not (inserting and isinstance(r[2], cabc.Mapping)):
                key = r[2]
            else:
                attrs = r[2]
        elif len(r) == 4:
            key, attrs = r[2], r[3]
        if inserting and not isinstance(attrs, cabc.Mapping):
            raise BatchError(f"{where}: edge attributes must be a dict, got {attrs!r}")
        out.append((u, v, key, dict(attrs) if inserting else {}))
    return out


def edge_rows(obj, what, multigraph, inserting, source, target, edge_key, edge_attr):
    if obj is None:
        return []
    if isinstance(obj, np.ndarray):
        obj = obj.tolist()  # an (m, 2) array of node ids: Python scalars, as NetworkX would get
    df = to_pandas(obj)
    if df is not None:
        rows = _frame_rows(df, what, source, target, edge_key, edge_attr if inserting else None)
    else:
        rows = _tuple_rows(obj, what, multigraph, inserting)
    for i, (u, v, key, _) in enumerate(rows):
        if key is NOKEY and u is not None and v is not None:
            try:  # the common row: hashable endpoints, no key
                hash(u), hash(v)
                continue
            except TypeError:
                pass
        where = f"{what}[{i}]"
        check_node(u, where)
        check_node(v, where)
        if key is not NOKEY:
            if not multigraph:
                raise BatchError(f"{where}: edge keys need a multigraph, got key {key!r}")
            try:
                hash(key)
            except TypeError:
                raise BatchError(f"{where}: edge key {key!r} is not hashable") from None
    return rows


def plain_side(obj, inserting, source, target, edge_key, edge_attr):
    """One side of a batch as plain ``(u, v)`` rows: ``(rows, ends)``, ``ends`` the rows as an
    ``(m, 2)`` int64 array where they came as one (an integer array, or a DataFrame -- pandas,
    or cudf through ``to_pandas`` -- whose ``source`` and ``target`` columns are integers,
    without ``edge_key`` and, when inserting, without attribute columns: ``edge_attr`` selects
    none), else None (tuples: :func:`row_ends` reads them); None if the side is not plain
    rows. The rows are Python values, as the general path reads them."""
    if obj is None:
        return [], np.zeros((0, 2), dtype=np.int64)
    if type(obj) is list or type(obj) is tuple:
        if not all([type(r) is tuple and len(r) == 2 for r in obj]):
            return None
        return obj, None
    arr = obj if isinstance(obj, np.ndarray) else None
    if arr is None:
        try:
            df = to_pandas(obj)
        except Exception:  # (the general path names what is wrong)
            return None
        if df is None or edge_key is not None:
            return None
        cols = list(df.columns)
        if source not in cols or target not in cols:
            return None
        if inserting:
            try:
                if attr_columns("insert", cols, {source, target}, edge_attr, "edge"):
                    return None
            except BatchError:
                return None
        arr = np.column_stack([df[source].to_numpy(), df[target].to_numpy()]) if len(df) \
            else np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.dtype.kind not in "iu":
        return None  # (nullable integer columns with missing values come as objects)
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
        return None
    return list(map(tuple, arr.tolist())), arr.astype(np.int64)


def row_ends(ins, dels):
    """The rows' endpoints as an ``(n, 2)`` int64 array, deletions first, or None if a key is
    not an integer that fits."""
    n = len(ins) + len(dels)
    try:
        return np.fromiter(chain.from_iterable(chain(dels, ins)), dtype=np.int64,
                           count=2 * n).reshape(n, 2)
    except (TypeError, ValueError, OverflowError):
        return None


def distinct_pairs(ins, dels, directed, ends=None):
    """True if no pair repeats within ``ins`` or ``dels`` and none is in both (pairs unordered
    unless ``directed``): no pair occurs twice in the two lists together. Integer node keys
    (``ends``, :func:`row_ends`) are compared as NumPy keys; anything else through sets of
    (frozen)sets. A false answer only sends the batch down the general path, which names the
    repeat, so keys that collide in NumPy (floats, very large ids) are harmless."""
    if ends is not None:
        u, v = ends[:, 0], ends[:, 1]
        if not directed:
            u, v = np.minimum(u, v), np.maximum(u, v)
        keys = np.sort((u << 31) ^ v)  # a repeat: equal keys
        return not (keys[1:] == keys[:-1]).any()
    if not directed:
        ins, dels = map(frozenset, ins), map(frozenset, dels)
    ins, dels = list(ins), list(dels)
    si, sd = set(ins), set(dels)
    return len(si) == len(ins) and len(sd) == len(dels) and si.isdisjoint(sd)
