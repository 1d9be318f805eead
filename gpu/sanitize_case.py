"""A tiny gmatch workload for ``compute-sanitizer`` (memcheck, racecheck, synccheck).

Exercises the DFS kernel (pool of one row, a 2-slot donation ring), the collect path with a
streamed buffer, and both BFS kernels; exits non-zero if a count differs from the CPU engine.
"""

import sys

import networkx as nx
from networkx.algorithms import isomorphism as iso

from nx_gsm.api import prepare
from nx_gsm.engines.cpu import CpuEngine
from nx_gsm.engines.gpu.gmatch import GMatchEngine


def main():
    G = nx.complete_graph(8)
    for v in G:
        G.nodes[v]["c"] = 1 if v == 0 else 0
    H = nx.path_graph(4)
    for v in H:
        H.nodes[v]["c"] = 1 if v == 0 else 0
    D = nx.gnp_random_graph(12, 0.3, seed=2, directed=True)
    cases = [
        (G, H, "mono", {"node_match": iso.categorical_node_match("c", None)}),
        (D, nx.DiGraph([(0, 1), (1, 2), (2, 0)]), "induced", {}),
    ]
    ok = True
    for X, P, mode, kw in cases:
        plan, _, _ = prepare(X, P, mode, **kw)
        want = CpuEngine().count(plan)
        eng = GMatchEngine(pool_target=1, steal=True, queue_capacity=2, out_capacity=64)
        got = eng.count(plan)
        rows = sum(len(c) for c in eng.iter_chunks(plan))
        bfs = GMatchEngine().count(plan)
        print(mode, want, got, rows, bfs, eng.last_stats.get("donated"), flush=True)
        ok = ok and got == want == rows == bfs
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
