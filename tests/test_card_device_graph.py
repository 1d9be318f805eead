"""DeviceGraph: CuPy CSR in, CuPy rows out, no host copy of the graph (card only).

The zero-copy claims are checked by pointers: the kernels read the caller's own CuPy buffers, the
result rows are the engine's device buffer, and the host model is never built (``to_host`` is
made to fail during the calls).
"""

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms import isomorphism as iso

import nx_gsm

pytestmark = pytest.mark.gpu  # the card: tests/conftest.py skips it without a device


def _device_csr(G):
    import cupy as cp
    import scipy.sparse as sp

    A = sp.csr_matrix(nx.to_scipy_sparse_array(G, nodelist=range(G.number_of_nodes()),
                                               format="csr"))
    A.sort_indices()
    return cp.asarray(A.indptr.astype(np.int64)), cp.asarray(A.indices.astype(np.int32))


def _vf2_set(G, H, induced, node_match=None):
    GM = (iso.DiGraphMatcher if G.is_directed() else iso.GraphMatcher)(G, H, node_match=node_match)
    it = GM.subgraph_isomorphisms_iter() if induced else GM.subgraph_monomorphisms_iter()
    return {tuple(sorted(m.items())) for m in it}


def _as_set(ms):
    return {tuple(sorted(m.items())) for m in ms}


@pytest.fixture
def no_host_copy(monkeypatch):
    from nx_gsm.interop.device import DeviceGraph

    def refuse(self, *a, **k):
        raise AssertionError("the DeviceGraph was copied to the host")

    monkeypatch.setattr(DeviceGraph, "to_host", refuse)


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("induced", [False, True])
def test_device_graph_matches_vf2(no_host_copy, directed, induced):
    G = nx.gnp_random_graph(60, 0.12, seed=4, directed=directed)
    H = nx.DiGraph([(0, 1), (1, 2), (2, 0)]) if directed else nx.cycle_graph(4)
    indptr, indices = _device_csr(G)
    g = nx_gsm.from_csr(indptr, indices, directed=directed)
    assert g.on_device
    # the caller's buffers are the graph's: nothing was copied
    assert g.indptr.data.ptr == indptr.data.ptr and g.indices.data.ptr == indices.data.ptr
    want = _vf2_set(G, H, induced)
    find = nx_gsm.find_subgraph_isomorphisms if induced else nx_gsm.find_subgraph_monomorphisms
    count = nx_gsm.count_subgraph_isomorphisms if induced else \
        nx_gsm.count_subgraph_monomorphisms
    ms = find(g, H, engine="gmatch")
    assert ms.on_device
    out = ms.to_cupy()
    assert out is ms.to_cupy()  # rows handed out as they are, no copy
    assert count(g, H) == len(want) == ms.count
    assert _as_set(ms) == want


def test_device_graph_kernels_read_the_callers_buffers(no_host_copy):
    from nx_gsm.engines.gpu.device import array_module
    from nx_gsm.engines.gpu.residency import graph_to_device

    G = nx.gnp_random_graph(50, 0.1, seed=2)
    indptr, indices = _device_csr(G)
    g = nx_gsm.from_csr(indptr, indices)
    arrs = graph_to_device(g, array_module())
    ptr = [a.__cuda_array_interface__["data"][0] for a in arrs[:2]]
    assert ptr == [indptr.data.ptr, indices.data.ptr]


def test_device_graph_labels_and_loops(no_host_copy):
    import cupy as cp

    rnd = np.random.default_rng(7)
    G = nx.gnp_random_graph(80, 0.1, seed=7)
    G.add_edges_from((v, v) for v in range(0, 80, 5))
    labels = rnd.integers(0, 3, 80)
    nx.set_node_attributes(G, {v: int(labels[v]) for v in G}, "c")
    H = nx.path_graph(3)
    H.add_edge(1, 1)
    nx.set_node_attributes(H, {0: 0, 1: 1, 2: 0}, "c")
    indptr, indices = _device_csr(G)
    g = nx_gsm.from_csr(indptr, indices, node_labels=cp.asarray(labels))
    nm = iso.categorical_node_match("c", None)
    for induced in (False, True):
        want = _vf2_set(G, H, induced, nm)
        find = nx_gsm.find_subgraph_isomorphisms if induced else \
            nx_gsm.find_subgraph_monomorphisms
        assert _as_set(find(g, H, node_label="c")) == want


def test_device_graph_falls_back_to_the_host_model_when_needed():
    G = nx.gnp_random_graph(40, 0.15, seed=1)
    indptr, indices = _device_csr(G)
    g = nx_gsm.from_csr(indptr, indices)
    H = nx.path_graph(3)
    want = len(_vf2_set(G, H, False))
    # the CPU engine needs the host model: one logged copy, same answer
    assert nx_gsm.count_subgraph_monomorphisms(g, H, engine="cpu") == want
    ms = nx_gsm.find_subgraph_monomorphisms(g, H, engine="cpu")
    assert not ms.on_device and ms.count == want
