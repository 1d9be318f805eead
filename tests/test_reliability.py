"""Issue 53's reliability findings: argument checks, degenerate plans on engine objects, output
forms of odd keys and of the empty pattern, and writers that never destroy an existing file.

Expected answers come from NetworkX's VF2 (GraphMatcher) or from the definition of the argument.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms.isomorphism import DiGraphMatcher, GraphMatcher

import nx_gsm
from nx_gsm.engines.base import Budget


def _vf2(G, H, induced=False):
    gm = (DiGraphMatcher if G.is_directed() else GraphMatcher)(G, H)
    it = gm.subgraph_isomorphisms_iter() if induced else gm.subgraph_monomorphisms_iter()
    return [dict(m) for m in it]


# -- finding 4: arguments -------------------------------------------------------------------
@pytest.mark.parametrize("bad", [float("nan"), np.float32("nan"), np.float64("nan"), -1, -0.5,
                                 np.int64(-3)])
def test_timeout_nan_and_negative_raise_value_error(bad):
    G, H = nx.cycle_graph(5), nx.path_graph(3)
    for call in (lambda: nx_gsm.count_subgraph_monomorphisms(G, H, timeout=bad),
                 lambda: nx_gsm.subgraph_monomorphisms(G, H, timeout=bad),
                 lambda: nx_gsm.find_subgraph_isomorphisms(G, H, timeout=bad),
                 lambda: list(nx_gsm.match_frames(G, H, timeout=bad))):
        with pytest.raises(ValueError, match="timeout"):
            call()


@pytest.mark.parametrize("bad", [True, np.bool_(False), "1", [1], 1j])
def test_timeout_wrong_type_raises_type_error(bad):
    with pytest.raises(TypeError, match="timeout"):
        nx_gsm.count_subgraph_monomorphisms(nx.cycle_graph(5), nx.path_graph(3), timeout=bad)


@pytest.mark.parametrize("ok", [np.int64(5), np.float32(5.0), np.float64(5), np.uint8(5), 5,
                                5.0, float("inf"), 10**400])
def test_timeout_accepts_numpy_numbers_and_infinity(ok):
    G, H = nx.cycle_graph(5), nx.path_graph(3)
    want = len(_vf2(G, H))
    assert nx_gsm.count_subgraph_monomorphisms(G, H, timeout=ok) == want
    assert len(list(nx_gsm.subgraph_monomorphisms(G, H, timeout=ok))) == want


def test_infinite_timeout_means_no_deadline():
    assert Budget(float("inf")).deadline is None
    assert Budget(10**400).deadline is None
    assert Budget(np.float32(2.5)).deadline is not None


@pytest.mark.parametrize("bad", ["yes", 1, 0, None, 2.0])
def test_progress_must_be_bool_or_callable(bad):
    with pytest.raises(TypeError, match="progress"):
        nx_gsm.count_subgraph_monomorphisms(nx.cycle_graph(5), nx.path_graph(3), progress=bad)


def test_progress_accepts_numpy_bool_and_callables():
    G, H = nx.cycle_graph(5), nx.path_graph(3)
    want = len(_vf2(G, H))
    assert nx_gsm.count_subgraph_monomorphisms(G, H, progress=np.bool_(False)) == want
    assert nx_gsm.count_subgraph_monomorphisms(G, H, progress=lambda *a: None) == want


@pytest.mark.parametrize("lim", [np.int64(3), np.uint16(3), np.int8(3)])
def test_limit_accepts_numpy_integers(lim):
    G, H = nx.cycle_graph(5), nx.path_graph(3)
    assert nx_gsm.count_subgraph_monomorphisms(G, H, limit=lim) == 3
    assert len(list(nx_gsm.subgraph_monomorphisms(G, H, limit=lim))) == 3
    assert nx_gsm.find_subgraph_monomorphisms(G, H, limit=lim).count == 3


@pytest.mark.parametrize("bad,exc", [(-1, ValueError), (np.int64(-1), ValueError),
                                     (True, TypeError), (1.0, TypeError), ("2", TypeError),
                                     (np.bool_(True), TypeError)])
def test_limit_rejects_bad_values(bad, exc):
    with pytest.raises(exc, match="limit"):
        nx_gsm.count_subgraph_monomorphisms(nx.cycle_graph(5), nx.path_graph(3), limit=bad)


@pytest.mark.parametrize("fn", ["is_subgraph_monomorphic", "is_subgraph_isomorphic"])
def test_is_subgraph_functions_refuse_limit_with_their_own_message(fn):
    f = getattr(nx_gsm, fn)
    with pytest.raises(TypeError, match=rf"{fn}\(\) takes no 'limit'"):
        f(nx.cycle_graph(4), nx.path_graph(3), limit=5)
    induced = fn == "is_subgraph_isomorphic"
    for G, H in ((nx.cycle_graph(4), nx.path_graph(3)), (nx.complete_graph(4), nx.path_graph(3)),
                 (nx.path_graph(3), nx.cycle_graph(3))):
        assert f(G, H, timeout=np.float32(10)) == bool(_vf2(G, H, induced))


def test_cli_rejects_nan_timeout(capsys, tmp_path):
    from nx_gsm.cli import EXIT_ERROR, main

    g = tmp_path / "g.edgelist"
    g.write_text("0 1\n1 2\n")
    rc = main(["match", str(g), str(g), "--timeout", "nan"])
    err = capsys.readouterr().err
    assert rc == EXIT_ERROR
    assert "--timeout" in err and "nan" in err


# -- finding 5: degenerate plans on engine objects, in child processes ----------------------
_CHILD = textwrap.dedent('''
    import json, sys
    import networkx as nx
    import numpy as np
    from networkx.algorithms.isomorphism import DiGraphMatcher, GraphMatcher
    from nx_gsm.api import prepare
    from nx_gsm.engines.cpu import CpuEngine
    from nx_gsm.engines.partitioned import PartitionedEngine

    def vf2(G, H, mode):
        gm = (DiGraphMatcher if G.is_directed() else GraphMatcher)(G, H)
        it = {"mono": gm.subgraph_monomorphisms_iter, "induced": gm.subgraph_isomorphisms_iter,
              "iso": gm.isomorphisms_iter}[mode]()
        return {frozenset(m.items()) for m in it}

    def loop(n):
        H = nx.empty_graph(n)
        H.add_edge(0, 0)
        return H

    engine = {"cpu": lambda: CpuEngine(),
              "partitioned": lambda: PartitionedEngine(inner="cpu", parts=2)}[sys.argv[1]]()
    datas = [nx.Graph(), nx.empty_graph(1), nx.path_graph(4), nx.empty_graph(3), loop(3),
             nx.complete_graph(3)]
    patterns = [nx.Graph(), nx.empty_graph(1), loop(1), nx.path_graph(2), nx.empty_graph(2)]
    bad = []
    n = 0
    for directed in (False, True):
        for G0 in datas:
            for H0 in patterns:
                G = nx.DiGraph(G0) if directed else G0
                H = nx.DiGraph(H0) if directed else H0
                for mode in ("mono", "induced", "iso"):
                    want = vf2(G, H, mode)
                    plan = prepare(G, H, mode)[0]
                    gk, hk = plan.G.node_keys, plan.H.node_keys
                    for limit in (None, 0, 1, 2):
                        n += 1
                        cap = len(want) if limit is None else min(len(want), limit)
                        c = engine.count(plan, limit)
                        got = set()
                        rows = 0
                        for chunk in engine.iter_chunks(plan, limit=limit):
                            for row in chunk.tolist():
                                rows += 1
                                got.add(frozenset((gk[v], hk[int(u)])
                                                  for v, u in zip(row, plan.order)))
                        ok = c == cap and rows == cap and len(got) == cap and got <= want
                        if not ok:
                            bad.append([directed, len(G), len(H), mode, limit, int(c), rows,
                                        len(want)])
    # arguments a kernel would index by: refused with ValueError before any compiled call
    plan = prepare(nx.complete_graph(5), nx.path_graph(3), "mono")[0]
    calls = [lambda: list(engine.iter_chunks(plan, chunk=0))]
    if hasattr(engine, "count_from"):
        for pre in ([[999]], [[-1, 2]], [[0, 1, 2, 3]], [0, 1]):
            calls.append(lambda pre=pre: engine.count_from(plan, np.array(pre)))
            calls.append(lambda pre=pre: list(engine.iter_from(plan, np.array(pre))))
    refused = 0
    for call in calls:
        try:
            call()
        except ValueError:
            refused += 1
    print(json.dumps({"cases": n, "bad": bad, "refused": [refused, len(calls)]}))
''')


@pytest.mark.parametrize("engine", ["cpu", "partitioned"])
def test_engine_objects_on_degenerate_plans_in_a_child_process(engine):
    """Empty and one-node patterns, empty graphs, limits 0/1/2, on the engine objects
    themselves (no API guard in front): the child must exit 0 with VF2's answers."""
    proc = subprocess.run([sys.executable, "-c", _CHILD, engine], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["cases"] == 2 * 6 * 5 * 3 * 4
    assert res["bad"] == []
    refused, calls = res["refused"]
    assert refused == calls == (9 if engine == "cpu" else 1)


@pytest.mark.parametrize("bad,exc", [(-1, ValueError), (1.5, TypeError), (True, TypeError)])
def test_engine_objects_check_limit(bad, exc):
    from nx_gsm.api import prepare
    from nx_gsm.engines.cpu import CpuEngine
    from nx_gsm.engines.partitioned import PartitionedEngine

    plan = prepare(nx.path_graph(4), nx.path_graph(2), "mono")[0]
    for eng in (CpuEngine(), PartitionedEngine(inner="cpu", parts=2)):
        with pytest.raises(exc, match="limit"):
            eng.count(plan, bad)
        with pytest.raises(exc, match="limit"):
            list(eng.iter_chunks(plan, limit=bad))


# -- finding 6: outputs -------------------------------------------------------------------------
def _mapping_set(ms):
    return {frozenset(m.items()) for m in ms}


def test_keys_past_int64_in_every_array_form():
    big = {0: 2**70, 1: 2**70 + 1, 2: -(2**70), 3: 5}
    G = nx.relabel_nodes(nx.cycle_graph(4), big)
    H = nx.path_graph(3)
    want = _mapping_set(_vf2(G, H))
    ms = nx_gsm.find_subgraph_monomorphisms(G, H)
    assert _mapping_set(ms) == want
    hk = ms.pattern_nodes
    df = ms.to_pandas()
    assert {frozenset(zip(r, hk)) for r in df.itertuples(index=False)} == want
    arr = ms.to_numpy(keys=True)
    assert arr.dtype == object
    assert {frozenset(zip(r, hk)) for r in arr.tolist()} == want
    frames = list(nx_gsm.match_frames(G, H, rows_per_frame=5))
    got = {frozenset(zip(r, hk)) for f in frames for r in f.itertuples(index=False)}
    assert got == want and sum(len(f) for f in frames) == len(want)
    assert all(type(x) is int for f in frames for x in f.to_numpy().ravel())
    # keys that fit stay an int64 column
    small = nx_gsm.find_subgraph_monomorphisms(nx.cycle_graph(4), H)
    assert small.to_numpy(keys=True).dtype == np.int64


@pytest.mark.parametrize("G", [nx.path_graph(3), nx.Graph(), nx.DiGraph([(0, 1)])])
@pytest.mark.parametrize("induced", [False, True])
def test_empty_pattern_is_one_empty_mapping_in_every_form(G, induced):
    H = G.__class__()
    want = _vf2(G, H, induced)
    assert want == [{}]
    count = nx_gsm.count_subgraph_isomorphisms if induced else nx_gsm.count_subgraph_monomorphisms
    it = nx_gsm.subgraph_isomorphisms if induced else nx_gsm.subgraph_monomorphisms
    find = nx_gsm.find_subgraph_isomorphisms if induced else nx_gsm.find_subgraph_monomorphisms
    assert count(G, H) == 1 and count(G, H, limit=0) == 0
    assert list(it(G, H)) == want and list(it(G, H, limit=0)) == []
    ms = find(G, H)
    assert list(ms) == want and ms.count == 1
    assert ms.to_numpy().shape == (1, 0) and ms.to_numpy(keys=True).shape == (1, 0)
    assert ms.to_pandas().shape == (1, 0)
    assert [f.shape for f in ms.iter_pandas()] == [(1, 0)]
    frames = list(nx_gsm.match_frames(G, H, induced=induced))
    assert [f.shape for f in frames] == [(1, 0)]
    assert list(nx_gsm.match_frames(G, H, induced=induced, limit=0)) == []


def test_empty_pattern_isomorphism_needs_an_empty_graph():
    for G in (nx.Graph(), nx.path_graph(2)):
        want = [dict(m) for m in GraphMatcher(G, nx.Graph()).isomorphisms_iter()]
        assert list(nx_gsm.isomorphisms(G, nx.Graph())) == want


def _cli(argv, capsys):
    from nx_gsm.cli import main

    rc = main([str(a) for a in argv])
    return rc, capsys.readouterr()


@pytest.mark.parametrize("ext", ["csv", "jsonl", "parquet"])
def test_cli_writer_empty_pattern_is_one_empty_mapping(tmp_path, ext):
    import csv as csvmod

    from nx_gsm.cli import CliError, _Rows

    G = nx.path_graph(3)
    want = _vf2(G, nx.Graph())
    out = tmp_path / f"o.{ext}"
    out.write_bytes(b"keep me")
    if ext == "parquet":
        # Parquet has no rows without columns: refused before the file is touched
        with pytest.raises(CliError, match="empty pattern"):
            _Rows(ext, str(out), [], G)
        assert out.read_bytes() == b"keep me" and _no_temp_files(tmp_path)
        return
    rows = _Rows(ext, str(out), [], G)
    for m in want:
        rows.add(m)
    rows.close()
    if ext == "jsonl":
        assert [json.loads(x) for x in out.read_text().splitlines()] == want
    else:
        with open(out, newline="") as fh:
            got = list(csvmod.reader(fh))
        assert got == [[]] + [[]] * len(want)  # an empty header, one empty row per mapping


@pytest.mark.parametrize("ext", ["csv", "jsonl", "parquet"])
def test_cli_empty_pattern_is_vf2s_answer_or_refused(capsys, tmp_path, ext):
    """Through the command: the one empty mapping, or (a pattern file without nodes being an
    empty or wrong file far more often than a question) a one-line error that leaves the
    output file as it was; never a wrong answer or a traceback."""
    from nx_gsm.cli import EXIT_ERROR, EXIT_OK

    g = tmp_path / "g.edgelist"
    g.write_text("0 1\n1 2\n")
    h = tmp_path / "h.edgelist"
    h.write_text("")
    out = tmp_path / f"o.{ext}"
    out.write_bytes(b"keep me")
    want = _vf2(nx.path_graph(3), nx.Graph())
    rc, res = _cli(["match", g, h, "--output", out], capsys)
    if rc == EXIT_OK:
        assert ext != "parquet"
        if ext == "jsonl":
            assert [json.loads(x) for x in out.read_text().splitlines()] == want
        else:
            assert out.read_text() == "\n" * (1 + len(want))
    else:
        assert rc == EXIT_ERROR and len(res.err.strip().splitlines()) == 1
        assert "pattern" in res.err
        assert out.read_bytes() == b"keep me"
    assert _no_temp_files(tmp_path)


def _no_temp_files(folder):
    return [p.name for p in folder.iterdir() if ".tmp" in p.name] == []


@pytest.mark.parametrize("ext", ["csv", "jsonl", "parquet"])
def test_cli_failed_run_leaves_the_output_file_unchanged(capsys, tmp_path, monkeypatch, ext):
    from nx_gsm import api
    from nx_gsm.cli import EXIT_ERROR

    g = tmp_path / "g.edgelist"
    g.write_text("0 1\n1 2\n")
    out = tmp_path / f"o.{ext}"
    old = b"\x00previous results\xff" * 100
    out.write_bytes(old)

    def failing(*args, **kwargs):
        yield {0: 0, 1: 1}
        raise RuntimeError("search failed half way")

    h = tmp_path / "h.edgelist"
    h.write_text("0 1\n")
    monkeypatch.setattr(api, "subgraph_monomorphisms", failing)
    rc, res = _cli(["match", g, h, "--output", out], capsys)
    assert rc == EXIT_ERROR and "half way" in res.err
    assert out.read_bytes() == old
    assert _no_temp_files(tmp_path)


@pytest.mark.parametrize("ext", ["csv", "jsonl", "parquet"])
def test_cli_output_of_keys_past_int64(capsys, tmp_path, ext):
    from nx_gsm.cli import EXIT_OK

    g = tmp_path / "g.edgelist"
    a, b, c = 2**70, 2**70 + 1, 7
    g.write_text(f"{a} {b}\n{b} {c}\n")
    h = tmp_path / "h.edgelist"
    h.write_text("0 1\n")
    out = tmp_path / f"o.{ext}"
    out.write_bytes(b"old")
    rc, res = _cli(["match", g, h, "--output", out], capsys)
    assert rc == EXIT_OK, res.err
    G = nx.Graph([(a, b), (b, c)])
    want = {(m_inv[0], m_inv[1]) for m in _vf2(G, nx.path_graph(2))
            for m_inv in [{v: k for k, v in m.items()}]}
    if ext == "parquet":
        import pandas as pd

        df = pd.read_parquet(out)
        got = {(int(x), int(y)) for x, y in zip(df["0"], df["1"])}  # strings past int64
    elif ext == "csv":
        import csv as csvmod

        with open(out, newline="") as fh:
            rows = list(csvmod.reader(fh))[1:]
        got = {(int(x), int(y)) for x, y in rows}
    else:
        got = {(d["0"], d["1"]) for d in map(json.loads, out.read_text().splitlines())}
    assert got == want
    assert _no_temp_files(tmp_path)


def test_write_graph_failure_leaves_the_file_unchanged(tmp_path):
    path = tmp_path / "g.graph"
    old = b"t 1 0\nv 0 7 0\n"
    path.write_bytes(old)
    G = nx.path_graph(3)
    G.nodes[2]["label"] = "\ud800"  # a lone surrogate: UTF-8 cannot encode it, mid-file
    with pytest.raises(UnicodeEncodeError):
        nx_gsm.write_graph(G, path)
    assert path.read_bytes() == old
    assert _no_temp_files(tmp_path)
    nx_gsm.write_graph(nx.path_graph(3), path)
    assert nx.utils.graphs_equal(nx_gsm.read_graph(path), nx_gsm.read_graph(path))
    assert sorted(nx_gsm.read_graph(path).edges) == [(0, 1), (1, 2)]


def test_atomic_writer_keeps_mode_and_follows_links(tmp_path):
    from nx_gsm.interop.atomic import atomic_open

    target = tmp_path / "t.txt"
    target.write_text("old")
    os.chmod(target, 0o640)
    link = tmp_path / "link.txt"
    link.symlink_to(target)
    with atomic_open(link, encoding="utf-8") as fh:
        fh.write("new")
    assert link.is_symlink() and target.read_text() == "new"
    assert os.stat(target).st_mode & 0o777 == 0o640
    assert _no_temp_files(tmp_path)


def test_report_figure_writer_failure_leaves_the_figure_unchanged(tmp_path):
    from benchmarks import figures

    path = tmp_path / "scatter.png"
    path.write_bytes(b"old figure")

    class FailingFigure:
        def savefig(self, p, dpi=None):
            with open(p, "wb") as fh:
                fh.write(b"half a PNG")
            raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        figures._save(FailingFigure(), str(path))
    assert path.read_bytes() == b"old figure"
    assert _no_temp_files(tmp_path)


def test_report_markdown_failure_leaves_the_file_unchanged(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    from test_benchmarks_smoke import synthetic_record

    from benchmarks.cli import main

    rec = tmp_path / "rec.json"
    rec.write_text(json.dumps(synthetic_record()))
    out = tmp_path / "rep"
    out.mkdir()
    md = out / "report.md"
    md.write_bytes(b"old report")
    rc = main(["report", str(rec), "--out", str(out), "--title", "\ud800"])
    assert rc == 2, capsys.readouterr().err
    assert md.read_bytes() == b"old report"
    assert _no_temp_files(out)
    rc = main(["report", str(rec), "--out", str(out)])
    assert rc == 0 and md.read_text().startswith("# nx-gsm benchmark report")


def test_harness_markdown_failure_leaves_the_file_unchanged(tmp_path, monkeypatch):
    from test_benchmarks_smoke import synthetic_record

    from benchmarks import cli as bcli

    rec = tmp_path / "rec.json"
    rec.write_text(json.dumps(synthetic_record()))
    md = tmp_path / "harness.md"
    md.write_bytes(b"old harness report")
    monkeypatch.setattr(bcli, "markdown", lambda *a, **k: "# report\n\ud800")
    assert bcli.main(["report", str(rec), "--markdown", str(md)]) == 2
    assert md.read_bytes() == b"old harness report"
    assert _no_temp_files(tmp_path)


def test_match_frames_rows_per_frame_takes_numpy_integers():
    G, H = nx.complete_graph(4), nx.path_graph(3)
    n = len(_vf2(G, H))
    sizes = [len(f) for f in nx_gsm.match_frames(G, H, rows_per_frame=np.int64(10))]
    assert sum(sizes) == n and max(sizes) == 10
    with pytest.raises(ValueError, match="rows_per_frame"):
        list(nx_gsm.match_frames(G, H, rows_per_frame=np.int64(0)))
    with pytest.raises(TypeError, match="rows_per_frame"):
        list(nx_gsm.match_frames(G, H, rows_per_frame=2.0))
