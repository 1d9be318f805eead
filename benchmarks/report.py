"""Ratio statistics and the Markdown report, both computed from a JSON record alone.

Ratios are speedups: ``baseline seconds / engine seconds`` per query (above 1: the engine is
faster). Every engine is compared with every peer, and with every engine listed after it (so
``--engines cpu cpu1`` also gives the 2-thread-over-1-thread scaling).

Timeouts are kept, not dropped: a timed-out run counts as taking exactly the timeout ``T``. Where
only the baseline timed out, the ratio is a lower bound (the true speedup is at least that); where
only the engine timed out, an upper bound; where both did, the ratio is 1 and means nothing (it
stays in the means, pulling them towards 1, but never counts as the worst query). The tables say
how many of each there are. Queries where either side errored, was unsupported or is
missing are left out of the ratios and counted as "excluded".
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["summarize", "markdown", "ratio_stats", "format_ratio"]

SLOW_MS = 0.010  # "finishes in over 10 ms": the threshold for the worst-case ratio
LONG_S = 1.0  # "workloads over 1 s": the threshold for the thread-scaling target


def format_ratio(x):
    """A speed ratio for tables: "–" when unknown (None or NaN), else 3 significant digits."""
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "–"
    if x >= 100:
        return f"{x:,.0f}×"
    if x >= 10:
        return f"{x:.1f}×"
    return f"{x:.2f}×"


def _time(row):
    """Seconds, with a timeout counted as the timeout; None when not comparable."""
    if row is None:
        return None
    if row["status"] == "ok":
        return max(row["seconds"], 1e-7)
    if row["status"] == "timeout":
        return float(row["timeout"])
    return None


def _pairs(record):
    tools = record["tools"]
    engines = [t for t in tools if tools[t]["kind"] == "engine" and tools[t]["status"] == "ok"]
    peers = [t for t in tools if tools[t]["kind"] != "engine" and tools[t]["status"] == "ok"]
    out = []
    for i, e in enumerate(engines):
        out += [(e, p) for p in peers]
        out += [(e, f) for f in engines[i + 1:]]
    return out


def ratio_stats(record, engine, baseline, suite=None):
    """Statistics of ``baseline / engine`` over the queries of ``suite`` (all suites if None)."""
    by = {}
    for r in record["rows"]:
        if suite is None or r["suite"] == suite:
            by.setdefault((r["suite"], r["query"]), {})[r["tool"]] = r
    ratios, base_t, worst = [], [], None
    lower = upper = both = excluded = 0
    for (s, q), rows in by.items():
        te, tb = _time(rows.get(engine)), _time(rows.get(baseline))
        if te is None or tb is None:
            excluded += 1
            continue
        e_to = rows[engine]["status"] == "timeout"
        b_to = rows[baseline]["status"] == "timeout"
        lower += b_to and not e_to
        upper += e_to and not b_to
        both += e_to and b_to
        ratio = tb / te
        ratios.append(ratio)
        base_t.append(tb)
        if (max(te, tb) > SLOW_MS and not (e_to and b_to)
                and (worst is None or ratio < worst[0])):
            worst = (ratio, f"{s}/{q}")
    out = {"engine": engine, "baseline": baseline, "suite": suite or "all", "n": len(ratios),
           "excluded": excluded, "lower_bounds": lower, "upper_bounds": upper,
           "both_timed_out": both}
    if ratios:
        a = np.asarray(ratios)
        out.update(
            geomean=float(np.exp(np.log(a).mean())),
            median=float(np.median(a)),
            p10=float(np.percentile(a, 10)),
            p90=float(np.percentile(a, 90)),
            min=float(a.min()),
            max=float(a.max()),
        )
        long = a[np.asarray(base_t) > LONG_S]
        out["n_baseline_over_1s"] = int(long.size)
        out["geomean_baseline_over_1s"] = (float(np.exp(np.log(long).mean()))
                                           if long.size else None)
        out["worst_over_10ms"] = worst[0] if worst else None
        out["worst_over_10ms_query"] = worst[1] if worst else None
    return out


def _tool_stats(record, tool, suite=None):
    rows = [r for r in record["rows"] if r["tool"] == tool
            and (suite is None or r["suite"] == suite)]
    ok = [r["seconds"] for r in rows if r["status"] == "ok"]
    st = {s: sum(r["status"] == s for r in rows) for s in ("ok", "timeout", "error", "unsupported")}
    out = {"tool": tool, "suite": suite or "all", "queries": len(rows), **st}
    if ok:
        a = np.asarray(ok)
        out.update(total_ok_seconds=float(a.sum()), median=float(np.median(a)),
                   p90=float(np.percentile(a, 90)), max=float(a.max()))
    return out


def summarize(record):
    """``record["summary"]``: per-tool and per-pair statistics, per suite and over all suites."""
    suites = [s for s, info in record["suites"].items() if info.get("status") == "ok"]
    scopes = suites + ([None] if len(suites) > 1 else [])
    tools = [t for t, info in record["tools"].items() if info["status"] == "ok"]
    return {
        "tools": [_tool_stats(record, t, s) for s in scopes for t in tools],
        "ratios": [ratio_stats(record, e, b, s) for s in scopes for e, b in _pairs(record)],
        "mismatches": len(record["mismatches"]),
    }


# -- Markdown ---------------------------------------------------------------------------------
def _fs(x):
    """Seconds, compactly."""
    if x is None:
        return "–"
    if x < 0.001:
        return f"{x * 1e6:.0f} µs"
    if x < 1:
        return f"{x * 1e3:.1f} ms"
    return f"{x:.2f} s"


def _cell(row):
    if row is None:
        return "·"
    st = row["status"]
    if st == "ok":
        cell = _fs(row["seconds"])
    elif st == "timeout":
        cell = f"TO (>{row['timeout']:g} s)"
    elif st == "unsupported":
        cell = "n/a"
    else:
        cell = "ERROR"
    if row.get("mismatch"):
        cell = f"**{cell} ≠**"
    return cell


def _count_cell(c):
    return f"{c:,}" if isinstance(c, int) else str(c)


def markdown(record, per_query=True, slowest=10):
    """The Markdown report for a record (the header, notes, exactness, summaries, per-query)."""
    cfg, m = record["config"], record["machine"]
    summary = record.get("summary") or summarize(record)
    L = []
    proto = cfg["protocol"] + (f" (limit {cfg['limit']:,})" if cfg["limit"] else " (no limit)")
    L.append(f"## nx-gsm benchmark: {', '.join(cfg['suites'])}")
    L.append("")
    kind = ("induced (subgraph isomorphism)" if cfg["induced"]
            else "non-induced (monomorphism)")
    L.append(f"- protocol: **{proto}**, {kind}"
             f", per-query timeout {cfg['timeout']:g} s for every tool"
             + (f"; fast queries: minimum of up to {cfg['repeat']} runs (while they total "
                "under 1 s)" if cfg.get("repeat", 1) > 1 else "; one run per query"))
    L.append(f"- machine: {m['cpu_model']}, {m['cpus_usable']} usable cores"
             f" ({m['cpu_count']} online), Numba threads {m['numba_num_threads']}"
             + (f", GPUs: {'; '.join(m['gpus'])}" if m.get("gpus") else ""))
    v = m["versions"]
    L.append(f"- software: Python {m['python']}, " + ", ".join(
        f"{k} {v[k]}" for k in v if v[k]))
    commit = (m.get("git_commit") or "?")[:12] + (" (dirty tree)" if m.get("git_dirty") else "")
    L.append(f"- commit {commit}, date {m['date']}, "
             f"wall time {record.get('wall_seconds', 0):.0f} s")
    L.append("")
    notes = list(record.get("notes", []))
    for t, info in record["tools"].items():
        if info["status"] != "ok":
            notes.append(f"tool **{t}** skipped: {info.get('reason')}")
    for s, info in record["suites"].items():
        if info.get("status") != "ok":
            notes.append(f"suite **{s}** skipped: {info.get('reason')}")
        for n in info.get("notes", []):
            notes.append(f"suite {s}: {n}")
    if notes:
        L.append("Notes:")
        L.append("")
        L += [f"- {n}" for n in notes]
        L.append("")

    # exactness
    mm = record["mismatches"]
    checks = record["checks"]
    n_pub = sum(1 for c in checks if "published" in c["counts"])
    if mm:
        L.append(f"### ❌ COUNT MISMATCH on {len(mm)} of {len(checks)} queries")
        L.append("")
        L.append("| suite | query | counts |")
        L.append("|---|---|---|")
        for c in mm:
            counts = ", ".join(f"{t}: {_count_cell(n)}" for t, n in c["counts"].items())
            L.append(f"| {c['suite']} | {c['query']} | {counts} |")
    else:
        L.append(f"### Exactness: all tools that finished agree on all {len(checks)} queries"
                 + (f" (and with the published count on {n_pub})" if n_pub else ""))
    L.append("")

    # per-tool
    L.append("### Per-tool times (finished queries)")
    L.append("")
    L.append("| suite | tool | ok | timeouts | errors | n/a | median | p90 | max | sum |")
    L.append("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|")
    for t in summary["tools"]:
        L.append(f"| {t['suite']} | {t['tool']} | {t['ok']} | {t['timeout']} | {t['error']} | "
                 f"{t['unsupported']} | {_fs(t.get('median'))} | {_fs(t.get('p90'))} | "
                 f"{_fs(t.get('max'))} | {_fs(t.get('total_ok_seconds'))} |")
    L.append("")
    eng = [(t, i) for t, i in record["tools"].items()
           if i["kind"] == "engine" and i["status"] == "ok"]
    if eng:
        L.append("Engine start-up (per suite: data-graph conversion; first calls on a tiny "
                 "graph, i.e. JIT compilation or cache load, vs. the same calls warm):")
        L.append("")
        L.append("| tool | suite | convert G | first calls | warm calls | restarts |")
        L.append("|---|---|--:|--:|--:|--:|")
        for t, info in eng:
            for s, st in info.get("suites", {}).items():
                ld = st.get("loads") or [{}]
                L.append(f"| {t} | {s} | {_fs(ld[0].get('load_seconds'))} | "
                         f"{_fs(ld[0].get('first_call_seconds'))} | "
                         f"{_fs(ld[0].get('warm_call_seconds'))} | {st.get('restarts', 0)} |")
        L.append("")

    # ratios
    if summary["ratios"]:
        L.append("### Speedups (baseline time / engine time; timeouts counted at the timeout)")
        L.append("")
        L.append("| suite | engine | vs | n | geomean | median | p10 | p90 | worst (>10 ms) | "
                 "geomean (baseline >1 s) | baseline TO (≥) | engine TO (≤) | both TO | "
                 "excl. |")
        L.append("|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
        for r in summary["ratios"]:
            worst = (f"{format_ratio(r.get('worst_over_10ms'))} ({r.get('worst_over_10ms_query')})"
                     if r.get("worst_over_10ms") is not None else "–")
            long = (f"{format_ratio(r.get('geomean_baseline_over_1s'))} (n={r.get('n_baseline_over_1s')})"
                    if r.get("geomean_baseline_over_1s") is not None else "–")
            L.append(f"| {r['suite']} | {r['engine']} | {r['baseline']} | {r['n']} | "
                     f"{format_ratio(r.get('geomean'))} | {format_ratio(r.get('median'))} | {format_ratio(r.get('p10'))} | "
                     f"{format_ratio(r.get('p90'))} | {worst} | {long} | {r['lower_bounds']} | "
                     f"{r['upper_bounds']} | {r['both_timed_out']} | {r['excluded']} |")
        L.append("")
        L.append("A ratio whose baseline timed out is a lower bound (column \"baseline TO\"); one "
                 "whose engine timed out an upper bound; both timed out: ratio 1, no information.")
        L.append("")

    # slowest queries per engine
    for t, _ in eng:
        rows = [r for r in record["rows"] if r["tool"] == t and r["status"] in ("ok", "timeout")]
        rows.sort(key=lambda r: -(_time(r) or 0))
        if rows and slowest:
            L.append(f"Slowest queries for **{t}**: " + ", ".join(
                f"{r['suite']}/{r['query']} {_cell(r)}" for r in rows[:slowest]))
            L.append("")

    # per-query table
    if per_query:
        tools = [t for t, i in record["tools"].items() if i["status"] == "ok"]
        by = {}
        for r in record["rows"]:
            by.setdefault((r["suite"], r["query"]), {})[r["tool"]] = r
        checks_by = {(c["suite"], c["query"]): c for c in checks}
        L.append("<details><summary>Per-query times</summary>")
        L.append("")
        L.append("| suite | query | nodes | edges | count | " + " | ".join(tools) + " |")
        L.append("|---|---|--:|--:|--:|" + "--:|" * len(tools))
        for (s, q), rows in by.items():
            c = checks_by.get((s, q), {})
            any_row = next(iter(rows.values()))
            cnt = "**MISMATCH**" if not c.get("agree", True) else _count_cell(c.get("count", "–"))
            L.append(f"| {s} | {q} | {any_row.get('pattern_nodes', '')} | "
                     f"{any_row.get('pattern_edges', '')} | {cnt} | "
                     + " | ".join(_cell(rows.get(t)) for t in tools) + " |")
        L.append("")
        L.append("</details>")
        L.append("")
    return "\n".join(L)
