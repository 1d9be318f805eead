"""``nx_gsm.warmup`` compiles every kernel variant, and the first compile says it is a one-time cost.

Each check runs in fresh processes over an empty cache folder (``NX_GSM_CACHE_DIR``): what a
process compiles depends on what is in the cache, not on what this test process compiled. Whether
a process compiled anything is read from Numba's own counters: every nx-gsm dispatcher's
``stats.cache_misses`` (a signature compiled because the cache had no fresh entry for it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

NOTICE = "compiling the CPU kernels once"

# A varied workload, unlike warmup's queries: the bundled yeast graph and random graphs, every
# matching function, labels and callables, directed graphs, multigraphs, self-loops, the
# partitioned and incremental engines, the matcher classes and the NetworkX backend. Prints the
# signatures each nx-gsm dispatcher compiled and how many it loaded from the cache.
WORKLOAD = r"""
import itertools, json, sys
import networkx as nx
import nx_gsm
from nx_gsm.interop.formats import read_any
from nx_gsm.engines.partitioned import PartitionedEngine
nx.config.warnings_to_ignore.add("cache")
G = read_any(nx_gsm.demo_graph_path("yeast"))
for path, _ in nx_gsm.demo_queries()[:4]:
    H = read_any(path, edge_labels=False)
    nx_gsm.count_subgraph_monomorphisms(G, H, node_label="label")
    nx_gsm.count_subgraph_isomorphisms(G, H, node_label="label", limit=10)
    list(itertools.islice(nx_gsm.subgraph_monomorphisms(G, H, node_label="label"), 50))
R = nx.gnm_random_graph(60, 240, seed=7)
nx.set_node_attributes(R, {v: v % 4 for v in R}, "c")
nx.set_edge_attributes(R, {(u, v): (u * v) % 3 for u, v in R.edges}, "w")
P = nx.cycle_graph(4)
nx.set_node_attributes(P, {0: 0, 1: 1, 2: 2, 3: 3}, "c")
nx.set_edge_attributes(P, 1, "w")
nx_gsm.count_subgraph_monomorphisms(R, nx.cycle_graph(5))
nx_gsm.count_subgraph_isomorphisms(R, nx.star_graph(3), timeout=30)
nx_gsm.count_subgraph_monomorphisms(R, P, node_label="c", edge_label="w")
nx_gsm.count_subgraph_monomorphisms(R, P, edge_match=lambda a, b: a["w"] >= b["w"])
list(nx_gsm.subgraph_isomorphisms(R, P, node_match=lambda a, b: a["c"] % 2 == b["c"] % 2))
D = nx.gnm_random_graph(50, 300, seed=3, directed=True)
nx_gsm.count_subgraph_monomorphisms(D, nx.DiGraph([(0, 1), (1, 2), (2, 0)]))
list(nx_gsm.subgraph_isomorphisms(D, nx.DiGraph([(0, 1), (1, 2)]), limit=20))
M = nx.MultiGraph(R)
M.add_edges_from([(u, v, {"w": 5}) for u, v in list(R.edges)[:40]])
nx_gsm.count_subgraph_monomorphisms(M, nx.MultiGraph([(0, 1), (0, 1), (1, 2)]))
nx_gsm.count_subgraph_isomorphisms(M, nx.MultiGraph([(0, 1, {"w": 5}), (1, 2, {"w": 1})]),
                                   edge_label="w")
MD = nx.MultiDiGraph(D)
MD.add_edges_from(list(D.edges)[:50])
list(nx_gsm.subgraph_monomorphisms(MD, nx.MultiDiGraph([(0, 1), (0, 1), (1, 2)]), limit=5))
L = R.copy()
L.add_edges_from((v, v, {"w": 0}) for v in range(0, 60, 5))
nx_gsm.count_subgraph_monomorphisms(L, nx.Graph([(0, 0), (0, 1), (1, 2)]))
nx_gsm.count_subgraph_isomorphisms(L, nx.Graph([(0, 0, {"w": 0}), (0, 1, {"w": 1})]),
                                   edge_label="w")
nx_gsm.find_subgraph_monomorphisms(R, nx.path_graph(4))
nx_gsm.is_subgraph_monomorphic(R, nx.complete_graph(4))
nx_gsm.count_subgraph_monomorphisms(nx.circulant_graph(40, [1, 3, 7]), nx.path_graph(7))
nx_gsm.count_subgraph_monomorphisms(R, nx.path_graph(4),
                                    engine=PartitionedEngine(inner="cpu", parts=4))
list(nx_gsm.subgraph_monomorphisms(R, nx.path_graph(3), engine="partitioned"))
nx_gsm.explain(R, nx.path_graph(4))
nx_gsm.GraphMatcher(R, nx.path_graph(4)).subgraph_is_isomorphic()
nx_gsm.DiGraphMatcher(D, nx.DiGraph([(0, 1)])).subgraph_is_monomorphic()
nx.vf2pp_is_isomorphic(R, R, backend="gsm")
nx.vf2pp_isomorphism(D, D, backend="gsm")
m = nx_gsm.IncrementalMatcher(R, nx.path_graph(3))
m.apply(insert=[(0, 59)], delete=[next(iter(R.edges))])
m.count()
from numba.core.registry import CPUDispatcher
misses, hits = {}, 0
for name, mod in list(sys.modules.items()):
    if name.startswith("nx_gsm"):
        for attr, f in vars(mod).items():
            if isinstance(f, CPUDispatcher) and f.__module__ == name:
                hits += sum(f.stats.cache_hits.values())
                if f.stats.cache_misses:
                    misses[name + "." + attr] = [str(s) for s in f.stats.cache_misses]
print(json.dumps({"hits": hits, "misses": misses}))
"""


def _run(code, cache, timeout=900):
    env = {k: v for k, v in os.environ.items() if k not in ("NUMBA_CACHE_DIR", "NX_GSM_CACHE_DIR")}
    env["NX_GSM_CACHE_DIR"] = str(cache)
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=timeout)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def test_a_cold_cache_gets_one_line_once_per_process(tmp_path):
    # nothing compiles here: the check reads Numba's index files only
    proc = _run("from nx_gsm.precompile import notice_first_compile as n; print(n(), n())",
                tmp_path)
    assert proc.stdout.split() == ["True", "False"]
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and NOTICE in lines[0] and str(tmp_path) in lines[0], proc.stderr


@pytest.mark.slow
def test_the_first_run_anywhere_says_it_compiles_once(tmp_path):
    proc = _run("from nx_gsm.cli import main; raise SystemExit(main(['demo']))", tmp_path)
    assert proc.stderr.count(NOTICE) == 1, proc.stderr


@pytest.mark.slow
def test_after_warmup_a_fresh_process_compiles_nothing(tmp_path):
    warm = _run("from nx_gsm.cli import main; raise SystemExit(main(['warmup', "
                "'--no-progress']))", tmp_path)
    assert str(tmp_path) in warm.stdout and NOTICE not in warm.stderr, warm.stdout + warm.stderr
    proc = _run(WORKLOAD, tmp_path)
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["misses"] == {}, f"compiled after warmup: {got['misses']}"
    assert got["hits"] >= 10  # the kernels were loaded from the cache, not skipped
    assert NOTICE not in proc.stderr
    demo = _run("from nx_gsm.cli import main; raise SystemExit(main(['demo']))", tmp_path)
    assert NOTICE not in demo.stderr, demo.stderr


def test_with_a_gpu_warmup_compiles_every_gpu_kernel_variant(monkeypatch):
    from nx_gsm.engines.gpu import gsi_kernels
    from nx_gsm.engines.gpu.gmatch import kernels
    from nx_gsm.precompile import _gpu_steps

    every = {name: None for name in ("gmatch", "gsi", "geneva", "gamma")}
    names = [name for name, _ in _gpu_steps(every)]
    # the variants last: any engine's step may launch gmatch's DFS (GSI hands deep levels to
    # it) with a new signature, and one that appeared after the variants were compiled would
    # reach one variant only
    assert names == ["gpu: host levels", "gpu: gmatch", "gpu: gsi", "gpu: geneva",
                     "gpu: gmatch stack depths", "gpu: gsi join lengths", "gpu: gamma",
                     "gpu: kernel variants"]
    assert _gpu_steps(dict.fromkeys(every, "no CUDA device")) == []
    calls = []
    monkeypatch.setattr(kernels, "compile_variants", lambda: calls.append("gmatch"))
    monkeypatch.setattr(gsi_kernels, "compile_variants", lambda: calls.append("gsi"))
    steps = _gpu_steps({**every, "gsi": "no CUDA device"})
    assert "gpu: gsi join lengths" not in [name for name, _ in steps]
    name, run = steps[-1]
    assert name == "gpu: kernel variants"
    run()
    assert calls == ["gmatch"]


def test_without_pymetis_warmup_skips_the_partitioned_engine_and_says_why(monkeypatch):
    # pymetis is an extra: warmup must run where it is missing (a GPU machine without it
    # crashed warmup), and the engine must name the package instead of failing on the import
    import networkx as nx

    from nx_gsm.api import prepare
    from nx_gsm.engines import available_engines, get_engine
    from nx_gsm.engines.partitioned import partition
    from nx_gsm.precompile import _cpu_steps

    monkeypatch.setitem(sys.modules, "pymetis", None)
    reasons = available_engines()
    assert "pymetis" in reasons["partitioned"]
    steps, skipped = _cpu_steps(reasons)
    names = [name for name, _ in steps]
    assert "cpu: partitioned engine" not in names and "cpu: incremental" in names
    assert skipped == {"cpu: partitioned engine": reasons["partitioned"]}
    with pytest.raises(RuntimeError, match="pymetis"):
        get_engine("partitioned")
    plan, _, _ = prepare(nx.cycle_graph(12), nx.path_graph(3), "mono")
    with pytest.raises(RuntimeError, match="3 parts needs pymetis"):
        partition(plan.G, parts=3)
    assert partition(plan.G, parts=1)[1] == 1
    monkeypatch.delitem(sys.modules, "pymetis")
    if available_engines()["partitioned"] is None:
        steps, skipped = _cpu_steps(available_engines())
        assert "cpu: partitioned engine" in [name for name, _ in steps] and not skipped
