"""The GPU engine objects on degenerate plans under Numba's CUDA simulator (run by
test_gpu_degenerate_sim.py, one engine per case and per process: ``gmatch``, ``gsi``,
``geneva`` or ``gamma``).

Empty and one-node patterns, self-loops, disconnected patterns, patterns larger than the data
graph, plans without candidates, empty data graphs; limits None, 0 and 1; and for gmatch's
``count_from``/``iter_from`` empty, partial, full-width and refused prefixes. Answers are
compared with NetworkX VF2 (a row is read back through ``plan.order`` and the node keys); bad
arguments must raise ValueError or TypeError. The engines are called directly, with no API
guard in front. An engine's case fails listing every disagreement.
"""

import os
import sys
import time

assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", "run with NUMBA_ENABLE_CUDASIM=1"

import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402
from networkx.algorithms.isomorphism import DiGraphMatcher, GraphMatcher  # noqa: E402
from sim_runner import run_cases, sim_case  # noqa: E402

from nx_gsm.api import prepare  # noqa: E402

MODES = ("mono", "induced", "iso")
LIMITS = (None, 0, 1)


def vf2(G, H, mode):
    gm = (DiGraphMatcher if G.is_directed() else GraphMatcher)(G, H)
    it = {"mono": gm.subgraph_monomorphisms_iter, "induced": gm.subgraph_isomorphisms_iter,
          "iso": gm.isomorphisms_iter}[mode]()
    return {frozenset(m.items()) for m in it}


def loop(n):
    H = nx.empty_graph(n)
    H.add_edge(0, 0)
    return H


def disconnected():
    H = nx.path_graph(2)
    H.add_node(2)
    return H


DATAS = [nx.Graph(), nx.empty_graph(1), nx.path_graph(4), nx.empty_graph(3), loop(3),
         nx.complete_graph(3)]
PATTERNS = [nx.Graph(), nx.empty_graph(1), loop(1), nx.path_graph(2), nx.empty_graph(2),
            disconnected(), nx.path_graph(5)]

bad = []


def as_maps(plan, rows):
    gk, hk = plan.G.node_keys, plan.H.node_keys
    return [frozenset((gk[v], hk[int(u)]) for v, u in zip(row, plan.order)) for row in rows]


def rows_of(chunks, k, label):
    out = []
    for c in chunks:
        if not (isinstance(c, np.ndarray) and c.dtype == np.int32 and c.ndim == 2
                and c.shape[1] == k):
            bad.append([label, f"chunk {type(c).__name__} {getattr(c, 'shape', None)}"])
            continue
        out.extend(c.tolist())
    return out


def agrees(label, want, count, rows, limit, plan):
    """``count`` and ``rows`` are the (at most ``limit``) matches of VF2's set ``want``."""
    cap = len(want) if limit is None else min(len(want), limit)
    got = as_maps(plan, rows)
    ok = (type(count) is int and count == cap and len(got) == cap and len(set(got)) == cap
          and set(got) <= want)
    if not ok:
        bad.append([label, (f"count {count!r} rows {len(got)} distinct {len(set(got))} "
                            f"vf2 {len(want)} limit {limit}")])


def refuses(label, call):
    """``call`` must raise ValueError or TypeError (a wrong argument), nothing else."""
    try:
        call()
    except (ValueError, TypeError):
        return
    except Exception as exc:  # noqa: BLE001 - any other exception is the failure reported
        bad.append([label, f"raised {type(exc).__name__}: {exc}"])
        return
    bad.append([label, "accepted"])


def plans(modes=MODES, directed_modes=("mono",)):
    """The degenerate (G, H, mode) cases: every undirected pair in ``modes``, every directed
    pair in ``directed_modes``, and two labelled ones."""
    for directed, ms in ((False, modes), (True, directed_modes)):
        for G0 in DATAS:
            for H0 in PATTERNS:
                G = nx.DiGraph(G0) if directed else G0
                H = nx.DiGraph(H0) if directed else H0
                for mode in ms:
                    yield f"{'di' if directed else 'un'} G{len(G)} H{len(H)} {mode}", G, H, mode
    # no candidates for a labelled pattern node (plan.empty), and one for each
    G = nx.path_graph(3)
    nx.set_node_attributes(G, "a", "c")
    for lab in ("b", "a"):
        H = nx.empty_graph(1)
        H.nodes[0]["c"] = lab
        yield f"label {lab}", G, H, "mono"


def labelled(G, H):
    return "c" in next(iter(H.nodes.values()), {})


def plan_of(G, H, mode):
    kw = {"node_label": "c"} if labelled(G, H) else {}
    return prepare(G, H, mode, **kw)[0]


def want_of(G, H, mode):
    if labelled(G, H):
        gm = GraphMatcher(G, H, node_match=lambda a, b: a.get("c") == b.get("c"))
        return {frozenset(m.items()) for m in gm.subgraph_monomorphisms_iter()}
    return vf2(G, H, mode)


def run_engine(name, engine, **which):
    n = 0
    for label, G, H, mode in plans(**which):
        want = want_of(G, H, mode)
        plan = plan_of(G, H, mode)
        for limit in LIMITS:
            n += 1
            tag = f"{name} {label} limit={limit}"
            try:
                c = engine.count(plan, limit)
                rows = rows_of(engine.iter_chunks(plan, chunk=1, limit=limit), plan.k, tag)
            except Exception as exc:  # noqa: BLE001 - reported as a failed case
                bad.append([tag, f"raised {type(exc).__name__}: {exc}"])
                continue
            agrees(tag, want, c, rows, limit, plan)
    # arguments an engine must refuse before any device work
    plan = plan_of(nx.complete_graph(4), nx.path_graph(3), "mono")
    for lim in (-1, np.int64(-1), True, 1.5, "2"):
        refuses(f"{name} count limit={lim!r}", lambda lim=lim: engine.count(plan, lim))
        refuses(f"{name} iter limit={lim!r}",
                lambda lim=lim: list(engine.iter_chunks(plan, limit=lim)))
    for chunk in (0, -3, 2.0, None):
        refuses(f"{name} iter chunk={chunk!r}",
                lambda chunk=chunk: list(engine.iter_chunks(plan, chunk=chunk)))
    # NumPy integers are limits too
    want = vf2(nx.complete_graph(4), nx.path_graph(3), "mono")
    rows = rows_of(engine.iter_chunks(plan, limit=np.int64(5)), plan.k, f"{name} np limit")
    agrees(f"{name} np.int64 limit", want, engine.count(plan, np.uint8(5)), rows, 5, plan)
    return n


def prefix_cases(name, engine):
    """count_from/iter_from: prefixes cut from VF2's own matches (in plan order), so the
    expected answer is the VF2 matches below them."""
    n = 0
    for label, G, H, mode in plans(modes=("mono", "induced"), directed_modes=()):
        want = want_of(G, H, mode)
        plan = plan_of(G, H, mode)
        k = plan.k
        if plan.empty or k == 0:
            continue
        gid = {key: i for i, key in enumerate(plan.G.node_keys)}
        hk = plan.H.node_keys
        full = sorted(tuple(gid[{b: a for a, b in m}[hk[int(u)]]] for u in plan.order)
                      for m in want)
        for L in sorted({1, k}):
            pre = sorted({r[:L] for r in full})
            every = np.array(pre, dtype=np.int32).reshape(-1, L)
            # no rows, every prefix (whole and limited) and one prefix
            for rows, limit in ((np.zeros((0, L), dtype=np.int32), None), (every, None),
                                (every, 1), (every[:1], None)):
                keep = {r[:L] for r in map(tuple, rows.tolist())}
                sub = {frozenset(as_maps(plan, [r])[0]) for r in full if r[:L] in keep}
                n += 1
                tag = f"{name} {label} prefixes {rows.shape} limit={limit}"
                try:
                    c = engine.count_from(plan, rows, limit=limit)
                    got = rows_of(engine.iter_from(plan, rows, chunk=1, limit=limit), k, tag)
                except Exception as exc:  # noqa: BLE001 - reported as a failed case
                    bad.append([tag, f"raised {type(exc).__name__}: {exc}"])
                    continue
                agrees(tag, sub, c, got, limit, plan)
    plan = plan_of(nx.complete_graph(5), nx.path_graph(3), "mono")
    for pre in ([[999]], [[-1, 2]], [[0, 1, 2, 3]], [0, 1], [[0.5]], np.zeros((2, 0), np.int32)):
        arr = np.asarray(pre)
        refuses(f"{name} count_from {pre!r}", lambda arr=arr: engine.count_from(plan, arr))
        refuses(f"{name} iter_from {pre!r}", lambda arr=arr: list(engine.iter_from(plan, arr)))
    ok = np.array([[0, 1]], dtype=np.int32)
    for lim in (-1, True, 1.5):
        refuses(f"{name} count_from limit={lim!r}",
                lambda lim=lim: engine.count_from(plan, ok, limit=lim))
        refuses(f"{name} iter_from limit={lim!r}",
                lambda lim=lim: list(engine.iter_from(plan, ok, limit=lim)))
    refuses(f"{name} iter_from chunk=0", lambda: list(engine.iter_from(plan, ok, chunk=0)))
    return n


def gamma_cases():
    """GAMMA through IncrementalMatcher(engine="gamma"): each batch's added/removed must be the
    difference of VF2's answers before and after, on one-node, disconnected and too-large
    patterns, an empty data graph, and the empty pattern (which keeps the CPU path)."""
    from nx_gsm.incremental import IncrementalMatcher

    n = 0
    batches = [dict(nodes=[(10, {}), (11, {})], insert=[(10, 11)]), dict(delete_nodes=[10])]
    for G0 in (nx.Graph(), nx.empty_graph(1), nx.path_graph(3)):
        for H in (nx.Graph(), nx.empty_graph(1), nx.path_graph(2), disconnected(),
                  nx.path_graph(5)):
            for induced in (False, True):
                tag = f"gamma G{len(G0)} H{len(H)} induced={induced}"
                m = IncrementalMatcher(G0, H, engine="gamma", induced=induced)
                if (m._gamma is None) != (len(H) == 0):  # the empty pattern keeps the CPU path
                    bad.append([tag, f"delta engine {m._gamma!r}"])
                for i, b in enumerate(batches):
                    n += 1
                    mode = "induced" if induced else "mono"
                    before = vf2(m.graph, H, mode)
                    try:
                        r = m.apply(**b)
                    except Exception as exc:  # noqa: BLE001 - reported as a failed case
                        bad.append([f"{tag} batch {i}", f"raised {type(exc).__name__}: {exc}"])
                        break
                    after = vf2(m.graph, H, mode)
                    added = {frozenset(x.items()) for x in r.added}
                    removed = {frozenset(x.items()) for x in r.removed}
                    if (added, removed) != (after - before, before - after) or (
                            r.num_added, r.num_removed) != (len(added), len(removed)):
                        bad.append([f"{tag} batch {i}", (f"+{len(added)} -{len(removed)}, vf2 "
                                    f"+{len(after - before)} -{len(before - after)}")])
    return n


@sim_case(params=("gmatch", "gsi", "geneva", "gamma"), group="{param}")
def engine_on_degenerate_plans(name):
    bad.clear()
    if name == "gamma":
        n = gamma_cases()
    else:
        if name == "gmatch":
            from nx_gsm.engines.gpu.gmatch import GMatchEngine

            # the default engine (host levels and small searches on the host) and one that
            # takes every level to the device, fused and not
            engines = [GMatchEngine(blocks=1),
                       GMatchEngine(blocks=1, host_rows=0, small_space=0, fused=True),
                       GMatchEngine(blocks=1, host_rows=0, small_space=0, fused=False)]
        elif name == "gsi":
            from nx_gsm.engines.gpu.gsi import GsiEngine

            engines = [GsiEngine()]
        else:
            from nx_gsm.engines.gpu.geneva import GenevaEngine

            engines = [GenevaEngine()]
        n = 0
        for i, eng in enumerate(engines):
            t = time.perf_counter()
            # (the simulator is slow: the engines that take every level to the device see
            # fewer plans, and the prefixes run on the first engine)
            which = [{}, {"directed_modes": ()}, {"modes": ("mono",), "directed_modes": ()}][i]
            n += run_engine(f"{name}#{i}", eng, **which)
            print(f"{name}#{i}: {time.perf_counter() - t:.0f} s", flush=True)
            if i == 0 and hasattr(eng, "count_from"):
                t = time.perf_counter()
                n += prefix_cases(f"{name}#{i}", eng)
                print(f"{name}#{i} prefixes: {time.perf_counter() - t:.0f} s", flush=True)
    print(f"{name}: {n} cases, {len(bad)} failures", flush=True)
    assert not bad, "\n".join(" ".join(map(str, b)) for b in bad[:40])


if __name__ == "__main__":
    sys.exit(run_cases())
