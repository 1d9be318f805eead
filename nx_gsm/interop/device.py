"""DeviceGraph: a data graph that lives on the GPU, matched without a host copy.

RAPIDS users hold graphs as device arrays (cuGraph's CSR, CuPy arrays). Converting them to the
host model would copy the whole graph over PCIe and back; a :class:`DeviceGraph` instead keeps the
caller's CuPy arrays (taken zero-copy through ``__cuda_array_interface__`` / DLPack) and the
gmatch engine reads them in place. The plan (:mod:`nx_gsm.plan.device_plan`) is built on the
device too: candidates from integer node labels, degrees and self-loops, computed with CuPy; only
the pattern and ``k`` candidate counts cross to the host.

What a DeviceGraph supports: simple graphs (directed or not) with optional integer node labels
(``node_label=`` in the matching functions matches them against the pattern's attribute of that
name), mono and induced modes, engines ``"auto"``/``"gmatch"``. Anything else (match callables,
edge labels, the CPU engine, patterns deeper than gmatch's stack) is served from a host copy,
made once and logged, so results stay exact.

Examples
--------
>>> import cupy as cp, networkx as nx, nx_gsm                  # doctest: +SKIP
>>> indptr = cp.asarray([0, 2, 4, 6]); indices = cp.asarray([1, 2, 0, 2, 0, 1])
>>> g = nx_gsm.from_csr(indptr, indices)                        # doctest: +SKIP
>>> nx_gsm.find_subgraph_monomorphisms(g, nx.path_graph(3)).to_cupy().shape   # doctest: +SKIP
(6, 3)
"""

from __future__ import annotations

import logging

import numpy as np

from ..graph import csr_sources

__all__ = ["DeviceGraph", "is_device_array"]

log = logging.getLogger("nx_gsm")


def is_device_array(x):
    """True for arrays that live on a CUDA device (CuPy, Numba, PyTorch CUDA tensors...)."""
    return hasattr(x, "__cuda_array_interface__") and not isinstance(x, np.ndarray)


def _cupy(x, dtype):
    import cupy as cp

    a = cp.asarray(x)  # zero-copy for any __cuda_array_interface__ / DLPack producer
    return a if a.dtype == dtype and a.flags.c_contiguous else cp.ascontiguousarray(a, dtype=dtype)


class DeviceGraph:
    """A graph held as CSR arrays in GPU memory (see the module docstring).

    Parameters
    ----------
    indptr, indices : device arrays
        CSR of the out-adjacency; rows need not be sorted (they are sorted on the device when
        they are not). Undirected graphs list every edge in both rows. Diagonal entries are
        self-loops.
    directed : bool
    node_labels : device or host int array of length n, optional
    node_keys : sequence, optional
        The keys results report (default ``0..n-1``); kept on the host.
    """

    on_device = True
    multigraph = False
    node_data = None
    edge_data = None

    def __init__(self, indptr, indices, *, directed=False, node_labels=None, node_keys=None):
        import cupy as cp

        indptr = _cupy(indptr, np.int64)
        indices = _cupy(indices, np.int32)
        n = int(indptr.size) - 1
        if n < 0 or int(indptr[0]) != 0 or int(indptr[-1]) != indices.size or \
                bool((cp.diff(indptr) < 0).any()):
            raise ValueError("indptr must start at 0, never decrease and end at len(indices)")
        if indices.size and (int(indices.min()) < 0 or int(indices.max()) >= n):
            raise ValueError(f"indices must be node ids in [0, {n})")
        self.n = n
        self.directed = bool(directed)
        rows = csr_sources(indptr, cp, np.int32)
        diag = rows == indices
        self.loops = cp.zeros(n, dtype=np.int32)
        if bool(diag.any()):
            # loops are kept apart, as in GsmGraph: the kernels test only distinct-node edges
            cp.add.at(self.loops, rows[diag], 1)
            keep = ~diag
            rows, indices = rows[keep], indices[keep]
            indptr = cp.concatenate([cp.zeros(1, np.int64),
                                     cp.cumsum(cp.bincount(rows, minlength=n)).astype(np.int64)])
        if indices.size > 1:
            key = rows.astype(np.int64) * max(n, 1) + indices
            if bool((key[1:] < key[:-1]).any()):
                perm = cp.argsort(key)
                rows, indices, key = rows[perm], indices[perm], key[perm]
            if bool((key[1:] == key[:-1]).any()):
                raise ValueError("duplicate edges: a DeviceGraph is a simple graph")
        self.indptr = indptr
        self.indices = cp.ascontiguousarray(indices, dtype=np.int32)
        self.mult = cp.ones(max(int(self.indices.size), 1), dtype=np.int32)
        if self.directed:
            order = cp.argsort(self.indices.astype(np.int64) * max(n, 1) + rows)
            self.in_indices = cp.ascontiguousarray(rows[order], dtype=np.int32)
            self.in_indptr = cp.concatenate(
                [cp.zeros(1, np.int64),
                 cp.cumsum(cp.bincount(self.indices, minlength=n)).astype(np.int64)])
        else:
            self.in_indptr, self.in_indices = self.indptr, self.indices
        self.in_mult = self.mult
        if node_labels is not None:
            node_labels = cp.asarray(node_labels)
            if node_labels.shape != (n,) or node_labels.dtype.kind not in "iu":
                raise ValueError(f"node_labels must be an integer array of length {n}")
        self.node_labels = node_labels
        self._node_keys = None if node_keys is None else list(node_keys)
        if self._node_keys is not None and len(self._node_keys) != n:
            raise ValueError(f"node_keys has {len(self._node_keys)} keys for {n} nodes")
        self._host = {}

    # -- the parts of the graph protocol the API layer uses ---------------------------------------
    def is_directed(self):
        return self.directed

    def is_multigraph(self):
        return False

    def __len__(self):
        return self.n

    def number_of_nodes(self):
        return self.n

    def number_of_edges(self):
        m = int(self.indices.size) + int((self.loops > 0).sum())
        return m if self.directed else (int(self.indices.size) // 2 + int((self.loops > 0).sum()))

    @property
    def node_keys(self):
        return range(self.n) if self._node_keys is None else self._node_keys

    def out_degree(self):
        import cupy as cp

        return cp.diff(self.indptr)

    def in_degree(self):
        import cupy as cp

        return cp.diff(self.in_indptr)

    def max_degree(self):
        """The longest adjacency row, out or in (as :meth:`GsmGraph.max_degree`)."""
        if not self.n:
            return 0
        top = int(self.out_degree().max())
        return max(top, int(self.in_degree().max())) if self.directed else top

    @property
    def nbytes(self):
        arrs = [self.indptr, self.indices, self.mult, self.loops]
        if self.directed:
            arrs += [self.in_indptr, self.in_indices]
        return int(sum(a.nbytes for a in arrs))

    def to_host(self, reason=None, label_name="label"):
        """The host model (GsmGraph) of this graph: one device-to-host copy, cached and logged.
        Node labels become the node attribute ``label_name``."""
        if label_name not in self._host:
            from ..graph import GsmGraph

            if reason:
                log.info("DeviceGraph: copying the graph to the host (%s)", reason)
            indptr = self.indptr.get()
            dst = self.indices.get().astype(np.int64)
            src = csr_sources(indptr)
            loops = np.flatnonzero(self.loops.get())
            src = np.concatenate([src, loops])
            dst = np.concatenate([dst, loops])
            if not self.directed:
                keep = src <= dst
                src, dst = src[keep], dst[keep]
            node_data = None
            if self.node_labels is not None:
                node_data = [{label_name: int(x)} for x in self.node_labels.get().tolist()]
            self._host[label_name] = GsmGraph.from_edges(
                list(self.node_keys), src, dst, directed=self.directed, node_data=node_data)
        return self._host[label_name]

    def __repr__(self):
        kind = "directed" if self.directed else "undirected"
        return f"<DeviceGraph {kind}, {self.n} nodes, {int(self.indices.size)} adjacency entries>"
