"""The GPU check's tests phase (``gpu/check.py``), on the CPU: card test files run as parallel
pytest processes, GAMMA's random blocks dealt over several, counts read from each junit file, and
a process past the phase's time killed and reported instead of counted."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpu import check  # noqa: E402


def test_jobs_cover_every_card_file_and_every_gamma_block():
    jobs = check._test_jobs(gamma_cases=40, gamma_jobs=6)
    names = [n for n, _, _ in jobs]
    files = {Path(t[0]).stem for _, t, _ in jobs}
    assert {"test_gmatch", "test_gsi", "test_geneva", "test_faults", "test_partitioned",
            "test_gpu_formats", "test_gamma"} <= files
    blocks = [t for n, ts, _ in jobs if n.startswith("test_gamma_random_") for t in ts]
    assert sorted(int(b.rsplit("[", 1)[1][:-1]) for b in blocks) == list(range(20))
    assert len([n for n in names if n.startswith("test_gamma_random_")]) == 6
    assert all(env.get("GAMMA_CASES") == "40" for n, _, env in jobs if "gamma" in n)
    assert not any(n.startswith("test_gamma_random_")
                   for n, _, _ in check._test_jobs(gamma_cases=0, gamma_jobs=6))
    # more processes than 20 blocks: the cases are cut into as many blocks, which pytest collects
    many = [(ts, env) for n, ts, env in check._test_jobs(gamma_cases=40, gamma_jobs=50)
            if n.startswith("test_gamma_random_")]
    assert len(many) == 50 and all(env["GAMMA_BLOCKS"] == "50" for _, env in many)
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                          "-p", "no:cacheprovider", *[t for ts, _ in many for t in ts]],
                         cwd=ROOT, capture_output=True, text=True,
                         env=dict(os.environ, GAMMA_BLOCKS="50"))
    assert "50 tests collected" in out.stdout, out.stdout[-2000:]


def test_counts_from_each_process_and_a_killed_one_not_counted(tmp_path):
    (tmp_path / "test_ok.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    (tmp_path / "test_bad.py").write_text("def test_c():\n    assert 1 == 2\n")
    (tmp_path / "test_slow.py").write_text("import time\n\ndef test_d():\n    time.sleep(60)\n")
    jobs = [(n, [str(tmp_path / f"{n}.py")], {}) for n in ("test_ok", "test_bad", "test_slow")]
    rec = {}
    check.phase_tests(rec, 10.0, tmp_path, jobs=jobs)
    t = rec["tests"]
    assert (t["passed"], t["failed"]) == (2, 1) and t["timed_out"] == ["test_slow"]
    assert t["jobs"]["test_slow"]["rc"] == "timeout" and t["rc"] == 1
    # junit's class name carries the file's path from pytest's rootdir, which varies
    assert len(t["failures"]) == 1 and t["failures"][0].endswith("test_bad::test_c")


def test_each_suite_warms_its_engines_and_the_baseline_worker_first(tmp_path):
    """The bench's per-suite warm-up (on a fresh card host the first timed yeast-16
    query compiled host-level code inside its timing) runs the default engine, every variant
    and the baseline worker once on the dataset's warm-up query, untimed."""
    import networkx as nx

    import nx_gsm

    base = tmp_path / "yeast"
    (base / "query_graph").mkdir(parents=True)
    (base / "query_graph" / "query_dense_16_1.graph").write_text(
        "t 3 2\nv 0 1 1\nv 1 1 2\nv 2 1 1\ne 0 1\ne 1 2\n")
    Gx = nx.path_graph(5)
    nx.set_node_attributes(Gx, 1, "label")
    G = nx_gsm.from_networkx(Gx, node_attrs=["label"])

    class Eng:
        def __init__(self):
            self.plans = []

        def count(self, plan):
            self.plans.append(plan)
            return 0

    class Worker:
        calls = []

        def run(self, *args):
            self.calls.append(args)
            return ("ok", 6, 0.0)

    eng, variants, worker = Eng(), {"a": Eng(), "b": Eng()}, Worker()
    check._warm_suite("yeast", base, G, eng, variants, worker, "cpu")
    assert [len(e.plans) for e in (eng, *variants.values())] == [1, 1, 1]
    assert eng.plans[0].k == 3
    assert [(a[0], Path(a[2]).name) for a in worker.calls] == [("cpu", "query_dense_16_1.graph")]
    # the VF2 suite: the engines, not the (NetworkX) baseline
    check._warm_suite("yeast", base, G, eng, variants, worker, "vf2")
    assert [len(e.plans) for e in (eng, *variants.values())] == [2, 2, 2]
    assert len(worker.calls) == 1
    # a dataset without a warm-up query (or without the file) warms nothing
    check._warm_suite("wordnet", base, G, eng, variants, worker, "cpu")
    check._warm_suite("human", base, G, eng, variants, worker, "cpu")
    assert len(eng.plans) == 2 and len(worker.calls) == 1


def test_screened_queries_go_to_their_dataset_and_size_suite():
    # what benchmarks.vf2_screen prints, plus the older yeast lists without a dataset
    entries = ["dense_8_5", "yeast:dense_16_6", "human:sparse_8_3", "human:dense_8_12",
               "sparse_16_2", "yeast:sparse_8_9", "human:dense_16_1"]
    assert check._screened(entries, "yeast", ["dense_8", "sparse_8"]) == ["dense_8_5",
                                                                          "sparse_8_9"]
    assert check._screened(entries, "yeast", ["dense_16", "sparse_16"]) == ["dense_16_6",
                                                                            "sparse_16_2"]
    assert check._screened(entries, "human", ["dense_8", "sparse_8"]) == ["sparse_8_3",
                                                                          "dense_8_12"]
    assert check._screened(entries, "wordnet", ["dense_8", "sparse_8"]) == []


def test_the_committed_screens_give_the_issue_sets_finished_queries():
    got = check.screened_queries()
    assert len(got) == len(set(got)) and all(e.count(":") == 1 for e in got)
    y16 = check._screened(got, "yeast", ["dense_16", "sparse_16"])
    # the 15 yeast 16-vertex queries VF2 finished within the card-host screen's 13 s cap
    assert y16[:3] == ["dense_16_6", "dense_16_9", "dense_16_14"] and len(y16) == 15
    assert check._screened(got, "human", ["dense_8", "sparse_8"]) == []
    y8 = check._screened(got, "yeast", ["dense_8", "sparse_8"])
    assert len(y8) == 108 and y8[0] == "dense_8_4"
    assert check._vf2_queries("screened") == got
    assert check._vf2_queries("dense_8_4,human:sparse_8_3") == ["dense_8_4", "human:sparse_8_3"]
    assert check._vf2_queries(None) is None
