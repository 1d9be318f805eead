"""Issue 53's reliability findings: argument checks, degenerate plans on engine objects, output
forms of odd keys and of the empty pattern, and writers that never destroy an existing file.

Expected answers come from NetworkX's VF2 (GraphMatcher) or from the definition of the argument.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import networkx as nx
import numpy as np
import pytest
from networkx.algorithms.isomorphism import DiGraphMatcher, GraphMatcher

import nx_gsm
from nx_gsm.engines.base import Budget


def _vf2(G, H, induced=False):
    gm = (DiGraphMatcher if G.is_directed() else GraphMatcher)(G, H)
    it = gm.subgraph_isomorphisms_iter() if induced else gm.subgraph_monomorphisms_iter()
    return [dict(m) for m in it]


# -- finding 4: arguments -------------------------------------------------------------------
@pytest.mark.parametrize("bad", [float("nan"), np.float32("nan"), np.float64("nan"), -1, -0.5,
                                 np.int64(-3)])
def test_timeout_nan_and_negative_raise_value_error(bad):
    G, H = nx.cycle_graph(5), nx.path_graph(3)
    for call in (lambda: nx_gsm.count_subgraph_monomorphisms(G, H, timeout=bad),
                 lambda: nx_gsm.subgraph_monomorphisms(G, H, timeout=bad),
                 lambda: nx_gsm.find_subgraph_isomorphisms(G, H, timeout=bad),
                 lambda: list(nx_gsm.match_frames(G, H, timeout=bad))):
        with pytest.raises(ValueError, match="timeout"):
            call()


@pytest.mark.parametrize("bad", [True, np.bool_(False), "1", [1], 1j])
def test_timeout_wrong_type_raises_type_error(bad):
    with pytest.raises(TypeError, match="timeout"):
        nx_gsm.count_subgraph_monomorphisms(nx.cycle_graph(5), nx.path_graph(3), timeout=bad)


@pytest.mark.parametrize("ok", [np.int64(5), np.float32(5.0), np.float64(5), np.uint8(5), 5,
                                5.0, float("inf"), 10**400])
def test_timeout_accepts_numpy_numbers_and_infinity(ok):
    G, H = nx.cycle_graph(5), nx.path_graph(3)
    want = len(_vf2(G, H))
    assert nx_gsm.count_subgraph_monomorphisms(G, H, timeout=ok) == want
    assert len(list(nx_gsm.subgraph_monomorphisms(G, H, timeout=ok))) == want


def test_infinite_timeout_means_no_deadline():
    assert Budget(float("inf")).deadline is None
    assert Budget(10**400).deadline is None
    assert Budget(np.float32(2.5)).deadline is not None


@pytest.mark.parametrize("bad", ["yes", 1, 0, None, 2.0])
def test_progress_must_be_bool_or_callable(bad):
    with pytest.raises(TypeError, match="progress"):
        nx_gsm.count_subgraph_monomorphisms(nx.cycle_graph(5), nx.path_graph(3), progress=bad)


def test_progress_accepts_numpy_bool_and_callables():
    G, H = nx.cycle_graph(5), nx.path_graph(3)
    want = len(_vf2(G, H))
    assert nx_gsm.count_subgraph_monomorphisms(G, H, progress=np.bool_(False)) == want
    assert nx_gsm.count_subgraph_monomorphisms(G, H, progress=lambda *a: None) == want


@pytest.mark.parametrize("lim", [np.int64(3), np.uint16(3), np.int8(3)])
def test_limit_accepts_numpy_integers(lim):
    G, H = nx.cycle_graph(5), nx.path_graph(3)
    assert nx_gsm.count_subgraph_monomorphisms(G, H, limit=lim) == 3
    assert len(list(nx_gsm.subgraph_monomorphisms(G, H, limit=lim))) == 3
    assert nx_gsm.find_subgraph_monomorphisms(G, H, limit=lim).count == 3


@pytest.mark.parametrize("bad,exc", [(-1, ValueError), (np.int64(-1), ValueError),
                                     (True, TypeError), (1.0, TypeError), ("2", TypeError),
                                     (np.bool_(True), TypeError)])
def test_limit_rejects_bad_values(bad, exc):
    with pytest.raises(exc, match="limit"):
        nx_gsm.count_subgraph_monomorphisms(nx.cycle_graph(5), nx.path_graph(3), limit=bad)


@pytest.mark.parametrize("fn", ["is_subgraph_monomorphic", "is_subgraph_isomorphic"])
def test_is_subgraph_functions_refuse_limit_with_their_own_message(fn):
    f = getattr(nx_gsm, fn)
    with pytest.raises(TypeError, match=rf"{fn}\(\) takes no 'limit'"):
        f(nx.cycle_graph(4), nx.path_graph(3), limit=5)
    induced = fn == "is_subgraph_isomorphic"
    for G, H in ((nx.cycle_graph(4), nx.path_graph(3)), (nx.complete_graph(4), nx.path_graph(3)),
                 (nx.path_graph(3), nx.cycle_graph(3))):
        assert f(G, H, timeout=np.float32(10)) == bool(_vf2(G, H, induced))


def test_cli_rejects_nan_timeout(capsys, tmp_path):
    from nx_gsm.cli import EXIT_ERROR, main

    g = tmp_path / "g.edgelist"
    g.write_text("0 1\n1 2\n")
    rc = main(["match", str(g), str(g), "--timeout", "nan"])
    err = capsys.readouterr().err
    assert rc == EXIT_ERROR
    assert "--timeout" in err and "nan" in err


# -- finding 5: degenerate plans on engine objects, in child processes ----------------------
_CHILD = textwrap.dedent('''
    import json, sys
    import networkx as nx
    from networkx.algorithms.isomorphism import DiGraphMatcher, GraphMatcher
    from nx_gsm.api import prepare
    from nx_gsm.engines.cpu import CpuEngine
    from nx_gsm.engines.partitioned import PartitionedEngine

    def vf2(G, H, mode):
        gm = (DiGraphMatcher if G.is_directed() else GraphMatcher)(G, H)
        it = {"mono": gm.subgraph_monomorphisms_iter, "induced": gm.subgraph_isomorphisms_iter,
              "iso": gm.isomorphisms_iter}[mode]()
        return {frozenset(m.items()) for m in it}

    def loop(n):
        H = nx.empty_graph(n)
        H.add_edge(0, 0)
        return H

    engine = {"cpu": lambda: CpuEngine(),
              "partitioned": lambda: PartitionedEngine(inner="cpu", parts=2)}[sys.argv[1]]()
    datas = [nx.Graph(), nx.empty_graph(1), nx.path_graph(4), nx.empty_graph(3), loop(3),
             nx.complete_graph(3)]
    patterns = [nx.Graph(), nx.empty_graph(1), loop(1), nx.path_graph(2), nx.empty_graph(2)]
    bad = []
    n = 0
    for directed in (False, True):
        for G0 in datas:
            for H0 in patterns:
                G = nx.DiGraph(G0) if directed else G0
                H = nx.DiGraph(H0) if directed else H0
                for mode in ("mono", "induced", "iso"):
                    want = vf2(G, H, mode)
                    plan = prepare(G, H, mode)[0]
                    gk, hk = plan.G.node_keys, plan.H.node_keys
                    for limit in (None, 0, 1, 2):
                        n += 1
                        cap = len(want) if limit is None else min(len(want), limit)
                        c = engine.count(plan, limit)
                        got = set()
                        rows = 0
                        for chunk in engine.iter_chunks(plan, limit=limit):
                            for row in chunk.tolist():
                                rows += 1
                                got.add(frozenset((gk[v], hk[int(u)])
                                                  for v, u in zip(row, plan.order)))
                        ok = c == cap and rows == cap and len(got) == cap and got <= want
                        if not ok:
                            bad.append([directed, len(G), len(H), mode, limit, int(c), rows,
                                        len(want)])
    print(json.dumps({"cases": n, "bad": bad}))
''')


@pytest.mark.parametrize("engine", ["cpu", "partitioned"])
def test_engine_objects_on_degenerate_plans_in_a_child_process(engine):
    """Empty and one-node patterns, empty graphs, limits 0/1/2, on the engine objects
    themselves (no API guard in front): the child must exit 0 with VF2's answers."""
    proc = subprocess.run([sys.executable, "-c", _CHILD, engine], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-2000:])
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["cases"] == 2 * 6 * 5 * 3 * 4
    assert res["bad"] == []


@pytest.mark.parametrize("bad,exc", [(-1, ValueError), (1.5, TypeError), (True, TypeError)])
def test_engine_objects_check_limit(bad, exc):
    from nx_gsm.api import prepare
    from nx_gsm.engines.cpu import CpuEngine
    from nx_gsm.engines.partitioned import PartitionedEngine

    plan = prepare(nx.path_graph(4), nx.path_graph(2), "mono")[0]
    for eng in (CpuEngine(), PartitionedEngine(inner="cpu", parts=2)):
        with pytest.raises(exc, match="limit"):
            eng.count(plan, bad)
        with pytest.raises(exc, match="limit"):
            list(eng.iter_chunks(plan, limit=bad))
