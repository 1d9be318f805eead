"""The ``sunluo-cpp`` peer: Sun & Luo's C++ study code (GraphQL filter + GraphQL order + LFTJ).

"In-Memory Subgraph Matching: An In-depth Study" (SIGMOD 2020) ships its code as
``RapidsAtHKUST/SubgraphMatching`` (MIT licence). It is the CPU reference the CPU engine is
measured against, one thread against one thread. Its code is never part of this repository:
put a snapshot in the ignored folder ``.peers/SubgraphMatching`` (or anywhere, with
``--source``) and build it with::

    python -m benchmarks.sunluo build [--source DIR]

which runs CMake in ``DIR/build`` (Release; ``-z muldefs`` because its headers define a global
that current GCC no longer merges). Where the binary is missing the harness reports the peer
as not available and runs on without it. ``$NX_GSM_SUNLUO_BIN`` points at a binary built
elsewhere.

The tool writes the data graph and each pattern as ``.graph`` files (labels mapped to the same
small ints on both sides), runs the binary with ``-filter GQL -order GQL -engine LFTJ`` and
reports the study code's own "Total time" (filtering, ordering and enumeration; graph loading
excluded), the time its authors report, as the query's time: the harness times our engines over
the whole API call, so the comparison is conservative for us.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from .graph_files import write_graph_file
from .tools import Tool, ToolTimeout, Unavailable

__all__ = ["SunLuoCpp", "binary", "build"]

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = REPO / ".peers" / "SubgraphMatching"
_BINARY = Path("build") / "matching" / "SubgraphMatching.out"


def binary(source=None):
    """The study code's binary: ``$NX_GSM_SUNLUO_BIN``, else the build under ``source``."""
    env = os.environ.get("NX_GSM_SUNLUO_BIN")
    if env:
        return Path(env)
    return Path(source or DEFAULT_SOURCE) / _BINARY


def build(source=None, jobs=2):
    """Configure and build the study code's snapshot in ``source`` (CMake, Release)."""
    src = Path(source or DEFAULT_SOURCE)
    if not (src / "CMakeLists.txt").exists():
        raise FileNotFoundError(
            f"no snapshot of RapidsAtHKUST/SubgraphMatching in {src}: put one there first")
    out = src / "build"
    out.mkdir(exist_ok=True)
    subprocess.run(["cmake", "..", "-DCMAKE_BUILD_TYPE=Release",
                    "-DCMAKE_EXE_LINKER_FLAGS=-z muldefs"], cwd=out, check=True,
                   stdout=subprocess.DEVNULL)
    subprocess.run(["make", f"-j{jobs}", "SubgraphMatching.out"], cwd=out, check=True,
                   stdout=subprocess.DEVNULL)
    return binary(src)


class SunLuoCpp(Tool):
    """Sun & Luo's study code as a benchmark peer (see the module docstring)."""

    name = "sunluo-cpp"
    supports_induced = False
    description = "Sun & Luo study code (C++): GQL filter, GQL order, LFTJ; its 'Total time'"

    def check(self):
        self.bin = binary()
        if not self.bin.exists():
            raise Unavailable(f"peer not available: {self.bin} is missing (build it with "
                              "'python -m benchmarks.sunluo build')")

    def load(self, G, label):
        if G.is_directed() or G.is_multigraph():
            raise Unavailable("the study code reads simple undirected graphs only")
        self.dir = tempfile.TemporaryDirectory(prefix="sunluo-")
        self.label, self.ids = label, {}
        self.data = Path(self.dir.name) / "data.graph"
        write_graph_file(G, self.data, label, self.ids)
        self.n_queries = 0

    def prepare(self, H):
        self.n_queries += 1
        path = Path(self.dir.name) / f"q{self.n_queries}.graph"
        write_graph_file(H, path, self.label, self.ids)
        return path

    def count(self, q, *, limit, induced, deadline):
        import time

        left = deadline - time.perf_counter()
        try:
            proc = subprocess.run(
                [str(self.bin), "-d", str(self.data), "-q", str(q), "-filter", "GQL",
                 "-order", "GQL", "-engine", "LFTJ", "-num", "MAX" if limit is None else
                 str(limit)], capture_output=True, text=True, timeout=max(left, 0.01),
                check=False)
        except subprocess.TimeoutExpired:
            raise ToolTimeout from None
        total = re.search(r"Total time \(seconds\): ([0-9.eE+-]+)", proc.stdout)
        found = re.search(r"#Embeddings: (\d+)", proc.stdout)
        if proc.returncode != 0 or not (total and found):
            raise RuntimeError(f"study code failed (exit {proc.returncode}): "
                               f"{(proc.stdout + proc.stderr)[-300:]}")
        # it prints seconds to four decimals: a 0.0000 is read as half that resolution
        return int(found[1]), max(float(total[1]), 5e-5)

    def info(self):
        return {"description": self.description, "binary": self.bin.name,
                "threads": 1}


def study_calls(data, query, timeout):
    """The study code's ``(call count, matches, Total time)`` for one query file, or None where
    the binary is missing or the run times out."""
    exe = binary()
    if not exe.exists():
        return None
    try:
        out = subprocess.run([str(exe), "-d", str(data), "-q", str(query), "-filter", "GQL",
                              "-order", "GQL", "-engine", "LFTJ", "-num", "MAX"],
                             capture_output=True, text=True, timeout=timeout,
                             check=False).stdout
    except subprocess.TimeoutExpired:
        return None
    calls = re.search(r"Call Count: (\d+)", out)
    found = re.search(r"#Embeddings: (\d+)", out)
    total = re.search(r"Total time \(seconds\): ([0-9.eE+-]+)", out)
    if not (calls and found and total):
        return None
    return int(calls[1]), int(found[1]), float(total[1])


def trees(root, dataset, groups, ids, orders, filters, max_steps, timeout):
    """Per query, the one-thread search tree of every filter x order (``search_tree``: its
    calls, i.e. partial matches extended, and whether it finished within ``max_steps``
    candidates) beside the study code's call count (GQL filter, GQL order, LFTJ): one JSON line
    each. Tree sizes are deterministic, so they compare stages fairly on a loaded machine."""
    import json

    from nx_gsm.api import prepare
    from nx_gsm.engines.cpu import search_tree

    from .datasets import read_sun_luo_graph

    base = Path(root) / "sun-luo" / dataset
    data = base / "data_graph" / f"{dataset}.graph"
    G = read_sun_luo_graph(data)
    for group in groups:
        for i in ids:
            qpath = base / "query_graph" / f"query_{group}_{i}.graph"
            H = read_sun_luo_graph(qpath)
            row = {"query": f"{group}_{i}"}
            for flt in filters:
                for order in orders:
                    plan, _, _ = prepare(G, H, "mono", node_label="label", filter=flt,
                                         order=order)
                    got = search_tree(plan, max_steps=max_steps)
                    row[f"{flt}/{order}"] = {"calls": got["calls"], "matches": got["matches"],
                                             "complete": got["complete"],
                                             "candidates": plan.stages["candidates"]}
            study = study_calls(data, qpath, timeout)
            row["sunluo-cpp"] = None if study is None else \
                dict(zip(("calls", "matches", "seconds"), study))
            print(json.dumps(row), flush=True)


def main(argv=None):
    from nx_gsm.plan.order import ORDERS
    from nx_gsm.plan.planner import DEFAULT_FILTER

    ap = argparse.ArgumentParser(prog="python -m benchmarks.sunluo",
                                 description="Build the sunluo-cpp benchmark peer; compare "
                                             "search-tree sizes with it.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="configure and build a snapshot of the study code")
    b.add_argument("--source", default=None, help=f"snapshot folder (default {DEFAULT_SOURCE})")
    t = sub.add_parser("trees", help="search-tree sizes of our filters x orders beside the "
                                     "study code's call count, one JSON line per query")
    t.add_argument("--datasets", default=None, help="datasets folder (as for 'run')")
    t.add_argument("--dataset", default="yeast")
    t.add_argument("--groups", nargs="+", default=["dense_8", "sparse_8"])
    t.add_argument("--ids", nargs="+", type=int, default=[1, 34, 67, 101, 134, 167])
    t.add_argument("--orders", nargs="+", default=list(ORDERS))
    t.add_argument("--filters", nargs="+", default=[DEFAULT_FILTER])
    t.add_argument("--max-steps", type=int, default=10**8,
                   help="candidates a tree may examine before it is cut (complete: false)")
    t.add_argument("--timeout", type=float, default=20.0, help="seconds for the study code")
    args = ap.parse_args(argv)
    if args.cmd == "trees":
        from .datasets import datasets_root

        trees(datasets_root(args.datasets), args.dataset, args.groups, args.ids, args.orders,
              args.filters, args.max_steps, args.timeout)
        return 0
    try:
        print(build(args.source))
    except (FileNotFoundError, subprocess.CalledProcessError) as exc:
        print(f"python -m benchmarks.sunluo: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
