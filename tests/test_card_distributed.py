"""``client=`` with GPU workers (issue 7): one Dask worker process per GPU running gmatch,
counts and mapping sets equal to the single in-process run and to VF2 for every cluster size the
machine allows (1 and 2 workers on a two-GPU host), on random cases of every graph class in both
modes and on the yeast published counts; a GPU worker killed mid-task is re-run without double
counting.
"""

import os

import pytest
from networkx.algorithms import isomorphism as iso

import nx_gsm
from nx_gsm import distributed as dist
from nx_gsm.testing import kill_once_plugin, random_case

pytestmark = pytest.mark.gpu  # the card: tests/conftest.py skips it without a device
pytest.importorskip("distributed")

_MATCHER = {(False, False): iso.GraphMatcher, (True, False): iso.DiGraphMatcher,
            (False, True): iso.MultiGraphMatcher, (True, True): iso.MultiDiGraphMatcher}
_API = {"mono": (nx_gsm.count_subgraph_monomorphisms, nx_gsm.find_subgraph_monomorphisms,
                 "subgraph_monomorphisms_iter"),
        "induced": (nx_gsm.count_subgraph_isomorphisms, nx_gsm.find_subgraph_isomorphisms,
                    "subgraph_isomorphisms_iter")}


def _gpu_client(n):
    have = dist.visible_gpus()
    if len(have) < n:
        pytest.skip(f"{n} GPU workers need {n} visible GPUs; this host has {len(have)}")
    return dist.gpu_client(n_gpus=n)


@pytest.fixture(scope="module", params=[1, 2], ids=["1-gpu-worker", "2-gpu-workers"])
def client(request):
    c = _gpu_client(request.param)
    try:
        devices = c.run(lambda: os.environ.get("CUDA_VISIBLE_DEVICES"))
        assert len(set(devices.values())) == request.param, devices
        yield c
    finally:
        c.cluster.close()
        c.close()


def _rows(ms):
    return sorted(map(tuple, ms.to_numpy().tolist()))


@pytest.mark.parametrize("mode", ["mono", "induced"])
@pytest.mark.parametrize("seed", range(24))
def test_random_cases_equal_single_run_and_vf2(client, seed, mode):
    G, H, kw = random_case(seed, k_max=6)
    count, find, vf2 = _API[mode]
    M = _MATCHER[(G.is_directed(), G.is_multigraph())](G, H, **kw)
    want = {frozenset(m.items()) for m in getattr(M, vf2)()}
    assert count(G, H, client=client, engine="gmatch", **kw) == len(want)
    got = find(G, H, client=client, engine="gmatch", **kw)
    assert _rows(got) == _rows(find(G, H, engine="gmatch", **kw))
    assert {frozenset(m.items()) for m in got} == want
    if len(want) > 1:
        assert count(G, H, client=client, engine="gmatch", limit=1, **kw) == 1


def test_yeast_published_counts(client):
    from conformance.yeast import published_sample

    sample = published_sample(24, max_count=10**6, sizes=(4, 8, 16))
    if isinstance(sample, str):
        pytest.skip(sample)
    G, queries = sample
    for name, H, published in queries:
        got = nx_gsm.count_subgraph_monomorphisms(G, H, node_label="label", client=client,
                                                  engine="gmatch")
        assert got == published, name
        if published <= 50_000:
            rows = nx_gsm.find_subgraph_monomorphisms(G, H, node_label="label", client=client,
                                                      engine="gmatch")
            one = nx_gsm.find_subgraph_monomorphisms(G, H, node_label="label", engine="gmatch")
            assert len(rows) == published and _rows(rows) == _rows(one), name


def test_gpu_worker_killed_mid_task_counts_exactly(tmp_path):
    G, H, kw = random_case(7, k_max=5)
    want = nx_gsm.count_subgraph_monomorphisms(G, H, engine="gmatch", **kw)
    assert want > 0
    marker = tmp_path / "killed"
    c = _gpu_client(min(2, len(dist.visible_gpus())))
    try:
        c.register_plugin(kill_once_plugin(str(marker)))
        assert nx_gsm.count_subgraph_monomorphisms(G, H, client=c, engine="gmatch", **kw) == want
    finally:
        c.cluster.close()
        c.close()
    assert marker.exists(), "no worker was killed: the test did not test recovery"
