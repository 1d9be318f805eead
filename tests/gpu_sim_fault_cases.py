"""Device faults injected into the GPU engines under Numba's CUDA simulator (run by
test_gpu_faults_sim.py, one engine per case and per process: ``gmatch``, ``gsi``, ``geneva`` or
``gamma``).

gmatch, gsi and geneva: at every site the engine has, as an out-of-memory and as a launch failure,
on its first hit and on a later one, the count and the list of mappings (duplicates included)
must equal the CPU engine's, and a fault on the first hit must have fired and been recovered.
The searches are cut into several chunks or batches, so later hits land after rows were produced.
GAMMA: a faulted batch must give the CPU path's added/removed mappings, and the next batch (the
device graph reloaded) too. A case fails on its first difference.
"""

import os
import sys

assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", "run with NUMBA_ENABLE_CUDASIM=1"

import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402
from sim_runner import run_cases, sim_case  # noqa: E402

from nx_gsm.api import prepare  # noqa: E402
from nx_gsm.engines.cpu import CpuEngine  # noqa: E402
from nx_gsm.engines.gpu import faults  # noqa: E402

# the sites each engine reaches (gsi and geneva have no DFS buffers: their levels are "bfs")
SITES = {
    "gmatch": tuple(s for s in faults.SITES if s != "collect"),
    "gsi": ("graph_upload", "plan_upload", "bfs", "output", "launch"),
    "geneva": ("graph_upload", "plan_upload", "bfs", "output", "launch"),
    "gamma": ("graph_upload", "plan_upload", "dfs_buffers", "output", "launch", "collect"),
}


def rows_of(chunks, k):
    chunks = list(chunks)
    return np.concatenate(chunks) if chunks else np.zeros((0, k), dtype=np.int32)


def make_engine(name):
    # small buffers and chunks: every site is reached and the search runs in several pieces
    if name == "gmatch":
        from nx_gsm.engines.gpu.gmatch import GMatchEngine

        return GMatchEngine(pool_target=1, steal=False, out_capacity=4, blocks=1)
    if name == "gsi":
        from nx_gsm.engines.gpu.gsi import GsiEngine

        return GsiEngine(max_chunk=8, dfs_switch=False, signatures=False)
    from nx_gsm.engines.gpu.geneva import GenevaEngine

    eng = GenevaEngine(format_stats=False)
    eng._allow = lambda st: 384  # bytes per step: frontiers in chunks, rows in windows
    return eng


def search_cases(name):
    G = nx.gnp_random_graph(9, 0.5, seed=3)
    plan = prepare(G, nx.path_graph(3), "mono")[0]
    cpu = CpuEngine()
    want = cpu.count(plan)
    ref = sorted(map(tuple, rows_of(cpu.iter_chunks(plan), plan.k).tolist()))
    assert want > 8, want
    tried = 0
    skips = (0, 1, 3) if name == "gmatch" else (0, 2)
    for site in SITES[name]:
        for kind in ("oom", "launch"):
            for skip in skips:
                faults.clear_device_caches()  # nothing kept from the last case: every site runs
                eng = make_engine(name)
                arm = dict(times=None if skip == 0 else 1, skip=skip)
                with faults.inject(site, kind, **arm):
                    got = eng.count(plan)
                    n_hits = [faults.hits.get(site, 0)]
                how = [eng.last_stats.get("recovered")]
                with faults.inject(site, kind, **arm):
                    rows = rows_of(eng.iter_chunks(plan, chunk=3), plan.k)
                    n_hits.append(faults.hits.get(site, 0))
                how.append(eng.last_stats.get("recovered"))
                mine = sorted(map(tuple, rows.tolist()))
                ok = got == want and mine == ref
                if skip == 0:  # the enumeration reaches every site (a count not the output)
                    ok = ok and n_hits[1] > 0 and how[1] is not None
                    ok = ok and (n_hits[0] == 0 or how[0] is not None)
                print(f"{name} {site}/{kind}/skip={skip}: hits={n_hits} count={got}/{want} "
                      f"rows={len(mine)} ok={ok} {how}", flush=True)
                if not ok:
                    sys.exit(1)
                tried += 1
    if name == "gmatch":
        # the per-batch takeover: the third output allocation fails after rows of the first
        # batches were already emitted
        what, kind, times, skip, want = "mid-stream takeover", "oom", None, 2, "unemitted"
    else:
        # a fault after the search had produced rows: they were held, none was emitted twice
        what, kind, times, skip, want = "fault after produced rows", "launch", 1, 1, "CPU"
    eng = make_engine(name)
    with faults.inject("output", kind, times=times, skip=skip):
        mine = sorted(map(tuple, rows_of(eng.iter_chunks(plan, chunk=2), plan.k).tolist()))
    how = eng.last_stats.get("recovered", "")
    print(f"{name} {what}: rows={len(mine)} recovered={how!r}", flush=True)
    if mine != ref or want not in how:
        sys.exit(1)
    return tried + 1


def gamma_cases():
    from nx_gsm.incremental import IncrementalMatcher

    G = nx.gnp_random_graph(8, 0.4, seed=5)
    H = nx.path_graph(3)
    missing = [e for e in nx.non_edges(G)]
    b1 = dict(insert=missing[:2], delete=[next(iter(G.edges))])
    gone = next(x for x in G if x not in missing[2])
    b2 = dict(insert=[missing[2]], nodes=[8], delete_nodes=[gone])
    tried = 0

    def key(res):
        if res.added is None:
            return res.num_added, res.num_removed
        return (sorted(map(lambda m: sorted(m.items()), res.added)),
                sorted(map(lambda m: sorted(m.items()), res.removed)))

    # counts_only: both searches are collected after the matcher updated its graph (b1 is plain
    # pairs), so a fault at "collect" makes it take that update back before the CPU path
    for counts in (False, True):
        for site in SITES["gamma"]:
            for kind in ("oom", "launch"):
                for skip in (0, 1):
                    cpu = IncrementalMatcher(G, H, engine="cpu")
                    gpu = IncrementalMatcher(G, H, engine="gamma")
                    want1 = key(cpu.apply(**b1, counts_only=counts))
                    with faults.inject(site, kind, times=None if skip == 0 else 1, skip=skip):
                        got1 = key(gpu.apply(**b1, counts_only=counts))
                        n_hits = faults.hits.get(site, 0)
                        how = gpu._gamma.last_stats.get("recovered")
                    same = nx.utils.edges_equal(gpu.graph.edges, cpu.graph.edges)
                    want2 = key(cpu.apply(**b2))
                    got2 = key(gpu.apply(**b2))  # reloads the device graph after a fault
                    ok = (got1 == want1 and got2 == want2 and gpu.count() == cpu.count()
                          and same)
                    if skip == 0:
                        ok = ok and n_hits > 0 and how is not None
                    print(f"gamma {site}/{kind}/skip={skip}/counts={counts}: hits={n_hits} "
                          f"ok={ok} {how}", flush=True)
                    if not ok:
                        sys.exit(1)
                    tried += 1
    return tried


@sim_case(params=("gmatch", "gsi", "geneva", "gamma"), group="{param}")
def engine_recovers_from_injected_faults(name):
    tried = gamma_cases() if name == "gamma" else search_cases(name)
    print(f"{name}: {tried} fault runs", flush=True)


if __name__ == "__main__":
    sys.exit(run_cases())
