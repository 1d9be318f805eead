"""Reading edge lists and CSV files: the line readers against the pandas path, and NetworkX.

    python -m benchmarks.readers [--datasets PATH] [--repeat 5] \\
        [--out benchmarks/results/readers.json] [--figure docs/img/readers.png]

For SNAP GitHub (``snap/github/edges.csv``: a header row, 289,003 comma-separated rows) and
email-Enron (``snap/email-Enron.txt``: a count header line, 367,662 tab-separated rows, each
undirected edge in both directions), in one process with pandas already imported (best and
median of ``--repeat`` runs):

``lines``
    ``read_any(path)`` with the pandas path off: the line reader, a NetworkX graph.
``lines_convert``
    the same and ``from_networkx``: what ``nx-gsm match`` paid before it read into a GsmGraph
    (the matching functions convert a NetworkX graph).
``pandas_nx``
    ``read_any(path)``: pandas, then the NetworkX graph built as the line reader builds it.
``pandas_gsm`` / ``pandas_gsm_c``
    ``read_any(path, as_gsm=True)``: pandas straight into a GsmGraph (what ``nx-gsm match`` does
    now), with pyarrow, and with pyarrow hidden (pandas' C engine).
``nx_read_edgelist``
    ``networkx.read_edgelist(..., nodetype=int)`` (the CSV's header row skipped; for Enron the
    count line becomes an edge, as NetworkX does not know it).
``parse_pyarrow`` / ``parse_c``
    ``pandas.read_csv`` of the rows alone: the parsing share of the pandas path.

and, each in new processes (``--repeat`` of them), the first read of a process with the import
of pandas included: ``fresh_lines_convert`` and ``fresh_pandas_gsm``. The record holds no
machine paths; the load average is read before and after (other work on the machine slows
every figure).
"""

from __future__ import annotations

import argparse
import gc
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

from .datasets import datasets_root, require

DATASETS = {"github": ("snap/github/edges.csv", ","), "email-Enron": ("snap/email-Enron.txt", None)}

LABELS = {
    "nx_read_edgelist": "networkx.read_edgelist",
    "lines": "line reader -> NetworkX graph",
    "lines_convert": "line reader + conversion (nx-gsm match before)",
    "pandas_nx": "pandas -> NetworkX graph",
    "pandas_gsm_c": "pandas (C engine) -> GsmGraph",
    "pandas_gsm": "pandas (pyarrow) -> GsmGraph (nx-gsm match now)",
}

CHILD = r"""
import sys, time
from nx_gsm.interop import fastread
from nx_gsm.interop.formats import read_any
from nx_gsm.interop.networkx import from_networkx
path, mode = sys.argv[1], sys.argv[2]
t = time.perf_counter()
if mode == "lines":
    fastread.FAST_MIN_BYTES = 1 << 62
    g = from_networkx(read_any(path))
else:
    g = read_any(path, as_gsm=True)
print(time.perf_counter() - t, "pandas" in sys.modules)
"""


def _summary(G):
    """What the runs are checked by: counts and the node keys in order (None for a frame)."""
    if not hasattr(G, "number_of_nodes"):
        return None
    return G.number_of_nodes(), G.number_of_edges(), list(G)


def _timed(fn, repeat):
    """Best and median of ``repeat`` calls, and the result's summary. Each run starts from a
    collected heap, and no graph outlives its run (a full heap slows the collector and with it
    every reader that makes many objects)."""
    times, out = [], None
    for _ in range(repeat):
        gc.collect()
        t = time.perf_counter()
        G = fn()
        times.append(time.perf_counter() - t)
        out = _summary(G)
        del G
    return {"best_s": min(times), "median_s": statistics.median(times), "runs": len(times)}, out


def _no_pyarrow(fn):
    def run():
        saved = sys.modules.get("pyarrow", False)
        sys.modules["pyarrow"] = None  # importing it raises ImportError
        try:
            return fn()
        finally:
            if saved is False:
                del sys.modules["pyarrow"]
            else:
                sys.modules["pyarrow"] = saved
    return run


def _nx_read_edgelist(path, delimiter):
    import networkx as nx

    with open(path, "rb") as fh:
        if delimiter is not None:
            fh.readline()  # the header row
        return nx.read_edgelist(fh, delimiter=delimiter, nodetype=int)


def _body(path, delimiter):
    with open(path, "rb") as fh:
        fh.readline()  # the CSV's header row; Enron's count line
        return fh.read()


def _dataset(path, delimiter, repeat):
    import pandas as pd

    from nx_gsm.interop import fastread
    from nx_gsm.interop.formats import read_any
    from nx_gsm.interop.networkx import from_networkx

    def lines():
        old = fastread.FAST_MIN_BYTES
        fastread.FAST_MIN_BYTES = 1 << 62
        try:
            return read_any(path)
        finally:
            fastread.FAST_MIN_BYTES = old

    body = _body(path, delimiter)
    sep = delimiter or "\t"
    rows = {}
    rows["lines"], G = _timed(lines, repeat)
    rows["lines_convert"], want = _timed(lambda: from_networkx(lines()), repeat)
    rows["pandas_nx"], H = _timed(lambda: read_any(path), repeat)
    rows["pandas_gsm"], g = _timed(lambda: read_any(path, as_gsm=True), repeat)
    rows["pandas_gsm_c"], gc_ = _timed(_no_pyarrow(lambda: read_any(path, as_gsm=True)), repeat)
    rows["nx_read_edgelist"], N = _timed(lambda: _nx_read_edgelist(path, delimiter), repeat)
    rows["parse_pyarrow"], _ = _timed(lambda: pd.read_csv(io.BytesIO(body), header=None, sep=sep,
                                                          engine="pyarrow"), repeat)
    rows["parse_c"], _ = _timed(lambda: pd.read_csv(io.BytesIO(body), header=None, sep=sep,
                                                    engine="c"), repeat)
    # the same nodes (in order) and edges every way (tests/test_files_fast.py compares in full)
    assert want == H == g == gc_ == G, "the readers disagree"
    for name in ("lines", "lines_convert", "pandas_nx", "pandas_gsm", "pandas_gsm_c"):
        rows[name]["nodes"], rows[name]["edges"] = G[:2]
    rows["nx_read_edgelist"]["nodes"], rows["nx_read_edgelist"]["edges"] = N[:2]
    for mode in ("lines", "pandas"):
        times = []
        for _ in range(repeat):
            proc = subprocess.run([sys.executable, "-c", CHILD, str(path), mode],
                                  capture_output=True, text=True, check=True)
            t, imported = proc.stdout.split()
            assert imported == ("True" if mode == "pandas" else "False"), proc.stdout
            times.append(float(t))
        key = "fresh_lines_convert" if mode == "lines" else "fresh_pandas_gsm"
        rows[key] = {"best_s": min(times), "median_s": statistics.median(times),
                     "runs": len(times)}
    return {"file_bytes": os.path.getsize(path), "rows_in_file": body.count(b"\n"),
            "times": rows}


def _versions():
    out = {}
    for dist in ("numpy", "networkx", "pandas", "pyarrow"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    return out


def plot(record, path):
    """A bar chart per dataset of the ``LABELS`` rows (best of the runs)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from nx_gsm.interop.atomic import atomic_path

    names = list(record["datasets"])
    fig, axes = plt.subplots(1, len(names), figsize=(5.2 * len(names), 3.2), sharey=True,
                             squeeze=False)
    keys = list(LABELS)
    for ax, name in zip(axes[0], names):
        rows = record["datasets"][name]["times"]
        vals = [rows[k]["best_s"] for k in keys]
        colors = ["#999999"] * 3 + ["#7fa7d9", "#3a78c2", "#1b4f91"]
        bars = ax.barh(range(len(keys)), vals, color=colors)
        ax.bar_label(bars, labels=[f"{v:.2f} s" for v in vals], padding=3, fontsize=8)
        ax.set_title(f"{name} ({rows['lines']['edges']:,} edges)", fontsize=10)
        ax.set_xlabel("seconds (best of runs)")
        ax.set_xlim(0, max(vals) * 1.3)
    axes[0][0].set_yticks(range(len(keys)), [LABELS[k] for k in keys], fontsize=8)
    axes[0][0].invert_yaxis()
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)


def main(argv=None):
    p = argparse.ArgumentParser(prog="python -m benchmarks.readers", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--datasets", default=None, help="datasets folder (default: NX_GSM_DATASETS "
                   "or ../shared/datasets beside the checkout)")
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--out", default=str(Path(__file__).parent / "results" / "readers.json"))
    p.add_argument("--figure", default=None, help="also draw the bar chart (PNG; matplotlib)")
    a = p.parse_args(argv)
    root = datasets_root(a.datasets)
    record = {"benchmark": "readers",
              "machine": {"cpus": os.cpu_count(), "load_before": os.getloadavg(),
                          "system": platform.system(), "machine": platform.machine(),
                          "python": platform.python_version(), "versions": _versions()},
              "repeat": a.repeat, "datasets": {}}
    for name, (rel, delimiter) in DATASETS.items():
        path = require(root / rel)
        record["datasets"][name] = dict(_dataset(path, delimiter, a.repeat), file=rel)
        t = record["datasets"][name]["times"]
        print(f"{name}: " + ", ".join(f"{k} {v['best_s']:.3f} s" for k, v in t.items()),
              flush=True)
    record["machine"]["load_after"] = os.getloadavg()
    from nx_gsm.interop.atomic import atomic_open

    with atomic_open(a.out, "w", encoding="utf-8") as fh:
        json.dump(record, fh, indent=1)
    if a.figure:
        plot(record, a.figure)
    return 0


if __name__ == "__main__":
    sys.exit(main())
