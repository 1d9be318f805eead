"""The ``egsm`` peer: EGSM, the GPU subgraph matcher of Sun & Luo (SIGMOD 2023).

"Efficient GPU-Accelerated Subgraph Matching" ships its code as ``RapidsAtHKUST/EGSM`` (MIT
licence). It is the GPU reference our GPU engines are measured against, on the same card. Its
code is never part of this repository: put a snapshot in the ignored folder ``.peers/EGSM`` (or
anywhere, with ``--source``) and build it with::

    python -m benchmarks.egsm build [--source DIR] [--arch 90] [--jobs N]

which compiles it with ``nvcc`` alone (no CMake) into ``.peers/egsm-build/EGSM``, a binary
that needs only the C and C++ runtime libraries and the NVIDIA driver, so it can be built on a
machine without a GPU and carried to one. Three departures from the snapshot's CMake file, none touching what it
computes:

* the target is ``sm_90`` (plus ``compute_90`` PTX), not ``sm_70``, which CUDA 13 no longer
  builds;
* CUB is the toolkit's own, not the snapshot's bundled CUB 1.17, which needs Thrust 1.17
  internals that CUDA 13 no longer ships: the snapshot's folder is given to the compiler as
  ``-iquote`` (its own ``"..."`` includes), not ``-I``, so ``<cub/cub.cuh>`` is the toolkit's;
* its helper library (``utils/nucleus``) is linked in statically rather than as a shared
  library whose absolute path the binary would remember (the CUDA runtime is static too, as
  nvcc links it by default; libstdc++ stays shared: a static one asks for a newer C library).

Sources already compiled with the same flags, and newer than every file of the snapshot, are
not compiled again. ``$NX_GSM_EGSM_BIN`` points at a binary built elsewhere. Where the binary
is missing, or it finds no usable GPU, the peer is reported as not available and the run goes
on without it.

The tool writes the data graph and each pattern as ``t/v/e`` files (:mod:`benchmarks.graph_files`,
shared with the ``sunluo-cpp`` peer; labels mapped to the same small ints on both sides), runs
``EGSM -q <pattern> -d <data> --ao off`` (its adaptive ordering undercounts some yeast 16-vertex
queries) and reads what it prints: ``# Matches: N``, and ``Total join time (ms): H(host)
K(kernel)``. The query's time is H, the host clock around its join kernels: its own join time,
which excludes reading the graphs, building its Cuckoo tries and filtering (printed too and
recorded), while ours is the whole API call, so the comparison is conservative for us. EGSM
prints whole milliseconds, truncated: a printed 0 is read as 0.5 ms. It counts every match
(no "first N"); with a ``limit`` the count is capped afterwards. It refuses patterns of more than
16 vertices or 32 edges: such a query is reported as refused, not run.

:func:`vs_egsm` is the comparison of issue 49 (our API call against EGSM on the same queries in
one process, per-set ratios) and :func:`process_probe` the one of issue 48 (a fresh ``nx-gsm
match`` process against EGSM's process, wall time). Both run on the GPU machine::

    python3 -m benchmarks.egsm compare --queries 10 --timeout 20 --out vs_egsm.json
    python3 -m benchmarks.egsm probe --out probe.json
"""

from __future__ import annotations

import argparse
import concurrent.futures
import gc
import json
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from .graph_files import write_graph_file
from .tools import Tool, ToolTimeout, Unavailable

__all__ = [
    "SETS",
    "Egsm",
    "Refused",
    "binary",
    "build",
    "parse_output",
    "process_probe",
    "summarize",
    "vs_egsm",
]

REPO = Path(__file__).resolve().parents[1]
DEFAULT_SOURCE = REPO / ".peers" / "EGSM"
DEFAULT_BUILD = REPO / ".peers" / "egsm-build"

# the largest pattern EGSM takes (its utils/config.h; its reader exits on a larger query)
MAX_VERTICES = 16
MAX_EDGES = 32

# the snapshot's sources, as its CMakeLists.txt lists them (the executable, the static library
# "link" and the shared library "nd")
SOURCES = (
    "main.cpp", "graph/graph.cpp", "graph/operations.cpp",
    "utils/globals.cu", "utils/mem_pool.cu",
    "structures/hashed_trie_manager_kernel.cu", "structures/hashed_trie_manager.cu",
    "structures/hashed_tries.cu",
    "processing/join_bfs_dfs.cu", "processing/join_bfs.cu", "processing/plan.cu",
    "graph/graph_gpu.cu", "execution/execution.cu",
    "utils/nucleus/bucket.cpp", "utils/nucleus/hierarchy.cpp", "utils/nucleus/k3-4.cpp",
    "utils/nucleus/kcore.cpp", "utils/nucleus/ktruss.cpp", "utils/nucleus/nd_interface.cpp",
    "utils/nucleus/util.cpp",
)

# issue 49's sets: (dataset, query group, how many queries: the first N by number)
SETS = {
    "yeast-dense_16": ("yeast", "dense_16", 100),
    "yeast-sparse_16": ("yeast", "sparse_16", 100),
    "yeast-dense_8": ("yeast", "dense_8", 100),
    "human-dense_8": ("human", "dense_8", 50),
    "human-sparse_8": ("human", "sparse_8", 50),
}

RESOLUTION_S = 1e-3  # EGSM prints whole milliseconds
SETUP_ALLOWANCE_S = 10.0  # EGSM's process may run this long past its join's time limit


class Refused(Exception):
    """EGSM does not take this pattern (more than 16 vertices or 32 edges)."""


# -- build ------------------------------------------------------------------------------------
def binary(out=None):
    """EGSM's binary: ``$NX_GSM_EGSM_BIN``, else ``EGSM`` in the build folder ``out``."""
    env = os.environ.get("NX_GSM_EGSM_BIN")
    if env and out is None:
        return Path(env)
    return Path(out or DEFAULT_BUILD) / "EGSM"


def build(source=None, out=None, *, arch="90", jobs=2, nvcc="nvcc", log=print):
    """Compile the snapshot in ``source`` into ``out/EGSM`` with ``nvcc`` (see the module
    docstring for the flags). Returns the binary's path; raises ``FileNotFoundError`` for a
    missing snapshot or compiler and ``subprocess.CalledProcessError`` for a failed step."""
    src = Path(source or DEFAULT_SOURCE).resolve()
    missing = [s for s in SOURCES if not (src / s).exists()]
    if missing:
        raise FileNotFoundError(f"no snapshot of RapidsAtHKUST/EGSM in {src} (missing "
                                f"{', '.join(missing[:3])}): put one there first")
    nvcc_path = shutil.which(nvcc)
    if nvcc_path is None:
        raise FileNotFoundError(f"{nvcc} not found: EGSM needs CUDA's compiler")
    out = Path(out or DEFAULT_BUILD).resolve()
    obj = out / "obj"
    obj.mkdir(parents=True, exist_ok=True)
    target = [f"-gencode=arch=compute_{arch},code=sm_{arch}",
              f"-gencode=arch=compute_{arch},code=compute_{arch}"]
    flags = ["-std=c++17", "-O3", "-DNDEBUG", "-rdc=true", *target,
             "-Xcompiler", "-iquote", "-Xcompiler", str(src)]

    facts_path = out / "build.json"
    old = json.loads(facts_path.read_text()) if facts_path.exists() else {}
    facts = {"source_commit": _git_head(src), "arch": f"sm_{arch}",
             "nvcc": _nvcc_version(nvcc_path),
             "flags": [f if f != str(src) else "<snapshot>" for f in flags]}
    snapshot_time = max(p.stat().st_mtime for p in src.rglob("*")
                        if p.is_file() and ".git" not in p.parts)

    def compile_one(rel):
        o = obj / (rel.replace("/", "_") + ".o")
        if old == facts and o.exists() and o.stat().st_mtime > snapshot_time:
            return o
        subprocess.run([nvcc_path, *flags, "-c", str(src / rel), "-o", str(o)], check=True,
                       capture_output=True, text=True)
        return o

    t0 = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as pool:
        objs = list(pool.map(compile_one, SOURCES))
    exe = out / "EGSM"
    subprocess.run([nvcc_path, "-rdc=true", *target, *map(str, objs), "-o", str(exe)],
                   check=True, capture_output=True, text=True)
    facts_path.write_text(json.dumps(facts, indent=1) + "\n")
    log(f"built {exe} in {time.perf_counter() - t0:.0f} s")
    return exe


def _git_head(src):
    try:
        return subprocess.run(["git", "-C", str(src), "rev-parse", "HEAD"], capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def _nvcc_version(nvcc):
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True,
                         check=False).stdout
    m = re.search(r"release ([0-9.]+)", out)
    return m[1] if m else None


# -- output -----------------------------------------------------------------------------------
_MATCHES = re.compile(r"^# Matches: (\d+)\s*$", re.MULTILINE)
_JOIN = re.compile(r"^Total join time \(ms\): (\d+)\(host\) (\d+)\(kernel\)", re.MULTILINE)
_STEP = re.compile(r"^(Build Cuckoo Tries|Filtering), time \(ms\): (\d+)\(host\), "
                   r"(\d+)\(kernel\)", re.MULTILINE)
_LB = re.compile(r"^Triggered Load Balancing: (true|false)", re.MULTILINE)
_REFUSAL = "The query graph should have at most"
_GPU_ERROR = re.compile(r"GPUassert: (.*)")
_PATH = re.compile(r"(?:/[^\s/]+)+/([^\s/]+)")


def _clean(msg):
    """``msg`` with absolute paths cut to their last part (EGSM names its source files by
    their build paths; records hold no machine paths)."""
    return _PATH.sub(r"\1", msg)


def parse_output(text):
    """EGSM's printout as a dict: ``count``, ``join_ms`` (host clock) and ``join_kernel_ms``,
    ``filter_ms`` (Cuckoo tries and filtering, host clock), ``load_balancing`` (whether it
    triggered). Raises :class:`Refused` for a pattern it refuses and ``ValueError`` for a
    printout without a count or join time (a failed run)."""
    if _REFUSAL in text:
        raise Refused(text[text.index(_REFUSAL):].splitlines()[0])
    found, join = _MATCHES.search(text), _JOIN.search(text)
    if not (found and join):
        err = _GPU_ERROR.search(text)
        raise ValueError(_clean(err[0] if err else "no '# Matches' and 'Total join time' "
                                "lines: " + text[-300:]))
    lb = _LB.search(text)
    return {"count": int(found[1]), "join_ms": int(join[1]), "join_kernel_ms": int(join[2]),
            "filter_ms": sum(int(m[2]) for m in _STEP.finditer(text)),
            "load_balancing": lb[1] == "true" if lb else None}


def join_seconds(join_ms):
    """A printed (truncated) millisecond count as seconds; 0 becomes half the resolution."""
    return max(join_ms * 1e-3, RESOLUTION_S / 2)


def refuses(H):
    """Whether EGSM refuses ``H`` (over :data:`MAX_VERTICES` vertices or :data:`MAX_EDGES`
    edges)."""
    return H.number_of_nodes() > MAX_VERTICES or H.number_of_edges() > MAX_EDGES


# -- the tool ---------------------------------------------------------------------------------
def _probe_graphs():
    """A 6 x 6 grid and a 4-cycle, unlabelled: 25 squares x 8 maps = 200 monomorphisms."""
    import networkx as nx

    return nx.grid_2d_graph(6, 6), nx.cycle_graph(4), 200


class Egsm(Tool):
    """EGSM as a benchmark peer (see the module docstring)."""

    name = "egsm"
    supports_induced = False
    description = ("EGSM (SIGMOD'23, GPU) with --ao off: its 'Total join time' (host clock; "
                   "always counts all, capped after)")

    def __init__(self, path=None):
        self.bin = Path(path) if path else binary()
        self.probe = None
        self.dir = None

    def check(self):
        """Raise :class:`Unavailable` where the binary is missing, cannot run, or finds no GPU.

        Runs it once on a tiny case (which also pays the driver's first context creation); a
        probe that fails for another reason, or counts wrong, is recorded in :meth:`info`."""
        if not self.bin.exists():
            where = self.bin.relative_to(REPO) if self.bin.is_relative_to(REPO) else self.bin
            raise Unavailable(f"peer not available: {self.bin.name} is missing at {where} "
                              "(build it with 'python -m benchmarks.egsm build')")
        G, H, want = _probe_graphs()
        with tempfile.TemporaryDirectory(prefix="egsm-probe-") as d:
            ids = {}
            write_graph_file(G, Path(d) / "g.graph", None, ids)
            write_graph_file(H, Path(d) / "q.graph", None, ids)
            try:
                proc = subprocess.run([str(self.bin), "-q", str(Path(d) / "q.graph"), "-d",
                                       str(Path(d) / "g.graph"), "--ao", "off"],
                                      capture_output=True, text=True, timeout=120,
                                      check=False)
            except OSError as exc:
                raise Unavailable(f"peer not available: {self.bin.name} cannot run here: "
                                  f"{exc}") from None
            except subprocess.TimeoutExpired:
                self.probe = "timed out after 120 s"
                return
        text = proc.stdout + proc.stderr
        err = _GPU_ERROR.search(text)
        if proc.returncode != 0 and err:
            raise Unavailable("peer not available: EGSM found no usable GPU "
                              f"({_clean(err[1].strip())})")
        try:
            got = parse_output(text)["count"]
        except (ValueError, Refused) as exc:
            self.probe = f"failed (exit {proc.returncode}): {str(exc)[:200]}"
            return
        self.probe = "ok" if got == want else f"counted {got} on a case with {want}"

    def load(self, G, label):
        if G.is_directed() or G.is_multigraph():
            raise Unavailable("EGSM reads simple undirected graphs only")
        self.dir = tempfile.TemporaryDirectory(prefix="egsm-")
        self.label, self.ids = label, {}
        self.data = Path(self.dir.name) / "data.graph"
        write_graph_file(G, self.data, label, self.ids)
        self.n_queries = 0

    def prepare(self, H):
        """The pattern's file, or ``None`` for a pattern EGSM refuses (not written)."""
        if refuses(H):
            return None
        self.n_queries += 1
        path = Path(self.dir.name) / f"q{self.n_queries}.graph"
        write_graph_file(H, path, self.label, self.ids)
        return path

    def run(self, q, timeout):
        """One EGSM process on the prepared pattern ``q``: a dict with ``status`` (``ok``,
        ``refused``, ``timeout`` or ``error``), ``wall_s`` (the whole process) and, when ok,
        :func:`parse_output`'s fields plus ``join_s``. A join over ``timeout`` seconds is a
        timeout; the process gets :data:`SETUP_ALLOWANCE_S` more for its set-up."""
        if q is None:
            return {"status": "refused", "wall_s": 0.0,
                    "message": f"over {MAX_VERTICES} vertices or {MAX_EDGES} edges"}
        t0 = time.perf_counter()
        try:
            proc = subprocess.run([str(self.bin), "-q", str(q), "-d", str(self.data),
                                   "--ao", "off"], capture_output=True, text=True,
                                  timeout=timeout + SETUP_ALLOWANCE_S, check=False)
        except subprocess.TimeoutExpired:
            return {"status": "timeout", "wall_s": time.perf_counter() - t0}
        wall = time.perf_counter() - t0
        text = proc.stdout + proc.stderr
        try:
            res = parse_output(text)
        except Refused as exc:
            return {"status": "refused", "wall_s": wall, "message": str(exc)}
        except ValueError as exc:
            return {"status": "error", "wall_s": wall,
                    "message": f"exit {proc.returncode}: {str(exc)[:300]}"}
        if proc.returncode != 0:
            return {"status": "error", "wall_s": wall,
                    "message": f"exit {proc.returncode} after printing a count"}
        res.update(status="ok", wall_s=wall, join_s=join_seconds(res["join_ms"]))
        if res["join_s"] > timeout:
            return {"status": "timeout", "wall_s": wall}
        return res

    def count(self, q, *, limit, induced, deadline):
        res = self.run(q, max(deadline - time.perf_counter(), 0.01))
        if res["status"] == "timeout":
            raise ToolTimeout
        if res["status"] == "refused":
            raise Refused(f"EGSM refuses patterns of more than {MAX_VERTICES} vertices or "
                          f"{MAX_EDGES} edges")
        if res["status"] != "ok":
            raise RuntimeError(f"EGSM failed: {res['message']}")
        n = res["count"]
        return (n if limit is None else min(n, limit)), res["join_s"]

    def info(self):
        d = {"description": self.description, "binary": self.bin.name, "options": "--ao off",
             "probe": self.probe}
        facts = self.bin.parent / "build.json"
        if facts.exists():
            d["build"] = json.loads(facts.read_text())
        return d


# -- the comparison (issue 49) ----------------------------------------------------------------
def data_root(root=None):
    """The datasets folder: ``root``, ``$NX_GSM_DATASETS`` or ``../shared/datasets`` where it
    holds ``sun-luo``, else the carried copy ``.gpudata``."""
    from .datasets import datasets_root

    r = datasets_root(root)
    if root is None and not (r / "sun-luo").exists() and (REPO / ".gpudata" / "sun-luo").exists():
        return REPO / ".gpudata"
    return r


def _geomean(xs):
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else None


def _r(x, nd=4):
    return None if x is None else round(x, nd)


def _ratio(x):
    """A ratio to four significant digits (decimal places would flatten a 1000x win to 0)."""
    return None if x is None else float(f"{x:.4g}")


def summarize(rows):
    """Per-set figures from per-query rows (see :func:`vs_egsm`): the ratios EGSM join time /
    our time over the queries both finished with equal counts (``status == "ok"``)."""
    ok = [r for r in rows if r["status"] == "ok"]
    ratios = [r["egsm_s"] / r["ours_s"] for r in ok]
    total_e, total_o = sum(r["egsm_s"] for r in ok), sum(r["ours_s"] for r in ok)
    by = {}
    for r in rows:
        by.setdefault(r["status"], []).append(r["query"])
    return {
        "n": len(ok),
        "geomean": _ratio(_geomean(ratios)),
        "total_ratio": _ratio(total_e / total_o) if ok else None,
        "median": _ratio(statistics.median(ratios)) if ratios else None,
        "min": _ratio(min(ratios)) if ratios else None,
        "egsm_total_s": _r(total_e), "ours_total_s": _r(total_o),
        "queries": len(rows),
        "refused": len(by.get("refused", [])),
        "timeouts": {"egsm": len(by.get("egsm_timeout", [])),
                     "ours": len(by.get("ours_timeout", [])),
                     "both": len(by.get("both_timeout", []))},
        # the "none of ours cut at 20 s where EGSM finishes"
        "ours_cut_where_egsm_finished": by.get("ours_timeout", []),
        "mismatches": [{k: r[k] for k in ("query", "egsm_count", "ours_count", "published")}
                       for r in rows if r["status"] == "mismatch"],
        "errors": [{"query": r["query"], "error": r.get("error")} for r in rows
                   if r["status"] in ("egsm_error", "ours_error")],
        "egsm_below_resolution": sum(1 for r in ok if r.get("egsm_ms") == 0),
    }


def _best(first, again, repeat, fast):
    """Run ``first()`` and, while it is under ``fast`` seconds, ``again()`` up to ``repeat``
    runs in all; each returns ``(seconds, result)``, ``again()`` ``None`` to stop. The fastest
    run and every run's seconds."""
    runs = [first()]
    while runs[0][0] < fast and len(runs) < repeat:
        r = again()
        if r is None:
            break
        runs.append(r)
    return min(runs, key=lambda x: x[0]), [x[0] for x in runs]


def _ours_call(api, g, H, engine, timeout):
    gc.collect()
    gc.disable()
    try:
        t0 = time.perf_counter()
        c = api.count_subgraph_monomorphisms(g, H, node_label="label", engine=engine,
                                             timeout=timeout)
        dt = time.perf_counter() - t0
    finally:
        gc.enable()
    return dt, (None if getattr(c, "partial", False) else int(c))


def _add_error(row, msg):
    row["error"] = f"{row['error']}; {msg}" if "error" in row else msg


def compare_query(tool, api, g, H, *, engine, timeout, repeat, fast, published=None):
    """One query on both sides: a row of :func:`vs_egsm`'s ``per_query`` (without its name)."""
    row = {"status": None}
    if published is not None:
        row["published"] = published
    q = tool.prepare(H)
    e = tool.run(q, timeout)
    if e["status"] == "refused":
        row["status"] = "refused"
        return row
    e_runs = [e]
    if e["status"] == "ok":
        def again():
            r = tool.run(q, timeout)
            if r["status"] != "ok":
                return None
            e_runs.append(r)
            return r["join_s"], r
        (_, best), times = _best(lambda: (e["join_s"], e), again, repeat, fast)
        if len({r["count"] for r in e_runs}) > 1:
            e = {"status": "error", "message": "count changed between runs: "
                 + ", ".join(str(r["count"]) for r in e_runs)}
        else:
            e = dict(best, wall_s=min(r["wall_s"] for r in e_runs))
            row.update(egsm_count=e["count"], egsm_ms=e["join_ms"], egsm_s=e["join_s"],
                       egsm_kernel_ms=e["join_kernel_ms"], egsm_filter_ms=e["filter_ms"],
                       egsm_wall_s=_r(e["wall_s"]), egsm_runs=len(times))
    if e["status"] == "error":
        row["error"] = f"egsm: {e['message']}"

    try:
        o = _ours_call(api, g, H, engine, timeout)
        o_status = "ok" if o[1] is not None else "timeout"
    except Exception as exc:  # noqa: BLE001 - recorded, and the other queries still run
        o_status = "error"
        _add_error(row, f"ours: {type(exc).__name__}: {exc}"[:300])
    if o_status == "ok":
        counts = {o[1]}

        def again_ours():
            r = _ours_call(api, g, H, engine, timeout)
            if r[1] is None:
                return None
            counts.add(r[1])
            return r
        (dt, n), times = _best(lambda: o, again_ours, repeat, fast)
        row.update(ours_count=n, ours_s=_r(dt, 6), ours_runs=len(times))
        if len(counts) > 1:
            o_status = "error"
            _add_error(row, f"ours: count changed between runs: {sorted(counts)}")

    if e["status"] == "error" or o_status == "error":
        row["status"] = "egsm_error" if e["status"] == "error" else "ours_error"
    elif e["status"] == "timeout" and o_status == "timeout":
        row["status"] = "both_timeout"
    elif e["status"] == "timeout":
        row["status"] = "egsm_timeout"
    elif o_status == "timeout":
        row["status"] = "ours_timeout"
    elif row["egsm_count"] != row["ours_count"]:
        row["status"] = "mismatch"
    else:
        row["status"] = "ok"
        row["ratio"] = _ratio(row["egsm_s"] / row["ours_s"])
    if published is not None:
        wrong = [s for s in ("egsm", "ours") if row.get(f"{s}_count", published) != published]
        if wrong:  # which side disagrees with the published count
            row["published_disagrees"] = wrong
    return row


def query_names(group, n):
    """The first ``n`` queries of a Sun & Luo group, by number: ``query_<group>_1.graph``..."""
    return [f"query_{group}_{i}.graph" for i in range(1, n + 1)]


def vs_egsm(sets=None, *, engine="gmatch", queries=None, timeout=20.0, repeat=3, fast=1.0,
            budget=None, root=None, tool=None, warmup=True, log=print):
    """Our API call against EGSM (``--ao off``) on the same queries, in one process.

    Parameters
    ----------
    sets : list of str, optional
        Names from :data:`SETS` (default all: yeast dense_16, sparse_16 and dense_8, human
        dense_8 and sparse_8).
    engine : str
        Our engine (``"gmatch"``, ``"auto"``...): ``nx_gsm.count_subgraph_monomorphisms(g, H,
        node_label="label", engine=engine, timeout=timeout)``, the data graph converted to a
        GsmGraph once per set (untimed), the pattern given as a NetworkX graph (timed).
    queries : int, optional
        Queries per set, the first ones by number (default the set's own: 100 or 50).
    timeout : float
        Seconds per query and side: our call's ``timeout=``; EGSM's join time (its process is
        killed :data:`SETUP_ALLOWANCE_S` later).
    repeat, fast : int, float
        A side whose first run of a query took under ``fast`` seconds runs it again, up to
        ``repeat`` runs in all, and keeps its minimum (every run must give the same count).
    budget : float, optional
        Seconds for the whole comparison: each set gets an equal share of what is left when it
        starts and takes no new query past it (those are counted as ``not_run``). A query can
        take up to about ``2 * timeout + 10`` seconds (both sides cut).
    root : optional
        The datasets folder (:func:`data_root`).
    tool : Egsm, optional
        The peer (default ``Egsm()``, the binary of :func:`binary`); its ``info()`` afterwards
        holds the build's facts and the result of its start-up probe, for the record.
    warmup : bool
        First run ``nx_gsm.warmup()`` (compiles or loads every kernel variant) and, per set, our
        call once untimed on its first query.

    Returns
    -------
    dict
        ``{set: {"n", "geomean", "total_ratio", "median", ...}}`` (:func:`summarize`), each
        with ``per_query`` rows: ``query``, ``status`` (``ok``, ``refused``, ``egsm_timeout``,
        ``ours_timeout``, ``both_timeout``, ``mismatch``, ``egsm_error``, ``ours_error``), both
        counts, ``egsm_ms`` (as printed), ``egsm_s`` and ``ours_s`` (the times compared),
        ``egsm_wall_s`` (its whole process), ``ratio``. Only ``ok`` rows enter the ratios.
        Raises :class:`~benchmarks.tools.Unavailable` where EGSM cannot run.
    """
    import nx_gsm

    from .datasets import read_answers, read_sun_luo_graph

    tool = tool or Egsm()
    tool.check()
    out = {}
    if warmup and hasattr(nx_gsm, "warmup"):
        t0 = time.perf_counter()
        nx_gsm.warmup(progress=False)
        log(f"vs_egsm: nx_gsm.warmup() {time.perf_counter() - t0:.1f} s")
    base_root = data_root(root)
    deadline = None if budget is None else time.perf_counter() + budget
    sets = list(sets or SETS)
    for k, name in enumerate(sets):
        ds, group, n_default = SETS[name]
        base = base_root / "sun-luo" / ds
        gpath = base / "data_graph" / f"{ds}.graph"
        if not gpath.exists():
            out[name] = {"n": 0, "skipped": f"{ds}.graph not found"}
            log(f"vs_egsm {name}: skipped, {ds}.graph not found")
            continue
        G = read_sun_luo_graph(gpath)
        ans = base / f"{ds}_ans.txt"
        answers = read_answers(ans) if ans.exists() else {}
        g = nx_gsm.from_networkx(G, node_attrs=["label"], preserve_node_attrs=False,
                                 preserve_edge_attrs=False)
        tool.load(G, "label")
        names = [q for q in query_names(group, queries or n_default)
                 if (base / "query_graph" / q).exists()]
        t_set = time.perf_counter()
        set_end = None if deadline is None else t_set + (deadline - t_set) / (len(sets) - k)
        rows = []
        for i, qn in enumerate(names):
            if set_end is not None and time.perf_counter() > set_end:
                break
            H = read_sun_luo_graph(base / "query_graph" / qn)
            if i == 0 and warmup:
                try:
                    _ours_call(nx_gsm, g, H, engine, timeout)
                except Exception:  # noqa: BLE001, S110 - the query's own row records it
                    pass
            row = {"query": qn.removeprefix("query_").removesuffix(".graph")}
            row.update(compare_query(tool, nx_gsm, g, H, engine=engine, timeout=timeout,
                                     repeat=repeat, fast=fast, published=answers.get(qn)))
            rows.append(row)
            log(f"vs_egsm {name} {row['query']}: {row['status']} egsm "
                f"{row.get('egsm_ms', '-')} ms, ours {row.get('ours_s', '-')} s, "
                f"ratio {row.get('ratio', '-')}")
        summary = summarize(rows)
        summary.update(engine=engine, timeout=timeout, not_run=len(names) - len(rows),
                       seconds=_r(time.perf_counter() - t_set, 1), per_query=rows)
        out[name] = summary
        log(f"vs_egsm {name}: n={summary['n']} geomean={summary['geomean']} "
            f"total_ratio={summary['total_ratio']} median={summary['median']} "
            f"refused={summary['refused']} timeouts={summary['timeouts']} "
            f"mismatches={len(summary['mismatches'])} not_run={summary['not_run']}")
    return out


# -- process wall time (issue 48) -------------------------------------------------------------
def nx_gsm_command():
    """How to start a fresh ``nx-gsm``: the console script where it is on PATH, else
    ``python -m nx_gsm`` (the same entry point)."""
    exe = shutil.which("nx-gsm")
    return [exe] if exe else [sys.executable, "-m", "nx_gsm"]


def process_probe(dataset="yeast", query="query_dense_16_1.graph", *, repeat=3, timeout=120.0,
                  warmup=True, engine=None, root=None, tool=None):
    """Wall time of EGSM's whole process against a fresh ``nx-gsm match DATA PATTERN --label
    label --count`` process on the same query, the two alternated ``repeat`` times.

    With ``warmup``, ``nx-gsm warmup`` runs first (once, its time recorded), as issue 48's
    target reads ("after nx-gsm warmup"). ``engine`` adds ``--engine``. Returns the per-run
    wall times, each side's minimum and median, ``ratio`` (nx-gsm's minimum / EGSM's) and both
    counts, and ``egsm``, the peer's ``info()``. Raises :class:`~benchmarks.tools.Unavailable`
    where EGSM cannot run."""
    from .datasets import read_answers, read_sun_luo_graph

    tool = tool or Egsm()
    tool.check()
    base = data_root(root) / "sun-luo" / dataset
    gpath, hpath = base / "data_graph" / f"{dataset}.graph", base / "query_graph" / query
    tool.load(read_sun_luo_graph(gpath), "label")
    q = tool.prepare(read_sun_luo_graph(hpath))
    cmd = [*nx_gsm_command(), "match", str(gpath), str(hpath), "--label", "label", "--count"]
    if engine:
        cmd += ["--engine", engine]
    rec = {"dataset": dataset, "query": query, "engine": engine or "auto",
           "nx_gsm_command": "python -m nx_gsm" if cmd[0] == sys.executable else "nx-gsm"}
    if warmup:
        t0 = time.perf_counter()
        w = subprocess.run([*nx_gsm_command(), "warmup"], capture_output=True, text=True,
                           timeout=900, check=False)
        rec["warmup_s"] = _r(time.perf_counter() - t0, 2)
        rec["warmup_exit"] = w.returncode
    e_runs, n_runs, counts = [], [], {"egsm": set(), "nx_gsm": set()}
    for _ in range(repeat):
        e = tool.run(q, timeout)  # a failed run's time is None: only whole runs compare
        e_runs.append(_r(e["wall_s"], 4) if e["status"] == "ok" else None)
        if e["status"] == "ok":
            counts["egsm"].add(e["count"])
            rec["egsm_join_ms"] = e["join_ms"]
        else:
            rec["egsm_error"] = e.get("message", e["status"])
        t0 = time.perf_counter()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                               check=False)
            dt = time.perf_counter() - t0
            ok = p.returncode == 0 and p.stdout.strip().isdigit()
            n_runs.append(_r(dt, 4) if ok else None)
            if ok:
                counts["nx_gsm"].add(int(p.stdout.strip()))
            else:
                rec["nx_gsm_error"] = _clean(f"exit {p.returncode}: "
                                             f"{(p.stdout + p.stderr)[-300:]}")
        except subprocess.TimeoutExpired:
            n_runs.append(None)
            rec["nx_gsm_error"] = f"over {timeout} s"
    done_e = [x for x in e_runs if x is not None]
    done_n = [x for x in n_runs if x is not None]
    rec.update(egsm_wall_s=e_runs, nx_gsm_wall_s=n_runs,
               egsm_min_s=min(done_e, default=None), nx_gsm_min_s=min(done_n, default=None),
               egsm_median_s=_r(statistics.median(done_e), 4) if done_e else None,
               nx_gsm_median_s=_r(statistics.median(done_n), 4) if done_n else None,
               egsm_count=sorted(counts["egsm"]), nx_gsm_count=sorted(counts["nx_gsm"]))
    ans = base / f"{dataset}_ans.txt"
    if ans.exists():
        rec["published"] = read_answers(ans).get(query)
    if rec["egsm_min_s"] and rec["nx_gsm_min_s"]:
        rec["ratio"] = _ratio(rec["nx_gsm_min_s"] / rec["egsm_min_s"])
    rec["egsm"] = tool.info()
    return rec


# -- command line -----------------------------------------------------------------------------
def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m benchmarks.egsm",
                                 description="Build and run the egsm benchmark peer.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    b = sub.add_parser("build", help="compile a snapshot of EGSM with nvcc")
    b.add_argument("--source", default=None, help=f"snapshot folder (default {DEFAULT_SOURCE})")
    b.add_argument("--out", default=None, help=f"build folder (default {DEFAULT_BUILD})")
    b.add_argument("--arch", default="90", help="compute capability, digits only (default 90)")
    b.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    b.add_argument("--nvcc", default="nvcc")
    c = sub.add_parser("compare", help="our API call against EGSM per set (issue 49)")
    c.add_argument("--sets", nargs="+", choices=list(SETS), default=None)
    c.add_argument("--engine", default="gmatch")
    c.add_argument("--queries", type=int, default=None, help="queries per set (default 100/50)")
    c.add_argument("--timeout", type=float, default=20.0)
    c.add_argument("--repeat", type=int, default=3)
    c.add_argument("--budget", type=float, default=None,
                   help="seconds for the whole comparison, shared equally by the sets")
    c.add_argument("--datasets", default=None)
    c.add_argument("--no-warmup", action="store_true")
    c.add_argument("--out", default=None, help="write the result as JSON here")
    p = sub.add_parser("probe", help="fresh nx-gsm process against EGSM's (issue 48)")
    p.add_argument("--query", default="query_dense_16_1.graph")
    p.add_argument("--dataset", default="yeast")
    p.add_argument("--engine", default=None)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--datasets", default=None)
    p.add_argument("--no-warmup", action="store_true")
    p.add_argument("--out", default=None, help="write the result as JSON here")
    args = ap.parse_args(argv)
    try:
        if args.cmd == "build":
            print(build(args.source, args.out, arch=args.arch, jobs=args.jobs, nvcc=args.nvcc))
            return 0
        if args.cmd == "compare":
            tool = Egsm()
            res = vs_egsm(args.sets, engine=args.engine, queries=args.queries,
                          timeout=args.timeout, repeat=args.repeat, budget=args.budget,
                          root=args.datasets, tool=tool, warmup=not args.no_warmup)
            res = {"egsm": tool.info(), "vs_egsm": res}
        else:
            res = process_probe(args.dataset, args.query, repeat=args.repeat,
                                warmup=not args.no_warmup, engine=args.engine,
                                root=args.datasets)
    except subprocess.CalledProcessError as exc:
        print(f"python -m benchmarks.egsm: {exc}\n{(exc.stderr or '')[-2000:]}", file=sys.stderr)
        return 2
    except (FileNotFoundError, Unavailable) as exc:
        print(f"python -m benchmarks.egsm: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(res, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n")
    if args.cmd == "compare":  # the summaries on screen, the per-query rows in --out
        res["vs_egsm"] = {k: {x: y for x, y in v.items() if x != "per_query"}
                          for k, v in res["vs_egsm"].items()}
    print(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
