"""Frames and arrays in (pandas, Arrow, CSR, cuDF/cuGraph/nx-cugraph shapes), frames out."""

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms import isomorphism as iso

import nx_gsm

pd = pytest.importorskip("pandas", reason="pandas is needed for the frame round trips")


def _s(it):
    return {frozenset(m.items()) for m in it}


def _edges_frame(G):
    return pd.DataFrame([(u, v, d.get("w", 0)) for u, v, d in G.edges(data=True)],
                        columns=["src", "dst", "w"])


def test_pandas_round_trip_equals_networkx():
    G = nx.relabel_nodes(nx.gnm_random_graph(15, 40, seed=7), lambda v: f"n{v}")
    for u, v in G.edges:
        G[u][v]["w"] = (hash((u, v)) % 2)
    H = nx.cycle_graph(4)
    nx.set_edge_attributes(H, 1, "w")
    g = nx_gsm.from_edgelist(_edges_frame(G), "src", "dst", edge_attr="w")
    em = iso.categorical_edge_match("w", None)
    ref = _s(iso.GraphMatcher(G, H, edge_match=em).subgraph_monomorphisms_iter())
    df = nx_gsm.find_subgraph_monomorphisms(g, H, edge_match=em).to_pandas()
    assert list(df.columns) == list(H)
    got = {frozenset((row[h], h) for h in H) for _, row in df.iterrows()}
    assert got == ref and len(df) == len(ref)


def test_node_frame_attributes_and_order():
    edges = pd.DataFrame({"a": [1, 2], "b": [2, 3]})
    nodes = pd.DataFrame({"id": [3, 2, 1, 9], "label": ["x", "y", "x", "z"]})
    g = nx_gsm.from_edgelist(edges, "a", "b", node_frame=nodes, node_key="id", node_attr="label")
    assert g.node_keys == [3, 2, 1, 9] and g.node_data[3] == {"label": "z"}
    assert all(type(k) is int for k in g.node_keys)
    H = nx.Graph([(0, 1)])
    nx.set_node_attributes(H, {0: "x", 1: "y"}, "label")
    assert nx_gsm.count_subgraph_monomorphisms(g, H, node_label="label") == 2


def test_arrow_table_and_directed_multigraph():
    pa = pytest.importorskip("pyarrow", reason="pyarrow not installed")
    t = pa.table({"source": [0, 0, 1], "target": [1, 1, 0]})
    g = nx_gsm.from_edgelist(t, directed=True, multigraph=True)
    assert g.multigraph and g.directed and g.mult.tolist() == [2, 1]
    with pytest.raises(ValueError, match="parallel edges"):
        nx_gsm.from_edgelist(t, directed=True)


def test_csr_arrays():
    A = nx.to_scipy_sparse_array(nx.cycle_graph(5), format="csr") if _has_scipy() else None
    if A is None:
        indptr = np.array([0, 2, 4, 6, 8, 10])
        indices = np.array([1, 4, 0, 2, 1, 3, 2, 4, 0, 3])
    else:
        indptr, indices = A.indptr, A.indices
    g = nx_gsm.from_csr(indptr, indices)
    assert nx_gsm.count_subgraph_monomorphisms(g, nx.path_graph(3)) == 10
    with pytest.raises(ValueError, match="indptr"):
        nx_gsm.from_csr(np.array([0, 5]), np.array([1]))


def _has_scipy():
    try:
        import scipy  # noqa: F401
    except ImportError:
        return False
    return True


def test_errors_name_the_column():
    df = pd.DataFrame({"s": [0], "t": [1]})
    with pytest.raises(KeyError, match="'source'"):
        nx_gsm.from_edgelist(df)
    with pytest.raises(KeyError, match="'w'"):
        nx_gsm.from_edgelist(df, "s", "t", edge_attr="w")
    with pytest.raises(TypeError, match="DataFrame"):
        nx_gsm.from_edgelist([(0, 1)])


class _FakeCupyArray:
    """Stands in for a CuPy array: the RAPIDS code paths only call .get()."""

    __module__ = "cupy"

    def __init__(self, a):
        self._a = np.asarray(a)

    def get(self):
        return self._a


class _FakeCudfSeries:
    __module__ = "cudf.core.series"

    def __init__(self, values):
        self._v = np.asarray(values)

    def to_cupy(self):
        return _FakeCupyArray(self._v)


class _FakeCudfFrame:
    __module__ = "cudf.core.dataframe"

    def __init__(self, cols):
        self._cols = {k: _FakeCudfSeries(v) for k, v in cols.items()}
        self.columns = list(cols)

    def __getitem__(self, k):
        return self._cols[k]

    def view_edge_list(self):
        return self


def test_cudf_code_path_with_a_stand_in():
    df = _FakeCudfFrame({"source": [0, 1, 2], "target": [1, 2, 0]})
    g = nx_gsm.from_edgelist(df)
    assert nx_gsm.count_subgraph_monomorphisms(g, nx.cycle_graph(3)) == 6


class _FakeNxCugraph:
    """The attributes nx-cugraph's CudaGraph exposes (undirected edges in both directions)."""

    __networkx_backend__ = "cugraph"

    def __init__(self, G):
        ids = {k: i for i, k in enumerate(G)}
        src, dst = [], []
        for u, v in G.edges:
            src += [ids[u], ids[v]]
            dst += [ids[v], ids[u]]
        self._N = len(ids)
        self.src_indices = _FakeCupyArray(src)
        self.dst_indices = _FakeCupyArray(dst)
        self.key_to_id = ids
        self.node_values = {"label": _FakeCupyArray([G.nodes[k]["label"] for k in G])}
        self.node_masks = {}

    def is_directed(self):
        return False

    def is_multigraph(self):
        return False


def test_nx_cugraph_graphs_are_accepted_directly():
    G = nx.relabel_nodes(nx.cycle_graph(6), {i: ("v", i) for i in range(6)})
    nx.set_node_attributes(G, {v: v[1] % 2 for v in G}, "label")
    H = nx.path_graph(3)
    nx.set_node_attributes(H, {0: 0, 1: 1, 2: 0}, "label")
    nm = iso.categorical_node_match("label", None)
    ref = _s(iso.GraphMatcher(G, H, node_match=nm).subgraph_monomorphisms_iter())
    assert _s(nx_gsm.subgraph_monomorphisms(_FakeNxCugraph(G), H, node_match=nm)) == ref


def test_match_frames_streams_bounded_pieces():
    G, H = nx.complete_graph(7), nx.path_graph(3)
    frames = list(nx_gsm.match_frames(G, H, rows_per_frame=50))
    assert [len(f) for f in frames] == [50] * 4 + [10]
    whole = pd.concat(frames)
    assert len({tuple(r) for r in whole.itertuples(index=False)}) == 210
    assert sum(len(f) for f in nx_gsm.match_frames(G, H, rows_per_frame=7, limit=20)) == 20
    ms = nx_gsm.find_subgraph_monomorphisms(G, H)
    assert [len(f) for f in ms.iter_pandas(100)] == [100, 100, 10]
