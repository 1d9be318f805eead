"""The gMatch engine: fine-grained, warp-batched DFS on the GPU (Numba CUDA, CuPy arrays).

Implements gMatch (*Fine-Grained and Hardware-Efficient Subgraph Matching on GPUs*, PVLDB 19(8),
2026) over a
:class:`~nx_gsm.plan.planner.MatchPlan`:

* **Initialisation phase (Sec. 4.3).** A BFS over the first levels of the search tree fills a task
  pool of partial matches (one launch per level: warps over each row's local candidates,
  ballot-reserved appends; levels launched in chains, their sizes read once a chain) until it
  holds about ``pool_target`` rows; if the BFS reaches the
  last depth the matches are already complete. Levels of at most ``host_rows`` rows are
  expanded on the host by the CPU engine's code (a GPU level still costs 0.1-0.3 ms of the
  host's time whatever its size), so a search whose levels all stay that small never
  reaches the device. A count does its device levels inside one cooperative launch instead
  (the fused kernel: levels separated by grid barriers, then the DFS below; host levels up to
  ``fused_host_rows`` first): 1.41x faster on yeast 16-vertex counts than a launch per level.
* **Fine-grained execution (Sec. 4.1) + warp-level batch exploration (Sec. 4.2, Alg. 2).** Each warp
  runs a DFS over its pool rows with a stack in shared memory of ``KMAX x 32`` entries (vertex,
  parent slot, local-candidate-set start/kind, running prefix of LC sizes): ``KMAX`` levels, never
  a function of the maximum degree. At level ``l`` the up-to-32 valid partial matches form one
  virtual task pool (the concatenation of their local candidate sets, each the shortest of
  the backward neighbours' lists: a list of the plan's candidate space -- the neighbours that
  are candidates of the depth's node through a fitting edge, CFL / DP-iso's structure, which
  the CPU engine reads too -- or, for a device-resident plan, a raw adjacency row); lane ``j``
  takes task ``base + j``, rebuilds its partial match by following parent links, checks one
  candidate, and a ballot compacts the valid ones into the next level.
* **Load balancing (Sec. 4.3, dynamic phase).** Warps take pool rows through an atomic counter;
  once the pool is empty, idle warps announce themselves (and back off exponentially) and busy
  warps donate up to half of their untouched entries at their shallowest level -- entries with
  at least two levels and 64 tasks below them, at most one per idle warp -- to a global ring
  (a ticket queue: each idle warp polls its own slot; slots carry generations; termination by
  a busy counter that donations join, see ``kernels._fetch``), a simplified STMatch-style split as
  the paper describes. Measured against no donation (yeast 16-vertex counts): 0.31x the
  DFS time on dense_16_13, 0.65x on dense_16_8, 0.77x on sparse_16_17; up to 1.16x where the
  pool almost balances itself (sparse_16_7).

Semantics are exactly the CPU engine's (``nx_gsm.engines.cpu.kernels.consistent``): candidate bits, an
injectivity scan, and per earlier depth the multiplicity tests of ``chk_out``/``chk_in``
(``>=`` in mono mode, ``==`` in induced/iso mode) with edge-label classes through ``eok``.

Output: counts are kept per pool row (int64, summed exactly on the host as Python ints); the
collect path writes rows into a device buffer (atomic reservation); when the output may exceed
the buffer the pool is counted first, split into batches that fit (heavy rows re-expanded one
BFS level), and each batch is collected and streamed to the host.

Configuration: every parameter of the engine is a field of one frozen
:class:`GMatchConfig`, given as ``GMatchEngine(config=GMatchConfig(...))`` (or as keyword
shortcuts for its fields); an engine object goes wherever ``engine=`` is taken.

Modules: :mod:`.config` (the control block's slots, tuning defaults, :class:`GMatchConfig`),
:mod:`.kernels` (the device code), :mod:`.host` (:class:`~.host.GMatchSearch`: BFS levels,
launches, kept buffers) and :mod:`.engine` (:class:`GMatchEngine` and its public protocol).
"""

from .config import KMAX_LIMIT, GMatchConfig
from .engine import GMatchEngine
from .kernels import kernel_resources

__all__ = ["GMatchConfig", "GMatchEngine", "KMAX_LIMIT", "kernel_resources"]
