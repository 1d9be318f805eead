"""``python -m benchmarks.sunluo trees``: search-tree sizes per filter x order on Sun & Luo
style files, and the study code reported as missing where its binary is absent."""

import json

import networkx as nx

import nx_gsm
from benchmarks import sunluo
from benchmarks.graph_files import write_graph_file


def test_trees_report_every_stage_choice(tmp_path, monkeypatch, capsys):
    base = tmp_path / "sun-luo" / "toy"
    (base / "data_graph").mkdir(parents=True)
    (base / "query_graph").mkdir()
    G = nx.les_miserables_graph()
    G = nx.convert_node_labels_to_integers(G)
    nx.set_node_attributes(G, {v: v % 3 for v in G}, "label")
    H = nx.cycle_graph(4)
    nx.set_node_attributes(H, {v: v % 2 for v in H}, "label")
    ids = {}
    write_graph_file(G, base / "data_graph" / "toy.graph", "label", ids)
    write_graph_file(H, base / "query_graph" / "query_dense_4_1.graph", "label", ids)
    monkeypatch.setenv("NX_GSM_SUNLUO_BIN", str(tmp_path / "missing"))
    assert sunluo.main(["trees", "--datasets", str(tmp_path), "--dataset", "toy", "--groups",
                        "dense_4", "--ids", "1", "--filters", "ac", "ldf"]) == 0
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    want = nx_gsm.count_subgraph_monomorphisms(G, H, node_label="label")
    assert row["query"] == "dense_4_1" and row["sunluo-cpp"] is None
    keys = [k for k in row if "/" in k]
    assert sorted(keys) == sorted(f"{f}/{o}" for f in ("ac", "ldf") for o in ("gql", "ri",
                                                                               "greedy"))
    for k in keys:
        assert row[k]["matches"] == want and row[k]["complete"]
    assert row["ldf/gql"]["candidates"] >= row["ac/gql"]["candidates"]
