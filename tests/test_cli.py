"""The ``nx-gsm`` command: every subcommand, every input and output format, errors, timeouts.

Commands run in-process through ``nx_gsm.cli.main`` (fast: the JIT is warm after the first);
Ctrl-C runs a subprocess and sends it SIGINT.
"""

from __future__ import annotations

import csv
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import networkx as nx
import pytest

import nx_gsm
from nx_gsm.engines import available_engines
from nx_gsm.cli import EXIT_ERROR, EXIT_INTERRUPTED, EXIT_OK, EXIT_TIMEOUT, main

REPO = Path(__file__).resolve().parents[1]


def run(capsys, *argv):
    """(exit status, stdout, stderr) of ``nx-gsm argv``."""
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse usage errors and --help
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def one_error_line(err, *needles):
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, err
    assert "error" in lines[0]
    for n in needles:
        assert n in lines[0], lines[0]
    return lines[0]


# -- tiny labelled graphs in every format -----------------------------------------------------
def labelled_data():
    """A 4-cycle 0-1-2-3 with a chord 0-2 and a tail 3-4; labels A/B."""
    G = nx.Graph([(0, 1), (1, 2), (2, 3), (3, 0), (0, 2), (3, 4)])
    for v, lab in {0: "A", 1: "B", 2: "A", 3: "B", 4: "A"}.items():
        G.nodes[v]["label"] = lab
    return G


def labelled_pattern():
    """A path A - B - A."""
    H = nx.Graph([(0, 1), (1, 2)])
    for v, lab in {0: "A", 1: "B", 2: "A"}.items():
        H.nodes[v]["label"] = lab
    return H


def write(G, path):
    """Write G (int nodes, str labels A/B) in the format path's extension names."""
    path = Path(path)
    ext = path.suffix
    code = {"A": 1, "B": 2}
    if ext == ".graph":
        lines = [f"t {G.number_of_nodes()} {G.number_of_edges()}"]
        lines += [f"v {v} {code[G.nodes[v]['label']]} {G.degree(v)}" for v in sorted(G)]
        lines += [f"e {u} {v}" for u, v in G.edges()]
        path.write_text("\n".join(lines) + "\n")
    elif ext == ".csv":
        lines = ["source,target,source_label,target_label,weight"]
        lines += [f"{u},{v},{G.nodes[u]['label']},{G.nodes[v]['label']},{i}"
                  for i, (u, v) in enumerate(G.edges())]
        path.write_text("\n".join(lines) + "\n")
    elif ext == ".graphml":
        nx.write_graphml(G, path)
    elif ext == ".gml":
        # written by hand: NetworkX's writer would store the node key in GML's "label" field
        body = "".join(f"  node [\n    id {v}\n    label \"{G.nodes[v]['label']}\"\n  ]\n"
                       for v in G)
        body += "".join(f"  edge [\n    source {u}\n    target {v}\n  ]\n" for u, v in G.edges())
        path.write_text(f"graph [\n{body}]\n")
    else:
        path.write_text("".join(f"{u} {v}\n" for u, v in G.edges()))
    return path


FORMATS = [".graph", ".csv", ".graphml", ".gml", ".txt"]


@pytest.mark.parametrize("ext", FORMATS)
def test_match_count_every_format(capsys, tmp_path, ext):
    G, H = labelled_data(), labelled_pattern()
    d, p = write(G, tmp_path / f"data{ext}"), write(H, tmp_path / f"pattern{ext}")
    labelled = ext != ".txt"  # a plain edge list carries no node labels
    args = ["--label", "label"] if labelled else []
    for induced in (False, True):
        flag = ["--induced"] if induced else []
        rc, out, err = run(capsys, "match", d, p, "--count", *args, *flag)
        assert rc == EXIT_OK, err
        fn = nx_gsm.count_subgraph_isomorphisms if induced else nx_gsm.count_subgraph_monomorphisms
        want = fn(G, H, node_label="label") if labelled else fn(nx.Graph(G.edges()),
                                                                nx.Graph(H.edges()))
        assert int(out.strip()) == want
        assert want > 0


def test_match_rows_to_stdout(capsys, tmp_path):
    G, H = labelled_data(), labelled_pattern()
    d, p = write(G, tmp_path / "d.graph"), write(H, tmp_path / "p.graph")
    rc, out, err = run(capsys, "match", d, p, "--label", "label")
    assert rc == EXIT_OK, err
    rows = list(csv.reader(io.StringIO(out)))
    assert rows[0] == ["0", "1", "2"]  # one column per pattern node
    got = {tuple(map(int, r)) for r in rows[1:]}
    want = {tuple(inv[h] for h in (0, 1, 2))
            for inv in ({h: g for g, h in m.items()}
                        for m in nx_gsm.subgraph_monomorphisms(G, H, node_label="label"))}
    assert got == want and len(rows) - 1 == len(want)
    rc, out, _ = run(capsys, "match", d, p, "--label", "label", "--limit", "2")
    assert rc == EXIT_OK and len(out.splitlines()) == 3


def test_csv_columns_and_delimiter(capsys, tmp_path):
    f = tmp_path / "g.tsv"
    f.write_text("from\tto\tfrom_kind\tto_kind\n1\t2\tx\ty\n2\t3\ty\tx\n3\t1\tx\tx\n")
    pat = tmp_path / "p.tsv"
    pat.write_text("from\tto\tfrom_kind\tto_kind\n7\t8\tx\ty\n")
    rc, out, err = run(capsys, "match", f, pat, "--count", "--label", "kind",
                       "--csv-source", "from", "--csv-target", "to")
    assert rc == EXIT_OK, err
    assert out.strip() == "2"  # x-y edges: 1-2 and 3-2 (pattern edge direction free)
    bad = tmp_path / "bad.csv"
    bad.write_text("source,target,source_label\n1,2,A\n1,3,B\n")
    rc, _, err = run(capsys, "match", bad, pat, "--count")
    one_error_line(err, "bad.csv:3", "label")
    assert rc == EXIT_ERROR


def test_directed_edge_lists(capsys, tmp_path):
    d = tmp_path / "d.txt"
    d.write_text("1 2\n2 3\n3 1\n")
    p = tmp_path / "p.txt"
    p.write_text("a b\nb c\n")
    rc, out, _ = run(capsys, "match", d, p, "--count", "--directed")
    assert rc == EXIT_OK and out.strip() == "3"
    rc, out, _ = run(capsys, "match", d, p, "--count")
    assert rc == EXIT_OK and out.strip() == "6"


@pytest.mark.parametrize("ext", [".csv", ".jsonl", ".parquet"])
def test_outputs(capsys, tmp_path, ext):
    if ext == ".parquet":
        pytest.importorskip("pandas")
        pytest.importorskip("pyarrow")
    G, H = labelled_data(), labelled_pattern()
    d, p = write(G, tmp_path / "d.graph"), write(H, tmp_path / "p.graph")
    out_file = tmp_path / f"out{ext}"
    rc, out, err = run(capsys, "match", d, p, "--label", "label", "--output", out_file)
    assert rc == EXIT_OK, err
    assert out == ""
    n = nx_gsm.count_subgraph_monomorphisms(G, H, node_label="label")
    if ext == ".csv":
        rows = list(csv.reader(out_file.open()))
        assert rows[0] == ["0", "1", "2"] and len(rows) == n + 1
    elif ext == ".jsonl":
        recs = [json.loads(line) for line in out_file.read_text().splitlines()]
        assert len(recs) == n and set(recs[0]) == {"0", "1", "2"}
        for r in recs:  # each record maps pattern node -> data node, and is a real match
            assert G.nodes[r["0"]]["label"] == "A" and G.has_edge(r["0"], r["1"])
    else:
        import pandas as pd

        df = pd.read_parquet(out_file)
        assert list(df.columns) == ["0", "1", "2"] and len(df) == n


def test_explain_text_and_json(capsys, tmp_path):
    G, H = labelled_data(), labelled_pattern()
    d, p = write(G, tmp_path / "d.graph"), write(H, tmp_path / "p.graph")
    rc, out, err = run(capsys, "explain", d, p, "--label", "label")
    assert rc == EXIT_OK, err
    assert "engine" in out and "order" in out and "monomorphism" in out
    rc, out, err = run(capsys, "explain", d, p, "--label", "label", "--induced", "--json")
    assert rc == EXIT_OK, err
    info = json.loads(out)
    assert info["mode"] == "induced"
    assert sorted(info["order"]) == [0, 1, 2]
    assert available_engines()[info["engine"]] is None  # the planner picked a usable engine


def test_info(capsys):
    rc, out, err = run(capsys, "info")
    assert rc == EXIT_OK, err
    assert "nx-gsm" in out and "NetworkX" in out and "GPU" in out
    assert "engine cpu" in out and "available" in out


def test_demo(capsys):
    rc, out, err = run(capsys, "demo")
    assert rc == EXIT_OK, err
    assert "yeast" in out
    assert sum(line.rstrip().endswith("yes") for line in out.splitlines()) == 10
    assert "one match" in out


# -- errors -----------------------------------------------------------------------------------
def test_error_missing_file(capsys, tmp_path):
    p = write(labelled_pattern(), tmp_path / "p.txt")
    rc, out, err = run(capsys, "match", tmp_path / "nope.txt", p)
    assert rc == EXIT_ERROR and out == ""
    one_error_line(err, "nope.txt", "no such file")


@pytest.mark.parametrize("name,text,needle", [
    ("bad.graph", "t 2 1\nv 0 1\nv 1 x\ne 0 1\n", "bad.graph:3"),
    ("bad.txt", "1 2\n1 2 3 4\n", "bad.txt:2"),
    ("bad.csv", "source,target\n1,2\n3\n", "bad.csv:3"),
    ("bad.graphml", "<graphml><graph>", "bad.graphml"),
    ("bad.gml", "graph [ node [ id 0 ", "bad.gml"),
])
def test_error_malformed_file(capsys, tmp_path, name, text, needle):
    (tmp_path / name).write_text(text)
    p = write(labelled_pattern(), tmp_path / "p.txt")
    rc, _, err = run(capsys, "match", tmp_path / name, p, "--count")
    assert rc == EXIT_ERROR
    one_error_line(err, needle)


@pytest.mark.parametrize("argv,needle", [
    (["match", "{d}", "{p}", "--bogus"], "--bogus"),
    (["match", "{d}", "{p}", "--limit", "x"], "--limit"),
    (["match", "{d}", "{p}", "--engine", "warp9"], "warp9"),
    (["match", "{d}", "{p}", "--output", "{t}/out.xlsx"], ".xlsx"),
    (["match", "{d}", "{p}", "--limit", "-1"], "--limit"),
    (["match", "{d}", "{p}", "--label", "colour"], "colour"),
    (["match", "{d}"], "required"),
    (["frobnicate"], "frobnicate"),
    (["bench"], "bench"),  # benchmarks run from a source checkout: python -m benchmarks
])
def test_error_bad_option(capsys, tmp_path, argv, needle):
    d, p = write(labelled_data(), tmp_path / "d.txt"), write(labelled_pattern(), tmp_path / "p.txt")
    argv = [a.format(d=d, p=p, t=tmp_path) for a in argv]
    rc, out, err = run(capsys, *argv)
    assert rc == EXIT_ERROR and out == ""
    one_error_line(err, needle)


def test_error_directedness(capsys, tmp_path):
    d = write(labelled_data(), tmp_path / "d.txt")
    p = write(labelled_pattern(), tmp_path / "p.txt")
    rc, _, err = run(capsys, "match", d, p, "--count", "--format", "edgelist")
    assert rc == EXIT_OK
    pd_ = tmp_path / "p.graphml"
    nx.write_graphml(nx.DiGraph([(0, 1)]), pd_)
    rc, _, err = run(capsys, "match", d, pd_, "--count")
    assert rc == EXIT_ERROR
    one_error_line(err, "directed")


# -- timeouts and Ctrl-C ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def huge(tmp_path_factory):
    """K60 data and a 9-node path pattern: ~10^15 monomorphisms, no search finishes."""
    t = tmp_path_factory.mktemp("huge")
    d, p = t / "k60.txt", t / "p9.txt"
    nx.write_edgelist(nx.complete_graph(60), d, data=False)
    nx.write_edgelist(nx.path_graph(9), p, data=False)
    main(["match", str(d), str(p), "--count", "--limit", "10"])  # compile / load the JIT cache
    main(["match", str(d), str(p), "--limit", "10", "--output", str(t / "warm.csv")])
    return d, p


def _timed(capsys, *argv):
    t = time.monotonic()
    rc, out, err = run(capsys, *argv)
    return time.monotonic() - t, rc, out, err


def test_timeout_enumerate(capsys, huge, tmp_path):
    d, p = huge
    dt, rc, out, err = _timed(capsys, "match", d, p, "--timeout", "1",
                              "--output", tmp_path / "o.csv")
    assert rc == EXIT_TIMEOUT
    assert "partial: timeout" in err
    assert dt < 2.0, f"--timeout 1 returned after {dt:.2f} s"
    n = len((tmp_path / "o.csv").read_text().splitlines()) - 1
    assert n > 0 and f"{n} matches" in err


def test_timeout_count(capsys, huge):
    d, p = huge
    dt, rc, out, err = _timed(capsys, "match", d, p, "--count", "--timeout", "1")
    assert rc == EXIT_TIMEOUT
    assert "partial: timeout" in err
    assert int(out.strip()) > 0
    assert dt < 2.0, f"--timeout 1 returned after {dt:.2f} s"


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is POSIX")
def test_ctrl_c_prints_partial_results(huge):
    d, p = huge
    # restore Python's Ctrl-C handler in the child even when this test runs in a background job
    # (whose shell sets SIGINT to ignored, which children inherit)
    code = textwrap.dedent("""
        import signal, sys
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from nx_gsm.cli import main
        sys.exit(main(sys.argv[1:]))
    """)
    proc = subprocess.Popen([sys.executable, "-c", code, "match", str(d), str(p)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        header = proc.stdout.readline()  # written once planning is done, before the search
        assert header.strip() == ",".join(map(str, range(9)))
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == EXIT_INTERRUPTED, err
    assert "partial: interrupted" in err
    assert len(out.splitlines()) > 0


def test_module_entry_point(tmp_path):
    """``python -m nx_gsm.cli`` (what the ``nx-gsm`` script runs) works end to end."""
    d = write(labelled_data(), tmp_path / "d.txt")
    p = write(labelled_pattern(), tmp_path / "p.txt")
    proc = subprocess.run([sys.executable, "-m", "nx_gsm.cli", "match", str(d), str(p), "--count"],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(
        nx_gsm.count_subgraph_monomorphisms(nx.Graph(labelled_data().edges()),
                                            nx.Graph(labelled_pattern().edges())))


# -- labels of .graph files, empty patterns, python -m nx_gsm, edge-list headers, Ctrl-C count --
def test_graph_files_match_with_their_labels_by_default(capsys, tmp_path):
    G, H = labelled_data(), labelled_pattern()
    d, p = write(G, tmp_path / "d.graph"), write(H, tmp_path / "p.graph")
    labelled = nx_gsm.count_subgraph_monomorphisms(G, H, node_label="label")
    plain = nx_gsm.count_subgraph_monomorphisms(nx.Graph(G.edges()), nx.Graph(H.edges()))
    assert labelled != plain  # the files' labels change the answer
    rc, out, err = run(capsys, "match", d, p, "--count")
    assert rc == EXIT_OK and int(out) == labelled, err
    rc, out, err = run(capsys, "match", d, p, "--count", "--no-labels")
    assert rc == EXIT_OK and int(out) == plain, err
    rc, _, err = run(capsys, "match", d, p, "--count", "--no-labels", "--label", "label")
    assert rc == EXIT_ERROR
    one_error_line(err, "--no-labels")
    # other formats keep matching without labels unless --label is given
    d2, p2 = write(G, tmp_path / "d.csv"), write(H, tmp_path / "p.csv")
    rc, out, err = run(capsys, "match", d2, p2, "--count")
    assert rc == EXIT_OK and int(out) == plain, err


@pytest.mark.parametrize("name, text", [("p.txt", ""), ("p.txt", "# only a comment\n"),
                                        ("p.graph", "t 0 0\n")])
def test_empty_pattern_file_is_an_error(capsys, tmp_path, name, text):
    d = write(labelled_data(), tmp_path / "d.txt")
    p = tmp_path / name
    p.write_text(text)
    for extra in ([], ["--count"]):
        rc, out, err = run(capsys, "match", d, p, *extra)
        assert rc == EXIT_ERROR and out == ""
        one_error_line(err, str(p), "no nodes")


def test_python_dash_m_nx_gsm(tmp_path):
    d = write(labelled_data(), tmp_path / "d.txt")
    p = write(labelled_pattern(), tmp_path / "p.txt")
    proc = subprocess.run([sys.executable, "-m", "nx_gsm", "match", str(d), str(p), "--count"],
                          capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(REPO)})
    assert proc.returncode == 0, proc.stderr
    assert int(proc.stdout) == nx_gsm.count_subgraph_monomorphisms(
        nx.Graph(labelled_data().edges()), nx.Graph(labelled_pattern().edges()))


def test_edge_list_count_header_is_not_an_edge(capsys, tmp_path):
    from nx_gsm.interop.formats import read_edgelist

    G = nx.Graph(labelled_data().edges())  # 5 nodes 0..4, 6 edges
    body = "".join(f"{u} {v}\n" for u, v in G.edges())
    snap = tmp_path / "snap.txt"
    snap.write_text(f"# Directed graph: snap.txt\n# Nodes: 5 Edges: 6\n5 6\n{body}")
    one_based = tmp_path / "one.txt"
    one_based.write_text("4 3\n1 2\n2 3\n3 4\n")
    for path, want in ((snap, G), (one_based, nx.path_graph([1, 2, 3, 4]))):
        got = read_edgelist(path)
        assert sorted(got.nodes) == sorted(want.nodes)
        assert {frozenset(e) for e in got.edges} == {frozenset(e) for e in want.edges}
    # a first line that does not count the rest is an edge
    edge = tmp_path / "edge.txt"
    edge.write_text("5 7\n" + body)
    assert read_edgelist(edge).has_edge(5, 7)
    p = write(labelled_pattern(), tmp_path / "p.txt")
    rc, out, err = run(capsys, "match", snap, p, "--count")
    assert rc == EXIT_OK and int(out) == nx_gsm.count_subgraph_monomorphisms(
        G, nx.Graph(labelled_pattern().edges())), err


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a child process is POSIX")
def test_ctrl_c_during_count_prints_partial_count(huge):
    d, p = huge
    code = textwrap.dedent("""
        import signal, sys
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from nx_gsm.cli import main
        sys.exit(main(sys.argv[1:]))
    """)
    proc = subprocess.Popen([sys.executable, "-c", code, "match", str(d), str(p), "--count",
                             "--progress"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    try:
        seen = ""
        while "matches=" not in seen:  # the bar's first report: the search is under way
            ch = proc.stderr.read(1)
            assert ch, seen
            seen += ch
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == EXIT_INTERRUPTED, err
    assert "partial: interrupted" in err
    assert int(out) > 0
