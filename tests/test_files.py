"""The t/v/e .graph reader: bundled data, published counts, malformed files."""

import networkx as nx
import pytest

import nx_gsm
from nx_gsm.interop.files import GraphFormatError


def test_bundled_yeast_and_published_counts():
    G = nx_gsm.read_graph(nx_gsm.demo_graph_path("yeast"))
    assert (G.number_of_nodes(), G.number_of_edges()) == (3112, 12519)
    for path, count in nx_gsm.demo_queries():
        H = nx_gsm.read_graph(path, edge_labels=False)
        assert nx_gsm.count_subgraph_monomorphisms(G, H, node_label="label") == count, path.name


def test_round_trip(tmp_path):
    G = nx.gnm_random_graph(10, 15, seed=4)
    nx.set_node_attributes(G, {v: v % 3 for v in G}, "label")
    p = tmp_path / "g.graph"
    nx_gsm.write_graph(G, p)
    H = nx_gsm.read_graph(p)
    assert nx.utils.graphs_equal(G, H)


@pytest.mark.parametrize(
    "text, msg",
    [
        ("", "no 't' header"),
        ("v 0 1 0\n", "expected the 't' header"),
        ("t 1 0\nt 1 0\n", "second 't'"),
        ("t x 0\n", "vertex count must be an integer"),
        ("t 2 0\nv 0 1\nv 5 1\n", "outside 0..1"),
        ("t 2 0\nv 0 1\nv 0 1\n", "declared twice"),
        ("t 2 1\nv 0 1\nv 1 1\ne 0 7\n", "not a declared vertex"),
        ("t 2 2\nv 0 1\nv 1 1\ne 0 1\ne 1 0\n", "duplicate edge"),
        ("t 2 1\nv 0 1\nv 1 1\nq 0 1\n", "unknown line type"),
        ("t 3 0\nv 0 1\n", "declares 3 vertices, found 1"),
        ("t 2 5\nv 0 1\nv 1 1\ne 0 1\n", "declares 5 edges, found 1"),
        ("t 1 0\nv 0 lbl\n", "vertex label must be an integer"),
        ("t 2 1\nv 0 1\nv 1 1\ne 0\n", "'e' needs"),
    ],
)
def test_malformed_files_name_file_and_line(tmp_path, text, msg):
    p = tmp_path / "bad.graph"
    p.write_text(text)
    with pytest.raises(GraphFormatError, match=msg) as info:
        nx_gsm.read_graph(p)
    assert "bad.graph" in str(info.value)
    assert isinstance(info.value, nx.NetworkXError)


def test_binary_file(tmp_path):
    p = tmp_path / "bin.graph"
    p.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(GraphFormatError, match="UTF-8"):
        nx_gsm.read_graph(p)
