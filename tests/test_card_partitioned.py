"""The partitioned engine on the GPU (runs only where CUDA is usable): inner parts on gmatch with
the next part's upload overlapped, cross matches on gmatch with DUPREMOVE over the halo.

Counts and mapping sets equal the CPU cross search's and the unpartitioned CPU engine's at 2..64
parts, shared and naive, every graph class, both modes, labels, limits; the overlap path uploads
each part once; a device fault in the cross search is redone on the CPU; the yeast published
counts hold.
"""

import random

import networkx as nx
import numpy as np
import pytest

from nx_gsm.api import prepare
from nx_gsm.engines.gpu import faults
from nx_gsm.testing import CLASSES, random_case
from nx_gsm.testing import row_set as _as_set
from nx_gsm.testing import rows_of as _rows

pytestmark = pytest.mark.gpu  # the card: tests/conftest.py skips it without a device
pytest.importorskip("pymetis")


def _engine(**kw):
    from nx_gsm.engines.partitioned import PartitionedEngine

    return PartitionedEngine(**kw)


def _cpu():
    from nx_gsm.engines.cpu import CpuEngine

    return CpuEngine()


def _check(plan, parts, shared, inner="gmatch"):
    ref = _as_set(_rows(_cpu().iter_chunks(plan), plan.k))
    cpu = _engine(inner="cpu", parts=parts, shared=shared)
    gpu = _engine(inner=inner, parts=parts, shared=shared)
    assert gpu.count(plan) == cpu.count(plan) == len(ref)
    st = dict(gpu.last_stats)
    if st["routed"] is None:
        assert st["cross_on"] == "gpu" and st["halo_nodes"] > 0, st
        assert (st["inner"], st["cross"]) == (cpu.last_stats["inner"], cpu.last_stats["cross"])
    assert _as_set(_rows(gpu.iter_chunks(plan, chunk=97), plan.k)) == ref
    if len(ref) > 1:
        lim = len(ref) // 2
        assert gpu.count(plan, limit=lim) == lim
        some = _rows(gpu.iter_chunks(plan, limit=lim), plan.k)
        assert len(some) == lim and _as_set(some) <= ref
    return st


@pytest.mark.parametrize("mode", ["mono", "induced"])
@pytest.mark.parametrize("seed", range(16))
def test_random_cases_every_partition_count(seed, mode):
    G, H, kw = random_case(seed, edge_labels=(1, 2), k_max=6, p_edge_match=0.4)
    plan, _, _ = prepare(G, H, mode, **kw)
    if plan.empty:
        pytest.skip("no candidates")
    _check(plan, (2, 3, 8, 64)[seed % 4], shared=seed % 3 != 0)


@pytest.mark.parametrize("cls", CLASSES, ids=lambda c: c.__name__)
def test_larger_graphs_cross_on_gpu(cls):
    rng = random.Random(cls.__name__)
    G = nx.gnm_random_graph(400, 1600, seed=rng.randrange(100), directed=cls().is_directed())
    G = cls(G)
    H = nx.cycle_graph(4, create_using=cls)
    for parts in (2, 16, 64):
        for mode in ("mono", "induced"):
            plan, _, _ = prepare(G, H, mode)
            st = _check(plan, parts, shared=parts != 16)
            assert st["cross"] > 0


def test_filter_dedups_and_cross_gpu_equals_cpu_per_group():
    from nx_gsm.engines.gpu.gmatch import GMatchEngine
    from nx_gsm.engines.partitioned import (
        _back_pairs,
        _grow_all,
        _pair_order,
        _seed_ok,
        cut_pairs,
        partition,
        plan_arrays,
        reorder,
    )

    G = nx.gnm_random_graph(150, 1500, seed=3)  # 2,688 K4 matches, 2,304 across 8 parts
    plan, _, _ = prepare(G, nx.complete_graph(4), "mono")
    part, _ = partition(plan.G, parts=8)
    rp = reorder(plan, _pair_order(plan, 0, 1))
    P = plan_arrays(rp)
    cp = cut_pairs(plan.G, part)
    both = np.concatenate([cp, cp[:, ::-1]])
    seeds = np.ascontiguousarray(both[_seed_ok(P, both)])
    bk_ptr, bk_j = _back_pairs(plan.H, rp.order)
    want = int(_grow_all(P, part, bk_ptr, bk_j, seeds, False)[0].sum())
    assert want > 0
    eng = GMatchEngine()
    assert eng.count_from(rp, seeds, cut_part=part) == want
    assert eng.count_from(rp, seeds) > want
    rows = _rows(eng.iter_from(rp, seeds, cut_part=part), plan.k)
    assert len(_as_set(rows)) == want


def test_overlap_uploads_each_part_once():
    """Inner parts' graphs come from the side-stream prefetch (no upload inside gmatch), the halo
    is uploaded once for every orbit group, and the overlap is reported."""
    G = nx.gnm_random_graph(3000, 12000, seed=7)
    plan, _, _ = prepare(G, nx.path_graph(4), "mono")
    eng = _engine(inner="gmatch", parts=8, shared=False)
    with faults.inject("plan_upload", "oom", times=0):  # armed, never fires: counts site hits
        before = faults.hits.get("graph_upload", 0)
        n = eng.count(plan)
        ups = faults.hits.get("graph_upload", 0) - before
    st = eng.last_stats
    assert n == _cpu().count(plan)
    assert st["prefetched"] == st["parts"] - 1 and st["overlap_s"] is not None, st
    assert ups == 2, (ups, st)  # the first part (nothing to overlap with) and the halo
    assert st["cross_on"] == "gpu" and st["groups"] == 3


def test_cross_on_cpu_when_asked_or_halo_too_big():
    G = nx.gnm_random_graph(500, 2000, seed=2)
    plan, _, _ = prepare(G, nx.cycle_graph(4), "mono")
    want = _cpu().count(plan)
    eng = _engine(inner="gmatch", parts=4, cross="cpu")
    assert eng.count(plan) == want and eng.last_stats["cross_on"] == "cpu: cross='cpu'"
    eng = _engine(inner="gmatch", parts=4, max_device_bytes=100)
    assert eng.count(plan) == want and eng.last_stats["cross_on"].startswith("cpu: the halo")


def test_device_fault_in_cross_search_is_redone_on_cpu():
    G = nx.gnm_random_graph(300, 1200, seed=4)
    plan, _, _ = prepare(G, nx.cycle_graph(4), "mono")
    ref = _as_set(_rows(_cpu().iter_chunks(plan), plan.k))
    eng = _engine(inner="cpu", parts=4, cross="gpu")
    with faults.inject("launch", "launch", times=None):
        assert eng.count(plan) == len(ref)
        assert _as_set(_rows(eng.iter_chunks(plan), plan.k)) == ref
    assert "fault" in eng.last_stats["cross_on"]


def test_yeast_published_counts():
    from conformance.yeast import published_sample

    sample = published_sample(12, max_count=200_000)
    if isinstance(sample, str):
        pytest.skip(sample)
    G, queries = sample
    for i, (name, H, published) in enumerate(queries):
        plan, _, _ = prepare(G, H, "mono", node_label="label")
        eng = _engine(inner="gmatch", parts=(2, 8, 32, 64)[i % 4])
        assert eng.count(plan) == published, (name, eng.last_stats)
        assert eng.last_stats["cross_on"] == "gpu"
