"""Command line: ``python -m benchmarks {run,report,list}`` (from the repository root).

Examples::

    python -m benchmarks run --suite tiny --quick
    python -m benchmarks run --suite yeast-8 yeast-16 --queries 20 --timeout 10 \\
        --engines cpu cpu1 --peers nx-vf2 rustworkx igraph-lad --out yeast.json --markdown yeast.md
    python -m benchmarks run --suite github --protocol all --patterns triangle 4-cycle --labels 4
    python -m benchmarks run --suite demo --out demo.json --figures demo-report
    python -m benchmarks report yeast.json
    python -m benchmarks report yeast.json human.json --out figures --markdown docs/perf.md
    python -m benchmarks list

Exit status: 0; 1 when any two tools (or a tool and the published count) disagree on a count;
2 a record that cannot be read or a report that cannot be written (one line on stderr).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

from nx_gsm.interop.atomic import atomic_open

from .machine import portable
from .report import markdown, summarize
from .suites import PATTERNS, build_suite, suite_names
from .tools import DEFAULT_ENGINES, DEFAULT_PEERS, PEERS, Unavailable, resolve_tool

PROTOCOLS = {"first100k": 100_000, "all": None}


def _parser():
    p = argparse.ArgumentParser(prog="python -m benchmarks", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)

    r = sub.add_parser("run", help="run suites and write a record",
                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    r.add_argument("--suite", "--suites", dest="suites", nargs="+", required=True,
                   metavar="NAME", help="suite names (see 'list'); several allowed")
    r.add_argument("--engines", nargs="*", default=list(DEFAULT_ENGINES), metavar="ENGINE",
                   help="our engines: cpu, cpu<N> (N Numba threads), gmatch, gsi, geneva, ...")
    r.add_argument("--peers", nargs="*", default=list(DEFAULT_PEERS), metavar="PEER",
                   help=f"peers: {', '.join(PEERS)}, or module:Class; none with a bare --peers")
    r.add_argument("--protocol", choices=sorted(PROTOCOLS), default="first100k",
                   help="first100k: count up to 100,000 embeddings (Sun & Luo); all: exact count")
    r.add_argument("--limit", type=int, default=None,
                   help="count up to this many embeddings (overrides --protocol)")
    r.add_argument("--induced", action="store_true",
                   help="count node-induced subgraph isomorphisms instead of monomorphisms")
    r.add_argument("--timeout", type=float, default=None,
                   help="per-query timeout in seconds, for every tool (default 10; --quick: 5)")
    r.add_argument("--repeat", type=int, default=3,
                   help="repeat a fast query up to this many times (while the runs total under "
                        "1 s) and keep the minimum; 1: one run each")
    r.add_argument("--queries", type=int, default=None,
                   help="queries per Sun & Luo group, evenly spaced ids (default all; quick: 2)")
    r.add_argument("--quick", action="store_true",
                   help="a few tiny queries per suite (CI smoke test)")
    r.add_argument("--patterns", nargs="+", default=None, choices=list(PATTERNS), metavar="P",
                   help=f"SNAP suites: patterns among {', '.join(PATTERNS)} "
                        "(default all; quick: triangle P3)")
    r.add_argument("--labels", type=int, default=None, metavar="K",
                   help="SNAP suites: give nodes seeded random labels in 0..K-1")
    r.add_argument("--seed", type=int, default=0, help="seed for --labels and the tiny suite")
    r.add_argument("--datasets", default=None,
                   help="datasets folder (default $NX_GSM_DATASETS or ../shared/datasets)")
    r.add_argument("--mem-limit-gb", type=float, default=4.0,
                   help="address-space limit of each peer's worker (0: none)")
    r.add_argument("--out", default=None, help="write the JSON record here (updated per query)")
    r.add_argument("--markdown", default=None, help="write the Markdown report here")
    r.add_argument("--figures", default=None, metavar="DIR",
                   help="write PNG figures and DIR/report.md here (needs matplotlib; "
                        "needs --out)")
    r.add_argument("--no-per-query", action="store_true",
                   help="leave the per-query table out of the printed report")
    r.add_argument("--no-progress", action="store_true", help="no progress bar")

    rep = sub.add_parser("report", help="the Markdown report of saved records; with --out, "
                         "PNG figures and a report across them")
    rep.add_argument("records", nargs="+", metavar="RECORD",
                     help="JSON records written by 'run --out'")
    rep.add_argument("--out", default=None, metavar="DIR",
                     help="write PNG figures and the report (default DIR/report.md) here "
                          "(needs matplotlib)")
    rep.add_argument("--markdown", default=None,
                     help="write the report here instead of stdout (with --out: instead of "
                          "DIR/report.md; image links relative to it)")
    rep.add_argument("--title", default=None, help="with --out: the report's title")
    rep.add_argument("--no-per-query", action="store_true")

    sub.add_parser("list", help="list suites and tools (and whether the peers import)")
    return p


def _list():
    print("suites:")
    for name in suite_names():
        try:
            s = build_suite(name)
            print(f"  {name:20s} {s.description}")
        except Exception as exc:  # missing data: say why
            print(f"  {name:20s} (unavailable: {exc})")
    print("peers:")
    mods = {"nx-vf2": "networkx", "rustworkx": "rustworkx", "rustworkx-id": "rustworkx",
            "igraph-lad": "igraph", "igraph-vf2": "igraph"}
    for name in PEERS:
        tool = resolve_tool(name)
        try:
            if name in mods:
                importlib.import_module(mods[name])
            else:
                tool.check()
            ok = "installed"
        except (ImportError, Unavailable):
            ok = "NOT installed"
        print(f"  {name:14s} {ok:14s} {tool.description}")
    print("engines: cpu, cpu<N> (CPU engine on N threads), and nx_gsm's GPU engines by name")
    try:
        from nx_gsm.engines import available_engines

        for name, reason in available_engines().items():
            print(f"  {name:14s} {'available' if reason is None else reason}")
    except Exception as exc:
        print(f"  (cannot query nx_gsm engines: {exc})")


def _report(args):
    from .figures import load_record, render_report

    records = [load_record(p) for p in args.records]
    if args.out is not None:
        md = render_report(records, args.out, names=[os.path.basename(p) for p in args.records],
                           markdown_path=args.markdown, title=args.title)
        print(f"wrote {md} and figures in {args.out}", file=sys.stderr)
    else:
        texts = []
        for record in records:
            record["summary"] = summarize(record)
            texts.append(markdown(record, per_query=not args.no_per_query))
        text = "\n\n".join(texts)
        if args.markdown:
            with atomic_open(args.markdown, "w", encoding="utf-8") as fh:
                fh.write(text + "\n")
        else:
            print(text)
    return 1 if any(r["mismatches"] for r in records) else 0


def main(argv=None):
    args = _parser().parse_args(argv)
    if args.cmd == "list":
        _list()
        return 0
    if args.cmd == "report":
        try:
            return _report(args)
        except (OSError, ValueError, RuntimeError) as exc:
            # a missing or foreign record, an unwritable target, no matplotlib: one line
            print(f"python -m benchmarks report: error: {exc}", file=sys.stderr)
            return 2
    if args.figures is not None:
        # checked before the run, which may take hours, rather than after it
        if args.out is None:
            _parser().error("--figures needs --out (the record the figures are drawn from)")
        if importlib.util.find_spec("matplotlib") is None:
            _parser().error("--figures needs matplotlib: pip install matplotlib "
                            "(or nx-gsm[bench])")

    from .runner import run

    if args.limit is not None:
        limit, protocol = args.limit, f"first{args.limit}"
    else:
        limit, protocol = PROTOCOLS[args.protocol], args.protocol
    timeout = args.timeout if args.timeout is not None else (5.0 if args.quick else 10.0)
    record = run(suites=args.suites, engines=args.engines, peers=args.peers, limit=limit,
                 protocol=protocol, induced=args.induced, timeout=timeout,
                 repeat=max(1, args.repeat), queries=args.queries,
                 quick=args.quick, labels=args.labels, seed=args.seed, patterns=args.patterns,
                 datasets=args.datasets, mem_limit_gb=args.mem_limit_gb, out=args.out,
                 progress=not args.no_progress,
                 argv=[portable(a) for a in (sys.argv if argv is None else argv)])
    text = markdown(record, per_query=not args.no_per_query)
    if args.markdown:
        with atomic_open(args.markdown, "w", encoding="utf-8") as fh:
            fh.write(markdown(record) + "\n")
    print(text)
    if args.figures is not None:
        from .figures import render_report

        md = render_report([record], args.figures, names=[os.path.basename(args.out)])
        print(f"wrote {md} and figures in {args.figures}", file=sys.stderr)
    if record["mismatches"]:
        print(f"\n[bench] COUNT MISMATCH on {len(record['mismatches'])} queries: see the record",
              file=sys.stderr)
        return 1
    return 0
