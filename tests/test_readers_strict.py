"""Issue 53, finding 7: graph file readers and ``from_csr`` never change a graph silently.

A byte-order mark is skipped, integers are ASCII digits (anything else is a string key, or a
``file:line`` error where the format needs a number), every reader error is a GraphFormatError
naming the file and line, and ``from_csr`` takes either triangle of an undirected graph.
"""

from __future__ import annotations

import sys

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp

import nx_gsm
from nx_gsm.interop.files import GraphFormatError, read_graph
from nx_gsm.interop.formats import read_any

BOM = b"\xef\xbb\xbf"


def _write(tmp_path, name, data):
    p = tmp_path / name
    p.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return p


def _same(a, b):
    return (a.is_directed() == b.is_directed() and dict(a.nodes(data=True)) ==
            dict(b.nodes(data=True)) and
            {frozenset((u, v)) if not a.is_directed() else (u, v): d
             for u, v, d in a.edges(data=True)} ==
            {frozenset((u, v)) if not b.is_directed() else (u, v): d
             for u, v, d in b.edges(data=True)})


# -- byte-order marks ---------------------------------------------------------------------------
@pytest.mark.parametrize("name,text", [
    ("g.txt", "1 2\n2 3 7\n"),
    ("g.csv", "source,target,source_label,w\n1,2,5,x\n2,3,6,y\n"),
    ("g.tsv", "source\ttarget\ttarget_label\n1\t2\t5\n"),
    ("g.graph", "t 3 2\nv 0 1 1\nv 1 2 2\nv 2 1 1\ne 0 1\ne 1 2 4\n"),
    ("g.graphml", "\n".join(nx.generate_graphml(nx.path_graph(3)))),
    ("g.gml", "\n".join(nx.generate_gml(nx.path_graph(3)))),
])
def test_a_byte_order_mark_changes_nothing(tmp_path, name, text):
    plain = read_any(_write(tmp_path, name, text))
    marked = read_any(_write(tmp_path, "bom-" + name, BOM + text.encode("utf-8")))
    assert _same(plain, marked)
    assert not any(isinstance(v, str) and "\ufeff" in v for v in marked)


def test_bom_csv_keeps_the_label_column_a_node_attribute(tmp_path):
    G = read_any(_write(tmp_path, "g.csv", BOM + b"source,target,source_label\n1,2,5\n"))
    assert G.nodes[1] == {"label": 5} and G.edges[1, 2] == {}


# -- integers -----------------------------------------------------------------------------------
@pytest.mark.parametrize("tok", ["\u00b2", "\u0661\u0662", "1_0", "01", "+1", "-0", "1e3",
                                 "\uff11", "0x10", "1.0", " 7x"])
def test_key_formats_read_only_plain_integers_as_ints(tmp_path, tok):
    """In an edge list and a CSV a token is an int only when it is how Python writes that int
    (``str(int(tok)) == tok``); any other spelling stays the string itself."""
    el = read_any(_write(tmp_path, "g.txt", f"{tok} 5\n"))
    csvg = read_any(_write(tmp_path, "g.csv", f"source,target,w\n{tok},5,{tok}\n"))
    for G in (el, csvg):
        keys = set(G)
        assert keys == {tok.strip(), 5}
    assert csvg.edges[tok.strip(), 5]["w"] == tok.strip()


@pytest.mark.parametrize("tok", ["0", "7", "-12", "123456789012345678901234567890"])
def test_plain_integers_are_ints(tmp_path, tok):
    G = read_any(_write(tmp_path, "g.txt", f"{tok} x 3\n"))
    assert set(G) == {int(tok), "x"} and G.edges[int(tok), "x"]["label"] == 3


def test_one_and_zero_one_stay_two_nodes(tmp_path):
    G = read_any(_write(tmp_path, "g.txt", "1 01\n"))
    assert set(G) == {1, "01"}


@pytest.mark.parametrize("tok", ["\u00b2", "\u0661", "1_0", "1.0", "x", "0x1"])
def test_graph_format_numbers_are_ascii_or_a_file_line_error(tmp_path, tok):
    p = _write(tmp_path, "g.graph", f"t 2 1\nv 0 1\nv 1 {tok}\ne 0 1\n")
    with pytest.raises(GraphFormatError, match=r"g\.graph:3: vertex label must be an integer"):
        read_graph(p)


def test_graph_format_takes_signs_and_leading_zeros_as_numbers(tmp_path):
    G = read_graph(_write(tmp_path, "g.graph", "t 2 1\nv 00 -3\nv 1 +4\ne 0 01 007\n"))
    assert dict(G.nodes(data="label")) == {0: -3, 1: 4} and G.edges[0, 1]["label"] == 7


def _too_long():
    limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 0
    if not limit:
        pytest.skip("this Python has no int string limit")
    return "9" * (limit + 1)


@pytest.mark.parametrize("name,text,line", [
    ("g.csv", "source,target\n1,2\n1,{n}\n", 3),
    ("g.csv", "source,target,w\n1,2,{n}\n", 2),
    ("g.txt", "1 2\n\n{n} 2\n", 3),
    ("g.graph", "t 1 0\nv 0 {n}\n", 2),
])
def test_numbers_past_python_digit_limit_are_file_line_errors(tmp_path, name, text, line):
    p = _write(tmp_path, name, text.format(n=_too_long()))
    with pytest.raises(GraphFormatError, match=rf"{name.replace('.', '[.]')}:{line}: .*digits"):
        read_any(p)


# -- every error names the file and the line ----------------------------------------------------
@pytest.mark.parametrize("name,data,line", [
    ("g.txt", b"1 2\n2 3\n\xff\xfe 4\n", 3),
    ("g.csv", b"source,target\n1,2\n\xc3\x28,3\n", 3),
    ("g.graph", b"t 2 1\nv 0 1\nv 1 \xff\ne 0 1\n", 3),
    ("g.txt", b"1 2 3 4\n", 1),
    ("g.csv", b"source,target\n1,2,3\n", 2),
])
def test_reader_errors_name_file_and_line(tmp_path, name, data, line):
    p = _write(tmp_path, name, data)
    with pytest.raises(GraphFormatError, match=rf"{name.replace('.', '[.]')}:{line}: "):
        read_any(p)


def test_csv_field_errors_name_the_line(tmp_path):
    import csv

    big = "x" * (csv.field_size_limit() + 1)
    p = _write(tmp_path, "g.csv", f"source,target\n1,2\n1,{big}\n")
    with pytest.raises(GraphFormatError, match=r"g[.]csv:3: malformed CSV"):
        read_any(p)


# -- from_csr ---------------------------------------------------------------------------------
def _graph():
    G = nx.gnp_random_graph(14, 0.35, seed=7)
    G.add_edge(4, 4)
    return G


@pytest.mark.parametrize("part", ["full", "upper", "lower"])
def test_from_csr_takes_either_triangle(part):
    G = _graph()
    A = nx.to_scipy_sparse_array(G, nodelist=range(len(G)), format="csr")
    M = {"full": A, "upper": sp.triu(A, format="csr"), "lower": sp.tril(A, format="csr")}[part]
    g = nx_gsm.from_csr(M.indptr, M.indices)
    assert g.number_of_edges() == G.number_of_edges()
    want = sum(1 for _ in nx.algorithms.isomorphism.GraphMatcher(
        G, nx.path_graph(3)).subgraph_monomorphisms_iter())
    assert nx_gsm.count_subgraph_monomorphisms(g, nx.path_graph(3)) == want


def test_from_csr_refuses_a_matrix_neither_symmetric_nor_triangular():
    A = sp.lil_array((3, 3))
    A[0, 1] = A[1, 0] = 1  # symmetric part
    A[2, 0] = 1  # one more entry, below the diagonal only
    A[1, 2] = 1  # and one above only
    A = A.tocsr()
    with pytest.raises(ValueError, match="symmetric, or hold one triangle"):
        nx_gsm.from_csr(A.indptr, A.indices)
    # as a directed graph the same arrays are fine
    g = nx_gsm.from_csr(A.indptr, A.indices, directed=True)
    assert g.number_of_edges() == 4


def test_from_csr_directed_keeps_every_entry():
    indptr, indices = np.array([0, 1, 1, 2]), np.array([1, 0])
    g = nx_gsm.from_csr(indptr, indices, directed=True)
    assert g.number_of_edges() == 2
