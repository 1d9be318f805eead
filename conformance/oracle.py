"""Check one case against NetworkX's VF2, shrink failures, and print them as runnable code.

The oracle is :mod:`networkx.algorithms.isomorphism`'s VF2 matcher of the graph's class
(``GraphMatcher``, ``DiGraphMatcher``, ``MultiGraphMatcher``, ``MultiDiGraphMatcher``), called as
``Matcher(G, H, node_match, edge_match)``:

* ``mono``    -> ``subgraph_monomorphisms_iter()`` vs ``nx_gsm.subgraph_monomorphisms``
* ``induced`` -> ``subgraph_isomorphisms_iter()``  vs ``nx_gsm.subgraph_isomorphisms``
* ``iso``     -> ``isomorphisms_iter()``            vs ``nx_gsm.isomorphisms``

What is compared (any failure is a *difference*):

1. the **set** of mappings, each as a ``frozenset`` of ``(G_node, H_node)`` items;
2. no mapping yielded twice by nx_gsm;
3. ``count_subgraph_*`` equals the oracle's set size (mono/induced);
4. ``limit``: ``limit=L`` (about half the answer) yields ``min(L, n)`` distinct oracle mappings and
   the count with ``limit=L`` is ``min(L, n)``; ``limit=0`` yields nothing and counts 0;
5. nx_gsm raises nothing.

A failing case is shrunk greedily (drop nodes, then edges, of either graph while the failure
persists) so that the report shows a small reproduction, printed as self-contained Python.
"""

from __future__ import annotations

import time
import traceback

from networkx.algorithms import isomorphism as iso

import nx_gsm

__all__ = ["vf2_mappings", "check_case", "shrink_case", "repro_code", "MATCHERS"]

MATCHERS = {
    "Graph": iso.GraphMatcher,
    "DiGraph": iso.DiGraphMatcher,
    "MultiGraph": iso.MultiGraphMatcher,
    "MultiDiGraph": iso.MultiDiGraphMatcher,
}
_VF2_ITER = {
    "mono": "subgraph_monomorphisms_iter",
    "induced": "subgraph_isomorphisms_iter",
    "iso": "isomorphisms_iter",
}
_GSM_ITER = {
    "mono": "subgraph_monomorphisms",
    "induced": "subgraph_isomorphisms",
    "iso": "isomorphisms",
}
_GSM_COUNT = {
    "mono": "count_subgraph_monomorphisms",
    "induced": "count_subgraph_isomorphisms",
}


def vf2_mappings(case):
    """The oracle's mappings as a set of frozensets of ``(G_node, H_node)`` items."""
    M = MATCHERS[case.cls](case.G, case.H, **case.oracle_kwargs())
    return {frozenset(m.items()) for m in getattr(M, _VF2_ITER[case.mode])()}


def _fmt_map(m):
    return "{" + ", ".join(f"{g!r}: {h!r}" for g, h in sorted(m, key=repr)) + "}"


def _problems(case, engine, expected):
    """List of human-readable problems of nx_gsm on ``case`` (empty when it conforms)."""
    kw = case.gsm_kwargs()
    probs = []
    n = len(expected)
    try:
        ours = [frozenset(m.items())
                for m in getattr(nx_gsm, _GSM_ITER[case.mode])(case.G, case.H, engine=engine,
                                                               **kw)]
    except Exception as exc:  # noqa: BLE001 -- any exception is a difference
        return [f"{_GSM_ITER[case.mode]} raised {type(exc).__name__}: {exc}",
                "  " + traceback.format_exc(limit=-3).strip().replace("\n", "\n  ")]
    got = set(ours)
    if len(ours) != len(got):
        probs.append(f"{len(ours) - len(got)} duplicate mapping(s) among {len(ours)} yielded")
    missing, extra = expected - got, got - expected
    if missing or extra:
        probs.append(f"mappings: VF2 {n}, nx_gsm {len(got)} distinct "
                     f"({len(missing)} missing, {len(extra)} extra)")
        if missing:
            probs.append(f"  e.g. missing {_fmt_map(min(missing, key=repr))}")
        if extra:
            probs.append(f"  e.g. extra   {_fmt_map(min(extra, key=repr))}")
    count_fn = _GSM_COUNT.get(case.mode)
    if count_fn is not None:
        try:
            c = getattr(nx_gsm, count_fn)(case.G, case.H, engine=engine, **kw)
            if c != n:
                probs.append(f"{count_fn} = {c}, VF2 has {n}")
        except Exception as exc:  # noqa: BLE001
            probs.append(f"{count_fn} raised {type(exc).__name__}: {exc}")
    # limit: about half of the answer (at least 1), and 0
    lim = max(1, n // 2)
    try:
        zero = list(getattr(nx_gsm, _GSM_ITER[case.mode])(case.G, case.H, engine=engine,
                                                          limit=0, **kw))
        if zero:
            probs.append(f"limit=0 yielded {len(zero)} mapping(s)")
        if count_fn is not None:
            c = getattr(nx_gsm, count_fn)(case.G, case.H, engine=engine, limit=0, **kw)
            if c != 0:
                probs.append(f"{count_fn}(limit=0) = {c}")
        part = [frozenset(m.items())
                for m in getattr(nx_gsm, _GSM_ITER[case.mode])(case.G, case.H, engine=engine,
                                                               limit=lim, **kw)]
        if len(part) != min(lim, n) or len(set(part)) != len(part) or not set(part) <= expected:
            probs.append(f"limit={lim}: got {len(part)} mapping(s) ({len(set(part))} distinct, "
                         f"{len(set(part) - expected)} not VF2's), want {min(lim, n)}")
        if count_fn is not None:
            c = getattr(nx_gsm, count_fn)(case.G, case.H, engine=engine, limit=lim, **kw)
            if c != min(lim, n):
                probs.append(f"{count_fn}(limit={lim}) = {c}, want {min(lim, n)}")
    except Exception as exc:  # noqa: BLE001
        probs.append(f"with limit=0 or {lim} raised {type(exc).__name__}: {exc}")
    return probs


def check_case(case, engine="cpu", shrink=True, shrink_budget=400):
    """Run one case. Returns a result dict::

        {"id", "ok", "expected" (VF2's count), "vf2_s", "gsm_s", "problems" (list of str),
         and when failing "description", "repro" (Python source of a shrunk reproduction)}

    An exception inside VF2 itself (it should not happen) is reported as a problem too, marked
    ``oracle_error``.
    """
    t0 = time.perf_counter()
    try:
        expected = vf2_mappings(case)
    except Exception as exc:  # noqa: BLE001
        return {"id": case.id, "ok": False, "oracle_error": True, "expected": None,
                "vf2_s": time.perf_counter() - t0, "gsm_s": 0.0,
                "problems": [f"VF2 oracle raised {type(exc).__name__}: {exc}"],
                "description": case.describe(), "repro": repro_code(case, "cpu")}
    t1 = time.perf_counter()
    probs = _problems(case, engine, expected)
    t2 = time.perf_counter()
    res = {"id": case.id, "ok": not probs, "expected": len(expected), "vf2_s": t1 - t0,
           "gsm_s": t2 - t1, "problems": probs}
    if probs:
        res["description"] = case.describe()
        small = shrink_case(case, engine, shrink_budget) if shrink else case
        res["shrunk"] = small is not case
        if small is not case:
            res["shrunk_description"] = small.describe()
            res["shrunk_problems"] = _problems(small, engine, vf2_mappings(small))
        res["repro"] = repro_code(small, engine)
    return res


def _fails(case, engine):
    try:
        return bool(_problems(case, engine, vf2_mappings(case)))
    except Exception:  # noqa: BLE001 -- a shrink step that breaks the oracle is not taken
        return False


def shrink_case(case, engine="cpu", budget=400):
    """Greedy shrink: repeatedly drop one node (H first, then G) or one edge while the case still
    fails; at most ``budget`` re-checks. Returns the smallest failing case found."""
    cur = case
    tries = 0
    progress = True
    while progress and tries < budget:
        progress = False
        for which in ("H", "G"):
            for step in ("node", "edge"):
                X = getattr(cur, which)
                items = (list(X.nodes()) if step == "node"
                         else list(X.edges(keys=True) if X.is_multigraph() else X.edges()))
                for it in items:
                    if tries >= budget:
                        return cur
                    Y = X.copy()
                    if step == "node":
                        Y.remove_node(it)
                    else:
                        Y.remove_edge(*it)
                    cand = cur.with_graphs(Y, cur.H) if which == "G" else cur.with_graphs(cur.G, Y)
                    tries += 1
                    if _fails(cand, engine):
                        cur = cand
                        progress = True
                        break
                if progress:
                    break
            if progress:
                break
    return cur


def _graph_code(name, X):
    lines = [f"{name} = nx.{type(X).__name__}()"]
    lines.append(f"{name}.add_nodes_from({[(u, d) for u, d in X.nodes(data=True)]!r})")
    if X.is_multigraph():
        edges = [(u, v, k, d) for u, v, k, d in X.edges(keys=True, data=True)]
    else:
        edges = [(u, v, d) for u, v, d in X.edges(data=True)]
    lines.append(f"{name}.add_edges_from({edges!r})")
    return "\n".join(lines)


def repro_code(case, engine="cpu"):
    """Self-contained Python that prints nx_gsm's and VF2's answers for ``case``."""
    kw = ", ".join(f"{k}={v}" for k, v in case.matchers.items())
    okw = []
    for k, v in case.matchers.items():
        if k == "node_label":
            okw.append(f"node_match=iso.categorical_node_match({v}, None)")
        elif k == "edge_label":
            okw.append(f"edge_match=iso.categorical_edge_match({v}, None)")
        else:
            okw.append(f"{k}={v}")
    sep = ", " if kw else ""
    osep = ", " if okw else ""
    lines = [
        "import operator, networkx as nx, nx_gsm",
        "from networkx.algorithms import isomorphism as iso",
        _graph_code("G", case.G),
        _graph_code("H", case.H),
        f"ours = list(nx_gsm.{_GSM_ITER[case.mode]}(G, H, engine={engine!r}{sep}{kw}))",
        f"vf2 = list(iso.{MATCHERS[case.cls].__name__}(G, H{osep}{', '.join(okw)})"
        f".{_VF2_ITER[case.mode]}())",
        "print('nx_gsm', len(ours), 'VF2', len(vf2), 'same set:', "
        "{frozenset(m.items()) for m in ours} == {frozenset(m.items()) for m in vf2})",
    ]
    if "nan" in lines[2] or "nan" in lines[3]:
        lines.insert(2, "nan = float('nan')")
    if case.mode in _GSM_COUNT:
        lines.append(f"print('count', nx_gsm.{_GSM_COUNT[case.mode]}(G, H, engine={engine!r}"
                     f"{sep}{kw}))")
    return "\n".join(lines)

