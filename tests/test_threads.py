"""Several Python threads matching at once, under every Numba threading layer.

Numba's ``workqueue`` layer (its fallback where neither TBB nor OpenMP is installed) aborts the
process when two threads launch parallel code together; ``nx_gsm.threads.launch`` serialises
the launches there. The child process runs counts, enumerations and iterators from four
threads, on small searches (the probe's) and large ones (the parallel driver's), and compares
every answer with the same call made alone.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

CHILD = textwrap.dedent("""
    import threading
    import networkx as nx
    import numba
    import nx_gsm

    small = (nx.gnp_random_graph(40, 0.2, seed=1), nx.cycle_graph(4))
    large = (nx.gnp_random_graph(90, 0.5, seed=2), nx.path_graph(4))
    calls = [
        lambda: nx_gsm.count_subgraph_monomorphisms(*small, engine="cpu"),
        lambda: nx_gsm.count_subgraph_isomorphisms(*small, engine="cpu"),
        lambda: nx_gsm.count_subgraph_monomorphisms(*large, engine="cpu"),
        lambda: len(nx_gsm.find_subgraph_monomorphisms(*small, limit=25)),
        lambda: sum(1 for _ in nx_gsm.subgraph_monomorphisms(*small)),
    ]
    alone = [f() for f in calls]
    wrong = []

    def work(seed):
        for i in range(12):
            j = (seed + i) % len(calls)
            got = calls[j]()
            if got != alone[j]:
                wrong.append((j, got, alone[j]))

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not wrong, wrong
    print(numba.threading_layer(), alone)
""")


@pytest.mark.parametrize("layer", ["workqueue", "default"])
def test_threads_match_at_once_under_each_threading_layer(layer):
    env = {**os.environ, "NUMBA_NUM_THREADS": "2"}
    if layer != "default":
        env["NUMBA_THREADING_LAYER"] = layer
    proc = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    if layer != "default":
        assert proc.stdout.split()[0] == layer
