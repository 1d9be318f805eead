"""The run loop: every tool on every query of every suite, cross-checked, into one JSON record.

Order: query-major. For each query every tool runs in turn (each in its own worker process, one
at a time, so tools never compete for the cores), which keeps drifting machine load from favouring
one tool. After each query the counts of the tools that finished (plus the published count, when
the suite has one and the run is non-induced) must all be equal; a disagreement is a *mismatch*:
stored in ``record["mismatches"]``, marked on the rows, printed at once, shown at the top of the
report, and the process exits with status 1.

Record layout (``schema`` = ``nx-gsm-bench/1``)::

    machine    cpu model, cores, memory, OS, python + package versions, git commit/dirty, date
    config     suites, tools, protocol, limit, induced, timeout, repeat, queries, quick, labels,
               seed, argv
    tools      name -> kind (engine|peer), status (ok|unavailable|error), reason, info,
               suites -> {status, loads: [{load_seconds, first_call_seconds, warm_call_seconds}],
               restarts}
    suites     name -> status (ok|skipped), reason, description, source, nodes, edges,
               labelled, load_seconds, queries, notes
    rows       one per (suite, query, tool): status (ok|timeout|error|unsupported), seconds
               (minimum over repeats; None when the worker was killed), seconds_all (every
               repeat), count (None unless ok), limit, induced,
               timeout, expected (published, uncapped), group, pattern_nodes, pattern_edges,
               mismatch, error / note
    checks     one per (suite, query): counts {tool: count}, agree, count (the agreed value)
    mismatches the checks that did not agree
    summary    see benchmarks.report.summarize
"""

from __future__ import annotations

import json
import os
import sys
import time

from nx_gsm.interop.atomic import atomic_open

from . import SCHEMA
from .datasets import DatasetMissing
from .machine import machine_info
from .report import summarize
from .suites import build_suite
from .tools import resolve_tool
from .worker import WorkerHandle

__all__ = ["run", "save"]


class _NoBar:
    def __init__(self, *a, **k):
        pass

    def update(self, n=1):
        pass

    def set_postfix_str(self, s):
        pass

    def close(self):
        pass

    @staticmethod
    def write(s):
        print(s, file=sys.stderr, flush=True)


def _bar(total, enabled):
    if enabled:
        try:
            from tqdm import tqdm

            return tqdm(total=total, unit="run", dynamic_ncols=True, file=sys.stderr,
                        smoothing=0.05)
        except ImportError:
            pass
    return _NoBar()


def save(record, path):
    """Write a benchmark record as JSON, through a temporary file beside ``path`` that replaces
    it only once complete: a failed or interrupted write leaves an existing record as it was.

    Every benchmark script writes its record here, so that a run that fails at its very end
    (an unserialisable value, a full disk, Ctrl-C) never costs the previous record.

    Parameters
    ----------
    record : dict
        JSON data; values JSON cannot hold are written as their ``str``.
    path : str or path-like
        The record file; missing parent folders are created.

    Returns
    -------
    None

    Examples
    --------
    >>> import json, os, tempfile
    >>> from benchmarks.runner import save
    >>> path = os.path.join(tempfile.mkdtemp(), "results", "rec.json")
    >>> save({"rows": [1, 2]}, path)
    >>> json.load(open(path))
    {'rows': [1, 2]}
    """
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with atomic_open(path, "w", encoding="utf-8") as fh:
        json.dump(record, fh, indent=1, default=str)
        fh.write("\n")


def run(*, suites, engines, peers, limit, protocol, induced=False, timeout=10.0, repeat=3,
        queries=None,
        quick=False, labels=None, seed=0, patterns=None, datasets=None, mem_limit_gb=4.0,
        out=None, progress=True, argv=None):
    """Run the benchmark and return the record (also saved to ``out`` after every query)."""
    t_start = time.perf_counter()
    record = {
        "schema": SCHEMA,
        "machine": machine_info(),
        "config": {
            "suites": list(suites), "engines": list(engines), "peers": list(peers),
            "protocol": protocol, "limit": limit, "induced": induced, "timeout": timeout,
            "repeat": repeat,
            "queries_per_group": queries, "quick": quick, "labels": labels, "seed": seed,
            "patterns": patterns, "mem_limit_gb": mem_limit_gb, "argv": argv,
            "timing": "time.perf_counter around one call per query in a per-tool worker process "
                      f"(minimum of up to {repeat} runs while they total under 1 s); data-graph "
                      "and pattern conversion untimed; engines warmed up first",
        },
        "tools": {}, "suites": {}, "rows": [], "checks": [], "mismatches": [], "notes": [],
    }
    tools = []
    for spec in dict.fromkeys([*engines, *peers]):
        tool = resolve_tool(spec)
        if tool.name in record["tools"]:
            continue
        tools.append(tool)
        record["tools"][tool.name] = {"kind": tool.kind, "status": "pending", "reason": None,
                                      "description": tool.description, "suites": {}}
    mem = int(mem_limit_gb * 2**30) if mem_limit_gb else None

    built = []
    for name in suites:
        try:
            built.append(build_suite(name, root=datasets, queries=queries, quick=quick,
                                     labels=labels, seed=seed, patterns=patterns))
        except DatasetMissing as exc:
            record["suites"][name] = {"status": "skipped", "reason": f"dataset missing: {exc}"}
            print(f"[bench] suite {name} skipped: dataset missing: {exc}", file=sys.stderr)
    bar = _bar(sum(len(s.queries) for s in built) * len(tools), progress)
    try:
        for suite in built:
            _run_suite(record, suite, tools, limit, induced, timeout, repeat, mem, bar, out)
    finally:
        bar.close()
    for info in record["tools"].values():
        if info["status"] == "pending":
            info["status"] = "unavailable"
            info["reason"] = info["reason"] or "no suite ran"
    _check_source(record)
    record["wall_seconds"] = time.perf_counter() - t_start
    record["summary"] = summarize(record)
    if out:
        save(record, out)
    return record


def _run_suite(record, suite, tools, limit, induced, timeout, repeat, mem, bar, out):
    t0 = time.perf_counter()
    G = suite.load()
    Hs = [(q, q.load()) for q in suite.queries]
    record["suites"][suite.name] = {
        "status": "ok", "reason": None, "description": suite.description, "source": suite.source,
        "nodes": G.number_of_nodes(), "edges": G.number_of_edges(),
        "labelled": suite.label is not None, "load_seconds": time.perf_counter() - t0,
        "queries": len(Hs), "notes": list(suite.notes),
    }
    handles = []
    for tool in tools:
        tinfo = record["tools"][tool.name]
        if tinfo["status"] == "unavailable":
            bar.update(len(Hs))
            continue
        bar.set_postfix_str(f"{suite.name}: starting {tool.name}")
        h = WorkerHandle(tool, mem_limit_bytes=mem)
        reply = h.start(G, suite.label)
        st = {"status": reply[0] if reply[0] != "ready" else "ok", "loads": h.loads}
        tinfo["suites"][suite.name] = st
        if reply[0] == "ready":
            tinfo["status"] = "ok"
            tinfo["info"] = reply[1].get("tool")
            handles.append(h)
            continue
        bar.update(len(Hs))
        st["reason"] = reply[1]
        if reply[0] == "unavailable":
            tinfo["status"], tinfo["reason"] = "unavailable", reply[1]
            bar.write(f"[bench] {tool.name} not available: {reply[1]}")
        else:
            if tinfo["status"] == "pending":
                tinfo["status"] = "error"
            tinfo["reason"] = reply[1]
            bar.write(f"[bench] {tool.name} failed to load {suite.name}: {reply[1]}")
    try:
        for q, H in Hs:
            rows = []
            for h in handles:
                bar.set_postfix_str(f"{suite.name} {q.name} {h.tool.name}")
                res = h.count(H, limit=limit, induced=induced, timeout=timeout, repeat=repeat)
                row = {"suite": suite.name, "query": q.name, "group": q.group,
                       "tool": h.tool.name, "kind": h.tool.kind, **res, "limit": limit,
                       "induced": induced, "timeout": timeout, "expected": q.expected,
                       "pattern_nodes": H.number_of_nodes(),
                       "pattern_edges": H.number_of_edges(), "mismatch": False}
                if res["status"] == "error":
                    bar.write(f"[bench] {suite.name}/{q.name} {h.tool.name}: {res['error']}")
                rows.append(row)
                bar.update()
            record["rows"] += rows
            _check(record, suite, q, rows, limit, induced, bar)
            if out:
                save(record, out)
    finally:
        for h in handles:
            record["tools"][h.tool.name]["suites"][suite.name]["restarts"] = h.restarts
            h.stop()


def _check_source(record):
    """Warn when nx_gsm's sources differed between engine worker starts (edited mid-run)."""
    start = (record["machine"].get("nx_gsm_source") or {}).get("sha1")
    seen = {start} if start else set()
    for info in record["tools"].values():
        for st in info.get("suites", {}).values():
            for load in st.get("loads", []):
                src = (load.get("tool") or {}).get("nx_gsm_source")
                if src:
                    seen.add(src["sha1"])
    if len(seen) > 1:
        record["notes"].append(
            f"WARNING: nx_gsm's source files changed during the run ({len(seen)} different "
            "versions were loaded by engine workers): the engine timings mix code versions")


def _check(record, suite, q, rows, limit, induced, bar):
    counts = {r["tool"]: r["count"] for r in rows if r["status"] == "ok"}
    if q.expected is not None and not induced:
        counts["published"] = q.expected if limit is None else min(q.expected, limit)
    values = set(counts.values())
    check = {"suite": suite.name, "query": q.name, "counts": counts, "agree": len(values) <= 1,
             "count": next(iter(values)) if len(values) == 1 else None}
    record["checks"].append(check)
    if not check["agree"]:
        record["mismatches"].append(check)
        for r in rows:
            if r["status"] == "ok":
                r["mismatch"] = True
        bar.write(f"[bench] !!! COUNT MISMATCH {suite.name}/{q.name}: "
                  + ", ".join(f"{t}={c}" for t, c in counts.items()))
