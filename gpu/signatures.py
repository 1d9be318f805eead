"""Which kernel signatures a workload launches that ``nx-gsm warmup`` did not compile.

A kernel variant compiled after warmup costs a fresh process seconds (the card's kernel cache
test, ``python -m gpu.check --phases cache``, counts them). On the GPU machine, over a new
cache folder::

    NX_GSM_CACHE_DIR=$(mktemp -d) python3 -m gpu.signatures

runs warmup's GPU steps one by one, then the cache test's workload on the bundled yeast graph
(gmatch, GSI and GENEVA counts, a gmatch enumeration and a count with every level on the
device, a GAMMA update) step by step, and prints each signature that a step added to a gmatch
DFS, fused or BFS kernel or a GSI join kernel, with the arguments where it differs from one the
kernel had before (or, for a kernel new to the process, from one of its siblings'). A workload
line is a signature warmup never launched.
"""

from __future__ import annotations

import sys


def dispatchers():
    """``{kernel name: dispatcher}`` of every gmatch and GSI kernel built in this process."""
    from nx_gsm.engines.gpu import gsi_kernels
    from nx_gsm.engines.gpu.gmatch import kernels

    out = {}
    for key, kerns in kernels._KERNELS.items():  # noqa: SLF001 - a diagnostic of the factories
        out[f"dfs {key}"] = kerns[0]
    for key, kern in kernels._FUSED.items():  # noqa: SLF001
        out[f"fused {key}"] = kern
    out["bfs_level"] = kernels.bfs_level_kernel
    for K in gsi_kernels.JOIN_BUCKETS:
        out[f"gsi bound {K}"], out[f"gsi join {K}"] = gsi_kernels.join_kernels(
            K, gsi_kernels.JOIN_WARPS)
    return out


def signatures():
    """``{kernel name: {signature text: signature}}`` of :func:`dispatchers`."""
    return {name: {str(s): s for s in d.overloads} for name, d in dispatchers().items()}


def added(before, after, label, reference, out=print):
    """Print the signatures in ``after`` and not in ``before``; returns how many."""
    n = 0
    for name, sigs in after.items():
        for text in set(sigs) - set(before.get(name, {})):
            n += 1
            out(f"NEW in {label}: {name}")
            kind = name.split()[0]
            olds = list(reference.get(name, {}).values()) or [
                s for other, v in reference.items() if other.split()[0] == kind
                for s in v.values()]
            if not olds:
                out(f"   (the kernel's first signature) {text}")
                continue
            for i, (was, now) in enumerate(zip(olds[0], sigs[text])):
                if was != now:
                    out(f"   argument {i}: {was} -> {now}")
    return n


def workload():
    """``(label, callable)``: the kernel cache test's workload, step by step (each callable
    returns its count)."""
    import networkx as nx

    import nx_gsm
    from nx_gsm.engines.gpu.gmatch import GMatchEngine
    from nx_gsm.interop.formats import read_any

    G = read_any(nx_gsm.demo_graph_path("yeast"))
    queries = {p.stem: p for p, _ in nx_gsm.demo_queries()}
    steps = []
    for name in ("query_dense_8_3", "query_dense_16_2"):
        H = read_any(queries[name], edge_labels=False)
        for engine in ("gmatch", "gsi", "geneva"):
            steps.append((f"{engine} count {name}", lambda H=H, e=engine:
                          nx_gsm.count_subgraph_monomorphisms(G, H, node_label="label",
                                                              engine=e)))
        steps.append((f"gmatch rows {name}", lambda H=H: sum(
            1 for _ in nx_gsm.subgraph_monomorphisms(G, H, node_label="label",
                                                     engine="gmatch", limit=5000))))
        steps.append((f"gmatch device levels {name}", lambda H=H:
                       nx_gsm.count_subgraph_monomorphisms(
                           G, H, node_label="label",
                           engine=GMatchEngine(host_rows=0, fused=False))))

    def gamma():
        m = nx_gsm.IncrementalMatcher(nx.circulant_graph(40, [1, 2, 5]), nx.path_graph(4),
                                      engine="gamma")
        m.apply(insert=[(0, 20)], delete=[(0, 1)])
        return int(m.count())
    steps.append(("gamma update", gamma))
    return steps


def main():
    from nx_gsm import precompile
    from nx_gsm.engines.registry import available_engines

    steps = precompile._gpu_steps(available_engines())  # noqa: SLF001 - warmup's own steps
    if not steps:
        print("no usable GPU engine", file=sys.stderr)
        return 1
    for name, run in steps:
        before = signatures()
        run()
        added(before, signatures(), f"warmup step {name!r}", before)
    warm = signatures()
    new = 0
    for label, run in workload():
        before = signatures()
        run()
        new += added(before, signatures(), f"workload step {label!r}", warm)
    print(f"{new} signature(s) launched by the workload that warmup did not launch")
    return 0 if new == 0 else 2


if __name__ == "__main__":
    sys.exit(main())
