"""``engine="auto"``: the planner's choice of engine per query, from a probe and a cost model.

1. **Small searches stay on the CPU.** Every GPU engine pays a fixed few milliseconds per search
   (plan upload, kernel launches, synchronisations: ``gpu/NOTES.md``) that the CPU engine does
   not: on the yeast 16-vertex queries (mostly under 10^5 matches) gmatch measured 0.64x the CPU
   engine while heavy queries ran 7-43x faster. So the CPU engine's sequential search first runs
   a bounded number of steps (about a millisecond); searches it finishes never leave the CPU.
   First-k searches and enumerations with a small ``limit`` stay on the CPU for the same reason.
2. **Between the GPU engines, the cost model** (:func:`nx_gsm.plan.cost.estimate`: partial
   matches per depth, from the candidate space) decides:

   * a count goes to gmatch: its DFS never materialises a level, while a BFS engine (gsi,
     geneva) writes every level to memory before it can count the last;
   * an enumeration whose BFS tables (two consecutive levels, column-wise) and output fit in
     ``BFS_FRACTION`` of the device budget, for patterns of at most ``BFS_MAX_K`` nodes, goes to
     a BFS engine: GENEVA when the plan has edge labels (its interval-PCSR narrows each
     neighbour list to one label in one lookup), GSI otherwise;
   * anything else goes to gmatch (DFS memory does not grow with the output; it streams);
   * before all of these, a data graph whose device arrays would take more than
     ``GRAPH_FRACTION`` of the device budget goes to the partitioned engine (PBE: METIS parts
     that fit, inner matches per part on the GPU, cross-part matches counted once).

   The choice, its reason and the estimates are in ``last_choice``;
   :func:`nx_gsm.explain` returns the same decision without running the search.

A data graph that lives on the device (``DeviceGraph``) always runs on gmatch: the other
engines read the host model.
"""

from __future__ import annotations

from .base import UNLIMITED
from .cpu import CpuEngine, plan_arrays

__all__ = ["AutoEngine", "choose", "SMALL_LIMIT", "BFS_MAX_K", "BFS_FRACTION", "GRAPH_FRACTION"]

# at most this many matches wanted: the CPU's lazy search returns them before a GPU launch would
SMALL_LIMIT = 100_000
# BFS engines: patterns up to this size, tables and output within this share of the budget
BFS_MAX_K = 8
BFS_FRACTION = 0.25
# a data graph above this share of the device budget is partitioned (plan, pools and outputs
# need the rest)
GRAPH_FRACTION = 0.5


def graph_device_bytes(G):
    """Bytes of ``G``'s adjacency as the GPU engines hold it (CSR, multiplicities, CSC)."""
    b = G.indptr.nbytes + G.indices.nbytes + G.mult.nbytes
    if G.directed:
        b += G.in_indptr.nbytes + G.in_indices.nbytes
    return int(b)


def choose(plan, want, available, budget_bytes, limit=None, probe_finished=None, space=None):
    """The engine for ``plan`` and why: ``(name, reason, estimates)``.

    ``want`` is ``"count"`` or ``"collect"``; ``available`` the usable GPU engine names;
    ``probe_finished`` whether the CPU probe completed the search (None: not run).
    """
    if plan.empty:
        return "cpu", "no match can exist (known at plan time)", {}
    if getattr(plan.G, "on_device", False) and "gmatch" in available:
        return "gmatch", "the data graph is on the device", {}
    if limit is not None and limit <= SMALL_LIMIT:
        return "cpu", f"limit {limit} <= {SMALL_LIMIT}: the CPU's lazy search answers first", {}
    if probe_finished:
        return "cpu", "the CPU probe finished the search", {}
    if not available:
        return "cpu", "no GPU engine is usable here", {}
    gbytes = graph_device_bytes(plan.G)
    if "partitioned" in available and gbytes > GRAPH_FRACTION * budget_bytes:
        return "partitioned", (f"the data graph (~{gbytes:.3g} bytes on the device) exceeds "
                               f"{GRAPH_FRACTION:.0%} of the device budget: METIS parts that "
                               f"fit, cross-part matches by PBE"), {"graph_bytes": gbytes}
    from ..plan.cost import estimate

    est = estimate(plan, space)
    out_bytes = 4.0 * plan.k * est["output_rows"]
    est = dict(est, output_bytes=out_bytes, budget_bytes=budget_bytes)
    bfs = [e for e in ("geneva", "gsi") if e in available]
    if not bfs and "gmatch" not in available:
        return "cpu", "no GPU engine is usable here", est
    if want == "count":
        if "gmatch" in available:
            return "gmatch", "a count: the DFS counts without materialising any level", est
        return bfs[0], "a count (gmatch unavailable)", est
    fits = est["peak_bfs_bytes"] + out_bytes <= BFS_FRACTION * budget_bytes
    if bfs and fits and plan.k <= BFS_MAX_K:
        pick = "geneva" if plan.has_elabels and "geneva" in bfs else \
            ("gsi" if "gsi" in bfs else bfs[0])
        need = est["peak_bfs_bytes"] + out_bytes
        return pick, (f"an enumeration whose BFS tables and output (~{need:.3g} bytes) fit "
                      f"{BFS_FRACTION:.0%} of the device budget"), est
    if "gmatch" in available:
        why = (f"the pattern has {plan.k} > {BFS_MAX_K} nodes" if plan.k > BFS_MAX_K else
               "the BFS tables and output would not fit the budget share")
        return "gmatch", f"an enumeration: {why}; the DFS streams its output", est
    return bfs[0], "an enumeration (gmatch unavailable)", est


class AutoEngine:
    """Runs each query on the engine :func:`choose` picks (engine protocol)."""

    name = "auto"

    def __init__(self, gpu_engines):
        self.cpu = CpuEngine()
        if not isinstance(gpu_engines, dict):  # a single engine object
            gpu_engines = {gpu_engines.name: gpu_engines}
        self.engines = dict(gpu_engines)
        self.last_choice = None

    @property
    def gpu(self):
        """The default GPU engine (gmatch where usable)."""
        gpus = [e for n, e in self.engines.items() if n != "partitioned"]
        return self.engines.get("gmatch") or gpus[0]

    def _budget(self):
        from .gpu.device import memory_budget

        return memory_budget()

    def _pick(self, plan, want, limit):
        probe = None
        space = None
        if not getattr(plan.G, "on_device", False) and not plan.empty and \
                (limit is None or limit > SMALL_LIMIT):
            P = plan_arrays(plan)
            probe = self.cpu._probe(P, plan.k)
            from ..plan.space import CandidateSpace

            space = CandidateSpace(cidx=P[12], row_off=P[13], ptr=P[14], val=P[15])
        usable = list(self.engines) + ["partitioned"] if self.engines else []
        name, reason, est = choose(plan, want, usable, self._budget(), limit,
                                   probe is not None, space)
        self.last_choice = (name, reason)
        self.last_estimates = est
        return name, probe

    def _engine(self, name):
        if name == "cpu":
            return self.cpu
        if name == "partitioned" and name not in self.engines:
            from .partitioned import PartitionedEngine

            self.engines[name] = PartitionedEngine(inner=self.gpu.name)
        return self.engines[name]

    def count(self, plan, limit=None, budget=UNLIMITED):
        if plan.empty:
            return 0
        name, probe = self._pick(plan, "count", limit)
        if name == "cpu" and probe is not None:
            return probe if limit is None else min(probe, limit)
        return self._engine(name).count(plan, limit, budget=budget)

    def iter_chunks(self, plan, chunk=4096, limit=None, budget=UNLIMITED):
        name, _ = self._pick(plan, "collect", limit)
        return self._engine(name).iter_chunks(plan, chunk=chunk, limit=limit, budget=budget)
