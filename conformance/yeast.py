"""Published ground truth: the yeast queries of Sun & Luo's subgraph-matching study.

``shared/datasets/sun-luo/yeast/`` holds the data graph (``data_graph/yeast.graph``, 3,112
vertices, 12,519 edges, vertex labels), 1,800 query graphs (``query_graph/query_<dense|sparse>_
<size>_<i>.graph``) and ``yeast_ans.txt``: ``<query file> <count>``, the published number of
embeddings of each query, for 1,707 of them. The count is of monomorphisms (non-induced) that
match on vertex labels only, so each query is checked as::

    nx_gsm.count_subgraph_monomorphisms(G, H, node_label="label", engine=...)

with the query read by ``read_graph(path, edge_labels=False)`` (query ``e`` lines carry a
meaningless fourth field). Queries whose published count is above ``max_count`` (10**6 by
default) are not run: they take too long for a conformance check, not for lack of an answer.

This is an oracle independent of NetworkX: a different implementation, published with the
paper, on a real labelled graph with counts up to 10**6 -- sizes VF2 cannot reach in a test run.

The datasets live beside the clone (``<repo>/../shared/datasets``, where CI has them too); set
``NX_GSM_DATASETS`` to look elsewhere. When they are missing the check is skipped with a reason.
"""

from __future__ import annotations

import os
import re
import statistics
import time
from pathlib import Path

import networkx as nx

import nx_gsm

__all__ = ["datasets_dir", "yeast_files", "load_answers", "select_queries", "run_yeast",
           "published_sample"]

DEFAULT_MAX_COUNT = 10**6
#: the CI subset: every 4- and 8-vertex query (dense and sparse) with count <= max_count
QUICK_SIZES = (4, 8)

_NAME = re.compile(r"query_(dense|sparse)_(\d+)_(\d+)\.graph$")


def datasets_dir():
    """``$NX_GSM_DATASETS`` if set, else ``<repo>/../shared/datasets``."""
    env = os.environ.get("NX_GSM_DATASETS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


def yeast_files(root=None):
    """``(data_graph, query_dir, answers)`` paths, or a string saying why they are unusable."""
    root = Path(root) if root is not None else datasets_dir()
    base = root / "sun-luo" / "yeast"
    paths = (base / "data_graph" / "yeast.graph", base / "query_graph", base / "yeast_ans.txt")
    missing = [str(p) for p in paths if not p.exists()]
    if missing:
        return f"yeast ground truth not found (missing {', '.join(missing)})"
    return paths


def load_answers(path):
    """``[(query_file_name, count), ...]`` from ``yeast_ans.txt``, in file order."""
    out = []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) == 2:
                out.append((parts[0], int(parts[1])))
    return out


def _key(name):
    m = _NAME.search(name)
    return (m.group(1), int(m.group(2)), int(m.group(3))) if m else (name, 0, 0)


def query_size(name):
    """The vertex count encoded in a query file name (``query_dense_16_3.graph`` -> 16)."""
    m = _NAME.search(name)
    return int(m.group(2)) if m else None


def select_queries(answers, max_count=DEFAULT_MAX_COUNT, sizes=None):
    """The answers to check: count <= ``max_count`` and, if given, query size in ``sizes``;
    sorted by (dense/sparse, size, index). :func:`run_yeast` runs them interleaved by group."""
    sel = [(q, c) for q, c in answers
           if c <= max_count and (sizes is None or query_size(q) in sizes)]
    return sorted(sel, key=lambda qc: _key(qc[0]))


def published_sample(n, max_count, sizes=(4, 8, 16)):
    """``(G, [(query name, H, published count), ...])`` for the first ``n`` queries of every
    (kind, size) group in turn with counts <= ``max_count``, or a string saying which files
    are missing (tests skip with it)."""
    files = yeast_files()
    if isinstance(files, str):
        return files
    data, qdir, answers = files
    G = nx_gsm.read_graph(data, edge_labels=False)
    sel = _interleave(select_queries(load_answers(answers), max_count=max_count, sizes=sizes))
    return G, [(name, nx_gsm.read_graph(qdir / name, edge_labels=False), published)
               for name, published in sel[:n]]


def _warm(engine):
    """Compile the engine's code paths (node labels, counting) before timing anything."""
    G = nx.cycle_graph(6)
    nx.set_node_attributes(G, {u: u % 2 for u in G}, "label")
    H = nx.path_graph(3)
    nx.set_node_attributes(H, {u: u % 2 for u in H}, "label")
    nx_gsm.count_subgraph_monomorphisms(G, H, node_label="label", engine=engine)
    nx_gsm.count_subgraph_monomorphisms(G, H, node_label="label", engine=engine, limit=1)


def _interleave(sel):
    """Round-robin over the (kind, size) groups, so that any prefix spans every group."""
    groups = {}
    for qc in sel:
        k = _key(qc[0])
        groups.setdefault(k[:2], []).append(qc)
    lists = [groups[k] for k in sorted(groups)]
    out = []
    for i in range(max((len(v) for v in lists), default=0)):
        out += [v[i] for v in lists if i < len(v)]
    return out


def run_yeast(engine="cpu", *, quick=False, max_count=DEFAULT_MAX_COUNT, sizes=None,
              root=None, progress=None, time_budget=None, min_queries=200):
    """Check nx_gsm's counts against the published yeast answers.

    Parameters
    ----------
    engine : str
        nx_gsm engine name.
    quick : bool
        Only the :data:`QUICK_SIZES` (4- and 8-vertex) queries; ignored when ``sizes`` is given.
    max_count : int
        Skip queries whose published count is larger.
    sizes : iterable of int, optional
        Only queries with these vertex counts.
    root : path, optional
        The ``datasets`` folder (default :func:`datasets_dir`).
    progress : callable, optional
        Called as ``progress(done, total)`` now and then.
    time_budget : float, optional
        Seconds of matching after which no further query is started, once at least
        ``min_queries`` have been checked. The queries run in a fixed order that interleaves the
        (dense/sparse, size) groups, so a time-bounded run checks a deterministic prefix that spans
        every group (which prefix depends on the machine's speed).
    min_queries : int
        Queries always checked, whatever ``time_budget`` says.

    Returns
    -------
    dict
        ``skipped`` (a reason, or None), ``answers`` (published answers), ``over_limit`` (answers
        above ``max_count``), ``checked``, ``matched``, ``mismatches`` (list of
        ``{query, expected, got}``), ``errors``, ``missing_files``, ``times`` ({query: seconds}),
        ``selected`` (queries eligible), ``stopped_by_budget``,
        ``time_stats``, ``slowest``, ``load_s``, ``total_s``, ``by_group`` ({"dense_8": [checked,
        matched]}), plus the selection parameters.
    """
    t_start = time.perf_counter()
    rep = {"engine": engine, "max_count": max_count, "skipped": None}
    files = yeast_files(root)
    if isinstance(files, str):
        rep["skipped"] = files
        return rep
    data_path, qdir, ans_path = files
    if sizes is None and quick:
        sizes = QUICK_SIZES
    rep["sizes"] = sorted(sizes) if sizes is not None else "all"
    answers = load_answers(ans_path)
    sel = _interleave(select_queries(answers, max_count,
                                     set(sizes) if sizes is not None else None))
    rep["answers"] = len(answers)
    rep["selected"] = len(sel)
    rep["time_budget"] = time_budget
    rep["stopped_by_budget"] = False
    rep["over_limit"] = sum(1 for _, c in answers if c > max_count)
    t0 = time.perf_counter()
    G = nx_gsm.read_graph(data_path, edge_labels=False)
    _warm(engine)
    rep["load_s"] = time.perf_counter() - t0
    times, mismatches, errors, missing = {}, [], [], []
    by_group = {}
    t_match = time.perf_counter()
    for i, (q, want) in enumerate(sel):
        if (time_budget is not None and i >= min_queries
                and time.perf_counter() - t_match > time_budget):
            rep["stopped_by_budget"] = True
            break
        path = qdir / q
        m = _NAME.search(q)
        group = f"{m.group(1)}_{m.group(2)}" if m else "other"
        stat = by_group.setdefault(group, [0, 0])
        if not path.exists():
            missing.append(q)
            continue
        H = nx_gsm.read_graph(path, edge_labels=False)
        t = time.perf_counter()
        try:
            got = nx_gsm.count_subgraph_monomorphisms(G, H, node_label="label", engine=engine)
        except Exception as exc:  # noqa: BLE001
            errors.append({"query": q, "error": f"{type(exc).__name__}: {exc}"})
            stat[0] += 1
            continue
        times[q] = time.perf_counter() - t
        stat[0] += 1
        if got == want:
            stat[1] += 1
        else:
            mismatches.append({"query": q, "expected": want, "got": got})
        if progress is not None and (i + 1) % 50 == 0:
            progress(i + 1, len(sel))
    tv = list(times.values())
    rep.update(
        checked=sum(s[0] for s in by_group.values()),
        matched=sum(s[1] for s in by_group.values()),
        mismatches=mismatches,
        errors=errors,
        missing_files=missing,
        by_group=dict(sorted(by_group.items(), key=lambda kv: _group_key(kv[0]))),
        times=times,
        time_stats=({"sum_s": sum(tv), "mean_s": statistics.fmean(tv),
                     "median_s": statistics.median(tv), "max_s": max(tv)} if tv else {}),
        slowest=sorted(times.items(), key=lambda kv: -kv[1])[:5],
        total_s=time.perf_counter() - t_start,
    )
    return rep


def _group_key(g):
    kind, _, size = g.partition("_")
    return (kind, int(size) if size.isdigit() else 0)
