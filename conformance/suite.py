"""Run the whole conformance suite for one engine and summarise it.

:func:`run_suite` is the library entry point (the CLI, the CI slice and the GPU check all call
it): it generates the cases (:mod:`conformance.generator`), checks each against VF2
(:mod:`conformance.oracle`), optionally checks the published yeast counts
(:mod:`conformance.yeast`), and returns a JSON-serialisable report. :func:`format_report` turns
that report into the text the CLI prints.
"""

from __future__ import annotations

import platform
import time
from collections import Counter, defaultdict

import networkx as nx

import nx_gsm

from .generator import CLASSES, LABEL_KINDS, MODES, generate_cases
from .oracle import check_case
from .yeast import DEFAULT_MAX_COUNT, run_yeast

__all__ = ["run_suite", "run_cases", "format_report", "engine_unavailable"]

#: a case slower than this (VF2 + nx_gsm) is listed in the report
SLOW_CASE_S = 1.0


def engine_unavailable(engine):
    """None if ``engine`` can run here, else the reason (unknown name, no GPU, ...)."""
    from nx_gsm.engines import NAMES, available_engines

    if not isinstance(engine, str):  # an engine object: the API resolves and checks it
        return None
    if engine not in NAMES:
        return f"unknown engine {engine!r}; choose one of {', '.join(NAMES)}"
    if engine == "auto":
        return None
    return available_engines().get(engine)


def _warm(engine):
    """Compile the engine (Numba) before anything is timed."""
    G, H = nx.cycle_graph(5), nx.path_graph(3)
    list(nx_gsm.subgraph_monomorphisms(G, H, engine=engine))
    nx_gsm.count_subgraph_isomorphisms(G, H, engine=engine)


def run_cases(cases, engine="cpu", shrink=True, progress=None):
    """Check ``cases`` (an iterable of :class:`~conformance.generator.Case`) against VF2.

    Returns ``{"total", "passed", "failed", "by": {axis: {value: [run, failed]}}, "failures":
    [...], "slow": [...], "vf2_s", "gsm_s", "nonzero" (cases with a non-empty answer),
    "mappings" (sum of VF2 answer sizes)}``.
    """
    by = {axis: defaultdict(lambda: [0, 0]) for axis in ("class", "mode", "labels", "shape",
                                                          "keys", "class/mode")}
    features = Counter()
    failures, slow = [], []
    total = nonzero = mappings = 0
    vf2_s = gsm_s = 0.0
    for case in cases:
        res = check_case(case, engine, shrink=shrink)
        total += 1
        bad = not res["ok"]
        for axis, val in (("class", case.cls), ("mode", case.mode), ("labels", case.labels),
                          ("shape", case.shape), ("keys", case.keys),
                          ("class/mode", f"{case.cls}/{case.mode}")):
            by[axis][val][0] += 1
            by[axis][val][1] += bad
        for f in case.features:
            features[f] += 1
        if res["expected"]:
            nonzero += 1
            mappings += res["expected"]
        vf2_s += res["vf2_s"]
        gsm_s += res["gsm_s"]
        if res["vf2_s"] + res["gsm_s"] > SLOW_CASE_S:
            slow.append((case.id, round(res["vf2_s"], 3), round(res["gsm_s"], 3)))
        if bad:
            failures.append(res)
        if progress is not None:
            progress(total, res)
    return {
        "total": total,
        "passed": total - len(failures),
        "failed": len(failures),
        "nonzero": nonzero,
        "mappings": mappings,
        "by": {axis: {k: list(v) for k, v in d.items()} for axis, d in by.items()},
        "features": dict(sorted(features.items())),
        "failures": failures,
        "slow": slow,
        "vf2_s": vf2_s,
        "gsm_s": gsm_s,
    }


def run_suite(engine="cpu", quick=False, seed=0, cases=None, yeast=True, only=None,
              shrink=True, yeast_max_count=DEFAULT_MAX_COUNT, yeast_sizes=None,
              datasets=None, yeast_time_budget=None, progress=None):
    """Run the conformance suite and return a report dict.

    Parameters
    ----------
    engine : str
        nx_gsm engine (``"cpu"``, ``"gmatch"``, ``"gsi"``, ``"geneva"``, ``"auto"``).
    quick : bool
        One generated case per combination (~780 instead of ~3,500) and the yeast 4-/8-vertex
        queries only.
    seed : int
        Generator seed.
    cases : int, optional
        Run only the first ``cases`` generated cases (0: none, e.g. for a yeast-only run). The
        order is sweep-major, so ~780 or more still covers every category.
    yeast : bool
        Also check the published yeast counts.
    only : str, optional
        Run only generated cases whose id contains this substring (``"MultiGraph/induced"``).
    shrink : bool
        Shrink failing cases to small reproductions.
    yeast_max_count, yeast_sizes, datasets, yeast_time_budget
        Passed to :func:`conformance.yeast.run_yeast` (``max_count``, ``sizes``, ``root``,
        ``time_budget``).
    progress : callable, optional
        ``progress(stage, done, total_or_None)`` with stage ``"cases"`` or ``"yeast"``.

    Returns
    -------
    dict
        ``ok`` (no differences, no yeast mismatch or error), ``engine``, ``seed``, ``quick``,
        ``cases`` (see :func:`run_cases`), ``yeast`` (see :func:`~conformance.yeast.run_yeast`;
        None when not asked), ``differences`` (number), ``total_s``, ``versions``.

    Raises
    ------
    RuntimeError
        If the engine cannot run here (the reason is in the message).
    """
    reason = engine_unavailable(engine)
    if reason is not None:
        raise RuntimeError(f"engine {engine!r} cannot run here: {reason}")
    t0 = time.perf_counter()
    _warm(engine)
    warm_s = time.perf_counter() - t0
    gen = generate_cases(seed=seed, quick=quick)
    if only:
        gen = (c for c in gen if only in c.id)
    if cases is not None:
        gen = _take(gen, cases)
    cb = None
    if progress is not None:
        def cb(done, res):
            progress("cases", done, None)
    t1 = time.perf_counter()
    crep = run_cases(gen, engine, shrink=shrink, progress=cb)
    crep["time_s"] = time.perf_counter() - t1
    yrep = None
    if yeast:
        ycb = (lambda d, n: progress("yeast", d, n)) if progress is not None else None
        yrep = run_yeast(engine, quick=quick, max_count=yeast_max_count, sizes=yeast_sizes,
                         root=datasets, time_budget=yeast_time_budget, progress=ycb)
    ydiff = 0 if not yrep or yrep.get("skipped") else len(yrep["mismatches"]) + len(
        yrep["errors"]) + len(yrep["missing_files"])
    return {
        "ok": crep["failed"] == 0 and ydiff == 0,
        "engine": engine if isinstance(engine, str) else getattr(engine, "name", repr(engine)),
        "seed": seed,
        "quick": quick,
        "only": only,
        "differences": crep["failed"] + ydiff,
        "cases": crep,
        "yeast": yrep,
        "warm_s": warm_s,
        "total_s": time.perf_counter() - t0,
        "versions": {"nx_gsm": nx_gsm.__version__, "networkx": nx.__version__,
                     "python": platform.python_version()},
    }


def _take(it, n):
    for i, x in enumerate(it):
        if i >= n:
            return
        yield x


def _table(title, d, order=None):
    keys = [k for k in (order or sorted(d)) if k in d]
    w = max([len(str(k)) for k in keys] + [4])
    lines = [f"  {title}:"]
    for k in keys:
        run, bad = d[k]
        lines.append(f"    {str(k):<{w}}  {run:5d} run  {bad:3d} differ")
    return lines


def format_report(rep):
    """The human-readable summary printed by ``python -m conformance run``."""
    c = rep["cases"]
    L = [f"nx-gsm conformance: engine={rep['engine']} seed={rep['seed']} "
         f"{'quick' if rep['quick'] else 'full'}"
         + (f" only={rep['only']!r}" if rep.get("only") else "")
         + f"  (nx_gsm {rep['versions']['nx_gsm']}, networkx {rep['versions']['networkx']}, "
         f"Python {rep['versions']['python']})"]
    if c["total"] == 0:
        L.append("generated cases: none run")
    else:
        L.append(f"generated cases: {c['total']} run, {c['passed']} agree with VF2, "
                 f"{c['failed']} differ  ({c['nonzero']} with a non-empty answer, "
                 f"{c['mappings']} VF2 mappings in all; VF2 {c['vf2_s']:.1f} s, "
                 f"nx_gsm {c['gsm_s']:.1f} s, wall {c['time_s']:.1f} s)")
    if c["total"]:
        by = c["by"]
        L += _table("by class/mode", by["class/mode"],
                    [f"{k}/{m}" for k in CLASSES for m in MODES])
        L += _table("by label kind", by["labels"], list(LABEL_KINDS))
        L += _table("by shape", by["shape"])
        L += _table("by node keys", by["keys"])
        L.append("  structural features covered (cases): "
                 + ", ".join(f"{k} {v}" for k, v in c["features"].items()))
    if c["slow"]:
        L.append(f"  slow cases (> {SLOW_CASE_S} s, vf2 s / nx_gsm s): "
                 + "; ".join(f"{i} {a}/{b}" for i, a, b in c["slow"][:10]))
    for f in c["failures"]:
        L.append("")
        L.append(f"DIFFERENCE {f['description']}")
        L += [f"    {p}" for p in f["problems"]]
        if f.get("shrunk"):
            L.append(f"  shrunk to: {f['shrunk_description']}")
            L += [f"    {p}" for p in f["shrunk_problems"]]
        L.append("  reproduction:")
        L += ["    " + line for line in f["repro"].splitlines()]
    y = rep.get("yeast")
    if y is not None:
        L.append("")
        if y.get("skipped"):
            L.append(f"yeast ground truth: SKIPPED: {y['skipped']}")
        else:
            ts = y["time_stats"]
            budget = (f" of {y['selected']} eligible (stopped by the {y['time_budget']:g} s "
                      f"time budget)" if y.get("stopped_by_budget") else "")
            L.append(f"yeast ground truth (sizes {y['sizes']}, count <= {y['max_count']:g}): "
                     f"{y['checked']} queries checked{budget}, {y['matched']} match the published "
                     f"count, {len(y['mismatches'])} differ, {len(y['errors'])} errors, "
                     f"{len(y['missing_files'])} missing files; {y['over_limit']} of "
                     f"{y['answers']} published answers are over the limit (not run)")
            if ts:
                L.append(f"  per query: mean {ts['mean_s'] * 1e3:.1f} ms, median "
                         f"{ts['median_s'] * 1e3:.1f} ms, max {ts['max_s'] * 1e3:.0f} ms, "
                         f"sum {ts['sum_s']:.1f} s (load + JIT warm-up {y['load_s']:.1f} s)")
                L.append("  slowest: " + ", ".join(f"{q} {t * 1e3:.0f} ms"
                                                   for q, t in y["slowest"]))
            L.append("  by group (checked/matched): " + ", ".join(
                f"{g} {a}/{b}" for g, (a, b) in y["by_group"].items()))
            for m in y["mismatches"]:
                L.append(f"  MISMATCH {m['query']}: published {m['expected']}, "
                         f"nx_gsm {m['got']}")
            for e in y["errors"]:
                L.append(f"  ERROR {e['query']}: {e['error']}")
            for q in y["missing_files"]:
                L.append(f"  MISSING query file {q}")
    L.append("")
    L.append(f"{'OK' if rep['ok'] else 'FAILED'}: {rep['differences']} difference(s); "
             f"total {rep['total_s']:.1f} s")
    return "\n".join(L)
