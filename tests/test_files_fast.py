"""The pandas path for edge lists and CSV files (``nx_gsm.interop.fastread``) reads what the
line readers read: the same nodes in the same order, the same attributes and edges, the same
GsmGraph arrays, and the same errors; with pandas hidden the line readers read everything.

``FAST_MIN_BYTES`` is lowered to 0 here so that small files take the pandas path; each case says
whether the file qualifies for it, and the test checks that it did (or did not) take it.
"""

from __future__ import annotations

import contextlib
import os
import sys

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nx_gsm.cli import main
from nx_gsm.interop import fastread
from nx_gsm.interop.files import GraphFormatError
from nx_gsm.interop.formats import read_any
from nx_gsm.interop.networkx import from_networkx

pytest.importorskip("pandas", reason="the pandas path needs pandas (the 'frames' extra)")

BOM = b"\xef\xbb\xbf"
HAS_PYARROW = True
try:
    import pyarrow  # noqa: F401
except ImportError:
    HAS_PYARROW = False


@contextlib.contextmanager
def _mode(mode):
    """``fast``: every file size takes the pandas path where it qualifies; ``lines``: pandas is
    hidden (an install without the ``frames`` extra); ``c``: pandas without pyarrow."""
    old = fastread.FAST_MIN_BYTES
    hidden = {"lines": "pandas", "c": "pyarrow"}.get(mode)
    saved = sys.modules.get(hidden, False) if hidden else False
    fastread.FAST_MIN_BYTES = 0
    if hidden:
        sys.modules[hidden] = None  # importing it raises ImportError
    try:
        yield
    finally:
        fastread.FAST_MIN_BYTES = old
        if hidden:
            if saved is False:
                del sys.modules[hidden]
            else:
                sys.modules[hidden] = saved


def _read(path, mode, **kw):
    """``(graph, None)`` or ``(None, error message)``."""
    with _mode(mode):
        try:
            return read_any(path, **kw), None
        except GraphFormatError as exc:
            return None, str(exc)


def _same_nx(a, b):
    assert type(a) is type(b)
    assert list(a.nodes(data=True)) == list(b.nodes(data=True))  # order too
    if a.is_directed():
        assert {(u, v): d for u, v, d in a.edges(data=True)} == \
            {(u, v): d for u, v, d in b.edges(data=True)}
    else:
        assert {frozenset((u, v)): d for u, v, d in a.edges(data=True)} == \
            {frozenset((u, v)): d for u, v, d in b.edges(data=True)}
    assert a.number_of_edges() == b.number_of_edges()


def _same_gsm(a, b):
    names = ["indptr", "indices", "mult", "loops"]
    if a.directed:
        names += ["in_indptr", "in_indices", "in_mult", "in_pos"]
    for name in names:
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    assert (a.directed, a.multigraph) == (b.directed, b.multigraph)
    assert a.node_keys == b.node_keys
    assert [type(k) for k in a.node_keys] == [type(k) for k in b.node_keys]
    assert a.node_data == b.node_data
    assert a.edge_data == b.edge_data
    assert a.loop_data == b.loop_data


def _took_fast(path, directed, mode="fast", **kw):
    """Whether ``read_any`` read ``path`` through the pandas path."""
    took = []
    real = {name: getattr(fastread, name) for name in ("read_csv", "read_edgelist")}

    def spy(name):
        def call(*args, **kwargs):
            got = real[name](*args, **kwargs)
            took.append(got is not None)
            return got
        return call

    try:
        for name in real:
            setattr(fastread, name, spy(name))
        _read(path, mode, directed=directed, **kw)
    finally:
        for name, fn in real.items():
            setattr(fastread, name, fn)
    return took == [True]


def _check(path, *, directed=False, fast, **kw):
    """The line readers and the pandas path agree on ``path`` (graphs, GsmGraphs, errors),
    in every mode; ``fast``: whether the file qualifies for the pandas path."""
    want, err = _read(path, "lines", directed=directed, **kw)
    modes = ["fast"] + (["c"] if HAS_PYARROW else [])
    for mode in modes:
        got, got_err = _read(path, mode, directed=directed, **kw)
        assert got_err == err, (mode, got_err, err)
        gsm, gsm_err = _read(path, mode, directed=directed, as_gsm=True, **kw)
        assert gsm_err == err, (mode, gsm_err, err)
        if err is None:
            _same_nx(want, got)
            _same_gsm(from_networkx(want), gsm)
    assert _took_fast(path, directed, **kw) == fast
    assert not _took_fast(path, directed, mode="lines", **kw)
    return want, err


EDGE_LISTS = {
    # name: (bytes, qualifies for the pandas path)
    "spaces": (b"1 2\n2 3\n3 1\n", True),
    "tabs_crlf": (b"1\t2\r\n2\t3\r\n", True),
    "snap": (b"# Directed graph: x.txt\r\n# Nodes: 4 Edges: 3\r\n4 3\r\n0\t1\r\n1\t2\r\n2\t4\r\n",
             True),
    "bom_comments_blank": (BOM + b"% comment\n\n   \n# more\n5 6\n\n6 7\n\n", True),
    "header_not_counting": (b"3 5\n1 2\n", True),
    "header_nodes_beyond_n": (b"2 2\n0 1\n1 3\n", True),
    "header_too_many_nodes": (b"2 2\n0 1\n2 1\n", True),
    "header_alone": (b"5 0\n", True),
    "negative_header": (b"-1 1\n0 1\n", True),
    "labels_dups_loops": (b"1 2 7\n2 1 8\n3 3 9\n1 2 -4\n4 4 1\n4 4 2\n", True),
    "negative_ids": (b"-1 2\n-3 -1\n0 -3\n", True),
    "int64_bounds": (b"9223372036854775807 -9223372036854775808\n0 9223372036854775807\n",
                     True),
    "ragged_whitespace": (b"  1   2 \n\t2\t \t3\t\n3 4  \n", True),
    "mixed_separators": (b"1 2\n2\t3\n", True),
    "repeated_edges": (b"1 2\n2 1\n1 2\n2 2\n2 2\n", True),
    "no_final_newline": (b"1 2\n2 3", True),
    # the line readers only
    "leading_zero": (b"01 2\n1 2\n", False),
    "minus_zero": (b"-0 1\n", False),
    "plus_sign": (b"+1 2\n", False),
    "strings": (b"a b\nb c\n", False),
    "inline_comment": (b"1 2 # x\n2 3\n", False),
    "late_comment": (b"1 2\n# x\n2 3\n", False),
    "lone_cr": (b"1 2\r3 4\n", False),
    "beyond_int64": (b"9223372036854775808 1\n", False),
    "below_int64": (b"-9223372036854775809 1\n", False),
    "mixed_field_counts": (b"1 2\n2 3 4\n", False),
    "four_fields": (b"1 2\n1 2 3 4\n", False),
    "one_field": (b"1 2\n3\n", False),
    "not_utf8_comment": (b"# \xff\n1 2\n", False),
    "only_comments": (b"# nothing\n", False),
    "empty": (b"", False),
    "minus_alone": (b"1 -\n", False),
    "double_minus": (b"1 --2\n", False),
    "minus_inside": (b"1 2-3\n", False),
    "vertical_tab": (b"1\x0b2\n", False),
    "nbsp": ("1\u00a02 3\n".encode(), False),
}


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("name", sorted(EDGE_LISTS))
def test_edge_lists_read_the_same(tmp_path, name, directed):
    data, fast = EDGE_LISTS[name]
    p = tmp_path / f"{name}.txt"
    p.write_bytes(data)
    _check(p, directed=directed, fast=fast)


def test_snap_count_header_is_dropped(tmp_path):
    p = tmp_path / "snap.txt"
    p.write_bytes(EDGE_LISTS["snap"][0])
    G, _ = _read(p, "fast")
    assert sorted(G.edges) == [(0, 1), (1, 2), (2, 4)]
    g, _ = _read(p, "fast", as_gsm=True)
    assert g.node_keys == [0, 1, 2, 4]


def test_repeated_edges_keep_the_last_label(tmp_path):
    p = tmp_path / "g.txt"
    p.write_bytes(EDGE_LISTS["labels_dups_loops"][0])
    G, _ = _read(p, "fast")
    assert G.edges[1, 2] == {"label": -4} and G.edges[4, 4] == {"label": 2}
    D, _ = _read(p, "fast", directed=True)
    assert D.edges[1, 2] == {"label": -4} and D.edges[2, 1] == {"label": 8}


CSVS = {
    "github": ("g.csv", b"id_1,id_2\n0,23977\n1,34526\n1,2370\n23977,1\n", True),
    "crlf_bom": ("g.csv", BOM + b"source,target\r\n3,1\r\n1,2\r\n\r\n2,3\r\n", True),
    "tsv": ("g.tsv", b"source\ttarget\tw\n1\t2\t5\n2\t1\t6\n", True),
    "labels": ("g.csv", (b"source,target,source_label,target_label,w\n"
                         b"0,1,5,6,1\n1,2,6,5,2\n2,0,5,5,3\n0,0,5,5,4\n1,0,6,5,9\n"), True),
    "target_attr_first": ("g.csv", b"a,b,b_label,a_label\n7,8,1,2\n9,7,2,1\n", True),
    "shared_name_both_roles": ("g.csv", (b"source,target,target_c,source_c,x\n"
                                         b"4,5,1,2,0\n5,4,2,1,0\n"), True),
    "header_spaces_case": ("g.csv", b" Target , SOURCE ,w\n1,2,3\n", True),
    "conflicting_node_attr": ("g.csv", b"source,target,source_label\n1,2,5\n1,3,6\n", False),
    "empty_cell": ("g.csv", b"source,target,w\n1,2,\n2,3,4\n", False),
    "quoted": ("g.csv", b"source,target\n\"1\",2\n", False),
    "string_labels": ("g.csv", b"source,target,source_label\n1,2,A\n", False),
    "spaces_in_cells": ("g.csv", b"source,target\n1, 2\n", False),
    "header_only": ("g.csv", b"source,target\n", False),
    "blank_first_line": ("g.csv", b"\nsource,target\n1,2\n", False),
    "short_row": ("g.csv", b"source,target,w\n1,2,3\n4,5\n", False),
    "long_row": ("g.csv", b"source,target\n1,2\n4,5,6\n", False),
    "leading_zero": ("g.csv", b"source,target\n1,02\n", False),
    "one_column": ("g.csv", b"source\n1\n", False),
    "empty": ("g.csv", b"", False),
}


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("name", sorted(CSVS))
def test_csv_files_read_the_same(tmp_path, name, directed):
    fname, data, fast = CSVS[name]
    p = tmp_path / fname
    p.write_bytes(data)
    _check(p, directed=directed, fast=fast)


def test_csv_column_options_read_the_same(tmp_path):
    p = tmp_path / "g.csv"
    p.write_bytes(b"w;to;from;from_k\n1;2;3;4\n5;3;2;6\n")
    _check(p, fast=True, csv_source="from", csv_target="to", csv_delimiter=";")
    G, _ = _read(p, "fast", csv_source="from", csv_target="to", csv_delimiter=";")
    assert list(G.nodes(data=True)) == [(3, {"k": 4}), (2, {"k": 6})]
    assert G.edges[3, 2] == {"w": 5}
    _, err = _read(p, "fast", csv_source="nope", csv_delimiter=";")
    assert "no source column 'nope'" in err


def test_csv_node_order_follows_first_mention(tmp_path):
    # a row names the target first when its first node-attribute column is the target's
    p = tmp_path / "g.csv"
    p.write_bytes(CSVS["target_attr_first"][1])
    g, _ = _read(p, "fast", as_gsm=True)
    assert g.node_keys == [8, 7, 9]
    assert g.node_data == [{"label": 1}, {"label": 2}, {"label": 1}]


def test_attribute_conflicts_keep_the_line_readers_message(tmp_path):
    p = tmp_path / "g.csv"
    p.write_bytes(CSVS["conflicting_node_attr"][1])
    _, err = _read(p, "fast")
    assert err.endswith("g.csv:3: node 1 has label=6 here but label=5 on line 2")


def test_large_files_take_the_pandas_path_by_default(tmp_path):
    rng = np.random.default_rng(1)
    e = rng.integers(0, 5000, size=(fastread.FAST_MIN_BYTES // 8, 2))
    p = tmp_path / "big.txt"
    p.write_text("".join(f"{u}\t{v}\n" for u, v in e.tolist()))
    assert os.path.getsize(p) >= fastread.FAST_MIN_BYTES
    assert fastread.read_edgelist(os.fspath(p)) is not None
    g = read_any(p, as_gsm=True)
    old = fastread.FAST_MIN_BYTES
    try:
        fastread.FAST_MIN_BYTES = 1 << 62
        assert fastread.read_edgelist(os.fspath(p)) is None
        want = read_any(p)
    finally:
        fastread.FAST_MIN_BYTES = old
    _same_gsm(from_networkx(want), g)


@pytest.mark.parametrize("name", ["g.graph", "g.graphml", "g.gml"])
def test_other_formats_as_gsm_are_the_converted_networkx_graph(tmp_path, name):
    G = nx.gnm_random_graph(8, 12, seed=2)
    nx.set_node_attributes(G, {v: v % 3 for v in G}, "label")
    p = tmp_path / name
    if name.endswith(".graph"):
        import nx_gsm

        nx_gsm.write_graph(G, p)
    else:
        (nx.write_graphml if name.endswith(".graphml") else nx.write_gml)(G, p)
    want, _ = _read(p, "lines")
    got, _ = _read(p, "fast", as_gsm=True)
    _same_gsm(from_networkx(want), got)


def test_cli_counts_and_errors_are_the_same_on_the_pandas_path(tmp_path, capsys):
    G = nx.gnm_random_graph(60, 240, seed=3)
    d = tmp_path / "d.csv"
    d.write_text("source,target\n" + "".join(f"{u},{v}\n" for u, v in G.edges()))
    p = tmp_path / "p.txt"
    p.write_text("0 1\n1 2\n2 0\n")
    out = {}
    for mode in ("fast", "lines"):
        with _mode(mode):
            rc = main(["match", str(d), str(p), "--count"])
            o = capsys.readouterr()
            rc2 = main(["match", str(d), str(p), "--count", "--edge-label", "label"])
            e = capsys.readouterr()
        out[mode] = (rc, o.out, rc2, e.err)
    assert out["fast"] == out["lines"]
    assert out["fast"][0] == 0 and out["fast"][2] == 2 and "label" in out["fast"][3]


# -- differential fuzzing --------------------------------------------------------------------
FUZZ = settings(max_examples=int(os.environ.get("NX_GSM_FUZZ_EXAMPLES", "150")), deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.function_scoped_fixture])


def _differential(tmp_path_factory, name, data, directed):
    p = tmp_path_factory.mktemp("fast") / name
    p.write_bytes(data)
    want, err = _read(p, "lines", directed=directed)
    got, got_err = _read(p, "fast", directed=directed)
    assert got_err == err
    if err is None:
        _same_nx(want, got)
        gsm, _ = _read(p, "fast", directed=directed, as_gsm=True)
        _same_gsm(from_networkx(want), gsm)


# mostly files that qualify, with a few tokens the line readers read differently from pandas
_TOKEN = st.one_of(st.integers(-3, 40).map(str), st.integers(-2**63, 2**63 - 1).map(str),
                   st.sampled_from(["01", "-0", "+1", "x", "", "9223372036854775808", "1-2"]))
_EOL = st.sampled_from(["\n", "\r\n"])


@st.composite
def _edge_list(draw):
    sep = draw(st.sampled_from([" ", "\t", "  ", " \t"]))
    eol = draw(_EOL)
    lines = []
    if draw(st.booleans()):
        lines.append("# comment")
    width = draw(st.sampled_from([2, 2, 3]))
    for _ in range(draw(st.integers(0, 12))):
        kind = draw(st.integers(0, 30))
        if kind == 0:
            lines.append(draw(st.sampled_from(["", "  ", "% c", "1 2 # c"])))
            continue
        toks = [draw(st.integers(-3, 12).map(str)) if draw(st.integers(0, 9)) else draw(_TOKEN)
                for _ in range(width if kind > 1 else draw(st.integers(1, 4)))]
        pad = draw(st.sampled_from(["", "", "", " "]))
        lines.append(pad + sep.join(toks) + pad)
    if lines and draw(st.booleans()):  # a count header, right or wrong
        lines.insert(0, f"{draw(st.integers(0, 14))} {draw(st.integers(0, 14))}")
    return eol.join(lines) + (eol if draw(st.booleans()) else "")


@st.composite
def _csv(draw):
    header = draw(st.sampled_from(["source,target", "source,target,w", "a,b,a_x,b_x",
                                   "b,a,b_x,a_x,w", "x,y,y_l,x_l", "s,t,t_k,s_k,t_k"]))
    eol = draw(_EOL)
    width = header.count(",") + 1
    rows = [header]
    for _ in range(draw(st.integers(0, 12))):
        n = width if draw(st.integers(0, 15)) else draw(st.integers(1, width + 1))
        rows.append(",".join(draw(st.integers(-2, 6).map(str)) if draw(st.integers(0, 12))
                             else draw(_TOKEN) for _ in range(n)))
    return eol.join(rows) + eol


@FUZZ
@given(text=st.one_of(_edge_list(), st.text(alphabet="0123-  \t\t\n\n\r#%a", max_size=120)),
       directed=st.booleans())
def test_fuzz_edge_lists_agree(tmp_path_factory, text, directed):
    _differential(tmp_path_factory, "f.txt", text.encode(), directed)


@FUZZ
@given(text=st.one_of(_csv(), st.sampled_from(["source,target\n", "a,b,a_x\n"]).flatmap(
    lambda h: st.text(alphabet="0123-,,,\n\n\r\" ", max_size=120).map(lambda t: h + t))),
    directed=st.booleans())
def test_fuzz_csv_agree(tmp_path_factory, text, directed):
    _differential(tmp_path_factory, "f.csv", text.encode(), directed)
