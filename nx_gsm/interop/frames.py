"""Edge lists in data frames (pandas, cuDF, Arrow) and CSR arrays (NumPy, CuPy) -> GsmGraph.

Written against pandas >= 2, pyarrow >= 14, and the public APIs of RAPIDS 24.x-26.x
(``cudf.DataFrame.to_pandas`` / ``Series.to_cupy``, ``cugraph.Graph.view_edge_list``, nx-cugraph's
``CudaGraph`` attributes ``src_indices``/``dst_indices``/``node_values``/``edge_values``/
``key_to_id``); cuDF, cuGraph and nx-cugraph are never imported unless such an object is passed.
The host model is NumPy, so device columns are copied to the host once here (GPU engines mirror
the graph back on the device).
"""

from __future__ import annotations

import numpy as np

from ..graph import GsmGraph, csr_sources
from ..plan.labels import index_node_labels

__all__ = ["from_edgelist", "from_csr", "from_cugraph", "from_nx_cugraph"]


def _module(obj):
    return type(obj).__module__.split(".")[0]


def _to_host_array(col):
    """A column (pandas/cuDF Series, Arrow array, NumPy/CuPy array, list) as a NumPy array."""
    mod = _module(col)
    if mod in ("cudf", "cupy"):
        arr = col.to_cupy() if hasattr(col, "to_cupy") else col
        return arr.get()
    if mod == "pyarrow":
        return col.to_numpy(zero_copy_only=False)
    if hasattr(col, "to_numpy"):
        return col.to_numpy()
    return np.asarray(col)


def _columns(df):
    mod = _module(df)
    if mod == "pyarrow":
        return list(df.column_names), lambda c: _to_host_array(df.column(c))
    if hasattr(df, "columns"):
        return list(df.columns), lambda c: _to_host_array(df[c])
    raise TypeError(f"expected a pandas/cuDF DataFrame or an Arrow table, got {type(df).__name__}")


def _keys(values):
    """Python node keys (NumPy scalars become Python scalars: results must be plain Python)."""
    return values.tolist() if isinstance(values, np.ndarray) else list(values)


def from_edgelist(df, source="source", target="target", *, edge_attr=None, node_frame=None,
                  node_key=None, node_attr=None, directed=False, multigraph=False):
    """Build a :class:`GsmGraph` from an edge-list frame.

    Parameters
    ----------
    df : pandas.DataFrame, cudf.DataFrame or pyarrow.Table
        One row per edge (undirected: either orientation, once).
    source, target : str
        Column names of the endpoints (any hashable key type).
    edge_attr : str, list of str, True or None
        Columns to keep as edge attributes (True: every other column).
    node_frame : frame, optional
        One row per node: its key column ``node_key`` and attribute columns ``node_attr``
        (str, list, or True for every other column). Nodes are ordered as in this frame, then
        any edge endpoint missing from it in order of first appearance.
    directed, multigraph : bool
        Graph class. Repeated rows are rejected unless ``multigraph=True``.

    Examples
    --------
    >>> import pandas as pd, networkx as nx, nx_gsm
    >>> df = pd.DataFrame({"source": ["a", "b", "c"], "target": ["b", "c", "a"]})
    >>> g = nx_gsm.from_edgelist(df)
    >>> nx_gsm.count_subgraph_monomorphisms(g, nx.cycle_graph(3))
    6
    """
    names, get = _columns(df)
    for c in (source, target):
        if c not in names:
            raise KeyError(f"edge list has no column {c!r} (columns: {names})")
    src_v, dst_v = get(source), get(target)
    if src_v.shape != dst_v.shape:
        raise ValueError("source and target columns differ in length")
    keys, index = [], {}
    nattr_rows = None
    if node_frame is not None:
        nnames, nget = _columns(node_frame)
        if node_key is None or node_key not in nnames:
            raise KeyError(f"node_frame needs its key column: node_key={node_key!r} not in "
                           f"{nnames}")
        for k in _keys(nget(node_key)):
            if k in index:
                raise ValueError(f"node_frame lists node {k!r} twice")
            index[k] = len(keys)
            keys.append(k)
        if node_attr is True:
            node_attr = [c for c in nnames if c != node_key]
        elif isinstance(node_attr, str):
            node_attr = [node_attr]
        if node_attr:
            cols = {a: _keys(nget(a)) for a in node_attr}
            nattr_rows = [{a: cols[a][i] for a in node_attr} for i in range(len(keys))]
    ends = []
    for col in (src_v, dst_v):
        ids = np.empty(col.shape[0], dtype=np.int64)
        for i, k in enumerate(_keys(col)):
            j = index.get(k)
            if j is None:
                j = index[k] = len(keys)
                keys.append(k)
            ids[i] = j
        ends.append(ids)
    if nattr_rows is not None:
        nattr_rows += [{} for _ in range(len(keys) - len(nattr_rows))]
    edge_data = None
    if edge_attr is True:
        edge_attr = [c for c in names if c not in (source, target)]
    elif isinstance(edge_attr, str):
        edge_attr = [edge_attr]
    if edge_attr:
        for a in edge_attr:
            if a not in names:
                raise KeyError(f"edge list has no column {a!r}")
        cols = {a: _keys(get(a)) for a in edge_attr}
        edge_data = [{a: cols[a][i] for a in edge_attr} for i in range(src_v.shape[0])]
    return GsmGraph.from_edges(keys, ends[0], ends[1], directed=directed, multigraph=multigraph,
                               node_data=nattr_rows, edge_data=edge_data)


def from_csr(indptr, indices, *, directed=False, node_keys=None, node_labels=None,
             on_device=None):
    """A graph from CSR arrays (NumPy or CuPy), e.g. a SciPy or cuGraph adjacency.

    For undirected graphs the matrix is symmetric (every edge in both rows) or holds one triangle
    (every edge once, upper or lower); anything else raises ValueError. Device arrays
    (CuPy, or anything with ``__cuda_array_interface__``) give a
    :class:`~nx_gsm.interop.device.DeviceGraph` that the GPU engine matches in place, with no host
    copy (``on_device=False`` forces the host model); host arrays give a GsmGraph.
    ``node_labels`` (integer array, one per node) become the node attribute ``"label"`` of a
    GsmGraph, or the device labels of a DeviceGraph (match them with ``node_label=...``).

    Examples
    --------
    >>> import numpy as np, networkx as nx, nx_gsm
    >>> g = nx_gsm.from_csr(np.array([0, 2, 4, 6]), np.array([1, 2, 0, 2, 0, 1]))
    >>> nx_gsm.count_subgraph_monomorphisms(g, nx.path_graph(3))
    6
    """
    from .device import DeviceGraph, is_device_array

    if on_device is None:
        on_device = is_device_array(indptr) or is_device_array(indices)
    if on_device:
        return DeviceGraph(indptr, indices, directed=directed, node_labels=node_labels,
                           node_keys=node_keys)
    indptr = _to_host_array(indptr).astype(np.int64)
    indices = _to_host_array(indices).astype(np.int64)
    n = indptr.size - 1
    if indptr[0] != 0 or np.any(np.diff(indptr) < 0) or indptr[-1] != indices.size:
        raise ValueError("indptr must start at 0, never decrease and end at len(indices)")
    src = csr_sources(indptr)
    dst = indices
    if not directed:
        src, dst = _one_triangle(src, dst, n)
    keys = list(range(n)) if node_keys is None else list(node_keys)
    node_data = None
    if node_labels is not None:
        node_data = [{"label": x} for x in _to_host_array(node_labels).tolist()]
    g = GsmGraph.from_edges(keys, src, dst, directed=directed, node_data=node_data)
    g.owns_node_data = True
    index_node_labels(g, ["label"])
    return g


def _one_triangle(src, dst, n):
    """Each undirected edge once, from a symmetric matrix or from either triangle alone.

    Taking the upper triangle of a lower-triangular matrix would drop every edge without a word,
    so a matrix that is neither symmetric nor triangular is refused.
    """
    up, low = src < dst, src > dst
    loops = src == dst
    if not low.any():
        keep = up | loops
    elif not up.any():
        keep = low | loops
    else:
        width = np.int64(max(n, 1))
        a = np.sort(src[up] * width + dst[up])
        b = np.sort(dst[low] * width + src[low])
        if not np.array_equal(a, b):
            raise ValueError("an undirected graph's CSR must be symmetric, or hold one triangle "
                             "(every edge in the rows of its smaller or of its larger end); "
                             "pass directed=True for a directed graph")
        keep = up | loops
    return src[keep], dst[keep]


def from_cugraph(G):
    """A GsmGraph from a ``cugraph.Graph`` (through its edge list, original vertex ids kept)."""
    df = G.view_edge_list()
    names = list(df.columns)
    src = "src" if "src" in names else names[0]
    dst = "dst" if "dst" in names else names[1]
    weight = [c for c in names if c not in (src, dst)]
    return from_edgelist(df, src, dst, edge_attr=weight or None, directed=G.is_directed())


def from_nx_cugraph(G):
    """A GsmGraph from an nx-cugraph ``CudaGraph`` (its device COO arrays, no Python dicts)."""
    n = G._N
    src = _to_host_array(G.src_indices).astype(np.int64)
    dst = _to_host_array(G.dst_indices).astype(np.int64)
    directed = G.is_directed()
    if not directed:
        keep = src <= dst  # nx-cugraph stores undirected edges in both directions
        src, dst = src[keep], dst[keep]
    if G.key_to_id is None:
        keys = list(range(n))
    else:
        keys = [None] * n
        for key, i in G.key_to_id.items():
            keys[i] = key
    node_data = None
    if getattr(G, "node_values", None):
        cols = {}
        for a, vals in G.node_values.items():
            host = _to_host_array(vals).tolist()
            mask = G.node_masks.get(a) if getattr(G, "node_masks", None) else None
            present = _to_host_array(mask).tolist() if mask is not None else [True] * n
            cols[a] = (host, present)
        node_data = [{a: v[i] for a, (v, p) in cols.items() if p[i]} for i in range(n)]
    g = GsmGraph.from_edges(keys, src, dst, directed=directed,
                            multigraph=G.is_multigraph(), node_data=node_data)
    g.owns_node_data = True
    index_node_labels(g, getattr(G, "node_values", None) or ())
    return g
