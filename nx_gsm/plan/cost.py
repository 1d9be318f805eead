"""The cost model behind ``engine="auto"``: size estimates of a plan's search, per depth.

From the candidate space (:mod:`nx_gsm.plan.space`) the model estimates how many partial matches
each depth of the matching order holds, the quantity every engine's cost follows:

* ``rows[d]``: partial matches of depths ``0..d``. ``rows[0]`` is the root's candidate count;
  each later depth multiplies by the mean candidate-space list length of its shortest driver:
  GSI's Prealloc-Combine bound per row, on average. The other backward edges' filtering is
  deliberately left out: multiplying by their pass rates (the independence estimate) came out
  seven orders of magnitude low on yeast dense_8_1 (0.015 rows for 149,616 matches), because
  on clustered graphs adjacent candidates share neighbours. Depths without a driver (a new
  component) multiply by their candidate count.
* ``bfs_bytes[d]``: the BFS table of depth ``d`` in the column-wise layout (a vertex and a parent
  index per row: 8 bytes), what GSI and GENEVA hold at once (two consecutive levels).

The estimates are exact on depth 0 and upper-biased on clustered graphs (each depth is the
average of an upper bound per row: 1.3e9 rows for 2.1e4 matches on wordnet dense_8_1), but low
on skewed ones, where the mean list length misses the hubs (6.2e4 rows for 2.1e8 matches of a
3-leaf star on GitHub with 16 labels). The planner uses them only with wide margins (to keep BFS
engines away from tables that might not fit, and to send outputs expected past 3e7 rows to GSI),
never to keep a search on the CPU or to size buffers (engines size theirs from exact counts).
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["estimate"]


def estimate(plan, space=None):
    """Per-depth estimates for ``plan`` as a dict (see the module docstring).

    Returns ``{"rows": [...], "bfs_bytes": [...], "output_rows": float, "peak_bfs_bytes":
    float, "work": float}``, where ``work`` sums the rows over all depths (the DFS's node count).

    Examples
    --------
    >>> import networkx as nx
    >>> from nx_gsm.api import prepare
    >>> plan = prepare(nx.complete_graph(5), nx.path_graph(3), "mono")[0]
    >>> [round(r) for r in estimate(plan)["rows"]]
    [5, 20, 80]
    """
    from .space import build_space

    k = plan.k
    if k == 0 or plan.empty:
        return {"rows": [0.0] * k, "bfs_bytes": [0.0] * k, "output_rows": 0.0,
                "peak_bfs_bytes": 0.0, "work": 0.0}
    cs = build_space(plan) if space is None else space
    counts = plan.cand.sum(axis=1).astype(np.float64)
    rows = []
    for d in range(k):
        u = int(plan.order[d])
        t0, t1 = int(plan.drv_ptr[d]), int(plan.drv_ptr[d + 1])
        if t0 == t1:
            factor = float(counts[u])
        else:
            factor = math.inf
            for t in range(t0, t1):
                w = int(plan.order[plan.drv_j[t]])
                n_w = int(counts[w])
                a = int(cs.row_off[t])
                total = float(cs.ptr[a + n_w] - cs.ptr[a]) if n_w else 0.0
                factor = min(factor, total / max(n_w, 1))
        rows.append(factor if d == 0 else rows[-1] * factor)
    bfs_bytes = [8.0 * r for r in rows]
    peak = max(bfs_bytes[d] + (bfs_bytes[d - 1] if d else 0.0) for d in range(k))
    return {"rows": rows, "bfs_bytes": bfs_bytes, "output_rows": rows[-1],
            "peak_bfs_bytes": peak, "work": math.fsum(rows)}
