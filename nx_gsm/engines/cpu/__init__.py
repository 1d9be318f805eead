"""The CPU engine (Numba): search kernels (:mod:`.kernels`), the parallel driver
(:mod:`.parallel`) and the engine object (:mod:`.engine`)."""

from __future__ import annotations

from .engine import (CpuEngine, check_chunk, check_prefixes, count_probe, other_order,
                     other_tail, plan_arrays, search_tree, trivial_answer, trivial_rows)
from .kernels import WIDE_ROWS, expand, expand_small, expand_wide, host_levels

__all__ = ["CpuEngine", "check_chunk", "check_prefixes", "count_probe", "other_order",
           "other_tail", "plan_arrays", "search_tree", "trivial_answer", "trivial_rows", "expand", "expand_small",
           "expand_wide", "host_levels", "WIDE_ROWS"]
