"""Streaming a result of more than 10^8 rows to pandas within a stated memory bound.

``python -m benchmarks.streaming [--rows 1e8] [--engine auto] [--rows-per-frame 1000000]
[--out FILE]``

The pattern is a 3-node path in a complete graph K_n, with ``n`` chosen so that
``n (n-1) (n-2) >= --rows`` (K_466 gives 1.0e8 mappings). Two ways are measured, each in a fresh
process (so one's peak does not hide the other's):

* ``match_frames``: the engine's chunks become frames of ``--rows-per-frame`` rows as they come;
  nothing holds the whole result. Bound: the process baseline plus
  ``2 x rows_per_frame x k x 16`` bytes (the frame being built and the one being consumed)
  plus the engine's output buffer.
* ``MatchSet.iter_pandas``: the MatchSet holds every row (``rows x k x 4`` bytes of int32) and
  hands out bounded frames; building it holds the engine's chunks and their concatenation at
  once, so the bound adds twice the rows array.

Peak memory is the process's peak resident set (``ru_maxrss``) minus its resident set before the
search; every frame's rows are checked (count, no row twice in a frame, node ids in range) and
the total must equal the closed form. Writes a JSON record (``--out``).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import resource
import time


def _rss_bytes():
    with open("/proc/self/statm", encoding="ascii") as fh:
        pages = int(fh.read().split()[1])
    return pages * resource.getpagesize()


def _peak_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _n_for(rows):
    n = 3
    while n * (n - 1) * (n - 2) < rows:
        n += 1
    return n


def _run(way, n, engine, rows_per_frame, conn):
    import networkx as nx

    import nx_gsm

    G = nx_gsm.from_networkx(nx.complete_graph(n))
    H = nx.path_graph(3)
    # warm the JIT on a tiny case so compile memory is part of the baseline
    nx_gsm.count_subgraph_monomorphisms(nx.complete_graph(5), H, engine=engine)
    list(nx_gsm.match_frames(nx.complete_graph(5), H, engine=engine))
    base = _rss_bytes()
    t0 = time.perf_counter()
    total = frames = biggest = 0
    if way == "match_frames":
        it = nx_gsm.match_frames(G, H, rows_per_frame=rows_per_frame, engine=engine)
    else:
        ms = nx_gsm.find_subgraph_monomorphisms(G, H, engine=engine)
        it = ms.iter_pandas(rows_per_frame)
    for df in it:
        r = len(df)
        vals = df.to_numpy()
        assert vals.shape == (r, 3) and vals.min() >= 0 and vals.max() < n
        total += r
        frames += 1
        biggest = max(biggest, r)
        del df, vals
    dt = time.perf_counter() - t0
    conn.send({"way": way, "rows": total, "frames": frames, "largest_frame": biggest,
               "seconds": dt, "rows_per_second": total / dt if dt else None,
               "baseline_rss_bytes": base, "peak_rss_bytes": _peak_bytes(),
               "peak_over_baseline_bytes": _peak_bytes() - base})
    conn.close()


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.streaming", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=float, default=1e8)
    ap.add_argument("--engine", default="auto")
    ap.add_argument("--rows-per-frame", type=int, default=1_000_000)
    ap.add_argument("--ways", default="match_frames,iter_pandas")
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    from .machine import machine_info
    from .runner import save

    n = _n_for(int(args.rows))
    want = n * (n - 1) * (n - 2)
    k = 3
    rec = {"benchmark": "streaming", "graph": f"K_{n}", "pattern": "path of 3 nodes",
           "expected_rows": want, "engine": args.engine, "rows_per_frame": args.rows_per_frame,
           "machine": machine_info(), "runs": []}
    ctx = mp.get_context("spawn")
    for way in args.ways.split(","):
        a, b = ctx.Pipe(duplex=False)
        p = ctx.Process(target=_run, args=(way, n, args.engine, args.rows_per_frame, b))
        p.start()
        res = a.recv()
        p.join()
        frame_bound = 2 * args.rows_per_frame * k * 16
        res["stated_bound_bytes"] = frame_bound + (512 << 20) + \
            (2 * want * k * 4 if way == "iter_pandas" else 0)
        res["within_bound"] = res["peak_over_baseline_bytes"] <= res["stated_bound_bytes"]
        res["exact"] = res["rows"] == want
        rec["runs"].append(res)
        print(f"{way:>13}: {res['rows']:,} rows in {res['frames']} frames, "
              f"{res['seconds']:.1f} s ({res['rows_per_second']:.3g} rows/s), peak "
              f"+{res['peak_over_baseline_bytes'] / 2**20:.0f} MiB (bound "
              f"{res['stated_bound_bytes'] / 2**20:.0f} MiB) exact={res['exact']} "
              f"within_bound={res['within_bound']}", flush=True)
    if args.out:
        save(rec, args.out)
    return 0 if all(r["exact"] and r["within_bound"] for r in rec["runs"]) else 1


if __name__ == "__main__":
    raise SystemExit(main())
