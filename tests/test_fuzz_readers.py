"""Fuzzing the CLI's file readers (CSV, edge list, GraphML, GML): whatever the bytes, a reader
returns a graph or raises GraphFormatError naming the file; nothing else escapes."""

import os

import networkx as nx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from nx_gsm.interop.files import GraphFormatError
from nx_gsm.interop.formats import read_any

# NX_GSM_FUZZ_EXAMPLES: the long mode (python -m conformance fuzz)
EXAMPLES = int(os.environ.get("NX_GSM_FUZZ_EXAMPLES", "120"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                           HealthCheck.function_scoped_fixture])


def _valid(fmt):
    G = nx.DiGraph()
    G.add_node("a", label=1)
    G.add_node("b", label="x")
    G.add_edge("a", "b", w=2.5)
    G.add_edge("b", "a", w=-1)
    if fmt == "graphml":
        return "\n".join(nx.generate_graphml(G)).encode()
    if fmt == "gml":
        return "\n".join(nx.generate_gml(G)).encode()
    if fmt == "csv":
        return b"source,target,source_label,w\na,b,1,2.5\nb,a,x,-1\n"
    return b"a b\nb a\n"


def _check(tmp_path_factory, fmt, data):
    ext = {"graphml": "graphml", "gml": "gml", "csv": "csv", "edgelist": "txt"}[fmt]
    p = tmp_path_factory.mktemp("fuzz") / f"f.{ext}"
    p.write_bytes(data)
    try:
        G = read_any(p)
    except GraphFormatError as exc:
        assert "f." + ext in str(exc)
    else:
        assert isinstance(G, nx.Graph)


def _mutations(fmt):
    base = _valid(fmt)
    cut = st.integers(0, len(base)).map(lambda i: base[:i])
    flip = st.tuples(st.integers(0, len(base) - 1), st.binary(min_size=1, max_size=8)).map(
        lambda t: base[: t[0]] + t[1] + base[t[0] + len(t[1]):])
    insert = st.tuples(st.integers(0, len(base)), st.sampled_from(
        [b"<", b">", b"&amp;", b"&bogus;", b'"', b"[", b"]", b"\x00", b"\xff\xfe",
         b"99999999999999999999",
         b"-1e999", b"nan", b",,,", b"\n\n", b"key=", b"<!DOCTYPE x [<!ENTITY e 'x'>]>"])).map(
        lambda t: base[: t[0]] + t[1] + base[t[0]:])
    return st.one_of(cut, flip, insert, st.binary(max_size=300))


@SETTINGS
@given(data=_mutations("graphml"))
def test_graphml_reader_never_crashes(tmp_path_factory, data):
    _check(tmp_path_factory, "graphml", data)


@SETTINGS
@given(data=_mutations("gml"))
def test_gml_reader_never_crashes(tmp_path_factory, data):
    _check(tmp_path_factory, "gml", data)


@SETTINGS
@given(data=st.one_of(_mutations("csv"),
                      st.text(alphabet='ab01,;"\n\t \\x', max_size=200).map(str.encode)))
def test_csv_reader_never_crashes(tmp_path_factory, data):
    _check(tmp_path_factory, "csv", data)


@SETTINGS
@given(data=st.one_of(_mutations("edgelist"),
                      st.text(alphabet="ab01 \n\t#-.", max_size=200).map(str.encode)))
def test_edgelist_reader_never_crashes(tmp_path_factory, data):
    _check(tmp_path_factory, "edgelist", data)
