"""The plan of a :class:`~nx_gsm.interop.device.DeviceGraph`, built on the device.

Same MatchPlan as :func:`nx_gsm.plan.planner.make_plan`, with its data-sized arrays (candidate
matrix and bits, root candidate lists) as CuPy arrays: the candidate sets come from necessary
conditions evaluated with CuPy (integer node label, out-/in-degree at least the pattern's,
self-loops as the mode requires) instead of the host's refinement filter, so nothing of the data
graph leaves the device; the GPU kernels' per-candidate test (``feasible``) keeps the result
exact. Only ``k`` candidate counts come to the host, for the matching order.
"""

from __future__ import annotations

import numbers

import numpy as np

from .order import DEFAULT_ORDER, matching_order
from .planner import MatchPlan, depth_arrays

__all__ = ["make_device_plan"]


def _int_label(x):
    """The integer a pattern label equals in Python (``1``, ``1.0``, ``True``), or None."""
    if isinstance(x, numbers.Integral):
        return int(x)
    if isinstance(x, numbers.Real) and float(x).is_integer():
        return int(x)
    return None


def make_device_plan(G, H, mode, *, pattern_labels=None, order=None):
    """MatchPlan of pattern ``H`` (host GsmGraph) in the DeviceGraph ``G`` (mode mono/induced).

    ``pattern_labels``: per pattern node id, the label its image's ``G.node_labels`` must equal
    (None: no label constraint). ``order``: the order stage's name (see
    :mod:`nx_gsm.plan.order`); the filter stage is ``"ldf"``'s conditions.
    """
    import cupy as cp

    if mode not in ("mono", "induced"):
        raise ValueError(f"a device-resident plan supports mono and induced modes, not {mode!r}")
    k, n = H.n, G.n
    hdeg_out = np.diff(H.indptr)
    hdeg_in = np.diff(H.in_indptr) if H.directed else hdeg_out
    gout = G.out_degree()
    gin = G.in_degree() if G.directed else gout
    cand = cp.ones((k, n), dtype=bool)
    cand &= gout[None, :] >= cp.asarray(hdeg_out, dtype=np.int64)[:, None]
    if G.directed:
        cand &= gin[None, :] >= cp.asarray(hdeg_in, dtype=np.int64)[:, None]
    hloops = cp.asarray(H.loops, dtype=np.int32)[:, None]
    cand &= (G.loops[None, :] >= hloops) if mode == "mono" else (G.loops[None, :] == hloops)
    if pattern_labels is not None:
        if G.node_labels is None:
            raise ValueError("node_label given but the DeviceGraph has no node_labels")
        want = [_int_label(x) for x in pattern_labels]
        ok = cp.asarray([w is not None for w in want])
        vals = cp.asarray([0 if w is None else w for w in want], dtype=np.int64)
        cand &= ok[:, None] & (G.node_labels.astype(np.int64)[None, :] == vals[:, None])
    counts = cand.sum(axis=1).get() if k else np.zeros(0, dtype=np.int64)
    order_name = DEFAULT_ORDER if order is None else order
    order = matching_order(H, counts, order_name)
    arrays = depth_arrays(H, np.zeros((k, 0), dtype=bool), order, mode)
    # root lists (depths without a driver) are taken on the device
    parts, ptr = [], [0]
    for d in range(k):
        if arrays["drv_ptr"][d] == arrays["drv_ptr"][d + 1]:
            parts.append(cp.flatnonzero(cand[int(order[d])]).astype(np.int32))
            ptr.append(ptr[-1] + int(parts[-1].size))
        else:
            ptr.append(ptr[-1])
    arrays["cand_ptr"] = np.asarray(ptr, dtype=np.int64)
    arrays["cand_flat"] = cp.concatenate(parts) if parts else cp.zeros(0, dtype=np.int32)
    pad = (-n) % 8
    padded = cp.concatenate([cand, cp.zeros((k, pad), dtype=bool)], axis=1) if pad else cand
    weights = (1 << cp.arange(8, dtype=np.uint8)).astype(np.uint8)
    bits = (padded.reshape(k, -1, 8).astype(np.uint8) * weights).sum(axis=2, dtype=np.uint8)
    empty = bool(k > n or (k and counts.min() == 0))
    return MatchPlan(
        mode=mode, G=G, H=H, order=order, cand=cand, cand_bits=cp.ascontiguousarray(bits),
        eclass=np.zeros(1, dtype=np.int32), eok=np.ones((1, 1), dtype=np.uint8),
        has_elabels=False, empty=empty,
        notes=["device-resident plan: candidates from labels, degrees and self-loops"],
        stages={"filter": "ldf", "order": order_name, "seconds": {}},
        **arrays,
    )
