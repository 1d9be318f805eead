"""``engine="auto"``: keep small searches on the CPU, send the rest to the GPU engine.

The GPU engine pays a fixed few milliseconds per search (plan upload, BFS levels, launches:
``gpu/NOTES.md``) that the CPU engine does not, so on the yeast 16-vertex queries (mostly under
10^5 matches) gmatch measured 0.64x the CPU engine while heavy queries ran 7-43x faster. The
cost model is therefore a probe: the CPU engine's sequential search runs a bounded number of
steps first (about a millisecond); searches it finishes never leave the CPU, and only the rest go
to the GPU. First-k searches with a small ``limit`` and lazy enumeration with a small ``limit``
stay on the CPU for the same reason. The decision is recorded in ``last_choice``.
"""

from __future__ import annotations

from .base import UNLIMITED
from .cpu import CpuEngine, plan_arrays

__all__ = ["AutoEngine"]

# at most this many matches wanted: the CPU's lazy search returns them before a GPU launch would
SMALL_LIMIT = 100_000


class AutoEngine:
    name = "auto"

    def __init__(self, gpu_engine):
        self.cpu = CpuEngine()
        self.gpu = gpu_engine
        self.last_choice = None

    def count(self, plan, limit=None, budget=UNLIMITED):
        if plan.empty:
            return 0
        if limit is not None and limit <= SMALL_LIMIT:
            self.last_choice = ("cpu", f"limit {limit} <= {SMALL_LIMIT}")
            return self.cpu.count(plan, limit, budget=budget)
        probe = self.cpu._probe(plan_arrays(plan), plan.k)
        if probe is not None:
            self.last_choice = ("cpu", "the CPU probe finished the search")
            return probe if limit is None else min(probe, limit)
        self.last_choice = (self.gpu.name, "the CPU probe did not finish")
        return self.gpu.count(plan, limit, budget=budget)

    def iter_chunks(self, plan, chunk=4096, limit=None, budget=UNLIMITED):
        if limit is not None and limit <= SMALL_LIMIT:
            self.last_choice = ("cpu", f"limit {limit} <= {SMALL_LIMIT}")
            return self.cpu.iter_chunks(plan, chunk=chunk, limit=limit, budget=budget)
        self.last_choice = (self.gpu.name, "unbounded enumeration")
        return self.gpu.iter_chunks(plan, chunk=chunk, limit=limit, budget=budget)
