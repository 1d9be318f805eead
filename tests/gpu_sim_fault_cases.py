"""Device faults injected into gmatch under Numba's CUDA simulator (run by
test_gpu_faults_sim.py in a subprocess): at every allocation site and at the kernel launch, before
any output and in the middle of a streamed enumeration, the count and the set of mappings must
equal the CPU engine's, and the engine must say how it recovered. Exits non-zero otherwise.
"""

import os
import sys

assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", "run with NUMBA_ENABLE_CUDASIM=1"

import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402

from nx_gsm.api import prepare  # noqa: E402
from nx_gsm.engines.cpu import CpuEngine  # noqa: E402
from nx_gsm.engines.gpu import faults  # noqa: E402
from nx_gsm.engines.gpu.gmatch import GMatchEngine  # noqa: E402


def rows_of(chunks, k):
    chunks = list(chunks)
    return np.concatenate(chunks) if chunks else np.zeros((0, k), dtype=np.int32)


def main():
    G = nx.gnp_random_graph(9, 0.5, seed=3)
    H = nx.path_graph(3)
    plan = prepare(G, H, "mono")[0]
    cpu = CpuEngine()
    want = cpu.count(plan)
    ref = sorted(map(tuple, rows_of(cpu.iter_chunks(plan), plan.k).tolist()))
    assert want > 8, want
    tried = 0
    for site in faults.SITES:
        for kind in ("oom", "launch"):
            for skip in (0, 1, 3):
                # pool of 1-vertex rows and a 4-row output buffer: the DFS, the batched
                # collect and its per-batch launches all run, so every site is reached
                eng = GMatchEngine(pool_target=1, steal=False, out_capacity=4, blocks=1)
                with faults.inject(site, kind, times=None if skip == 0 else 1, skip=skip):
                    got = eng.count(plan)
                    rows = rows_of(eng.iter_chunks(plan, chunk=3), plan.k)
                    n_hits = faults.hits.get(site, 0)
                mine = sorted(map(tuple, rows.tolist()))
                ok = got == want and mine == ref
                if skip == 0:  # every site is reached, so this fault really fired
                    ok = ok and n_hits > 0 and "recovered" in eng.last_stats
                print(f"{site}/{kind}/skip={skip}: hits={n_hits} count={got}/{want} "
                      f"rows={len(mine)} ok={ok} {eng.last_stats.get('recovered')}", flush=True)
                if not ok:
                    sys.exit(1)
                tried += 1
    # a fault that needs the per-batch takeover: the third output allocation fails after rows
    # of the first batches were already emitted
    eng = GMatchEngine(pool_target=1, steal=False, out_capacity=4, blocks=1)
    with faults.inject("output", "oom", times=None, skip=2):
        seen = []
        for r in eng.iter_chunks(plan, chunk=2):
            seen.append(r)
    mine = sorted(map(tuple, rows_of(seen, plan.k).tolist()))
    how = eng.last_stats.get("recovered", "")
    print(f"mid-stream takeover: rows={len(mine)} recovered={how!r}", flush=True)
    if mine != ref or "unemitted" not in how:
        sys.exit(1)
    print(f"SIM OK ({tried + 1} fault runs)")


if __name__ == "__main__":
    main()
