"""gMatch's constants: the control block's slots (shared by the kernels and the host)
and the tuning defaults, with the ``NX_GSM_GMATCH_*`` environment knobs that override the
engine's parameters."""

from __future__ import annotations

import os

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


def flag(x):
    return x if isinstance(x, bool) else str(x) != "0"


def knob(value, name, default, conv=int):
    """A GMatchEngine parameter: ``value`` where given, else the environment's
    ``NX_GSM_GMATCH_<name>`` where set, else ``default``."""
    if value is None:
        value = os.environ.get("NX_GSM_GMATCH_" + name) or None
    return default if value is None else conv(value)
