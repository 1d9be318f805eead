"""Command line: ``python -m conformance {run,list,show}``.

``run``   check the engine against VF2 on the generated cases and against the published yeast
          counts; print a summary; exit 1 on any difference (2 if the engine cannot run here).
``list``  print how many cases each category has (no matching).
``show``  print one case (by id) as runnable Python, e.g. to debug a reported difference.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

from .generator import generate_cases, make_case
from .oracle import check_case, repro_code
from .suite import engine_unavailable, format_report, run_suite
from .yeast import DEFAULT_MAX_COUNT


def _parser():
    p = argparse.ArgumentParser(prog="python -m conformance", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the suite")
    r.add_argument("--engine", default="cpu", help="nx_gsm engine (default: cpu)")
    r.add_argument("--quick", action="store_true",
                   help="one case per category (~780) and the 4-/8-vertex yeast queries only")
    r.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    r.add_argument("--cases", type=int, default=None,
                   help="run only the first N generated cases (0: yeast only)")
    r.add_argument("--only", default=None,
                   help="only generated cases whose id contains this (e.g. MultiGraph/induced)")
    r.add_argument("--yeast", action=argparse.BooleanOptionalAction, default=True,
                   help="check the published yeast counts (default: yes)")
    r.add_argument("--yeast-max-count", type=int, default=DEFAULT_MAX_COUNT,
                   help="skip yeast queries with a larger published count (default 10**6)")
    r.add_argument("--yeast-sizes", type=lambda s: [int(x) for x in s.split(",")], default=None,
                   help="only yeast queries of these sizes, e.g. 4,8")
    r.add_argument("--yeast-time-budget", type=float, default=None, metavar="SECONDS",
                   help="stop starting yeast queries after this long (at least 200 are checked)")
    r.add_argument("--datasets", default=None,
                   help="datasets folder (default: ../shared/datasets beside the clone)")
    r.add_argument("--no-shrink", action="store_true", help="do not shrink failing cases")
    r.add_argument("--json", default=None, metavar="OUT", help="also write the report as JSON")
    r.add_argument("-q", "--quiet", action="store_true", help="no progress lines")
    ls = sub.add_parser("list", help="count the generated cases per category")
    ls.add_argument("--quick", action="store_true")
    ls.add_argument("--seed", type=int, default=0)
    sh = sub.add_parser("show", help="print one case as runnable Python and check it")
    sh.add_argument("case_id", help="e.g. MultiGraph/mono/lambda/selfloops/int/r0")
    sh.add_argument("--seed", type=int, default=0)
    sh.add_argument("--engine", default="cpu")
    fz = sub.add_parser("fuzz", help="the hypothesis fuzzers (readers, API vs VF2) at a long "
                        "budget (CI runs them at a modest one)")
    fz.add_argument("--examples", type=int, default=3000, help="examples per fuzz test")
    return p


def _fuzz(examples):
    """Run tests/test_fuzz*.py with ``examples`` hypothesis examples per test."""
    import os
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, NX_GSM_FUZZ_EXAMPLES=str(examples))
    files = sorted(str(p) for p in (root / "tests").glob("test_fuzz*.py"))
    return subprocess.call([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                            *files], cwd=root, env=env)


def _progress(stage, done, total):
    if stage == "cases" and done % 250 == 0:
        print(f"  ... {done} cases", file=sys.stderr, flush=True)
    elif stage == "yeast":
        print(f"  ... yeast {done}/{total}", file=sys.stderr, flush=True)


def main(argv=None):
    args = _parser().parse_args(argv)
    if args.cmd == "list":
        cases = list(generate_cases(seed=args.seed, quick=args.quick))
        print(f"{len(cases)} cases ({'quick' if args.quick else 'full'}, seed {args.seed})")
        for axis in ("cls", "mode", "labels", "shape", "keys"):
            cnt = Counter(getattr(c, axis) for c in cases)
            print(f"  {axis}: " + ", ".join(f"{k} {v}" for k, v in cnt.items()))
        feats = Counter(f for c in cases for f in c.features)
        print("  features: " + ", ".join(f"{k} {v}" for k, v in sorted(feats.items())))
        return 0
    if args.cmd == "fuzz":
        return _fuzz(args.examples)
    if args.cmd == "show":
        case = make_case(args.seed, args.case_id)
        print("# " + case.describe())
        print(repro_code(case, args.engine))
        res = check_case(case, args.engine, shrink=False)
        print(f"# VF2: {res['expected']} mapping(s); "
              + ("nx_gsm agrees" if res["ok"] else "DIFFERS: " + "; ".join(res["problems"])))
        return 0 if res["ok"] else 1
    reason = engine_unavailable(args.engine)
    if reason is not None:
        print(f"engine {args.engine!r} cannot run here: {reason}", file=sys.stderr)
        return 2
    rep = run_suite(engine=args.engine, quick=args.quick, seed=args.seed, cases=args.cases,
                    yeast=args.yeast, only=args.only, shrink=not args.no_shrink,
                    yeast_max_count=args.yeast_max_count, yeast_sizes=args.yeast_sizes,
                    datasets=args.datasets, yeast_time_budget=args.yeast_time_budget,
                    progress=None if args.quiet else _progress)
    print(format_report(rep))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(rep, fh, indent=1, default=str)
    return 0 if rep["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
