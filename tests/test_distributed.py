"""``client=``: the search split over a real Dask cluster (worker processes) gives exactly the
single-run counts and mappings, whatever the cluster size, and a worker killed mid-task is
re-run without double counting."""

import doctest
import os
import sys
from pathlib import Path

import networkx as nx
import numpy as np
import pytest

import nx_gsm
from nx_gsm import distributed as dist
from nx_gsm.api import prepare
from nx_gsm.testing import kill_once_plugin

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module", params=[1, 2], ids=["1-worker", "2-workers"])
def client(request):
    with distributed.LocalCluster(n_workers=request.param, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _sorted_rows(ms):
    return sorted(map(tuple, ms.to_numpy().tolist()))


CASES = [
    (nx.gnm_random_graph(70, 260, seed=4), nx.cycle_graph(4), {}),
    (nx.gnm_random_graph(40, 140, seed=6, directed=True),
     nx.DiGraph([(0, 1), (1, 2), (2, 0), (2, 3)]), {}),
]


@pytest.mark.parametrize("G,H,kw", CASES, ids=["undirected", "directed"])
def test_counts_and_mappings_equal_single_run(client, G, H, kw):
    for count, find in ((nx_gsm.count_subgraph_monomorphisms, nx_gsm.find_subgraph_monomorphisms),
                        (nx_gsm.count_subgraph_isomorphisms, nx_gsm.find_subgraph_isomorphisms)):
        ref = count(G, H, engine="cpu", **kw)
        assert ref > 0
        assert count(G, H, client=client, engine="cpu", **kw) == ref
        assert count(G, H, client=client, engine="cpu", limit=5, **kw) == min(5, ref)
        got = find(G, H, client=client, engine="cpu", **kw)
        assert _sorted_rows(got) == _sorted_rows(find(G, H, engine="cpu", **kw))
    # partitioned engine on every worker: still the same count
    plan, _, _ = prepare(G, H, "mono")
    assert dist.count_plan(plan, client, engine="partitioned", tasks=3) == \
        nx_gsm.count_subgraph_monomorphisms(G, H, engine="cpu")


def test_labels_and_task_counts(client):
    G = nx.gnm_random_graph(60, 200, seed=8)
    H = nx.path_graph(4)
    for X in (G, H):
        nx.set_node_attributes(X, {v: v % 3 for v in X}, "c")
    ref = nx_gsm.count_subgraph_monomorphisms(G, H, node_label="c", engine="cpu")
    plan, _, _ = prepare(G, H, "mono", node_label="c")
    for tasks in (1, 7, 1000):
        assert dist.count_plan(plan, client, engine="cpu", tasks=tasks) == ref
    roots = dist.split_roots(plan, 7)
    assert sum(r.size for r in roots) == int(plan.cand[plan.order[0]].sum())
    # a timeout returns what the finished tasks found, flagged partial
    cut = dist.count_plan(plan, client, engine="cpu", tasks=20, timeout=0)
    assert getattr(cut, "partial", False) and 0 <= cut <= ref
    rows, partial = dist.find_plan(plan, client, engine="cpu", tasks=20, timeout=0)
    assert partial and rows.shape[0] <= ref


def test_counts_split_below_hub_roots(client):
    """A count's tasks are depth-2 partial matches, so a hub root's subtree spreads over tasks
    (root shares would leave it in one); the total is exact for every task count."""
    G = nx.star_graph(300)
    G.add_edges_from((i, i + 1) for i in range(1, 300, 2))
    H = nx.path_graph(4)
    plan, _, _ = prepare(G, H, "mono")
    ref = nx_gsm.count_subgraph_monomorphisms(G, H, engine="cpu")
    shares = dist.split_prefixes(plan, 8)
    hub = [sh for sh in shares if (sh[:, 0] == 0).any()]
    assert len(hub) == 8 and sum(sh.shape[0] for sh in shares) == 2 * G.number_of_edges()
    for tasks in (1, 8, 1000):
        assert dist.count_plan(plan, client, engine="cpu", tasks=tasks) == ref
    assert dist.split_prefixes(prepare(G, nx.path_graph(2), "mono")[0], 4) is None
    assert dist.count_plan(prepare(G, nx.path_graph(2), "mono")[0], client, engine="cpu") == \
        2 * G.number_of_edges()


def test_multigpu_benchmark_find_check(client):
    """benchmarks.multigpu's mapping check (run on GPU workers with gmatch there), on CPU
    workers: equal for the cluster's find, unequal once a row is lost."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from benchmarks.multigpu import canonical_rows, find_exact

    from nx_gsm.engines.cpu import CpuEngine

    plan, _, _ = prepare(nx.gnm_random_graph(70, 260, seed=4), nx.cycle_graph(4), "mono")
    ref = canonical_rows(np.concatenate(list(CpuEngine().iter_chunks(plan))))
    ok, _, n = find_exact(plan, client, "cpu", ref)
    assert ok and n == ref.shape[0]
    assert not find_exact(plan, client, "cpu", ref[1:])[0]


def test_prefix_shares_partition_the_mappings():
    """What a gmatch worker's find task does (find_prefixes), on the CPU engine: the shares'
    mappings together are the single run's, each once."""
    from nx_gsm.engines.cpu import CpuEngine

    G, H = nx.gnm_random_graph(70, 260, seed=4), nx.cycle_graph(4)
    plan, _, _ = prepare(G, H, "mono")
    ref = sorted(map(tuple, np.concatenate(list(CpuEngine().iter_chunks(plan))).tolist()))
    got = [dist.find_prefixes(plan, sh, engine="cpu") for sh in dist.split_prefixes(plan, 7)]
    assert sorted(map(tuple, np.concatenate(got).tolist())) == ref
    assert sum(dist.count_prefixes(plan, sh, engine="cpu")
               for sh in dist.split_prefixes(plan, 7)) == len(ref)


def test_worker_killed_mid_task_counts_exactly(tmp_path):
    G = nx.gnm_random_graph(70, 260, seed=4)
    H = nx.cycle_graph(4)
    ref = nx_gsm.count_subgraph_monomorphisms(G, H, engine="cpu")
    marker = tmp_path / "killed"
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=":0") as cluster, \
            distributed.Client(cluster) as c:
        c.register_plugin(kill_once_plugin(str(marker)))
        assert nx_gsm.count_subgraph_monomorphisms(G, H, client=c, engine="cpu") == ref
    assert marker.exists(), "no worker was killed: the test did not test recovery"


def test_docstring_examples():
    res = doctest.testmod(dist, optionflags=doctest.ELLIPSIS)
    assert res.failed == 0 and res.attempted > 0


def test_gpu_client_gives_each_worker_one_gpu(monkeypatch):
    """Without dask-cuda: one Nanny per visible GPU, each seeing only its own (ids faked here;
    the workers run the CPU engine, as no CUDA device exists on CI)."""
    from networkx.algorithms import isomorphism as iso

    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "3,5")
    assert dist.visible_gpus() == ["3", "5"]
    monkeypatch.setitem(__import__("sys").modules, "dask_cuda", None)  # import fails
    with dist.gpu_client() as client:
        seen = client.run(lambda: os.environ["CUDA_VISIBLE_DEVICES"])
        assert sorted(seen.values()) == ["3", "5"]
        G, H = nx.gnp_random_graph(40, 0.3, seed=4), nx.cycle_graph(4)
        want = sum(1 for _ in iso.GraphMatcher(G, H).subgraph_monomorphisms_iter())
        assert nx_gsm.count_subgraph_monomorphisms(G, H, client=client, engine="cpu") == want
        client.cluster.close()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    with pytest.raises(RuntimeError, match="no visible GPU"):
        dist.gpu_client()
