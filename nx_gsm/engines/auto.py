"""``engine="auto"``: the planner's choice of engine per query, from a probe and a cost model.

Calibrated on engines tables measured on the card (yeast, human and wordnet 4- and 8-vertex
queries, GitHub and Enron patterns, every engine on the same queries): the CPU engine
won the searches it finishes in a few thousand steps (1-10 ms against gmatch's 5-12 ms, whose
fixed cost is uploads, launches and synchronisations); gmatch won most of the rest, by 1.3-2.7x
over gsi and geneva; gsi won large outputs (3.8 x 10^7 rows on yeast sparse_8_51: 0.80 s
against gmatch's 1.28 s) and wordnet's 8-vertex sparse queries.

1. **Small searches stay on the CPU.** A bounded sequential CPU search (``PROBE_STEPS``
   candidates, a fraction of a millisecond, doubling up to ``PROBE_MAX`` while its progress
   projects the whole search within ``PROBE_REACH``) runs first; what it finishes never leaves
   the CPU, and an enumeration it finished is returned from the probe's own rows (no second
   search). First-k searches and enumerations with a small ``limit`` stay on the CPU for the
   same reason. The cost model is not trusted to keep anything else on the CPU: on skewed
   graphs it estimated 6 x 10^4 rows for a star with 2 x 10^8 (a mean list length misses hubs).
2. **Between the GPU engines, the cost model** (:func:`nx_gsm.plan.cost.estimate`: partial
   matches per depth, from the candidate space) decides:

   * a count goes to gmatch: its DFS never materialises a level, while a BFS engine (gsi,
     geneva) writes every level to memory before it can count the last;
   * an enumeration goes to a BFS engine when its tables (two consecutive levels, column-wise)
     and output fit in ``BFS_FRACTION`` of the device budget, for patterns of at most
     ``BFS_MAX_K`` nodes, and either the plan has edge labels (GENEVA: its interval-PCSR narrows
     each neighbour list to one label in one lookup) or at least ``BFS_MIN_OUTPUT`` rows are
     expected (GSI: its one-write Prealloc-Combine join then beats the DFS's output path);
   * anything else goes to gmatch (DFS memory does not grow with the output; it streams);
   * before the GPU engines, a data graph whose device arrays would take more than
     ``GRAPH_FRACTION`` of the device budget goes to the partitioned engine (PBE: METIS parts
     that fit, inner matches per part on the GPU, cross-part matches counted once).

   The choice, its reason and the estimates are in ``last_choice``;
   :func:`nx_gsm.explain` returns the same decision without running the search.

A data graph that lives on the device (``DeviceGraph``) always runs on gmatch: the other
engines read the host model. Without a usable GPU engine nothing is probed: the CPU engine runs.
"""

from __future__ import annotations

import numpy as np

from .base import UNLIMITED
from .catalog import engine_class
from .cpu import CpuEngine, plan_arrays
from .cpu.kernels import CUR, DONE, HI, LO, NOT_STARTED, STACK_ROWS, run_search, used_array
from ..threads import launch

__all__ = ["AutoEngine", "choose", "probe", "space_entries", "SMALL_LIMIT", "BFS_MAX_K",
           "BFS_FRACTION", "BFS_MIN_OUTPUT", "GRAPH_FRACTION", "PROBE_STEPS", "PROBE_MAX",
           "PROBE_REACH", "SPACE_GATE", "done_fraction"]

# at most this many matches wanted: the CPU's lazy search returns them before a GPU launch would
SMALL_LIMIT = 100_000
# the probe: candidates the sequential CPU search examines first (~0.3 ms), rows it may keep,
# and the most it goes on to (~2 ms), doubling, while its progress projects the whole search
# within PROBE_REACH. Calibrated on the engines tables measured on the card: every pick
# millisecond is 10-15% of gmatch's time on the 7-15 ms queries that go there, while the
# searches the CPU wins end within 2^11 (yeast-4) or 2^13-2^14 steps (GitHub, Enron, human-4
# with 10^3-10^4 rows), whose first projections are under 2^15
PROBE_STEPS = 1 << 11
PROBE_ROWS = 1 << 16
PROBE_MAX = 1 << 14
PROBE_REACH = 1 << 15
# BFS engines: patterns up to this size, tables and output within this share of the budget
BFS_MAX_K = 8
BFS_FRACTION = 0.25
# without edge labels a BFS engine only for outputs expected this large
BFS_MIN_OUTPUT = 3e7
# candidate-space entries (sum of the degrees of each driver's parent candidates) past which the
# probe is skipped: building the space the CPU search needs (15 ms for 5.7e5 entries on wordnet
# dense_8_1) already costs more than a GPU launch, so such a search is not small
SPACE_GATE = 2e5
# a data graph above this share of the device budget is partitioned (plan, pools and outputs
# need the rest)
GRAPH_FRACTION = 0.5


def space_entries(plan):
    """The candidate space's size, from degrees alone (no space is built): for every driver slot,
    the degrees of its parent depth's candidates summed."""
    G = plan.G
    deg = np.diff(G.indptr)
    if G.directed:
        deg = deg + np.diff(G.in_indptr)
    total = 0
    for j in plan.drv_j.tolist():
        total += int(deg[plan.cand_flat[plan.cand_ptr[j] : plan.cand_ptr[j + 1]]].sum())
    return total


def done_fraction(stk, d):
    """The share of the search tree a paused search has covered, Knuth's way: every subtree of a
    depth counted as equal (``stk``'s ranges and cursors of depths ``0..d``)."""
    f, width = 0.0, 1.0
    for e in range(d + 1):
        n = int(stk[HI, e] - stk[LO, e])
        if n <= 0:
            break
        width /= n
        # at the paused depth every examined candidate is done; above it the current one is open
        f += width * max(0, int(stk[CUR, e] - stk[LO, e]) - (e < d))
    return f


def probe(P, k, collect=False):
    """Run the CPU search for ``PROBE_STEPS`` candidates, and on, doubling, up to ``PROBE_MAX``
    while its progress projects the whole search within ``PROBE_REACH``: ``(count, rows)`` if
    it finished (rows: every match, when ``collect`` and at most ``PROBE_ROWS``), else
    ``(None, None)``."""
    state = np.full(1, NOT_STARTED, dtype=np.int64)
    m = np.empty(k, dtype=np.int32)
    stk = np.empty((STACK_ROWS, k), dtype=np.int64)
    used = used_array(P[16].size - 1, k)
    out = np.empty((PROBE_ROWS if collect else 1, k), dtype=np.int32)
    cap = PROBE_ROWS if collect else np.iinfo(np.int64).max
    got, steps, total = 0, PROBE_STEPS, 0
    while True:
        got += int(launch(run_search, P, 0, state, m, stk, used,
                          out[got:] if collect else out, cap - got, collect, steps))
        total += steps
        if state[0] == DONE:
            return got, (out[:got].copy() if collect else None)
        # the projection (steps / share done) can be 30x low on skewed searches; PROBE_MAX
        # bounds what such a search wastes here before it goes to a GPU engine
        if got >= cap or total >= PROBE_MAX or \
                total > PROBE_REACH * done_fraction(stk, int(state[0])):
            return None, None
        steps = min(total, PROBE_MAX - total)


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
    if space is None and "gmatch" in available and not plan.has_elabels:
        n = space_entries(plan)
        if n > SPACE_GATE:
            return "gmatch", (f"a large candidate space (~{n:.3g} entries): building it for the "
                              f"CPU probe or the cost model would cost more than a GPU launch"), \
                {"space_entries": n}
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
    need = est["peak_bfs_bytes"] + out_bytes
    fits = need <= BFS_FRACTION * budget_bytes
    big = est["output_rows"] >= BFS_MIN_OUTPUT
    if bfs and fits and plan.k <= BFS_MAX_K and (plan.has_elabels or big):
        if plan.has_elabels and "geneva" in bfs:
            pick, why = "geneva", "edge labels (interval-PCSR)"
        else:
            pick = "gsi" if "gsi" in bfs else bfs[0]
            why = f"~{est['output_rows']:.3g} rows expected"
        return pick, (f"an enumeration with {why} whose BFS tables and output (~{need:.3g} "
                      f"bytes) fit {BFS_FRACTION:.0%} of the device budget"), est
    if "gmatch" in available:
        if plan.k > BFS_MAX_K:
            why = f"the pattern has {plan.k} > {BFS_MAX_K} nodes"
        elif not fits:
            why = "the BFS tables and output would not fit the budget share"
        else:
            why = f"no edge labels and under ~{BFS_MIN_OUTPUT:.0e} rows expected"
        return "gmatch", f"an enumeration: {why}; the DFS streams its output", est
    return bfs[0], "an enumeration (gmatch unavailable)", est


def skip_probe(plan):
    """No probe (and no space for it) where :func:`choose` would not use one: a large candidate
    space on a plan without edge labels (those may go to GENEVA, which needs the estimate)."""
    return not plan.has_elabels and space_entries(plan) > SPACE_GATE


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
    def capabilities(self):
        """Its GPU engine's: prefix tasks and device plans run there."""
        return self.gpu.capabilities

    def count_from(self, plan, prefixes, limit=None, budget=UNLIMITED, **kw):
        """Prefix tasks run on the GPU engine (see :class:`~nx_gsm.engines.base.PrefixEngine`)."""
        return self.gpu.count_from(plan, prefixes, limit=limit, budget=budget, **kw)

    def iter_from(self, plan, prefixes, chunk=4096, limit=None, budget=UNLIMITED, **kw):
        """Prefix tasks run on the GPU engine (see :class:`~nx_gsm.engines.base.PrefixEngine`)."""
        return self.gpu.iter_from(plan, prefixes, chunk=chunk, limit=limit, budget=budget, **kw)

    @property
    def gpu(self):
        """The default GPU engine (gmatch where usable)."""
        gpus = [e for e in self.engines.values() if e.capabilities.device]
        # the engine with prefix tasks (gmatch): DFS, and the one Dask and PBE split work on
        return next((e for e in gpus if e.capabilities.prefix_tasks), gpus[0])

    def _budget(self):
        from .gpu.device import memory_budget

        return memory_budget()

    def _pick(self, plan, want, limit):
        """``(engine name, probe count, probe rows)``; the probe's are None unless it finished."""
        if not self.engines:
            self.last_choice = ("cpu", "no GPU engine is usable here")
            self.last_estimates = {}
            return "cpu", None, None
        got, rows, space = None, None, None
        if not getattr(plan.G, "on_device", False) and not plan.empty and \
                (limit is None or limit > SMALL_LIMIT) and not skip_probe(plan):
            P = plan_arrays(plan)
            got, rows = probe(P, plan.k, collect=want == "collect")
            from ..plan.space import build_space

            space = build_space(plan)  # (kept on the plan: the one plan_arrays read)
        usable = list(self.engines) + ["partitioned"]
        name, reason, est = choose(plan, want, usable, self._budget(), limit,
                                   got is not None, space)
        self.last_choice = (name, reason)
        self.last_estimates = est
        return name, got, rows

    def _engine(self, name):
        if name == "cpu":
            return self.cpu
        if name == "partitioned" and name not in self.engines:
            # through the table, as the registry makes engines (the partitioned engine itself
            # resolves engine names through the registry, which makes this engine)
            self.engines[name] = engine_class("partitioned")(inner=self.gpu)
        return self.engines[name]

    def count(self, plan, limit=None, budget=UNLIMITED):
        if plan.empty:
            return 0
        name, got, _ = self._pick(plan, "count", limit)
        if name == "cpu" and got is not None:
            return got if limit is None else min(got, limit)
        return self._engine(name).count(plan, limit, budget=budget)

    def iter_chunks(self, plan, chunk=4096, limit=None, budget=UNLIMITED):
        if plan.empty:
            return
        name, got, rows = self._pick(plan, "collect", limit)
        if name == "cpu" and rows is not None:
            # the probe finished the enumeration: its rows are the answer
            rows = rows if limit is None else rows[:limit]
            for a in range(0, rows.shape[0], chunk):
                yield rows[a : a + chunk]
            return
        yield from self._engine(name).iter_chunks(plan, chunk=chunk, limit=limit, budget=budget)
