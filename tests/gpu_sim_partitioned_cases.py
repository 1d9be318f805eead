"""The partitioned engine's GPU cross search (gmatch with DUPREMOVE on the halo) under Numba's
CUDA simulator (run by test_partitioned_gpu_sim.py in a subprocess).

Every case checks the GPU cross search against the CPU one and both against NetworkX VF2:
mapping sets and counts, inner and cross counts, limits. Graphs are tiny and most cases keep the
inner parts on the CPU engine (``cross="gpu"``): every simulated launch costs about a second.
A case fails on its first difference.
"""

import os
import random
import sys
import time

assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", "run with NUMBA_ENABLE_CUDASIM=1"

import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402
from networkx.algorithms import isomorphism as iso  # noqa: E402
from sim_runner import run_cases, sim_case  # noqa: E402

from nx_gsm.api import prepare  # noqa: E402
from nx_gsm.engines.gpu import faults  # noqa: E402
from nx_gsm.engines.gpu.gmatch import GMatchEngine  # noqa: E402
from nx_gsm.engines.partitioned import (  # noqa: E402
    PartitionedEngine,
    _back_pairs,
    _grow_all,
    _pair_order,
    _seed_ok,
    cut_pairs,
    partition,
    plan_arrays,
    reorder,
)
from nx_gsm.testing import random_graph, row_set, rows_of  # noqa: E402

# one random stream for the cases below, drawn in their order (sim_runner runs a group whole),
# and the graph several cases search
RND = random.Random(11)
NM = iso.categorical_node_match("c", None)
MEM = iso.categorical_multiedge_match("w", None)
G14 = nx.gnm_random_graph(14, 30, seed=1)

MATCHERS = {(False, False): iso.GraphMatcher, (True, False): iso.DiGraphMatcher,
            (False, True): iso.MultiGraphMatcher, (True, True): iso.MultiDiGraphMatcher}


def vf2(G, H, mode, kw):
    gm = MATCHERS[G.is_directed(), G.is_multigraph()](G, H, **kw)
    it = gm.subgraph_monomorphisms_iter() if mode == "mono" else gm.subgraph_isomorphisms_iter()
    return {frozenset(m.items()) for m in it}


def as_maps(plan, rows):
    keys_g, keys_h = plan.G.node_keys, plan.H.node_keys
    order = plan.order.tolist()
    return {frozenset((keys_g[v], keys_h[order[d]]) for d, v in enumerate(r))
            for r in rows.tolist()}


def labelled(H):
    """``H`` with node labels ``c`` alternating 0, 1 and edge labels ``w`` 0 (as random_graph's)."""
    nx.set_node_attributes(H, {u: u % 2 for u in H}, "c")
    nx.set_edge_attributes(H, 0, "w")
    return H


def fail(msg):
    raise AssertionError(msg)


def check(label, G, H, mode, parts, shared, kw=None, inner="cpu", limit=True):
    t0 = time.perf_counter()
    kw = kw or {}
    plan, _, _ = prepare(G, H, mode, **kw)
    ref = vf2(G, H, mode, {k: v for k, v in kw.items() if k in ("node_match", "edge_match")})
    cpu = PartitionedEngine(inner="cpu", parts=parts, shared=shared, cross="cpu")
    gpu = PartitionedEngine(inner=inner, parts=parts, shared=shared, cross="gpu")
    want = cpu.count(plan)
    if want == 0 or cpu.last_stats["cross"] == 0:
        fail(f"{label}: a case without cross matches tests nothing: {cpu.last_stats}")
    cpu_rows = row_set(rows_of(cpu.iter_chunks(plan, chunk=7), plan.k))
    got = gpu.count(plan)
    st_count = dict(gpu.last_stats)
    rows = row_set(rows_of(gpu.iter_chunks(plan, chunk=7), plan.k))
    st = gpu.last_stats
    if not (st["cross_on"] == st_count["cross_on"] == "gpu" and st["halo_nodes"]):
        fail(f"{label}: cross search not on the GPU: {st}")
    if not (got == want == len(ref) and rows == cpu_rows and as_maps(plan, np.array(
            sorted(rows), dtype=np.int64).reshape(-1, plan.k)) == ref):
        fail(f"{label}: got {got} / {len(rows)} rows, CPU {want}, VF2 {len(ref)}; {st}")
    if (st_count["inner"], st_count["cross"]) != (cpu.last_stats["inner"],
                                                    cpu.last_stats["cross"]):
        fail(f"{label}: inner/cross {st_count['inner']}/{st_count['cross']} on the GPU, "
             f"{cpu.last_stats['inner']}/{cpu.last_stats['cross']} on the CPU")
    if limit and want > 1:
        lim = st_count["inner"] + max(1, st_count["cross"] // 2)  # stops inside the cross search
        some = row_set(rows_of(gpu.iter_chunks(plan, limit=lim), plan.k))
        if gpu.count(plan, limit=lim) != min(lim, want) or len(some) != min(lim, want) or \
                not some <= cpu_rows:
            fail(f"{label}: limit {lim} gave {len(some)} rows")
    print(f"{label}: parts={parts} shared={shared} k={plan.k} matches={want} "
          f"inner={st_count['inner']} cross={st_count['cross']} groups={st['groups']} "
          f"halo={st['halo_nodes']} {time.perf_counter() - t0:.1f}s", flush=True)
    return plan


def filter_is_what_dedups(plan, parts):
    """Without ``cut_part`` the seeded search finds a cross match once per cut pair it covers:
    gmatch's count then exceeds the CPU's DUPREMOVE count, which it equals with the filter."""
    part, _ = partition(plan.G, parts=parts)
    cp = cut_pairs(plan.G, part)
    a, b = next((u, int(w)) for u in range(plan.k)
                for w in plan.H.indices[plan.H.indptr[u]:plan.H.indptr[u + 1]] if u != int(w))
    rp = reorder(plan, _pair_order(plan, a, b))
    P = plan_arrays(rp)
    both = np.concatenate([cp, cp[:, ::-1]])
    seeds = np.ascontiguousarray(both[_seed_ok(P, both)])
    bk_ptr, bk_j = _back_pairs(plan.H, rp.order)
    want = int(_grow_all(P, part, bk_ptr, bk_j, seeds, False)[0].sum())
    eng = GMatchEngine()
    with_f = eng.count_from(rp, seeds, cut_part=part)
    without = eng.count_from(rp, seeds)
    print(f"filter: seeds={len(seeds)} with={with_f} cpu={want} without={without}", flush=True)
    if not (with_f == want and without > with_f):
        fail("DUPREMOVE filter: counts with/without do not show it deduplicating")


@sim_case
def graph_mono_4_cycle_and_dedup_filter():
    plan = check("Graph/mono/4-cycle", G14, nx.cycle_graph(4), "mono", 2, True)
    filter_is_what_dedups(plan, 3)


@sim_case
def graph_induced_path_naive():
    check("Graph/induced/path/naive", G14, nx.path_graph(3), "induced", 3, False, limit=False)


@sim_case
def graph_mono_edge():
    check("Graph/mono/edge", G14, nx.path_graph(2), "mono", 8, True)


@sim_case
def graph_mono_triangle():
    check("Graph/mono/triangle", nx.gnm_random_graph(12, 34, seed=4), nx.complete_graph(3),
          "mono", 6, True)


@sim_case
def digraph():
    D = random_graph(RND, nx.DiGraph, 11, 0.3, n_labels=2)
    check("DiGraph/mono/labels", D, labelled(nx.DiGraph([(0, 1), (1, 2)])), "mono", 4, True,
          {"node_match": NM}, limit=False)
    check("DiGraph/induced", D, nx.DiGraph([(0, 1), (1, 2), (2, 0)]), "induced", 5, True,
          limit=False)


@sim_case
def multigraph():
    M = random_graph(RND, nx.MultiGraph, 10, 0.35, loops=True, n_elabels=2, multi_p=0.4)
    check("MultiGraph/mono/edge labels", M, labelled(nx.MultiGraph([(0, 1), (0, 1), (1, 2)])),
          "mono", 3, True, {"edge_match": MEM}, limit=False)
    check("MultiGraph/induced/naive", M, nx.MultiGraph([(0, 1), (1, 2), (2, 3)]), "induced",
          7, False, limit=False)


@sim_case
def multidigraph():
    MD = random_graph(random.Random(7), nx.MultiDiGraph, 10, 0.45, n_labels=2, multi_p=0.5)
    check("MultiDiGraph/mono/labels", MD, labelled(nx.MultiDiGraph([(0, 1), (1, 2), (1, 2)])),
          "mono", 2, True, {"node_match": NM, "edge_match": MEM}, limit=False)


@sim_case
def gmatch_inner_streamed():
    """The whole path on gmatch: inner parts too, and an output buffer of 3 rows, so pool rows
    are split (the BFS check kernel expands heavy seeds with the filter on)."""
    check("Graph/mono/gmatch inner, streamed", nx.gnm_random_graph(10, 22, seed=2),
          nx.path_graph(3), "mono", 2, True, inner=GMatchEngine(out_capacity=3), limit=False)


@sim_case
def fault_and_halo_budget():
    """A device fault in the cross search: that batch is redone on the CPU, still exact; a
    halo over the budget keeps the cross search on the CPU, and says so."""
    plan, _, _ = prepare(G14, nx.cycle_graph(4), "mono")
    ref = PartitionedEngine(inner="cpu", parts=3, cross="cpu").count(plan)
    eng = PartitionedEngine(inner="cpu", parts=3, cross="gpu")
    with faults.inject("launch", "launch", times=None):
        got = eng.count(plan)
        rows = row_set(rows_of(eng.iter_chunks(plan), plan.k))
    if not (got == len(rows) == ref and "fault" in eng.last_stats["cross_on"]):
        fail(f"fault: {got} / {len(rows)} against {ref}; {eng.last_stats}")
    eng = PartitionedEngine(inner="cpu", parts=3, cross="gpu", max_device_bytes=64)
    if eng.count(plan) != ref or not eng.last_stats["cross_on"].startswith("cpu: the halo"):
        fail(f"halo budget: {eng.last_stats}")


if __name__ == "__main__":
    sys.exit(run_cases())
