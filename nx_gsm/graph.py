"""GsmGraph: the one host-side graph model every engine reads.

Layout (NumPy, contiguous):

* ``indptr`` (int64, n+1) / ``indices`` (int32): out-adjacency CSR, neighbours sorted ascending,
  one entry per *distinct* neighbour. Undirected graphs store every edge in both rows.
  Self-loops are **not** in the CSR; ``loops[v]`` holds their count.
* ``mult`` (int32): number of parallel edges behind each CSR entry (1 for simple graphs).
* ``in_indptr`` / ``in_indices`` / ``in_mult``: the in-adjacency (CSC) for directed graphs; for
  undirected graphs they are the same arrays as the out-adjacency. ``in_pos[e]`` is the position in
  the out-CSR of the in-CSR entry ``e`` (so per-edge columns need storing once).
* ``node_keys``: id -> original node key; ``key_to_id`` the reverse.
* ``node_data`` (list of dicts or None) and ``edge_data`` (list aligned with the out-CSR, or None):
  the attribute objects that ``node_match`` / ``edge_match`` see. For multigraphs an edge datum is
  the key-dict ``{key: attrs}`` of all parallel edges, as NetworkX passes it. ``loop_data`` maps a
  node id to its self-loop datum.

Nothing here depends on NetworkX; conversions live in :mod:`nx_gsm.interop`.
"""

from __future__ import annotations

import numpy as np

__all__ = ["GsmGraph", "in_csr"]


def in_csr(n, src, dst, mult):
    """The in-adjacency (CSC) of out-CSR entries ``src[e] -> dst[e]``, as GsmGraph keywords."""
    order_in = np.lexsort((src, dst))
    in_indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(dst, minlength=n), out=in_indptr[1:])
    return dict(in_indptr=in_indptr, in_indices=src[order_in], in_mult=mult[order_in],
                in_pos=order_in)


def csr_sources(indptr, xp=np, dtype=np.int64):
    """The row of every entry of a CSR with row pointers ``indptr`` (NumPy or, with ``xp``,
    CuPy)."""
    return xp.repeat(xp.arange(indptr.size - 1, dtype=dtype), xp.diff(indptr).astype(np.int64))


class GsmGraph:
    """Immutable CSR graph with node keys and attribute columns.

    Build one with :func:`nx_gsm.from_networkx` or :meth:`from_edges`; NetworkX builds one
    automatically when dispatching to ``backend="gsm"``.

    Examples
    --------
    >>> import networkx as nx, nx_gsm
    >>> g = nx_gsm.from_networkx(nx.path_graph(3))
    >>> g.number_of_nodes(), g.number_of_edges()
    (3, 2)
    """

    __networkx_backend__ = "gsm"

    def __init__(
        self,
        *,
        indptr,
        indices,
        mult,
        loops,
        node_keys,
        directed=False,
        multigraph=False,
        in_indptr=None,
        in_indices=None,
        in_mult=None,
        in_pos=None,
        node_data=None,
        edge_data=None,
        loop_data=None,
        graph_attrs=None,
    ):
        self.indptr = np.ascontiguousarray(indptr, dtype=np.int64)
        self.indices = np.ascontiguousarray(indices, dtype=np.int32)
        self.mult = np.ascontiguousarray(mult, dtype=np.int32)
        self.loops = np.ascontiguousarray(loops, dtype=np.int32)
        self.node_keys = list(node_keys)
        self.directed = bool(directed)
        self.multigraph = bool(multigraph)
        n = len(self.node_keys)
        if self.indptr.shape != (n + 1,) or self.loops.shape != (n,):
            raise ValueError("GsmGraph: indptr must have n+1 entries and loops n entries")
        if self.directed:
            self.in_indptr = np.ascontiguousarray(in_indptr, dtype=np.int64)
            self.in_indices = np.ascontiguousarray(in_indices, dtype=np.int32)
            self.in_mult = np.ascontiguousarray(in_mult, dtype=np.int32)
            self.in_pos = np.ascontiguousarray(in_pos, dtype=np.int64)
        else:
            self.in_indptr, self.in_indices, self.in_mult = self.indptr, self.indices, self.mult
            self.in_pos = None
        self.node_data = node_data
        self.edge_data = edge_data
        self.loop_data = loop_data if loop_data is not None else {}
        self.graph = dict(graph_attrs or {})
        self.__networkx_cache__ = {}
        # True where node_data's dicts were made for this graph alone (from_networkx's
        # node_attrs, the file readers): nothing else can edit them, so the values of a label
        # attribute are checked once and kept (api.label_values)
        self.owns_node_data = False
        self._key_to_id = None
        self._max_degree = None

    def __getstate__(self):
        # what is kept in the cache is derived (NetworkX's conversions, the planner's label
        # classes): a pickle, e.g. for a Dask worker, carries the graph alone
        state = self.__dict__.copy()
        state["__networkx_cache__"] = {}
        return state

    # -- NetworkX duck typing (decorators call these before dispatch) -------------------------
    def is_directed(self):
        return self.directed

    def is_multigraph(self):
        return self.multigraph

    def __len__(self):
        return len(self.node_keys)

    def __iter__(self):
        return iter(self.node_keys)

    def __contains__(self, key):
        try:
            return key in self.key_to_id
        except TypeError:
            return False

    def number_of_nodes(self):
        return len(self.node_keys)

    order = number_of_nodes

    def number_of_edges(self):
        """Edges counted as NetworkX does (parallel edges and self-loops included)."""
        total = int(self.mult.sum(dtype=np.int64))
        if not self.directed:
            total //= 2
        return total + int(self.loops.sum(dtype=np.int64))

    @property
    def key_to_id(self):
        if self._key_to_id is None:
            self._key_to_id = {k: i for i, k in enumerate(self.node_keys)}
        return self._key_to_id

    @property
    def n(self):
        return len(self.node_keys)

    def out_degree(self):
        """Distinct out-neighbours per node (self-loops excluded), int64 array."""
        return np.diff(self.indptr)

    def in_degree(self):
        return np.diff(self.in_indptr)

    def max_degree(self):
        """The longest adjacency row, out or in (distinct neighbours): the bound on a local
        candidate set that the GPU engines size buffers and offsets by. Cached (the graph is
        immutable)."""
        if getattr(self, "_max_degree", None) is None:  # (a pickle from before the cache)
            rows = (self.indptr, self.in_indptr) if self.directed else (self.indptr,)
            self._max_degree = max((int(np.diff(p).max()) for p in rows if p.size > 1),
                                   default=0)
        return self._max_degree

    def sources(self):
        """The source id of every out-CSR entry (int64, aligned with ``indices``)."""
        return csr_sources(self.indptr)

    def edge_position(self, u, v):
        """Out-CSR position of the edge ``u -> v`` (ids), or -1."""
        lo, hi = self.indptr[u], self.indptr[u + 1]
        i = lo + np.searchsorted(self.indices[lo:hi], v)
        return int(i) if i < hi and self.indices[i] == v else -1

    def __repr__(self):
        kind = ("Multi" if self.multigraph else "") + ("DiGraph" if self.directed else "Graph")
        return f"<GsmGraph {kind} with {self.n} nodes and {self.number_of_edges()} edges>"

    # -- construction ----------------------------------------------------------------------
    @classmethod
    def from_edges(
        cls,
        node_keys,
        src,
        dst,
        *,
        directed=False,
        multigraph=False,
        node_data=None,
        edge_data=None,
        graph_attrs=None,
    ):
        """Build from id-based edge arrays (one row per edge *as the user sees it*).

        ``src``/``dst`` are node ids in ``range(len(node_keys))``. For undirected graphs each edge
        appears once (either orientation). Parallel rows are merged into multiplicities (rejected
        for simple graphs: use ``multigraph=True``). ``edge_data`` (optional) is a list aligned with
        the rows; parallel rows of a multigraph are merged into a key-dict ``{i: data}`` keyed by
        their order of appearance.
        """
        n = len(node_keys)
        src = np.asarray(src, dtype=np.int64).ravel()
        dst = np.asarray(dst, dtype=np.int64).ravel()
        if src.shape != dst.shape:
            raise ValueError("src and dst must have the same length")
        if src.size and (src.min() < 0 or dst.min() < 0 or src.max() >= n or dst.max() >= n):
            raise ValueError("edge endpoint outside the node id range")
        loop = src == dst
        loops = np.bincount(src[loop], minlength=n).astype(np.int32)
        loop_data = {}
        rows = np.flatnonzero(~loop)
        s, d = src[rows], dst[rows]
        if not directed:
            s, d = np.concatenate([s, d]), np.concatenate([d, s])
            rows = np.concatenate([rows, rows])
        order = np.lexsort((d, s))
        s, d, rows = s[order], d[order], rows[order]
        key = s * max(n, 1) + d
        first = np.ones(key.size, dtype=bool)
        first[1:] = key[1:] != key[:-1]
        starts = np.flatnonzero(first)
        mult = np.diff(np.append(starts, key.size)).astype(np.int32)
        if not multigraph and (mult.size and mult.max() > 1 or (loops.size and loops.max() > 1)):
            raise ValueError("parallel edges in a simple graph: pass multigraph=True")
        us, vs = s[starts], d[starts]
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(us, minlength=n), out=indptr[1:])
        merged = None
        if edge_data is not None:
            if multigraph:
                merged = []
                bounds = np.append(starts, key.size)
                for a, b in zip(bounds[:-1], bounds[1:]):
                    merged.append({i: edge_data[r] for i, r in enumerate(rows[a:b])})
                for r in np.flatnonzero(loop):
                    loop_data.setdefault(int(src[r]), {})
                    kd = loop_data[int(src[r])]
                    kd[len(kd)] = edge_data[r]
            else:
                merged = [edge_data[r] for r in rows[starts]]
                for r in np.flatnonzero(loop):
                    loop_data[int(src[r])] = edge_data[r]
        kw = in_csr(n, us, vs, mult) if directed else {}
        return cls(
            indptr=indptr,
            indices=vs,
            mult=mult,
            loops=loops,
            node_keys=node_keys,
            directed=directed,
            multigraph=multigraph,
            node_data=node_data,
            edge_data=merged,
            loop_data=loop_data,
            graph_attrs=graph_attrs,
            **kw,
        )
