"""The ``nx-gsm`` command.

    nx-gsm demo                      match bundled yeast queries, check the published counts
    nx-gsm match DATA PATTERN        find (or --count) embeddings of PATTERN in DATA
    nx-gsm explain DATA PATTERN      what the planner would do (text, or --json)
    nx-gsm info                      versions, devices, engines and why any is unavailable
    nx-gsm warmup                    compile every kernel variant now (later runs load them)

Graph files are read by extension (``--format`` overrides): ``.graph`` (t/v/e), ``.csv``/``.tsv``
(header row; ``source``/``target`` columns, ``source_<attr>``/``target_<attr>`` node attributes,
other columns edge attributes), ``.graphml``/``.xml``, ``.gml``, anything else a whitespace edge
list ``u v [label]``. See :mod:`nx_gsm.interop.formats`.

Benchmarks are not part of the installed package: a source checkout runs them with
``python -m benchmarks``.

Exit status: 0 success; 1 the demo found a wrong count; 2 an error (one line on stderr:
``nx-gsm <command>: error: ...``); 3 the search stopped at ``--timeout`` (the results printed
are partial, and stderr says ``partial: timeout``); 130 interrupted by Ctrl-C (results so far
printed, stderr says ``partial: interrupted``).
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import sys
import time

from .interop.atomic import AtomicFile

EXIT_OK = 0
EXIT_FAIL = 1
EXIT_ERROR = 2
EXIT_TIMEOUT = 3
EXIT_INTERRUPTED = 130


class CliError(Exception):
    """An error reported as one line on stderr (exit status 2)."""


# -- reading ----------------------------------------------------------------------------------
def _read(path, args=None, *, role="graph", edge_labels=True):
    from .interop.formats import read_any

    kw = {}
    if args is not None:
        # the matching functions take nx-gsm's own graph: reading into it skips building a
        # NetworkX graph only to convert it (large integer edge lists and CSV go from arrays)
        kw = {"fmt": args.format, "directed": args.directed, "csv_source": args.csv_source,
              "csv_target": args.csv_target, "csv_delimiter": args.csv_delimiter, "as_gsm": True}
    try:
        return read_any(path, edge_labels=edge_labels, **kw)
    except FileNotFoundError:
        raise CliError(f"{role} file {path}: no such file") from None
    except IsADirectoryError:
        raise CliError(f"{role} file {path}: is a directory") from None
    except PermissionError:
        raise CliError(f"{role} file {path}: permission denied") from None
    except (ValueError, OSError) as exc:
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise CliError(f"cannot read {role} file: {msg}") from None


def _read_pair(args):
    G = _read(args.data, args, role="data graph")
    H = _read(args.pattern, args, role="pattern", edge_labels=not args.no_edge_labels)
    if H.number_of_nodes() == 0:
        # the empty pattern matches once anywhere (GraphMatcher's rule): from a file that is
        # an empty or wrong file far more often than a question
        raise CliError(f"pattern file {args.pattern} has no nodes (an empty file, or only "
                       "comments?)")
    return G, H


def _graph_files(args):
    """Whether both files are in the t/v/e ``.graph`` format."""
    from .interop.formats import guess_format

    return all((args.format or guess_format(path)) == "graph" for path in (args.data,
                                                                          args.pattern))


def _match_kwargs(args):
    kw = {"engine": args.engine}
    if args.label and args.no_labels:
        raise CliError("give --label or --no-labels, not both")
    label = args.label
    if label is None and not args.no_labels and _graph_files(args):
        # every vertex of a t/v/e file has a label, and the query means it
        label = "label"
    if label:
        kw["node_label"] = label
    if args.edge_label:
        kw["edge_label"] = args.edge_label
    return kw


# -- demo -------------------------------------------------------------------------------------
def _demo(args):
    from . import api
    from .data import demo_graph_path, demo_queries
    from .engines import get_engine

    G = _read(demo_graph_path("yeast"))
    eng = get_engine(args.engine)
    print(f"nx-gsm demo: yeast protein network ({G.number_of_nodes()} nodes, "
          f"{G.number_of_edges()} edges), engine {eng.name}")
    print(f"{'query':<26}{'|V|':>4}{'matches':>12}{'published':>12}{'seconds':>9}  ok")
    bad = 0
    for path, published in demo_queries():
        H = _read(path, edge_labels=False)
        t = time.perf_counter()
        count = api.count_subgraph_monomorphisms(G, H, node_label="label", engine=args.engine)
        dt = time.perf_counter() - t
        ok = count == published
        bad += not ok
        print(f"{path.name:<26}{H.number_of_nodes():>4}{count:>12}{published:>12}{dt:>9.3f}  "
              f"{'yes' if ok else 'NO'}", flush=True)
    path, _ = demo_queries()[2]
    H = _read(path, edge_labels=False)
    first = next(api.subgraph_monomorphisms(G, H, node_label="label", engine=args.engine))
    print(f"one match of {path.name} ({{yeast node: query node}}): {first}")
    print("first call includes JIT compilation (cached for later runs)")
    return EXIT_FAIL if bad else EXIT_OK


# -- warmup -----------------------------------------------------------------------------------
def _warmup(args):
    from .precompile import warmup

    t = time.perf_counter()
    report = warmup(progress=not args.no_progress)
    print(f"nx-gsm warmup: {len(report['steps'])} steps in {time.perf_counter() - t:.1f} s; "
          f"compiled kernels cached in {report['cache_dir']}")
    for what, why in report["skipped"].items():
        print(f"skipped {what}: {why}")
    return EXIT_OK


# -- match ------------------------------------------------------------------------------------
def _partial_line(reason, timeout, found, what):
    if reason == "timeout":
        head = f"partial: timeout after {timeout:g} s"
    else:
        head = "partial: interrupted"
    print(f"{head}; {found} {what} found so far (a lower bound)", file=sys.stderr, flush=True)
    return EXIT_TIMEOUT if reason == "timeout" else EXIT_INTERRUPTED


def _check_output(path):
    if path is None:
        return None
    low = path.lower()
    for ext, kind in ((".csv", "csv"), (".jsonl", "jsonl"), (".ndjson", "jsonl"),
                      (".parquet", "parquet")):
        if low.endswith(ext):
            break
    else:
        raise CliError(f"--output {path}: unknown extension; use .csv, .jsonl or .parquet")
    if kind == "parquet":
        try:
            import pandas  # noqa: F401
            import pyarrow  # noqa: F401
        except ImportError:
            raise CliError("--output .parquet needs pandas and pyarrow "
                           "(pip install pandas pyarrow)") from None
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise CliError(f"--output {path}: folder {parent} does not exist")
    return kind


class _Rows:
    """Writes one row per match: the data node each pattern node maps to.

    Parquet is written in row groups of ``_PARQUET_ROWS`` rows, so memory stays bounded however
    many matches there are; its columns are int64 when every data node key is an int within
    int64's range, else strings. A file is written beside ``path`` and renamed over it by
    ``close(ok=True)`` only (:mod:`nx_gsm.interop.atomic`): a failed run leaves an existing file
    as it was. The empty pattern has one empty mapping: an empty CSV line under an empty header,
    or ``{}`` in JSON lines (Parquet cannot store rows without columns: refused up front).
    """

    _PARQUET_ROWS = 1 << 16

    def __init__(self, kind, path, hnodes, G):
        if kind == "parquet" and not hnodes:
            raise CliError("--output .parquet cannot store the empty pattern's one empty "
                           "mapping (a Parquet table without columns has no rows); use .csv or "
                           ".jsonl")
        self.kind, self.path, self.hnodes = kind, path, hnodes
        self.n = 0
        self.fh = None
        self.out = AtomicFile(path) if path else None
        try:
            self._open(G)
        except BaseException:
            if self.out is not None:
                self.out.discard()
            raise

    def _open(self, G):
        target = self.out.tmp if self.out else None
        if self.kind == "parquet":
            import pyarrow as pa
            import pyarrow.parquet as pq

            lo, hi = -(1 << 63), (1 << 63) - 1
            self.int_keys = all(type(v) is int and lo <= v <= hi for v in G)
            typ = pa.int64() if self.int_keys else pa.string()
            self.schema = pa.schema([(str(h), typ) for h in self.hnodes])
            self.writer = pq.ParquetWriter(target, self.schema)
            self.cols = [[] for _ in self.hnodes]
            return
        self.fh = open(target, "w", newline="", encoding="utf-8") if target else sys.stdout
        if self.kind != "jsonl":
            self.w = csv.writer(self.fh, lineterminator="\n")
            self.w.writerow(self.hnodes)
            self.fh.flush()  # the header is out before the search starts

    def add(self, m):
        inv = {h: g for g, h in m.items()}
        if self.kind == "parquet":
            for col, h in zip(self.cols, self.hnodes):
                col.append(inv[h] if self.int_keys else str(inv[h]))
            if len(self.cols[0]) >= self._PARQUET_ROWS:
                self._flush()
        elif self.kind == "jsonl":
            self.fh.write(json.dumps({str(h): inv[h] for h in self.hnodes}, default=str) + "\n")
        else:
            self.w.writerow([inv[h] for h in self.hnodes])
        self.n += 1

    def _flush(self):
        import pyarrow as pa

        if self.cols and self.cols[0]:
            self.writer.write_table(pa.Table.from_arrays(
                [pa.array(c, type=f.type) for c, f in zip(self.cols, self.schema)],
                schema=self.schema))
            self.cols = [[] for _ in self.hnodes]

    def close(self, ok=True):
        """Finish the file; with ``ok`` it replaces the target, else the target is untouched."""
        try:
            if self.kind == "parquet":
                if ok:
                    self._flush()
                self.writer.close()
            elif self.fh is not None:
                self.fh.flush()
                if self.fh is not sys.stdout:
                    self.fh.close()
        except BaseException:
            ok = False
            raise
        finally:
            if self.out is not None and ok:
                self.out.commit()
            elif self.out is not None:
                self.out.discard()


def _match(args):
    from . import api

    if args.limit is not None and args.limit < 0:
        raise CliError(f"--limit must be non-negative, got {args.limit}")
    # "not >=": NaN fails every comparison, and a NaN deadline would never pass
    if args.timeout is not None and not args.timeout >= 0:
        raise CliError(f"--timeout must be a non-negative number of seconds, got {args.timeout}")
    if args.count and args.output:
        raise CliError("--count prints a number; drop --output (or --count to write the matches)")
    kind = _check_output(args.output) or "csv"
    G, H = _read_pair(args)
    # a timeout (infinite when none is given) asks the library for what was found on Ctrl-C,
    # which the command prints as a partial result
    timeout = math.inf if args.timeout is None else args.timeout
    kw = dict(_match_kwargs(args), limit=args.limit, timeout=timeout,
              progress=bool(args.progress))
    if args.count:
        fn = api.count_subgraph_isomorphisms if args.induced else api.count_subgraph_monomorphisms
        n = fn(G, H, **kw)
        print(int(n), flush=True)
        if n.partial:
            return _partial_line(n.reason, args.timeout or 0, int(n), "matches")
        return EXIT_OK
    fn = api.subgraph_isomorphisms if args.induced else api.subgraph_monomorphisms
    it = fn(G, H, **kw)
    rows = _Rows(kind, args.output, list(H), G)
    reason = None
    try:
        for m in it:
            rows.add(m)
    except KeyboardInterrupt:
        # a partial result (stderr says so) is kept, as a timeout's is
        reason = "interrupted"
    except BaseException:
        rows.close(ok=False)
        raise
    rows.close()
    reason = reason or (it.reason if it.partial else None)
    if args.output:
        print(f"wrote {rows.n} matches to {args.output}", file=sys.stderr)
    if reason:
        return _partial_line(reason, args.timeout or 0, rows.n, "matches")
    return EXIT_OK


# -- explain ----------------------------------------------------------------------------------
def _jsonable(x):
    if isinstance(x, dict):
        return {str(k) if not isinstance(k, (str, int, float, bool)) else k: _jsonable(v)
                for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [_jsonable(v) for v in x]
    if isinstance(x, (str, int, float, bool)) or x is None:
        return x
    return str(x)


def _describe(G, path):
    kind = ("directed " if G.is_directed() else "") + ("multigraph" if G.is_multigraph()
                                                       else "graph")
    return f"{path}: {G.number_of_nodes()} nodes, {G.number_of_edges()} edges ({kind})"


def _explain(args):
    from . import api

    G, H = _read_pair(args)
    t = time.perf_counter()
    info = api.explain(G, H, induced=args.induced, **_match_kwargs(args))
    dt = time.perf_counter() - t
    if args.json:
        out = dict(_jsonable(info), data=_describe(G, args.data),
                   pattern=_describe(H, args.pattern), plan_seconds=dt)
        print(json.dumps(out, indent=2, default=str))
        return EXIT_OK
    mode = {"mono": "monomorphism (non-induced)", "induced": "subgraph isomorphism (node-induced)",
            "iso": "isomorphism"}.get(info["mode"], info["mode"])
    print(f"data      {_describe(G, args.data)}")
    print(f"pattern   {_describe(H, args.pattern)}")
    print(f"mode      {mode}")
    print(f"engine    {info['engine']}")
    if info.get("reason"):
        print(f"why       {info['reason']}")
    rows = (info.get("estimates") or {}).get("rows")
    if rows:
        print("estimate  partial matches per depth: " + ", ".join(f"{r:.3g}" for r in rows))
    print(f"planned   in {dt * 1e3:.1f} ms (conversion, labels, filtering, order; a process's "
          "first call also loads the compiled kernels)")
    if info["empty"]:
        print("result    no matches: filtering left some pattern node without candidates")
    order = info["order"]
    print("order     " + " -> ".join(map(str, order)) + "   (pattern nodes, matched first to last)")
    cands = info["candidates"]
    print("candidates per pattern node (data nodes left after label, degree and "
          "neighbourhood filtering):")
    w = max((len(str(u)) for u in cands), default=1)
    for u in order:
        print(f"  {str(u):>{w}}  {cands[u]}")
    for u in cands:
        if u not in order:
            print(f"  {str(u):>{w}}  {cands[u]}")
    for n in info.get("notes") or []:
        print(f"note      {n}")
    for name, why in (info.get("unavailable_engines") or {}).items():
        print(f"not used  {name}: {why}")
    return EXIT_OK


# -- info -------------------------------------------------------------------------------------
def _version(dist):
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _info(args):
    import platform

    import networkx as nx
    import numba
    import numpy as np

    from . import __version__
    from .engines import available_engines
    from .engines.gpu.device import device_reason

    print(f"nx-gsm {__version__}; Python {platform.python_version()}; NetworkX {nx.__version__}; "
          f"NumPy {np.__version__}; Numba {numba.__version__} ({numba.config.NUMBA_NUM_THREADS} "
          "CPU threads)")
    reason = device_reason()
    if reason is None:
        try:
            from .engines.gpu.device import device_info, free_and_total

            d = device_info()
            free, total = free_and_total()
            mem = f", {free / 2**30:.1f} of {total / 2**30:.1f} GiB free" if total else ""
            print(f"GPU: {d.get('name')} (compute capability {d.get('cc')}, "
                  f"{d.get('sm_count')} SMs{mem})")
        except Exception as exc:  # a half-working driver: say so, keep going
            print(f"GPU: usable, but its properties could not be read ({exc})")
    else:
        print(f"GPU: none usable: {reason}")
    for name, why in available_engines().items():
        print(f"  engine {name:<7} {'available' if why is None else 'unavailable: ' + why}")
    # the CuPy wheels of both CUDA majors, whichever are installed (none: say so once)
    cupys = [d for d in ("cupy-cuda13x", "cupy-cuda12x") if _version(d)] or ["cupy-cuda13x"]
    opt = {d: _version(d) for d in ("numba-cuda", *cupys, "pandas", "pyarrow", "pymetis",
                                    "distributed", "matplotlib", "rustworkx", "igraph")}
    print("optional: " + ", ".join(f"{d} {v or 'not installed'}" for d, v in opt.items()))
    from .kernel_cache import numba_cache_dir

    print(f"Numba JIT cache: {numba_cache_dir()}")
    return EXIT_OK


# -- parser -----------------------------------------------------------------------------------
class _Parser(argparse.ArgumentParser):
    """Usage errors as one line: ``nx-gsm: error: ... (see nx-gsm --help)``, exit status 2."""

    def error(self, message):
        self.exit(EXIT_ERROR, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _graph_options(p):
    from .engines import NAMES
    from .interop.formats import FORMATS

    p.add_argument("data", help="data graph file (the big graph)")
    p.add_argument("pattern", help="pattern graph file (the small graph)")
    p.add_argument("--induced", action="store_true",
                   help="node-induced subgraph isomorphism (default: monomorphism, non-induced)")
    p.add_argument("--engine", default="auto", choices=NAMES,
                   help="engine (default auto: the planner's choice)")
    p.add_argument("--label", metavar="ATTR", default=None,
                   help="node attribute that must be equal (every node must have it; "
                        "default 'label' when both files are .graph files)")
    p.add_argument("--no-labels", action="store_true",
                   help="match .graph files without their vertex labels")
    p.add_argument("--edge-label", metavar="ATTR", default=None,
                   help="edge attribute that must be equal (every edge must have it)")
    g = p.add_argument_group("input files")
    g.add_argument("--format", choices=FORMATS, default=None,
                   help="format of both files (default: by extension)")
    g.add_argument("--directed", action="store_true",
                   help="read .graph, edge lists and CSV as directed graphs (GraphML and GML "
                        "say so themselves)")
    g.add_argument("--csv-source", metavar="COL", default=None,
                   help="CSV column of the edge source (default 'source', else the 1st column)")
    g.add_argument("--csv-target", metavar="COL", default=None,
                   help="CSV column of the edge target (default 'target', else the 2nd column)")
    g.add_argument("--csv-delimiter", metavar="CHAR", default=None,
                   help="CSV delimiter (default ',' and a tab for .tsv)")
    g.add_argument("--no-edge-labels", action="store_true",
                   help="ignore the 4th field of 'e' lines in a .graph pattern")


def _parser():
    from .engines import NAMES

    p = _Parser(prog="nx-gsm", description="Subgraph isomorphism and monomorphism on GPUs and "
                "CPUs (NetworkX semantics).", epilog="Exit status: 0 ok; 1 the demo found a "
                "wrong count; 2 error; 3 stopped at --timeout (partial); 130 Ctrl-C (partial).")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND",
                           parser_class=_Parser)

    d = sub.add_parser("demo", help="match bundled yeast queries and check the published counts")
    d.add_argument("--engine", default="auto", choices=NAMES,
                   help="engine (default auto: the planner's choice)")

    m = sub.add_parser("match", help="find or count embeddings of PATTERN in DATA",
                       description="Print one CSV row per match (one column per pattern node, "
                       "holding the data node it maps to), or the number of matches.")
    _graph_options(m)
    m.add_argument("--count", action="store_true", help="print only the number of matches")
    m.add_argument("--limit", type=int, default=None, metavar="N", help="stop after N matches")
    m.add_argument("--timeout", type=float, default=None, metavar="S",
                   help="stop after S seconds and print what was found (exit status 3)")
    m.add_argument("--progress", action="store_true", help="show a progress bar on stderr")
    m.add_argument("--output", default=None, metavar="FILE",
                   help="write the matches to FILE (.csv, .jsonl or .parquet) instead of stdout")

    e = sub.add_parser("explain", help="show the planner's choice for DATA and PATTERN")
    _graph_options(e)
    e.add_argument("--json", action="store_true", help="print JSON instead of text")

    sub.add_parser("info", help="versions, devices, engines and why any is unavailable")

    w = sub.add_parser("warmup", help="compile every kernel variant now (later runs load them)",
                       description="Run tiny queries through every compiled path (CPU, and "
                       "the GPU engines where a GPU is usable) so that later processes load "
                       "the kernels from the cache instead of compiling them.")
    w.add_argument("--no-progress", action="store_true", help="no progress bar")

    return p


_COMMANDS = {"demo": _demo, "match": _match, "explain": _explain, "info": _info,
             "warmup": _warmup}


def main(argv=None):
    p = _parser()
    args = p.parse_args(argv)
    try:
        return _COMMANDS[args.cmd](args)
    except KeyboardInterrupt:
        print(f"nx-gsm {args.cmd}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # output piped into e.g. head, which closed it: stop quietly
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return EXIT_OK
    except Exception as exc:  # every error is one line; NX_GSM_DEBUG=1 shows the traceback
        if os.environ.get("NX_GSM_DEBUG"):
            raise
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        if not msg or not isinstance(exc, (CliError, ValueError, TypeError, RuntimeError,
                                           LookupError, OSError)) \
                and not type(exc).__module__.startswith("networkx"):
            # an unexpected kind of error: its type is part of the message
            msg = f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__
        print(f"nx-gsm {args.cmd}: error: {msg}", file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
