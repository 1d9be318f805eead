"""Which Sun & Luo queries NetworkX VF2 finishes within a time cap (the set of the issue's
">= 1000x over VF2 on the queries VF2 finishes within 10 s" target).

``python -m benchmarks.vf2_screen --dataset yeast --size 8 --first 40 --cap 12 --out FILE``
(``--start 41 --first 80`` extends it)
runs VF2 (``subgraph_monomorphisms_iter``, label match) on each query in its own process, killed
at the cap, and appends one JSON line per query (count and seconds, or null). The last line
printed is the comma-separated list of finished queries (``dataset:query``), for
``gpu.check --vf2-queries``; the
device run measures VF2 again with its own cap, so a slower screening machine only widens it.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import time

from .datasets import datasets_root


def _run(base, dataset, q, conn):
    from networkx.algorithms import isomorphism as iso

    import nx_gsm

    G = nx_gsm.read_graph(base / "data_graph" / f"{dataset}.graph", edge_labels=False)
    H = nx_gsm.read_graph(base / "query_graph" / f"query_{q}.graph", edge_labels=False)
    t = time.perf_counter()
    gm = iso.GraphMatcher(G, H, node_match=iso.categorical_node_match("label", None))
    c = sum(1 for _ in gm.subgraph_monomorphisms_iter())
    conn.send((c, time.perf_counter() - t))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="yeast")
    ap.add_argument("--size", type=int, default=8)
    ap.add_argument("--first", type=int, default=40, help="queries per kind (dense, sparse)")
    ap.add_argument("--start", type=int, default=1, help="first query number (to extend a screen)")
    ap.add_argument("--cap", type=float, default=12.0, help="seconds per query")
    ap.add_argument("--jobs", type=int, default=1,
                    help="queries run at once, each in its own process (a screen on a many-core "
                         "machine; the rows keep the query order)")
    ap.add_argument("--out", default=None, help="JSON lines file to append to")
    args = ap.parse_args(argv)
    base = datasets_root() / "sun-luo" / args.dataset
    ctx = mp.get_context("spawn")
    queries = [f"{kind}_{args.size}_{i}" for i in range(args.start, args.first + 1)
               for kind in ("dense", "sparse")]
    queries = [q for q in queries if (base / "query_graph" / f"query_{q}.graph").exists()]
    results = {}
    running = {}  # query -> (process, pipe end, start time)
    todo = list(queries)
    while todo or running:
        while todo and len(running) < max(1, args.jobs):
            q = todo.pop(0)
            a, b = ctx.Pipe()
            p = ctx.Process(target=_run, args=(base, args.dataset, q, b), daemon=True)
            p.start()
            running[q] = (p, a, time.perf_counter())
        for q, (p, a, t0) in list(running.items()):
            res = a.recv() if a.poll(0.05) else None
            # + start-up and graph reading
            if res is None and time.perf_counter() - t0 < args.cap + 5.0 and p.is_alive():
                continue
            p.kill()
            p.join()
            del running[q]
            results[q] = None if res is None or res[1] > args.cap else res
    done = []
    out = open(args.out, "a", encoding="utf-8") if args.out else None
    for q in queries:
        res = results[q]
        row = {"dataset": args.dataset, "query": q, "count": res and res[0],
               "vf2_s": res and res[1], "cap_s": args.cap}
        print(json.dumps(row), flush=True)
        if out:
            out.write(json.dumps(row) + "\n")
            out.flush()
        if res is not None:
            done.append(f"{args.dataset}:{q}")
    print(",".join(done))


if __name__ == "__main__":
    main()
