"""NetworkX <-> GsmGraph conversion."""

from __future__ import annotations

import weakref

import networkx as nx
import numpy as np

from ..graph import GsmGraph, in_csr
from ..plan.labels import index_node_labels

__all__ = ["from_networkx", "to_networkx", "as_gsm"]


def _pick(data, attrs):
    return {a: data[a] for a in attrs if a in data}


def from_networkx(
    G,
    *,
    node_attrs=None,
    edge_attrs=None,
    preserve_node_attrs=True,
    preserve_edge_attrs=True,
    preserve_graph_attrs=False,
):
    """Convert a NetworkX graph (any of the four classes) into a :class:`GsmGraph`.

    Parameters
    ----------
    G : networkx.Graph, DiGraph, MultiGraph or MultiDiGraph
    node_attrs, edge_attrs : iterable of str, optional
        Keep only these attributes (NetworkX's dispatcher passes a dict of name -> default; the
        defaults are applied at match time, so only the names matter here). The graph then
        holds its own copies of those attributes (``owns_node_data``), so each attribute whose
        values are plain (ints, strings, ...) on every node is checked and grouped into label
        classes here, once, for every later ``node_label=`` call; without ``node_attrs`` it
        references ``G``'s dicts and reads them on every call, seeing in-place edits.
    preserve_node_attrs, preserve_edge_attrs : bool
        Keep every attribute (the objects ``node_match``/``edge_match`` receive). Ignored when the
        corresponding ``*_attrs`` is given. With both False/None no attributes are stored.
    preserve_graph_attrs : bool
        Copy ``G.graph``.

    The input graph is not modified, and attribute dicts are referenced, never changed.

    Examples
    --------
    >>> import networkx as nx, nx_gsm
    >>> g = nx_gsm.from_networkx(nx.MultiGraph([(0, 1), (0, 1), (1, 1)]))
    >>> g.number_of_edges(), int(g.loops[1])
    (3, 1)
    """
    if not isinstance(G, nx.Graph):
        raise TypeError(f"expected a NetworkX graph, got {type(G).__name__}")
    directed, multigraph = G.is_directed(), G.is_multigraph()
    keys = list(G._adj)
    # keys are told apart as G._adj tells them apart (hash, then identity, then ==): ids come
    # from a dict lookup, and ids are compared, never keys (a numpy scalar's == with a tuple is
    # elementwise; NaN is not equal to itself)
    idx = {k: i for i, k in enumerate(keys)}
    n = len(keys)
    want_edges = edge_attrs is not None or preserve_edge_attrs
    src, dst, cnt, data = [], [], [], []
    loops = np.zeros(n, dtype=np.int32)
    loop_data = {}
    for u, nbrs in G._adj.items():
        iu = idx[u]
        for v, d in nbrs.items():
            c = len(d) if multigraph else 1
            iv = idx[v]
            if iv == iu:
                loops[iu] = c
                if want_edges:
                    loop_data[iu] = d
                continue
            src.append(iu)
            dst.append(iv)
            cnt.append(c)
            if want_edges:
                data.append(d)
    src = np.asarray(src, dtype=np.int64)
    dst = np.asarray(dst, dtype=np.int64)
    order = np.lexsort((dst, src))
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
    indices = dst[order]
    mult = np.asarray(cnt, dtype=np.int32)[order]
    edge_data = None
    if want_edges:
        if edge_attrs is not None:
            attrs = list(edge_attrs)
            if multigraph:
                pick = lambda kd: {k: _pick(d, attrs) for k, d in kd.items()}  # noqa: E731
            else:
                pick = lambda d: _pick(d, attrs)  # noqa: E731
            edge_data = [pick(data[i]) for i in order]
            loop_data = {v: pick(d) for v, d in loop_data.items()}
        else:
            edge_data = [data[i] for i in order]
    if node_attrs is not None:
        attrs = list(node_attrs)
        node_data = [_pick(G._node[k], attrs) for k in keys]
    elif preserve_node_attrs:
        node_data = [G._node[k] for k in keys]
    else:
        node_data = None
    kw = in_csr(n, src[order], indices, mult) if directed else {}
    g = GsmGraph(
        indptr=indptr,
        indices=indices,
        mult=mult,
        loops=loops,
        node_keys=keys,
        directed=directed,
        multigraph=multigraph,
        node_data=node_data,
        edge_data=edge_data,
        loop_data=loop_data,
        graph_attrs=G.graph if preserve_graph_attrs else None,
        **kw,
    )
    g.owns_node_data = node_attrs is not None  # (picked copies, not G's dicts)
    if g.owns_node_data:
        index_node_labels(g, attrs)
    return g


def to_networkx(g):
    """Convert a :class:`GsmGraph` back into the matching NetworkX class.

    Node keys, node attributes, edge multiplicities, self-loops and stored edge attributes are
    restored; parallel edges without stored data get keys 0, 1, ...
    """
    if g.directed:
        cls = nx.MultiDiGraph if g.multigraph else nx.DiGraph
    else:
        cls = nx.MultiGraph if g.multigraph else nx.Graph
    G = cls()
    G.graph.update(g.graph)
    keys = g.node_keys
    if g.node_data is not None:
        G.add_nodes_from((k, dict(d)) for k, d in zip(keys, g.node_data))
    else:
        G.add_nodes_from(keys)

    def add(u, v, count, datum):
        if g.multigraph:
            if datum is not None:
                for ek, d in datum.items():
                    G.add_edge(u, v, key=ek, **d)
            else:
                for _ in range(count):
                    G.add_edge(u, v)
        elif datum is not None:
            G.add_edge(u, v, **datum)
        else:
            G.add_edge(u, v)

    for i in range(g.n):
        lo, hi = g.indptr[i], g.indptr[i + 1]
        for e in range(lo, hi):
            j = int(g.indices[e])
            if not g.directed and j < i:
                continue
            datum = g.edge_data[e] if g.edge_data is not None else None
            add(keys[i], keys[j], int(g.mult[e]), datum)
        if g.loops[i]:
            add(keys[i], keys[i], int(g.loops[i]), g.loop_data.get(i))
    return G


def is_graph_like(G):
    """NetworkX graphs, GsmGraphs, and RAPIDS graphs (cugraph.Graph, nx-cugraph CudaGraph)."""
    return isinstance(G, (nx.Graph, GsmGraph)) or getattr(G, "on_device", False) is True or \
        _rapids_kind(G) is not None


def _rapids_kind(G):
    if getattr(G, "__networkx_backend__", None) == "cugraph" and hasattr(G, "src_indices"):
        return "nx_cugraph"
    if type(G).__module__.split(".")[0] == "cugraph" and hasattr(G, "view_edge_list"):
        return "cugraph"
    return None


# NetworkX graph -> (token, {attribute selection: GsmGraph}); the token also sits in
# G.__networkx_cache__, which NetworkX clears on every change made through a graph method, so a
# conversion is used only while its token is still there (and G's pickle gains an empty list,
# not a copy of the graph)
_CONVERTED = weakref.WeakKeyDictionary()


def _conversion_cache(G):
    """The dict of ``G``'s kept conversions, or None where caching is off
    (``nx.config.cache_converted_graphs``, ``G.__networkx_cache__ = None``) or ``G`` is a view,
    whose cache its base graph's changes would not clear."""
    if not getattr(nx.config, "cache_converted_graphs", True) or \
            getattr(G, "_graph", None) is not None:
        return None
    cache = getattr(G, "__networkx_cache__", None)
    if not isinstance(cache, dict):
        return None
    try:
        entry = _CONVERTED.get(G)
    except TypeError:  # a graph class without identity hashing or weak references
        return None
    token = cache.get("nx_gsm")
    if entry is not None and token is not None and entry[0] is token:
        return entry[1]
    token, kept = [], {}
    try:
        _CONVERTED[G] = (token, kept)
    except TypeError:
        return None
    cache["nx_gsm"] = token
    return kept


def as_gsm(G, *, node_attrs=True, edge_attrs=True):
    """Return ``G`` as a GsmGraph, converting NetworkX and RAPIDS graphs; others raise TypeError.

    A NetworkX graph's conversion is kept (weakly, beside ``G``) until a graph method changes
    ``G``, so repeated calls on one graph convert it once. The kept GsmGraph references ``G``'s
    attribute dicts, so attribute edits are seen; edits of ``G._adj`` by hand need
    ``G.__networkx_cache__.clear()``, as for NetworkX's own cache of backend conversions.
    """
    if isinstance(G, GsmGraph):
        return G
    if isinstance(G, nx.Graph):
        cache = _conversion_cache(G)
        key = (bool(node_attrs), bool(edge_attrs))
        if cache is not None and key in cache:
            return cache[key]
        g = from_networkx(G, preserve_node_attrs=node_attrs, preserve_edge_attrs=edge_attrs)
        if cache is not None:
            cache[key] = g
        return g
    kind = _rapids_kind(G)
    if kind is not None:
        from . import frames

        return frames.from_nx_cugraph(G) if kind == "nx_cugraph" else frames.from_cugraph(G)
    raise TypeError(
        f"expected a NetworkX graph or nx_gsm.GsmGraph, got {type(G).__module__}.{type(G).__name__}"
    )
