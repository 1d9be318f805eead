"""The ``nx-gsm`` command.

    nx-gsm demo                         match bundled yeast queries, check published counts
    nx-gsm match DATA PATTERN [--induced] [--count] [--limit N] [--engine E] [--output F]
    nx-gsm info                         versions, devices, engines and why any is unavailable

Graphs are read by extension: ``.graph`` (t/v/e), ``.graphml``, ``.gml``, anything else as a
whitespace edge list. Errors print one line to stderr and exit with status 2.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time


def _read(path, *, edge_labels=True):
    import networkx as nx

    from .interop.files import read_graph

    low = str(path).lower()
    if low.endswith(".graph"):
        return read_graph(path, edge_labels=edge_labels)
    if low.endswith(".graphml"):
        return nx.read_graphml(path)
    if low.endswith(".gml"):
        return nx.read_gml(path)
    return nx.read_edgelist(path)


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
              f"{'yes' if ok else 'NO'}")
    path, _ = demo_queries()[2]
    H = _read(path, edge_labels=False)
    first = next(api.subgraph_monomorphisms(G, H, node_label="label", engine=args.engine))
    print(f"one match of {path.name} ({{yeast node: query node}}): {first}")
    print("first call includes JIT compilation (cached for later runs)")
    return 1 if bad else 0


def _match(args):
    from . import api

    G, H = _read(args.data), _read(args.pattern, edge_labels=not args.no_edge_labels)
    kw = dict(engine=args.engine, limit=args.limit)
    if args.label:
        kw["node_label"] = args.label
    if args.count:
        fn = api.count_subgraph_isomorphisms if args.induced else api.count_subgraph_monomorphisms
        print(fn(G, H, **kw))
        return 0
    fn = api.subgraph_isomorphisms if args.induced else api.subgraph_monomorphisms
    it = fn(G, H, **kw)
    hnodes = list(H)
    out = open(args.output, "w", newline="", encoding="utf-8") if args.output else sys.stdout
    try:
        if args.output and args.output.endswith(".jsonl"):
            for m in it:
                inv = {h: g for g, h in m.items()}
                out.write(json.dumps({str(h): inv[h] for h in hnodes}, default=str) + "\n")
        else:
            w = csv.writer(out)
            w.writerow(hnodes)
            for m in it:
                inv = {h: g for g, h in m.items()}
                w.writerow([inv[h] for h in hnodes])
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


def _info(args):
    import platform

    import networkx as nx
    import numba
    import numpy as np

    from . import __version__
    from .engines import available_engines

    print(f"nx-gsm {__version__}; Python {platform.python_version()}; NetworkX {nx.__version__}; "
          f"NumPy {np.__version__}; Numba {numba.__version__} ({numba.config.NUMBA_NUM_THREADS} "
          "CPU threads)")
    for name, reason in available_engines().items():
        print(f"  engine {name:<7} {'available' if reason is None else 'unavailable: ' + reason}")
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="nx-gsm", description="GPU/CPU subgraph matching")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("demo", help="match bundled yeast queries and check published counts")
    d.add_argument("--engine", default="auto")
    m = sub.add_parser("match", help="find or count embeddings of PATTERN in DATA")
    m.add_argument("data")
    m.add_argument("pattern")
    m.add_argument("--induced", action="store_true", help="node-induced (default: monomorphism)")
    m.add_argument("--count", action="store_true", help="print only the number of matches")
    m.add_argument("--limit", type=int, default=None)
    m.add_argument("--engine", default="auto")
    m.add_argument("--label", default=None, help="node attribute that must be equal")
    m.add_argument("--no-edge-labels", action="store_true",
                   help="ignore the 4th field of 'e' lines in the pattern (.graph files)")
    m.add_argument("--output", default=None, help="write .csv or .jsonl instead of stdout")
    sub.add_parser("info", help="versions, devices and engines")
    args = p.parse_args(argv)
    try:
        return {"demo": _demo, "match": _match, "info": _info}[args.cmd](args)
    except (OSError, ValueError, TypeError, RuntimeError, KeyError) as exc:
        print(f"nx-gsm {args.cmd}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
