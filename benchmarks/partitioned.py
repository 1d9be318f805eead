"""Partitioned execution (PBE) and Dask scaling, measured: ``python -m benchmarks.partitioned``.

For each data graph, pattern and partition count, one record row holds the unpartitioned CPU
engine's time, the partitioned engine's breakdown (METIS partitioning, inner matches per part,
cross-partition seeded search) with shared execution and with the naive one-search-per-pattern-
pair baseline (PBE section 6.2, Fig. 6 reports 1.4-9.2x), the cut size and the share of cross
matches; every count is checked against the unpartitioned count. A second table times the same
count on a local Dask cluster of 1, 2, ... worker processes (``client=``).

Graphs: SNAP lastfm and github (unlabelled, as PBE's queries are) and the Sun & Luo yeast graph
with labelled queries, from the shared datasets folder (``--datasets`` or ``NX_GSM_DATASETS``);
missing ones are skipped with a note in the record. Times are the median of ``--reps`` runs after
one warm-up run (JIT compilation excluded).

With a GPU inner engine (``--inner gmatch``) the cross search runs on gmatch over the halo; each
row then also times it on the CPU (``cpu_cross_s``, shared execution, ``cross="cpu"``) and
records the transfer/compute breakdown: the inner parts' uploads (``transfer_s``), the upload
time hidden behind the previous part's search (``overlap_s``, ``prefetched`` parts), the halo's
size and uploads (``halo_nodes``, ``cross_transfer_s``) and where the cross search ran
(``cross_on``).

Options: ``--out PATH`` (default ``benchmarks/results/<date>-partitioned-<cpu|gpu>.json``),
``--parts 4,16,64``, ``--workers 1,2``, ``--reps 3``, ``--inner cpu|gmatch|auto``, ``--quick``
(lastfm only, parts 4 and 16).
"""

from __future__ import annotations

import argparse
import datetime
import os
import statistics
import time
from pathlib import Path

import networkx as nx

from nx_gsm.api import prepare
from nx_gsm.engines import get_engine
from nx_gsm.engines.partitioned import PartitionedEngine

from .datasets import DatasetMissing, datasets_root, read_edge_csv, read_sun_luo_graph
from .machine import machine_info
from .runner import save

PATTERNS = {
    "triangle": nx.complete_graph(3),
    "4-cycle": nx.cycle_graph(4),
    "4-clique": nx.complete_graph(4),
    "diamond": nx.Graph([(0, 1), (1, 2), (2, 0), (2, 3), (3, 0)]),
    "tailed-triangle": nx.Graph([(0, 1), (1, 2), (2, 0), (2, 3)]),
}
YEAST_QUERIES = ("query_dense_8_1.graph", "query_dense_8_3.graph", "query_sparse_8_1.graph")


def _median_time(fn, reps):
    fn()  # warm-up: compilation and caches
    times, out = [], None
    for _ in range(reps):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times), out


def _graphs(root, quick):
    """(name, graph, [(pattern name, pattern, planner kwargs)]) for every dataset present."""
    unl = [(n, H, {}) for n, H in PATTERNS.items()]
    specs = [("lastfm", lambda: read_edge_csv(root / "snap" / "lastfm" / "edges.csv"), unl)]
    if not quick:
        specs.append(("github", lambda: read_edge_csv(root / "snap" / "github" / "edges.csv"),
                      [p for p in unl if p[0] in ("triangle", "4-clique")]))
        base = root / "sun-luo" / "yeast"
        specs.append(("yeast", lambda: read_sun_luo_graph(base / "data_graph" / "yeast.graph"),
                      [(q, lambda q=q: read_sun_luo_graph(base / "query_graph" / q),
                        {"node_label": "label"}) for q in YEAST_QUERIES]))
    for name, load, pats in specs:
        try:
            G = load()
            pats = [(n, H() if callable(H) else H, kw) for n, H, kw in pats]
        except DatasetMissing as exc:
            yield name, None, str(exc)
            continue
        yield name, G, pats


def partition_rows(root, parts_list, reps, inner, quick, notes):
    rows = []
    ref_engine = get_engine(inner)
    for gname, G, pats in _graphs(root, quick):
        if G is None:
            notes.append(f"{gname} skipped: {pats}")
            continue
        # 64 parts of github: minutes per row on a 2-core machine (inner launch overheads)
        plist = [p for p in parts_list if p <= 16] if gname == "github" else parts_list
        for pname, H, kw in pats:
            plan, _, _ = prepare(G, H, "mono", **kw)
            t_ref, ref = _median_time(lambda: ref_engine.count(plan), reps)
            for parts in plist:
                row = dict(graph=gname, nodes=G.number_of_nodes(), edges=G.number_of_edges(),
                           pattern=pname, k=H.number_of_nodes(), parts=parts, count=int(ref),
                           unpartitioned_s=t_ref)
                runs = [("shared", True, "auto"), ("naive", False, "auto")]
                if inner != "cpu":
                    runs.append(("cpu_cross", True, "cpu"))
                for tag, shared, cross in runs:
                    eng = PartitionedEngine(inner=inner, parts=parts, shared=shared, cross=cross)
                    stats = []

                    def run(eng=eng, stats=stats):
                        c = eng.count(plan)
                        stats.append(dict(eng.last_stats))
                        return c

                    total_s, got = _median_time(run, reps)
                    if got != ref:
                        raise AssertionError(f"{gname}/{pname}/{parts} parts: {got} != {ref}")
                    st = stats[1:]
                    row[f"{tag}_total_s"] = total_s
                    row[f"{tag}_cross_s"] = statistics.median(s["cross_s"] for s in st)
                    row[f"{tag}_groups"] = st[0]["groups"]
                    row[f"{tag}_seeds"] = st[0]["seeds"]
                    row[f"{tag}_cross_on"] = st[0]["cross_on"]
                    if tag == "shared":
                        med = {key: statistics.median(s[key] for s in st) for key in
                               ("partition_s", "inner_s", "cross_transfer_s")}
                        row.update(med, cut_pairs=st[0]["cut_pairs"], inner=st[0]["inner"],
                                   cross=st[0]["cross"], halo_nodes=st[0]["halo_nodes"])
                        if st[0]["transfer_s"] is not None:
                            row["transfer_s"] = statistics.median(s["transfer_s"] for s in st)
                        if st[0]["overlap_s"] is not None:
                            row.update(overlap_s=statistics.median(s["overlap_s"] for s in st),
                                       prefetched=st[0]["prefetched"])
                row["cross_fraction"] = row["cross"] / max(1, row["count"])
                row["shared_speedup"] = row["naive_cross_s"] / max(row["shared_cross_s"], 1e-9)
                gpu_note = ""
                if "cpu_cross_cross_s" in row:
                    row["cross_gpu_speedup"] = (row["cpu_cross_cross_s"] /
                                                max(row["shared_cross_s"], 1e-9))
                    gpu_note = (f" cross on {row['shared_cross_on']}: "
                                f"{row['shared_cross_s']:.3f}s vs cpu "
                                f"{row['cpu_cross_cross_s']:.3f}s "
                                f"({row['cross_gpu_speedup']:.2f}x; halo {row['halo_nodes']} "
                                f"nodes, uploads {row['cross_transfer_s']:.3f}s) inner uploads "
                                f"{row.get('transfer_s', 0):.3f}s, hidden "
                                f"{row.get('overlap_s') or 0:.3f}s")
                rows.append(row)
                print(f"{gname:7} {pname:16} parts={parts:3} count={ref:>11} "
                      f"cut={row['cut_pairs']:6} cross={row['cross_fraction']:.3f} "
                      f"part={row['partition_s']:.3f}s inner={row['inner_s']:.3f}s "
                      f"cross shared={row['shared_cross_s']:.3f}s "
                      f"naive={row['naive_cross_s']:.3f}s ({row['shared_speedup']:.2f}x) "
                      f"unpartitioned={t_ref:.3f}s{gpu_note}", flush=True)
    return rows


def worker_rows(root, workers_list, reps, notes):
    """Wall time of one count over local Dask clusters of growing size (one thread each)."""
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:
        notes.append(f"Dask table skipped: {exc}")
        return []
    import nx_gsm

    try:
        G = read_edge_csv(root / "snap" / "lastfm" / "edges.csv")
    except DatasetMissing as exc:
        notes.append(f"Dask table skipped: {exc}")
        return []
    H = PATTERNS["4-cycle"]
    ref = nx_gsm.count_subgraph_monomorphisms(G, H, engine="cpu")
    rows = []
    for w in workers_list:
        # one Numba thread per worker: the workers, not the threads, are what is measured
        with LocalCluster(n_workers=w, threads_per_worker=1, processes=True,
                          dashboard_address=":0", env={"NUMBA_NUM_THREADS": "1"}) as cluster, \
                Client(cluster) as client:
            t, got = _median_time(lambda: nx_gsm.count_subgraph_monomorphisms(
                G, H, client=client, engine="cpu"), reps)
        if got != ref:
            raise AssertionError(f"{w} workers: {got} != {ref}")
        rows.append(dict(graph="lastfm", pattern="4-cycle", workers=w, count=int(ref),
                         wall_s=t))
        print(f"dask workers={w} count={ref} wall={t:.3f}s", flush=True)
    for r in rows:
        r["speedup_vs_1"] = rows[0]["wall_s"] / r["wall_s"]
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.partitioned", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out")
    ap.add_argument("--datasets")
    ap.add_argument("--parts", default="4,16,64")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--inner", default="cpu")
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args(argv)
    parts = [int(x) for x in ("4,16" if a.quick else a.parts).split(",")]
    workers = [int(x) for x in a.workers.split(",") if x]
    root = datasets_root(a.datasets)
    notes = []
    t0 = time.perf_counter()
    load = [os.getloadavg()]
    rows = partition_rows(root, parts, a.reps, a.inner, a.quick, notes)
    load.append(os.getloadavg())
    wrows = worker_rows(root, workers, a.reps, notes)
    load.append(os.getloadavg())
    # other jobs on the machine inflate absolute times; same-run ratios (shared vs naive) hold
    notes.append("load average (1, 5, 15 min) at start, after the partition table, at end: "
                 f"{[[round(x, 2) for x in la] for la in load]} on {os.cpu_count()} CPUs")
    machine = machine_info()
    record = dict(schema="nx-gsm-partitioned/1", machine=machine,
                  config=dict(parts=parts, workers=workers, reps=a.reps, inner=a.inner,
                              quick=a.quick, mode="mono"),
                  rows=rows, workers=wrows, notes=notes,
                  wall_seconds=time.perf_counter() - t0)
    kind = "gpu" if machine.get("gpus") and a.inner != "cpu" else "cpu"
    out = Path(a.out) if a.out else (Path(__file__).resolve().parent / "results" /
                                     f"{datetime.date.today()}-partitioned-{kind}.json")
    save(record, out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
