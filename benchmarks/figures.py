"""Benchmark figures and a Markdown report from the harness's JSON records.

The records are those ``python -m benchmarks run --out FILE`` writes (schema ``nx-gsm-bench/1``,
documented in ``benchmarks/runner.py``); the figures need matplotlib (the ``bench`` extra). The
report ends with each record's full Markdown report from :mod:`benchmarks.report`.

Figures (PNG, matplotlib's Agg backend, so no display is needed):

``scatter-<engine>.png``
    Per-query time of the engine (y) against each baseline (x: every peer, and every engine listed
    after it in the run), log-log, with the line y = x (below it: the engine is faster) and the
    10x lines. A timed-out run sits at the timeout with a triangle pointing where the true value
    lies.
``speedup-<engine>.png``
    The distribution of speedups (baseline time / engine time) against each baseline: a histogram
    of log10 ratios and the empirical CDF.
``memory.png``
    Peak memory per tool, when the rows carry a memory field (any numeric row key containing
    ``mem`` or ``rss``; bytes unless the key ends in ``_kb`` / ``_mb``).

Ratios follow the harness: a timeout counts as taking exactly the timeout; errors and unsupported
runs are left out.
"""

from __future__ import annotations

import json
import math
import os
import re

from nx_gsm.interop.atomic import atomic_open, atomic_path

from .report import format_ratio, markdown

__all__ = ["load_record", "render_report", "plot_records"]

SCHEMA_PREFIX = "nx-gsm-bench/"


def load_record(path):
    """Read and sanity-check one JSON record; errors name the file."""
    try:
        with open(path, encoding="utf-8") as fh:
            rec = json.load(fh)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not a JSON file ({exc.msg} at line {exc.lineno})") from None
    if not isinstance(rec, dict) or not str(rec.get("schema", "")).startswith(SCHEMA_PREFIX):
        raise ValueError(f"{path}: not an nx-gsm benchmark record (no schema "
                         f"'{SCHEMA_PREFIX}...'; write one with 'python -m benchmarks run --out')")
    for key in ("tools", "rows"):
        if key not in rec:
            raise ValueError(f"{path}: benchmark record without {key!r}")
    return rec


# -- data -------------------------------------------------------------------------------------
def _time(row):
    if row is None:
        return None
    if row.get("status") == "ok" and row.get("seconds") is not None:
        return max(float(row["seconds"]), 1e-7)
    if row.get("status") == "timeout" and row.get("timeout") is not None:
        return float(row["timeout"])
    return None


class _Data:
    """Rows of several records keyed by (record, suite, query), plus the tool kinds."""

    def __init__(self, records):
        self.by = {}
        self.kind = {}
        self.suites = []
        for i, rec in enumerate(records):
            for t, info in rec["tools"].items():
                if info.get("status", "ok") == "ok":
                    self.kind.setdefault(t, info.get("kind", "peer"))
            for r in rec["rows"]:
                self.by.setdefault((i, r.get("suite", "?"), r.get("query", "?")), {})[r["tool"]] = r
                if r.get("suite") not in self.suites:
                    self.suites.append(r.get("suite"))
        self.engines = [t for t, k in self.kind.items() if k == "engine"]
        self.peers = [t for t, k in self.kind.items() if k != "engine"]

    def baselines(self, engine):
        i = self.engines.index(engine)
        return self.peers + self.engines[i + 1:]

    def pairs(self, engine, base):
        """[(suite, base_time, engine_time, base_timed_out, engine_timed_out, query)]"""
        out = []
        for (_, s, q), rows in self.by.items():
            re_, rb = rows.get(engine), rows.get(base)
            te, tb = _time(re_), _time(rb)
            if te is None or tb is None:
                continue
            out.append((s, tb, te, rb["status"] == "timeout", re_["status"] == "timeout", q))
        return out

    def memory_key(self):
        for rows in self.by.values():
            for r in rows.values():
                for k, v in r.items():
                    if re.search(r"mem|rss", k, re.I) and isinstance(v, (int, float)) \
                            and not isinstance(v, bool) and k != "mem_limit_gb":
                        return k
        return None


def _stats(pairs):
    ratios = [tb / te for _, tb, te, *_ in pairs]
    if not ratios:
        return {"n": 0}
    ratios.sort()
    n = len(ratios)
    med = ratios[n // 2] if n % 2 else (ratios[n // 2 - 1] + ratios[n // 2]) / 2
    return {
        "n": n,
        "geomean": math.exp(sum(math.log(r) for r in ratios) / n),
        "median": med,  # as the harness (numpy.median)
        "min": ratios[0],
        "max": ratios[-1],
        "faster": sum(r > 1 for r in ratios),
        "base_to": sum(1 for p in pairs if p[3] and not p[4]),
        "eng_to": sum(1 for p in pairs if p[4] and not p[3]),
        "both_to": sum(1 for p in pairs if p[3] and p[4]),
    }


def _safe(name):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name)


# -- figures ----------------------------------------------------------------------------------
def _save(fig, path):
    # beside the target, then renamed: a failed run leaves an existing figure as it was
    with atomic_path(path) as tmp:
        fig.savefig(tmp, dpi=110)


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise RuntimeError("the benchmark figures need matplotlib: "
                           "pip install matplotlib (or nx-gsm[bench])") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _grid(n):
    cols = 2 if n == 4 else min(n, 3)
    rows = (n + cols - 1) // cols
    return rows, cols


def _scatter(plt, data, engine, out_dir):
    bases = [b for b in data.baselines(engine) if data.pairs(engine, b)]
    if not bases:
        return None
    rows, cols = _grid(len(bases))
    fig, axes = plt.subplots(rows, cols, figsize=(4.6 * cols, 4.4 * rows), squeeze=False)
    colours = plt.get_cmap("tab10")
    suite_colour = {s: colours(i % 10) for i, s in enumerate(data.suites)}
    for ax, base in zip(axes.flat, bases):
        pairs = data.pairs(engine, base)
        lo = min(min(p[1], p[2]) for p in pairs)
        hi = max(max(p[1], p[2]) for p in pairs)
        lo, hi = lo / 2, hi * 2
        for s in data.suites:
            for marker, sel, lab in (("o", lambda p: not p[3] and not p[4], s),
                                     (">", lambda p: p[3] and not p[4], None),
                                     ("^", lambda p: p[4] and not p[3], None),
                                     ("x", lambda p: p[3] and p[4], None)):
                pts = [p for p in pairs if p[0] == s and sel(p)]
                if pts:
                    ax.scatter([p[1] for p in pts], [p[2] for p in pts], s=18, marker=marker,
                               color=suite_colour[s], alpha=0.75, label=lab,
                               edgecolors="none" if marker != "x" else None)
        ax.plot([lo, hi], [lo, hi], "k-", lw=1, label="y = x")
        ax.plot([lo, hi], [lo / 10, hi / 10], color="0.6", ls=":", lw=1, label="10× faster")
        ax.plot([lo, hi], [lo * 10, hi * 10], color="0.6", ls="--", lw=1, label="10× slower")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlim(lo, hi)
        ax.set_ylim(lo, hi)
        ax.set_aspect("equal")
        st = _stats(pairs)
        ax.set_title(f"{engine} vs {base}: n={st['n']}, geomean {format_ratio(st['geomean'])}",
                     fontsize=10)
        ax.set_xlabel(f"{base} time (s)")
        ax.set_ylabel(f"{engine} time (s)")
        ax.grid(True, which="major", alpha=0.3)
    for ax in list(axes.flat)[len(bases):]:
        ax.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    seen = {}
    for h, lab in zip(handles, labels):
        if lab and not lab.startswith("_"):
            seen.setdefault(lab, h)
    fig.legend(seen.values(), seen.keys(), loc="lower center", ncol=min(len(seen), 6),
               fontsize=8, frameon=False)
    fig.suptitle(f"Per-query time, {engine} (y) vs baselines (x): below the line = {engine} "
                 "faster\n▶ baseline timed out, ▲ engine timed out (drawn at the timeout)",
                 fontsize=10)
    fig.tight_layout(rect=(0, 0.06, 1, 0.95))
    path = os.path.join(out_dir, f"scatter-{_safe(engine)}.png")
    _save(fig, path)
    plt.close(fig)
    return path


def _speedups(plt, data, engine, out_dir):
    series = [(b, [tb / te for _, tb, te, *_ in data.pairs(engine, b)])
              for b in data.baselines(engine)]
    series = [(b, r) for b, r in series if r]
    if not series:
        return None
    import numpy as np

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(11, 4.2))
    allr = np.log10(np.concatenate([np.asarray(r) for _, r in series]))
    lo, hi = float(allr.min()), float(allr.max())
    if hi - lo < 1e-9:
        lo, hi = lo - 0.5, hi + 0.5
    bins = np.linspace(lo, hi, 25)
    for b, r in series:
        ax1.hist(np.log10(r), bins=bins, histtype="step", lw=1.6, label=f"vs {b}")
        x = np.sort(np.asarray(r))
        ax2.step(x, np.arange(1, x.size + 1) / x.size, where="post", lw=1.6, label=f"vs {b}")
    ax1.axvline(0, color="k", lw=1)
    ax1.set_xlabel(f"log10 speedup (baseline time / {engine} time)")
    ax1.set_ylabel("queries")
    ax1.set_title(f"{engine}: speedup histogram (right of 0 = {engine} faster)", fontsize=10)
    ax2.axvline(1, color="k", lw=1)
    ax2.set_xscale("log")
    ax2.set_xlabel(f"speedup (baseline time / {engine} time)")
    ax2.set_ylabel("fraction of queries ≤ x")
    ax2.set_ylim(0, 1.02)
    ax2.set_title(f"{engine}: speedup CDF", fontsize=10)
    for ax in (ax1, ax2):
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    path = os.path.join(out_dir, f"speedup-{_safe(engine)}.png")
    _save(fig, path)
    plt.close(fig)
    return path


def _memory(plt, data, out_dir):
    key = data.memory_key()
    if key is None:
        return None, None
    scale = 1 / 2**20
    if key.lower().endswith("_kb"):
        scale = 1 / 2**10
    elif key.lower().endswith("_mb"):
        scale = 1.0
    vals = {}
    for rows in data.by.values():
        for t, r in rows.items():
            v = r.get(key)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0:
                vals.setdefault(t, []).append(v * scale)
    if not vals:
        return None, None
    tools = [t for t in data.kind if t in vals] + [t for t in vals if t not in data.kind]
    fig, ax = plt.subplots(figsize=(1.4 * len(tools) + 3, 4))
    ax.boxplot([vals[t] for t in tools], tick_labels=tools)
    ax.set_yscale("log")
    ax.set_ylabel(f"{key} (MiB)")
    ax.set_title("Memory per query and tool", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    path = os.path.join(out_dir, "memory.png")
    _save(fig, path)
    plt.close(fig)
    return path, key


def plot_records(records, out_dir):
    """Write the PNG figures for ``records`` into ``out_dir``; returns ``{name: path}``."""
    plt = _pyplot()
    os.makedirs(out_dir, exist_ok=True)
    data = _Data(records)
    out = {}
    for e in data.engines:
        p = _scatter(plt, data, e, out_dir)
        if p:
            out[f"scatter-{e}"] = p
        p = _speedups(plt, data, e, out_dir)
        if p:
            out[f"speedup-{e}"] = p
    p, _ = _memory(plt, data, out_dir)
    if p:
        out["memory"] = p
    return out


# -- Markdown ---------------------------------------------------------------------------------
def _harness_markdown(rec):
    try:
        return markdown(rec, per_query=True)
    except Exception:  # a record from another harness version: the figures still stand
        return None


def render_report(records, out_dir, *, names=None, markdown_path=None, title=None):
    """Figures plus a Markdown report; returns the Markdown file's path.

    ``names`` labels the records (e.g. their file names); ``markdown_path`` defaults to
    ``out_dir/report.md`` (image links are made relative to it).
    """
    names = names or [f"record {i + 1}" for i in range(len(records))]
    figs = plot_records(records, out_dir)
    md_path = markdown_path or os.path.join(out_dir, "report.md")
    md_dir = os.path.dirname(os.path.abspath(md_path))
    data = _Data(records)
    L = [f"# {title or 'nx-gsm benchmark report'}", ""]
    for name, rec in zip(names, records):
        m, cfg = rec.get("machine", {}), rec.get("config", {})
        commit = (m.get("git_commit") or "?")[:12] + (" (dirty)" if m.get("git_dirty") else "")
        limit = cfg.get("limit")
        L.append(f"- **{name}**: suites {', '.join(cfg.get('suites', []) or ['?'])}; "
                 f"protocol {cfg.get('protocol', '?')}"
                 + (f" (limit {limit:,})" if isinstance(limit, int) else "")
                 + f", {'induced' if cfg.get('induced') else 'non-induced'}, "
                 f"timeout {cfg.get('timeout', '?')} s; {m.get('cpu_model', '?')}, "
                 f"{m.get('cpus_usable', '?')} cores"
                 + (f", GPUs: {'; '.join(m['gpus'])}" if m.get("gpus") else "")
                 + f"; commit {commit}, {m.get('date', '?')}")
    mm = sum(len(r.get("mismatches", [])) for r in records)
    L.append("")
    L.append(f"**{'COUNT MISMATCHES: ' + str(mm) if mm else 'Counts: all tools that finished agree.'}**")
    L.append("")
    L.append("## Speedups")
    L.append("")
    L.append("Baseline time / engine time per query (above 1×: the engine is faster); a timeout "
             "counts as the timeout, so a ratio whose baseline timed out is a lower bound.")
    L.append("")
    L.append("| engine | vs | n | geomean | median | min | max | engine faster | "
             "baseline TO | engine TO | both TO |")
    L.append("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
    for e in data.engines:
        for b in data.baselines(e):
            st = _stats(data.pairs(e, b))
            if not st["n"]:
                continue
            L.append(f"| {e} | {b} | {st['n']} | {format_ratio(st['geomean'])} | {format_ratio(st['median'])} | "
                     f"{format_ratio(st['min'])} | {format_ratio(st['max'])} | {st['faster']} | {st['base_to']} | "
                     f"{st['eng_to']} | {st['both_to']} |")
    L.append("")

    def img(key, alt):
        rel = os.path.relpath(os.path.abspath(figs[key]), md_dir).replace(os.sep, "/")
        L.append(f"![{alt}]({rel})")
        L.append("")

    for e in data.engines:
        if f"scatter-{e}" in figs:
            L.append(f"## {e}: per-query times")
            L.append("")
            img(f"scatter-{e}", f"{e} per-query time against each baseline")
        if f"speedup-{e}" in figs:
            L.append(f"## {e}: speedup distribution")
            L.append("")
            img(f"speedup-{e}", f"{e} speedup distribution")
    if "memory" in figs:
        L.append("## Memory")
        L.append("")
        img("memory", "peak memory per tool")
    else:
        L.append("Memory: the records carry no per-query memory field, so there is no memory figure.")
        L.append("")
    for name, rec in zip(names, records):
        text = _harness_markdown(rec)
        if text:
            L.append(f"## Full harness report: {name}")
            L.append("")
            # the harness's headings start at ##; nest them one level below this section
            text = re.sub(r"(?m)^(#{2,5}) ", r"#\1 ", text)
            # let Markdown inside <details> render (md_in_html in MkDocs; harmless elsewhere)
            text = text.replace("<details>", '<details markdown="1">')
            L.append(text)
            L.append("")
    os.makedirs(md_dir, exist_ok=True)
    with atomic_open(md_path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(L).rstrip() + "\n")
    return md_path
