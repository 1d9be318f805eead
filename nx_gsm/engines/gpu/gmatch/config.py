"""gMatch's constants and its configuration: the control block's slots (shared by the
kernels and the host), the tuning defaults, and :class:`GMatchConfig`, the one frozen record
of a :class:`~.engine.GMatchEngine`'s parameters."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, fields

import numpy as np

# control block slots (int64)
# (each on its own 128-byte line: idle warps poll some of them while busy warps update others)
C_POOL, C_QHEAD, C_QTAIL, C_BUSY, C_IDLE, C_STOP, C_OUT, C_FOUND, C_DONATED, C_STOLEN = (
    16 * i for i in range(10))
N_CTL = 16 * 10
# the fused search's control block goes on (GMatchEngine._fused): its grid barrier, its pool's
# size, one size per BFS level, then one match count per warp
C_BAR, C_GEN, C_NPOOL, C_LEVELS = N_CTL, N_CTL + 16, N_CTL + 32, N_CTL + 48
C_COUNTS = C_LEVELS + 48
# the warps' counts summed by the fused kernel: the high and the low 32-bit halves apart, each
# sum exact in int64 for any number of warps a card holds (the host reads these, not the counts)
C_SUM_HI, C_SUM_LO = C_NPOOL + 3, C_NPOOL + 4
C_NARROW = C_NPOOL + 5  # 6 slots: where block 0's narrow levels left the search

# host BFS levels (see GMatchEngine._host_prefix) while a level holds at most this many rows,
# on all host threads from cpu.WIDE_ROWS rows on; a count's last level is counted on the host
# up to HOST_COUNT_ROWS matches (it writes no rows). Two bounds because the counted last
# levels gain up to 16,384 rows while written levels past 4,096 lose (4,096 / 16,384 took 0.92x
# the time of 16,384 for both on 35 yeast-16 queries, 0.95x on the 108 of the VF2 suite)
HOST_BFS_ROWS = 4096
HOST_COUNT_ROWS = 16384
# rows a GPU BFS level writes before it is sized exactly and run again (GMatchSearch._expand)
LEVEL_ROWS = 1 << 20
BFS_CHAIN = 4  # the most GPU BFS levels launched before their sizes are read (GMatchSearch._chain)
# a count's fused search (GMatchEngine._fused): host levels while they hold fewer rows than
# this (the one-thread levels of cpu.kernels.narrow_levels), then every other level and the DFS in
# one cooperative launch, its levels in a kept buffer of FUSED_BUF_INTS int32 (at most an
# eighth of the memory budget), by stack depth (KMAX). 64, not 256, because the host's part
# of a search is cheap (0.90x the time on 35 yeast-16 queries, both orders of an interleaved
# A/B); 16-level stacks from the roots (0.93x the time of 64 on 34 yeast-16
# queries, though the 4 the host finishes in 0.06-0.34 ms take 1.2-5x longer); 8 and 32 not
# measured from the roots
FUSED_HOST_ROWS = {8: 64, 16: 0, 32: 64}
# ... except a count whose candidate space holds at most SMALL_SPACE entries per pattern node (a
# search of a few thousand partial matches at most on yeast: every level under 256 rows), whose
# host levels go to SMALL_HOST_ROWS rows, counting the last: the searches the host finishes in
# 0.06-0.25 ms took ~0.3 ms from the roots on the device (0.876x the time of the rule off on 34
# yeast-16 queries)
SMALL_SPACE = 6
SMALL_HOST_ROWS = 256
# ... after the CPU engine's sequential search (failing-set pruning) tried it for this many
# candidates: it finishes yeast-16's small searches in 200-1,000 steps and ~1.5x faster than
# the host's levels, which write every partial match of a level
SMALL_STEPS = 4096
FUSED_BUF_INTS = 1 << 22
# and its levels of fewer rows than this many per warp of a block run in block 0 alone, a
# block's barrier between them instead of a grid barrier (GMatchEngine's ``fused_narrow``: rows)
FUSED_NARROW = 4
# seconds a free-memory read stays the memory budget's cap (GMatchEngine._budget): a device
# fault from memory taken since is recovered like any other (faults.py)
FREE_TTL = 0.1
# and before the fused search, host levels only while they examined fewer candidates than this
# (0: no bound): a deep, narrow search's levels cost one host thread more than the device
HOST_WORK = 0
# the fused kernel's register cap per stack depth (KMAX): the DFS kernel's resident blocks
# per SM (ptxas for sm_90: fused 78-96 registers uncapped, the DFS 62; KMAX 8's 256-thread
# blocks are register-bound at 4 per SM from 64 registers, KMAX 16's shared-memory-bound at 7
# from 72; KMAX 32's 64-thread blocks fit 7 per SM uncapped)
FUSED_REGS = {8: 64, 16: 0, 32: 0}
KMAX_LIMIT = 32  # deepest stack the shared-memory layout supports (larger patterns use the CPU)
BUCKETS = ((8, 8), (16, 4), (32, 2))  # (KMAX, warps per block): ~45 KB static shared per block
INF = np.iinfo(np.int64).max
# adjacency entries a candidate-space build may visit when gmatch builds it itself (~10 ms of
# one host thread); a larger one, on an unlabelled graph where it would prune little, is skipped
SPACE_VISITS = 1 << 23

LEVEL_WPB = 8  # warps per block of the BFS level kernel

# donation ring slots (GMatchConfig.queue_capacity): each idle warp polls a slot of its own, and
# a card holds at most 64 resident warps per SM, so this is more than any current card's warps
QUEUE_CAPACITY = 1 << 15
MAX_REGS = 255  # the most registers a CUDA thread can have (GMatchConfig.fused_regs)


def _integer(name, value, low, high=None, optional=False):
    """``value`` as an int in ``low..high``; None passes where ``optional``."""
    if value is None and optional:
        return None
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        kind = "an int or None" if optional else "an int"
        raise TypeError(f"GMatchConfig.{name} must be {kind}, got {value!r}")
    value = int(value)
    if value < low or (high is not None and value > high):
        span = f"at least {low}" if high is None else f"between {low} and {high}"
        raise ValueError(f"GMatchConfig.{name} must be {span}, got {value}")
    return value


def _boolean(name, value):
    if not isinstance(value, (bool, np.bool_)):
        raise TypeError(f"GMatchConfig.{name} must be True or False, got {value!r}")
    return bool(value)


@dataclass(frozen=True)
class GMatchConfig:
    """Every parameter of a :class:`~nx_gsm.engines.gpu.gmatch.GMatchEngine`, in one frozen
    record (hashable, comparable, safe to share between engines and threads).

    The defaults are what the engine is tuned for; the rest are for kernel work and
    benchmarks. None in a field marked "or None" means "chosen per search", as described.
    Fields are checked when the record is made: a wrong type raises TypeError, a value out of
    range ValueError, each naming the field. Change a field with :func:`dataclasses.replace`.

    Attributes
    ----------
    memory_budget : int or None
        Bytes of device memory a search may plan to use (never less than 1 MiB, never more
        than 80% of the free device memory). None: ``nx.config.backends.gsm.device_memory_budget``
        where set, else that 80%. The output buffer, the BFS levels and the candidate space
        are sized from it; a search that runs out of memory is retried once with half of it.
    time_limit : float or None
        Seconds one kernel launch may run before it is stopped and ``TimeoutError`` raised
        (benchmark harnesses use it to skip queries; the matching functions' ``timeout=`` is
        the way to bound a search and keep its partial result). None: no limit.
    steal : bool
        Work donation between warps (gMatch Sec. 4.3, dynamic phase): once the task pool is
        empty, busy warps give half of their untouched subtrees to idle ones through a ring.
        Default True: it cut the DFS time of skewed 16-node counts to a third, and cost at
        most ~15% where the pool balances itself.
    queue_capacity : int
        Slots of the donation ring (at least 1; only read with ``steal``). Default 32,768:
        more than the resident warps of any current card, so every idle warp has a slot.
    pool_target : int or None
        Rows of partial matches the BFS levels collect before the DFS starts (at least 1; 1
        stops the BFS at the roots, so every search goes through the warp DFS). None: 8 per
        resident warp, enough that every warp starts with work and few have to steal.
    bfs_levels : int or None
        The most BFS levels, host and device, before the DFS (0: the DFS starts from the
        roots). None: until ``pool_target`` rows, the
        last depth, or a frontier that stays under 32 rows after four device levels (a small
        search, not worth more levels).
    host_rows : int
        BFS levels of at most this many rows are expanded on the host by the CPU engine's
        code (0: every level on the device). Default 4,096: a device level costs 0.1-0.3 ms
        of the host's time whatever its size, the host ~0.3 us a row, so a search whose
        levels all stay small never reaches the device.
    host_count_rows : int
        A count's last level is counted on the host, without writing rows, up to this many
        matches (never fewer than ``host_rows``; with ``host_rows=0`` none is). Default
        16,384: a counted level writes no rows, so it stays cheaper than a launch well past
        the 4,096 rows where written levels stop paying.
    bfs_chain : int
        Device BFS levels launched back to back before their sizes are read (at least 1: a
        read after every level). Default 4: each read saves a synchronisation, ~0.1 ms a level.
    candidate_space : bool
        Local candidate sets from the plan's candidate space (the neighbours that are
        candidates of the next pattern node, as CFL and DP-iso keep them) rather than raw
        adjacency rows. Default True: the sets are shorter, so warps check fewer candidates.
        A space whose build would visit more than ~8 million adjacency entries, or that
        would take more than an eighth of the memory budget, is left out, and device-resident
        plans always use adjacency rows.
    adjacency_bits : bool
        Test edges through an adjacency bitmap (one load a test) on simple data graphs of up
        to ~11,500 nodes without edge labels, instead of a binary search of the sorted row.
        Default True.
    fused : bool
        A count runs its device BFS levels and its DFS in one cooperative launch, levels
        separated by grid barriers. Default True (about 1.4x faster on 16-node counts than a
        launch per level); False launches the levels from the host, then the DFS, as
        enumerations always do.
    fused_host_rows : int or None
        Before the fused launch, host levels only while they hold fewer than this many rows
        (never more than ``host_rows``; 0: the fused search starts from the roots). None: by
        the pattern's stack depth (64 rows for patterns of up to 8 and of 17-32 nodes, 0 for
        9-16), the measured best.
    fused_regs : int or None
        The fused kernel's register cap per thread (0: none, at most 255). None: by stack depth
        (64 for patterns of up to 8 nodes, where the cap lets more blocks share an SM; none
        above, where shared memory bounds them first).
    fused_narrow : int or None
        The fused search's levels of fewer rows than this run in one block, with a block's
        barrier instead of a grid barrier (0: never). None: 4 per warp of a block.
    host_work : int
        The host levels before a fused launch stop once they have examined this many
        candidates (0: no bound, the default). A bound helps a deep, narrow search, whose
        levels cost one host thread more than they would cost the device.
    small_space : int
        A count whose candidate space holds at most this many entries per pattern node is
        first tried by the CPU engine's sequential search (up to 4,096 candidates), else keeps
        its levels on the host to 256 rows (0: never; only where ``fused_host_rows`` is None).
        Default 6: such searches finish on the host in well under a millisecond, faster than
        from the roots on the device.
    out_capacity : int or None
        Rows of the device output buffer of an enumeration (at least 1); larger outputs are
        counted per task and collected in batches that fit. None: a quarter of the memory
        budget, at most 256 MB, at least 1,024 rows.
    blocks : int or None
        The grid size of the DFS and fused launches (at least 1). None: as many blocks as the
        card holds resident, from the kernel's register and shared-memory use.

    Examples
    --------
    >>> from nx_gsm.engines.gpu.gmatch import GMatchConfig
    >>> cfg = GMatchConfig(steal=False, memory_budget=2 << 30)
    >>> cfg.steal, cfg.host_rows
    (False, 4096)
    >>> GMatchConfig(bfs_chain=0)
    Traceback (most recent call last):
    ...
    ValueError: GMatchConfig.bfs_chain must be at least 1, got 0

    The engine takes it, and the engine object goes to any ``engine=`` (this needs a GPU):

    >>> import networkx as nx, nx_gsm
    >>> eng = nx_gsm.get_engine("gmatch", config=cfg)                     # doctest: +SKIP
    >>> nx_gsm.count_subgraph_monomorphisms(nx.cycle_graph(5), nx.path_graph(3),
    ...                                     engine=eng)                    # doctest: +SKIP
    10
    """

    memory_budget: int | None = None
    time_limit: float | None = None
    steal: bool = True
    queue_capacity: int = QUEUE_CAPACITY
    pool_target: int | None = None
    bfs_levels: int | None = None
    host_rows: int = HOST_BFS_ROWS
    host_count_rows: int = HOST_COUNT_ROWS
    bfs_chain: int = BFS_CHAIN
    candidate_space: bool = True
    adjacency_bits: bool = True
    fused: bool = True
    fused_host_rows: int | None = None
    fused_regs: int | None = None
    fused_narrow: int | None = None
    host_work: int = HOST_WORK
    small_space: int = SMALL_SPACE
    out_capacity: int | None = None
    blocks: int | None = None

    def __post_init__(self):
        checked = {
            "memory_budget": _integer("memory_budget", self.memory_budget, 1, optional=True),
            "time_limit": self._seconds(self.time_limit),
            "steal": _boolean("steal", self.steal),
            "queue_capacity": _integer("queue_capacity", self.queue_capacity, 1),
            "pool_target": _integer("pool_target", self.pool_target, 1, optional=True),
            "bfs_levels": _integer("bfs_levels", self.bfs_levels, 0, optional=True),
            "host_rows": _integer("host_rows", self.host_rows, 0),
            "host_count_rows": _integer("host_count_rows", self.host_count_rows, 0),
            "bfs_chain": _integer("bfs_chain", self.bfs_chain, 1),
            "candidate_space": _boolean("candidate_space", self.candidate_space),
            "adjacency_bits": _boolean("adjacency_bits", self.adjacency_bits),
            "fused": _boolean("fused", self.fused),
            "fused_host_rows": _integer("fused_host_rows", self.fused_host_rows, 0,
                                        optional=True),
            "fused_regs": _integer("fused_regs", self.fused_regs, 0, MAX_REGS, optional=True),
            "fused_narrow": _integer("fused_narrow", self.fused_narrow, 0, optional=True),
            "host_work": _integer("host_work", self.host_work, 0),
            "small_space": _integer("small_space", self.small_space, 0),
            "out_capacity": _integer("out_capacity", self.out_capacity, 1, optional=True),
            "blocks": _integer("blocks", self.blocks, 1, optional=True),
        }
        for name, value in checked.items():  # NumPy scalars become Python's (frozen: setattr)
            object.__setattr__(self, name, value)

    @staticmethod
    def _seconds(value):
        if value is None:
            return None
        if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
            raise TypeError(f"GMatchConfig.time_limit must be a number of seconds or None, got "
                            f"{value!r}")
        value = float(value)
        if not (value > 0 and math.isfinite(value)):
            raise ValueError(f"GMatchConfig.time_limit must be a positive, finite number of "
                             f"seconds, got {value}")
        return value

    @classmethod
    def field_names(cls):
        """The names of the fields, in declaration order."""
        return tuple(f.name for f in fields(cls))
