"""GAMMA: batch-dynamic subgraph matching on the GPU (the device side of ``IncrementalMatcher``).

Implements GAMMA (Qiu et al., *GPU-Accelerated Batch-Dynamic Subgraph Matching*, ICDE 2024,
arXiv:2401.17018) over node ids:

* **Dynamic graph (Sec. V-C, GPMA).** :class:`RowPMA` keeps every vertex's sorted adjacency row in
  a segment of one arena with free slots (gaps) at the segment's end; a batch of insertions and
  deletions is merged into the touched segments with array operations (NumPy or CuPy), a segment
  that overflows moves to the arena's end with doubled capacity, and the arena is re-spread when
  half of it is garbage (the PMA's rebalancing). Rows stay contiguous and sorted, so the kernels
  binary-search them as CSR rows (GPMA's global key array would need every search to skip gaps).
* **Vertex encoding and candidate table (Sec. IV-B).** A vertex's code is its node-label bits
  (``node_match`` against each pattern node), its distinct out-/in-degree saturated at the
  pattern's maximum (the digest's thermometer code: saturation keeps the filter sound) and its
  self-loop; the candidate table ``ct[v]`` holds one bit per pattern node. Each batch recomputes
  the code only of the vertices it touches and uploads the rows whose code changed.
* **Warp per updated edge (Sec. IV-C, Alg. 1 with the digest's corrections).** Each task is an
  updated data pair seeded onto an ordered pattern pair (both orientations), a self-loop, or a
  new/deleted node seeded onto an isolated pattern node. A warp runs the DFS of its task: at each
  depth its 32 lanes test the shortest backward-neighbour row in parallel with the exact
  NetworkX-semantics test (candidate bit, injectivity, multiplicities ``>=``/``==``, edge labels,
  as ``common.feasible``) and ballot-compact the survivors into the warp's level buffer; the
  last depth writes the matches. Negatives run on the old graph, then the batch is applied, then
  positives run on the new graph.
* **Each match once (end of Sec. IV-C, fixed as in the digest A2.6).** The updated items (changed
  pairs, then new/deleted nodes) are totally ordered; a task of rank ``r`` rejects a candidate
  whose newly checked pairs (the pairs its checks actually constrain), self-loop or node is an
  updated item of rank ``< r``, so each match is produced only from its smallest updated item.
* **Scheduling and work stealing (Sec. V-A).** Warps take tasks from an atomic counter, heaviest
  seeds (degree product) first; once it is drained, an idle warp steals the tail half of the
  untaken candidates at a busy warp's shallowest level, with the partial match above it, from
  the per-warp level pointers the block keeps in shared memory (the digest's A2.8 protocol:
  a per-warp lock, atomic reads since Numba has no ``volatile``). Between blocks, a busy warp
  that sees idle warps donates the same unit through a global ring (gMatch Sec. 4.3's queue).
* **Coalesced search (Sec. V-B, the digest's k = 0 case).** Seeded pattern pairs are grouped
  into orbits of the pattern's label-preserving automorphisms; only a representative per orbit
  is searched, the other members' matches are its matches composed with the automorphism, and
  counts weigh the representative's matches by the orbit size.

Exactness: ``added``/``removed`` equal the CPU path's (``nx_gsm.incremental``), which equals the
difference of VF2's results (tests/test_gpu_gamma_sim.py, tests/test_card_gamma.py).
"""

from .engine import GammaDelta, gamma_reason
from .kernels import KMAX
from .pma import RowPMA

__all__ = ["RowPMA", "GammaDelta", "gamma_reason", "KMAX"]
