"""The ``egsm`` peer's harness (:mod:`benchmarks.egsm`), without a GPU.

EGSM itself runs only on a card, so its process is stood in for by a small fake (a Python
script written here, not EGSM code) that reads the same ``t/v/e`` files the way EGSM's reader
expects them (ids in order, every vertex before the first edge, degrees that add up), counts with
NetworkX VF2 and prints the lines EGSM prints. What EGSM prints is pinned by a sample written
from its printing code (``main.cpp``, ``execution/execution.cu``, ``utils/cuda_helpers.h``).
"""

from __future__ import annotations

import math
import os
import stat
import sys
import textwrap

import networkx as nx
import pytest

from benchmarks import egsm
from benchmarks.datasets import read_sun_luo_graph
from benchmarks.graph_files import write_graph_file
from benchmarks.tools import ToolTimeout, Unavailable

# A whole EGSM printout for a 4-vertex query, in the order main() prints it: its filtering
# steps, the candidate edges, the plan's groups, the memory pool, each group of the join (the
# second one stops for memory, so the rest are joined in one last launch), the totals, the count.
SAMPLE = """\
Build Cuckoo Tries, time (ms): 3(host), 2(kernel)
Filtering, time (ms): 11(host), 9(kernel)

# Candidate edges: 
(0, 1): 412 0: 37 1: 95
(0, 2): 388 0: 37 2: 88
(1, 3): 120 1: 95 3: 41

Group 0: 0 1 (tree)
Group 0 pre edges: 
Group 0 cur edges: 0 - 1 
Group 1: 2 3 
Group 1 pre edges: 0 - 2 1 - 3 
Group 1 cur edges: 

Before Allocation, Free 139.1GB, Total: 139.8GB
After allocation, Free 133.5GB, Total: 139.8GB

Finish group 0, time (ms): 0(host), 0(kernel)
Group 0 # partial results: 412
Stop group 1, time (ms): 5(host), 4(kernel)
Combine remaining groups.
Finish last group, time (ms): 17(host), 16(kernel)

Total join time (ms): 22(host) 20(kernel)
Triggered Load Balancing: true
# Matches: 123456789012
End.
"""

FAKE = textwrap.dedent('''\
    import os, sys, time
    import networkx as nx
    from networkx.algorithms.isomorphism import GraphMatcher

    def read(path):
        lines = [ln.split() for ln in open(path).read().splitlines() if ln.strip()]
        assert lines[0][0] == "t"
        n, m = int(lines[0][1]), int(lines[0][2])
        G, deg, edges = nx.Graph(), {}, False
        for f in lines[1:]:
            if f[0] == "v":
                assert not edges and len(f) == 4 and int(f[1]) == len(G), f
                G.add_node(int(f[1]), label=int(f[2]))
                deg[int(f[1])] = int(f[3])
            else:
                assert f[0] == "e" and len(f) == 3, f
                edges = True
                G.add_edge(int(f[1]), int(f[2]))
        assert len(G) == n and G.number_of_edges() == m
        assert all(G.degree(v) == d for v, d in deg.items())
        return G

    a = sys.argv[1:]
    q, d = a[a.index("-q") + 1], a[a.index("-d") + 1]
    assert a[a.index("--ao") + 1] == "off"
    H = read(q)
    if len(H) > 16 or H.number_of_edges() > 32:
        print("The query graph should have at most 16 vertices and 32 edges.")
        sys.exit(255)
    G = read(d)
    name = os.path.basename(q)
    env = lambda k: os.environ.get(k, "").split(",")
    if name in env("FAKE_EGSM_SLEEP"):
        time.sleep(30)
    if name in env("FAKE_EGSM_CRASH"):
        print("GPUassert: an illegal memory access was encountered /s/x.cu 9", file=sys.stderr)
        sys.exit(200)
    n = sum(1 for _ in GraphMatcher(G, H, node_match=lambda x, y: x["label"] == y["label"])
            .subgraph_monomorphisms_iter())
    n += name in env("FAKE_EGSM_WRONG")
    ms = 30000 if name in env("FAKE_EGSM_SLOW") else int(os.environ.get("FAKE_EGSM_MS", "5"))
    print("Build Cuckoo Tries, time (ms): 1(host), 0(kernel)")
    print("Filtering, time (ms): 2(host), 1(kernel)")
    print(f"Finish last group, time (ms): {ms}(host), {ms}(kernel)")
    print()
    print(f"Total join time (ms): {ms}(host) {ms}(kernel)")
    print("Triggered Load Balancing: false")
    print(f"# Matches: {n}")
    print("End.")
''')


def _script(path, body):
    path.write_text(f"#!{sys.executable}\n{body}")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


@pytest.fixture
def fake(tmp_path):
    return _script(tmp_path / "EGSM", FAKE)


def _labelled(G, labels):
    nx.set_node_attributes(G, dict(zip(G, labels)), "label")
    return G


# -- files ------------------------------------------------------------------------------------
def test_graph_files_round_trip_with_shared_label_ints(tmp_path):
    """Data graph and pattern written with one label dict read back as the same graphs, with
    equal labels mapped to equal ints on both sides and EGSM's reader's layout."""
    G = _labelled(nx.Graph([("a", "b"), ("b", "c"), ("c", "a"), ("c", "d")]),
                  ["x", "y", "x", "z"])
    H = _labelled(nx.Graph([(10, 11), (11, 12)]), ["z", "w", "x"])
    ids = {}
    write_graph_file(G, tmp_path / "g.graph", "label", ids)
    write_graph_file(H, tmp_path / "h.graph", "label", ids)
    assert ids == {"x": 0, "y": 1, "z": 2, "w": 3}
    for src, name in ((G, "g.graph"), (H, "h.graph")):
        back = read_sun_luo_graph(tmp_path / name)
        pos = {v: i for i, v in enumerate(src)}
        assert sorted(back) == list(range(len(src)))
        assert {frozenset(e) for e in back.edges()} == {
            frozenset((pos[u], pos[v])) for u, v in src.edges()}
        assert [back.nodes[pos[v]]["label"] for v in src] == [
            ids[d["label"]] for _, d in src.nodes(data=True)]
        lines = (tmp_path / name).read_text().splitlines()
        kinds = [ln.split()[0] for ln in lines]
        assert kinds == ["t"] + ["v"] * len(src) + ["e"] * src.number_of_edges()
        assert [int(ln.split()[1]) for ln in lines if ln[0] == "v"] == list(range(len(src)))
        assert all(len(ln.split()) == 3 for ln in lines if ln[0] == "e")


def test_sunluo_peer_uses_the_shared_writer():
    from benchmarks import sunluo

    assert sunluo.write_graph_file is write_graph_file


# -- what EGSM prints -------------------------------------------------------------------------
def test_parse_output_reads_count_join_and_filter_times():
    assert egsm.parse_output(SAMPLE) == {
        "count": 123456789012, "join_ms": 22, "join_kernel_ms": 20, "filter_ms": 3 + 11,
        "load_balancing": True}


def test_parse_output_refusal_and_failures():
    with pytest.raises(egsm.Refused, match="at most 16 vertices"):
        egsm.parse_output("The query graph should have at most 16 vertices and 32 edges.\n")
    with pytest.raises(ValueError, match="^GPUassert: out of memory join_bfs_dfs.cu 120$"):
        egsm.parse_output(SAMPLE.split("Finish group 0")[0]
                          + "GPUassert: out of memory /x/processing/join_bfs_dfs.cu 120\n")
    with pytest.raises(ValueError, match="no '# Matches'"):
        egsm.parse_output(SAMPLE.replace("# Matches: 123456789012\n", ""))


def test_join_seconds_reads_a_printed_zero_as_half_a_millisecond():
    assert egsm.join_seconds(22) == pytest.approx(0.022)
    assert egsm.join_seconds(0) == pytest.approx(0.0005)


def test_refuses_over_16_vertices_or_32_edges():
    assert not egsm.refuses(nx.complete_graph(8))  # 28 edges
    assert egsm.refuses(nx.path_graph(17))
    assert egsm.refuses(nx.complete_graph(9))  # 36 edges
    assert not egsm.refuses(nx.path_graph(16))


# -- availability -----------------------------------------------------------------------------
def test_unavailable_when_the_binary_is_missing(tmp_path, monkeypatch):
    with pytest.raises(Unavailable, match="peer not available: EGSM is missing"):
        egsm.Egsm(tmp_path / "EGSM").check()
    monkeypatch.setenv("NX_GSM_EGSM_BIN", str(tmp_path / "elsewhere" / "EGSM"))
    assert egsm.binary() == tmp_path / "elsewhere" / "EGSM"
    with pytest.raises(Unavailable, match="peer not available"):
        egsm.Egsm().check()


def test_unavailable_when_egsm_finds_no_gpu(tmp_path):
    exe = _script(tmp_path / "EGSM", "import sys\nprint('GPUassert: no CUDA-capable device is "
                  "detected /s/execution/execution.cu 19', file=sys.stderr)\nsys.exit(100)\n")
    with pytest.raises(Unavailable, match="no usable GPU .no CUDA-capable device"):
        egsm.Egsm(exe).check()


def test_probe_case_count_is_right_and_a_wrong_probe_is_recorded(fake, tmp_path):
    G, H, want = egsm._probe_graphs()
    assert sum(1 for _ in nx.algorithms.isomorphism.GraphMatcher(G, H)
               .subgraph_monomorphisms_iter()) == want
    tool = egsm.Egsm(fake)
    tool.check()
    assert tool.info()["probe"] == "ok"
    os.environ["FAKE_EGSM_WRONG"] = "q.graph"
    try:
        tool.check()
    finally:
        del os.environ["FAKE_EGSM_WRONG"]
    assert tool.info()["probe"] == f"counted {want + 1} on a case with {want}"


def test_build_needs_a_snapshot(tmp_path):
    with pytest.raises(FileNotFoundError, match="no snapshot of RapidsAtHKUST/EGSM"):
        egsm.build(tmp_path / "nothing", tmp_path / "out")


# -- the tool ---------------------------------------------------------------------------------
def test_tool_counts_times_refuses_and_times_out(fake, tmp_path, monkeypatch):
    G = _labelled(nx.cycle_graph(6), [0, 1, 0, 1, 0, 1])
    tool = egsm.Egsm(fake)
    tool.load(G, "label")
    q = tool.prepare(_labelled(nx.path_graph(3), [0, 1, 0]))
    monkeypatch.setenv("FAKE_EGSM_MS", "7")
    import time

    n, secs = tool.count(q, limit=None, induced=False, deadline=time.perf_counter() + 30)
    assert (n, secs) == (6, pytest.approx(0.007))
    assert tool.count(q, limit=4, induced=False, deadline=time.perf_counter() + 30)[0] == 4
    assert tool.prepare(nx.path_graph(17)) is None
    with pytest.raises(egsm.Refused):
        tool.count(None, limit=None, induced=False, deadline=time.perf_counter() + 30)
    # a pattern that reaches EGSM anyway: its own refusal is read as one
    big = tmp_path / "big.graph"
    write_graph_file(_labelled(nx.path_graph(17), [0] * 17), big, "label", tool.ids)
    assert tool.run(big, 30)["status"] == "refused"
    # a join longer than the time limit, and a process killed past it
    monkeypatch.setenv("FAKE_EGSM_SLOW", q.name)
    assert tool.run(q, 5)["status"] == "timeout"
    monkeypatch.setenv("FAKE_EGSM_SLEEP", q.name)
    monkeypatch.setattr(egsm, "SETUP_ALLOWANCE_S", 0.5)
    t0 = time.perf_counter()
    with pytest.raises(ToolTimeout):
        tool.count(q, limit=None, induced=False, deadline=time.perf_counter() + 0.5)
    assert time.perf_counter() - t0 < 10


# -- ratios -----------------------------------------------------------------------------------
def _row(query, status, egsm_s=None, ours_s=None, **kw):
    r = {"query": query, "status": status, **kw}
    if egsm_s is not None:
        r["egsm_s"] = egsm_s
    if ours_s is not None:
        r["ours_s"] = ours_s
    return r


def test_summarize_ratios_only_over_exact_finished_queries():
    rows = [
        _row("a", "ok", 0.010, 0.010, egsm_ms=10),
        _row("b", "ok", 0.040, 0.010, egsm_ms=40),
        _row("c", "ok", 0.0005, 0.001, egsm_ms=0),
        _row("d", "mismatch", 9.0, 0.001, egsm_count=5, ours_count=4, published=4),
        _row("e", "refused"),
        _row("f", "ours_timeout", 1.0),
        _row("g", "egsm_timeout", None, 2.0),
        _row("h", "both_timeout"),
        _row("i", "egsm_error", None, 0.5, error="exit 1: boom"),
    ]
    s = egsm.summarize(rows)
    ratios = [1.0, 4.0, 0.5]
    assert s["n"] == 3
    assert s["geomean"] == pytest.approx(math.prod(ratios) ** (1 / 3), abs=1e-3)
    assert s["total_ratio"] == pytest.approx(0.0505 / 0.021, abs=1e-3)
    assert s["median"] == 1.0 and s["min"] == 0.5
    assert s["refused"] == 1 and s["queries"] == 9
    assert s["timeouts"] == {"egsm": 1, "ours": 1, "both": 1}
    assert s["ours_cut_where_egsm_finished"] == ["f"]
    assert s["mismatches"] == [{"query": "d", "egsm_count": 5, "ours_count": 4, "published": 4}]
    assert s["errors"] == [{"query": "i", "error": "exit 1: boom"}]
    assert s["egsm_below_resolution"] == 1
    empty = egsm.summarize([_row("e", "refused")])
    assert (empty["n"], empty["geomean"], empty["total_ratio"]) == (0, None, None)


def _mini_dataset(root):
    """A ``sun-luo/yeast`` folder: a labelled data graph, four dense_8 queries (the fourth too
    large for EGSM) and published counts (one of them wrong)."""
    base = root / "sun-luo" / "yeast"
    (base / "data_graph").mkdir(parents=True)
    (base / "query_graph").mkdir()
    G = _labelled(nx.gnm_random_graph(24, 60, seed=3), [i % 3 for i in range(24)])
    ids = {x: x for x in range(3)}
    write_graph_file(G, base / "data_graph" / "yeast.graph", "label", ids)
    pats = [nx.path_graph(3), nx.cycle_graph(4), nx.star_graph(3), nx.path_graph(17)]
    answers = []
    for i, H in enumerate(pats, 1):
        _labelled(H, [v % 2 for v in H])
        write_graph_file(H, base / "query_graph" / f"query_dense_8_{i}.graph", "label", ids)
        n = sum(1 for _ in nx.algorithms.isomorphism.GraphMatcher(
            G, H, node_match=lambda a, b: a["label"] == b["label"]).subgraph_monomorphisms_iter())
        answers.append(f"query_dense_8_{i}.graph {n + (i == 3)}")
    (base / "yeast_ans.txt").write_text("\n".join(answers) + "\n")
    return G


def test_vs_egsm_end_to_end_on_the_cpu_engine(fake, tmp_path, monkeypatch):
    """Every status a query can end in, and the per-set figures, through the real call path
    (our API call on the CPU engine; the fake in EGSM's place)."""
    _mini_dataset(tmp_path / "data")
    # the tool numbers its pattern files q1, q2... in query order: q3 is query 3's, and every
    # EGSM run of it counts one too many
    monkeypatch.setenv("FAKE_EGSM_MS", "3")
    monkeypatch.setenv("FAKE_EGSM_WRONG", "q3.graph")
    logs = []
    out = egsm.vs_egsm(["yeast-dense_8"], engine="cpu", queries=5, timeout=20, repeat=2, fast=60,
                       root=tmp_path / "data", tool=egsm.Egsm(fake), warmup=False, log=logs.append)
    s = out["yeast-dense_8"]
    rows = {r["query"]: r for r in s["per_query"]}
    assert list(rows) == ["dense_8_1", "dense_8_2", "dense_8_3", "dense_8_4"]
    assert [r["status"] for r in rows.values()] == ["ok", "ok", "mismatch", "refused"]
    for r in (rows["dense_8_1"], rows["dense_8_2"]):
        assert r["egsm_count"] == r["ours_count"] == r["published"]
        assert r["egsm_ms"] == 3 and r["egsm_s"] == pytest.approx(0.003)
        assert r["egsm_runs"] == r["ours_runs"] == 2
        assert r["ratio"] == pytest.approx(r["egsm_s"] / r["ours_s"], rel=1e-3)
        assert "published_disagrees" not in r
    bad = rows["dense_8_3"]
    assert bad["egsm_count"] == bad["ours_count"] + 1 == bad["published"]
    assert bad["published_disagrees"] == ["ours"] and "ratio" not in bad
    assert "ours_count" not in rows["dense_8_4"]  # refused: ours is not run
    ratios = [rows[q]["egsm_s"] / rows[q]["ours_s"] for q in ("dense_8_1", "dense_8_2")]
    assert s["n"] == 2 and s["refused"] == 1 and len(s["mismatches"]) == 1 and s["not_run"] == 0
    assert s["geomean"] == pytest.approx(math.sqrt(ratios[0] * ratios[1]), rel=1e-2)
    assert s["engine"] == "cpu" and any("n=2" in line for line in logs)


def test_vs_egsm_failures_are_rows_not_ratios(fake, tmp_path, monkeypatch):
    """EGSM failing on one query and slower than the limit on another, then our call failing:
    each is a row with its status and message, outside the ratios."""
    _mini_dataset(tmp_path / "data")
    monkeypatch.setenv("FAKE_EGSM_CRASH", "q1.graph")
    monkeypatch.setenv("FAKE_EGSM_SLOW", "q2.graph")
    out = egsm.vs_egsm(["yeast-dense_8"], engine="cpu", queries=2, timeout=20, repeat=1,
                       root=tmp_path / "data", tool=egsm.Egsm(fake), warmup=False, log=lambda *_: None)
    s = out["yeast-dense_8"]
    rows = s["per_query"]
    assert [r["status"] for r in rows] == ["egsm_error", "egsm_timeout"]
    assert "illegal memory access" in rows[0]["error"] and rows[0]["ours_count"] >= 0
    assert rows[1]["ours_count"] == rows[1]["published"]
    assert s["n"] == 0 and s["timeouts"] == {"egsm": 1, "ours": 0, "both": 0}
    assert s["errors"] == [{"query": "dense_8_1", "error": rows[0]["error"]}]
    monkeypatch.delenv("FAKE_EGSM_CRASH")
    monkeypatch.delenv("FAKE_EGSM_SLOW")
    out = egsm.vs_egsm(["yeast-dense_8"], engine="no-such-engine", queries=1, timeout=20,
                       repeat=1, root=tmp_path / "data", tool=egsm.Egsm(fake), warmup=False,
                       log=lambda *_: None)
    (row,) = out["yeast-dense_8"]["per_query"]
    assert row["status"] == "ours_error" and row["error"].startswith("ours: ")
    assert row["egsm_count"] == row["published"]


def test_vs_egsm_takes_no_query_past_its_budget(fake, tmp_path):
    _mini_dataset(tmp_path / "data")
    out = egsm.vs_egsm(["yeast-dense_8"], engine="cpu", budget=0, root=tmp_path / "data",
                       tool=egsm.Egsm(fake), warmup=False, log=lambda *_: None)
    s = out["yeast-dense_8"]
    assert (s["n"], s["queries"], s["not_run"], s["per_query"]) == (0, 0, 4, [])


def test_process_probe_times_both_processes(fake, tmp_path):
    _mini_dataset(tmp_path / "data")
    rec = egsm.process_probe("yeast", "query_dense_8_2.graph", repeat=1, warmup=False,
                             engine="cpu", root=tmp_path / "data", tool=egsm.Egsm(fake))
    assert rec["egsm_count"] == rec["nx_gsm_count"] == [rec["published"]]
    assert "nx_gsm_error" not in rec and "egsm_error" not in rec
    assert rec["ratio"] == pytest.approx(rec["nx_gsm_min_s"] / rec["egsm_min_s"], rel=1e-2)
    assert len(rec["egsm_wall_s"]) == len(rec["nx_gsm_wall_s"]) == 1


def test_vs_egsm_reports_egsm_unavailable(tmp_path):
    with pytest.raises(Unavailable, match="peer not available"):
        egsm.vs_egsm(["yeast-dense_8"], tool=egsm.Egsm(tmp_path / "EGSM"), root=tmp_path, warmup=False)


def test_vs_egsm_skips_a_set_whose_data_is_missing(fake, tmp_path):
    out = egsm.vs_egsm(["human-dense_8"], engine="cpu", root=tmp_path, tool=egsm.Egsm(fake),
                       warmup=False, log=lambda *_: None)
    assert out == {"human-dense_8": {"n": 0, "skipped": "human.graph not found"}}


def test_command_line_compare_writes_the_record(fake, tmp_path, monkeypatch, capsys):
    import json

    _mini_dataset(tmp_path / "data")
    args = ["compare", "--sets", "yeast-dense_8", "--engine", "cpu", "--queries", "2",
            "--repeat", "1", "--datasets", str(tmp_path / "data"), "--no-warmup",
            "--out", str(tmp_path / "r.json")]
    monkeypatch.setenv("NX_GSM_EGSM_BIN", str(tmp_path / "none"))
    assert egsm.main(args) == 2
    assert "peer not available" in capsys.readouterr().err
    monkeypatch.setenv("NX_GSM_EGSM_BIN", str(fake))
    assert egsm.main(args) == 0
    rec = json.loads((tmp_path / "r.json").read_text())
    assert rec["egsm"]["probe"] == "ok"
    s = rec["vs_egsm"]["yeast-dense_8"]
    assert s["n"] == 2 and [r["status"] for r in s["per_query"]] == ["ok", "ok"]
    out = capsys.readouterr().out
    shown = json.loads(out[out.index("\n{") + 1:])  # after the progress lines
    assert shown["vs_egsm"]["yeast-dense_8"]["n"] == 2
    assert "per_query" not in shown["vs_egsm"]["yeast-dense_8"]
