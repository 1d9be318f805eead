"""``engine="partitioned"``: the data graph cut into parts that fit a device budget (PBE).

Guo et al., *GPU-Accelerated Subgraph Enumeration on Partitioned Graphs* (SIGMOD 2020), with the
paper's ambiguities resolved so that every match is found exactly once:

* **inner** matches (every image node in one part) by the inner engine on the sub-plan over the
  part's induced subgraph (plan and CSR arrays sliced, no NetworkX objects; PBE section 3.1);
* **cross** matches (image nodes in two or more parts) by min-marked-edge seeded enumeration
  (section 3.2, Alg. 3): the marked data pairs are the *cut* pairs (endpoints in different parts)
  and a cross match is emitted only from the pattern pair whose image is its smallest cut pair, in
  the total order ``(min id, max id)`` (DUPREMOVE, Lemma 5). For a connected pattern a match that
  spans parts maps some pattern pair onto a cut pair, so inner + cross is every match, once.

Pattern pairs are the pattern's edges with directions ignored (a pair ``u -> w`` plus ``w -> u``
is one pair): injectivity makes their images distinct data pairs, so there are no ties. The
seeded search checks what the plan checks (mode, multiplicities both ways, induced non-edges,
node and edge labels, self-loops through the candidates), so induced mode, directed graphs,
multigraphs and labels need nothing from PBE beyond the pairing above; the cut test looks only at
the images of pattern pairs, which are data edges in every mode.

**Shared execution** (section 4.1, Defs. 6-7, Lemma 3): the pattern pairs fall into orbits of the
pattern's automorphisms (those that keep the plan's candidate rows, multiplicities and edge-label
rows, so relabelling maps matches of the plan onto matches of the plan). If automorphism ``A``
maps pair ``e`` onto ``f``, the cross matches with prime pair ``f`` are exactly ``g o A^-1`` for
those with prime pair ``e`` (their image pairs are the same set, hence the same minimum), so one
seeded search per orbit gives the counts of the whole orbit and its mappings by REMAP, the
representative's own results included (the step Alg. 3 omits). ``shared=False`` searches every
pair separately (the naive baseline the paper measures against).

**Where the cross search runs**: with a GPU inner engine, on gmatch (``count_from`` /
``iter_from`` with ``cut_part``: DUPREMOVE in its kernels) over the *halo*, the subgraph induced
on the data nodes within ``k - 2`` undirected hops of a cut-pair endpoint (every node of a cross
match of a connected ``k``-node pattern is that close to its prime pair). The halo keeps the
nodes in ascending id order, so local pair keys order like global ones and DUPREMOVE decides
alike. A halo over the budget, a pattern deeper than gmatch's stack, a CPU inner engine or
``cross="cpu"`` keep the search on the CPU (Numba, parallel over seeds, whole graph);
``last_stats["cross_on"]`` says which and why. While a GPU inner engine (on CuPy) matches one
part, the next part's graph arrays upload on a side stream from pinned host buffers.

Patterns whose pairs do not connect them (isolated nodes, several components) can match across
parts without touching a cut pair: those queries run unpartitioned on the inner engine, and
``last_stats["routed"]`` says so.
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import replace

import numba
import numpy as np
from numba import njit, prange

from .. import kernel_cache  # noqa: F401  (sets Numba's cache folder before @njit runs)
from ..graph import GsmGraph, in_csr
from ..plan.order import undirected_neighbours
from ..plan.planner import reorder
from ..threads import launch
from .base import UNLIMITED, PartialCount
from .cpu import check_chunk, plan_arrays, trivial_answer, trivial_rows
from .cpu.kernels import CUR, HI, KIND, STACK_ROWS, conflict, consistent, setup, value
from .catalog import capabilities_of

__all__ = ["PartitionedEngine", "part_bytes", "partition", "edge_orbits", "halo"]

log = logging.getLogger("nx_gsm.partitioned")

# seeded-search prefixes per budget check (each a prange task): keeps deadlines responsive
_BATCH_PER_THREAD = 2048
# seeds per gmatch launch in the GPU cross search (its kernel polls the budget by itself); a
# batch's rows are held until its device work is done, so a fault redoes just that batch
_GPU_BATCH = 1 << 16


# -- partitioning -------------------------------------------------------------------------------
def part_bytes(n, m, k, directed):
    """Device bytes of one part: CSR (indptr, indices, multiplicities, edge classes), the in-CSR
    of a directed graph, self-loop counts and the plan's candidate bits for ``k`` pattern nodes.

    Examples
    --------
    >>> part_bytes(10, 40, 4, False)
    616
    """
    b = 8 * (n + 1) + 12 * m + 4 * n + k * ((n + 7) // 8)
    if directed:
        b += 8 * (n + 1) + 16 * m
    return b


def _skeleton_csr(G):
    """Symmetric adjacency of G without directions or self-loops (METIS's input)."""
    src = G.sources()
    dst = G.indices.astype(np.int64)
    if G.directed:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
        key = np.unique(src * G.n + dst)
        src, dst = key // G.n, key % G.n
    xadj = np.zeros(G.n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=G.n), out=xadj[1:])
    return xadj, dst


def _sizes(G, part, nparts, k):
    src = G.sources()
    inside = part[src] == part[G.indices]
    n_i = np.bincount(part, minlength=nparts)
    m_i = np.bincount(part[src[inside]], minlength=nparts)
    return [part_bytes(int(a), int(b), k, G.directed) for a, b in zip(n_i, m_i)]


def partition(G, *, parts=None, max_device_bytes=None, k=1):
    """Assign every node of GsmGraph ``G`` to a part: ``(part id per node, number of parts)``.

    ``parts`` forces the number of parts; otherwise METIS (pymetis) is asked for
    ``ceil(bytes / max_device_bytes)`` parts, balanced by degree, and for more while some part's
    arrays (:func:`part_bytes`) exceed ``max_device_bytes``.

    Examples
    --------
    >>> import networkx as nx, nx_gsm
    >>> from nx_gsm.engines.partitioned import partition
    >>> part, p = partition(nx_gsm.from_networkx(nx.grid_2d_graph(6, 6)), parts=4)
    >>> p, sorted(set(part.tolist()))
    (4, [0, 1, 2, 3])
    """
    n = G.n
    m = int(G.indices.size)
    if parts is not None:
        want = max(1, min(int(parts), n))
    elif max_device_bytes is None:
        want = 1
    else:
        total = part_bytes(n, m, k, G.directed)
        want = max(1, min(n, math.ceil(total / max_device_bytes)))
    while True:
        if want <= 1:
            part = np.zeros(n, dtype=np.int32)
        else:
            try:
                import pymetis
            except ImportError:
                raise RuntimeError(f"splitting the data graph into {want} parts needs pymetis "
                                   "(pip install 'nx-gsm[distributed]')") from None

            xadj, adjncy = _skeleton_csr(G)
            vw = (np.diff(xadj) + 1).astype(np.int64)
            _, member = pymetis.part_graph(want, pymetis.CSRAdjacency(xadj, adjncy), vweights=vw)
            part = np.asarray(member, dtype=np.int32)
        if parts is not None or max_device_bytes is None:
            return part, want
        worst = max(_sizes(G, part, want, k))
        if worst <= max_device_bytes:
            return part, want
        if want >= n:
            raise MemoryError(f"partitioned: a single node's arrays ({worst} bytes) exceed "
                              f"max_device_bytes={max_device_bytes}")
        want = min(n, max(want + 1, math.ceil(want * worst / max_device_bytes)))


def _induced(G, eclass, nodes):
    """GsmGraph induced on sorted global ids ``nodes`` and its slice of the plan's edge classes.
    Ids stay sorted, so every row stays sorted."""
    loc = np.full(G.n, -1, dtype=np.int64)
    loc[nodes] = np.arange(nodes.size)
    src = G.sources()
    keep = (loc[src] >= 0) & (loc[G.indices] >= 0)
    s, d = loc[src[keep]], loc[G.indices[keep]]
    mult = G.mult[keep]
    indptr = np.zeros(nodes.size + 1, dtype=np.int64)
    np.cumsum(np.bincount(s, minlength=nodes.size), out=indptr[1:])
    kw = in_csr(nodes.size, s, d, mult) if G.directed else {}
    sub = GsmGraph(indptr=indptr, indices=d, mult=mult, loops=G.loops[nodes],
                   node_keys=nodes.tolist(), directed=G.directed, multigraph=G.multigraph, **kw)
    return sub, np.ascontiguousarray(eclass[keep])


def sub_plan(plan, nodes):
    """The plan restricted to the subgraph induced on ``nodes`` (sorted global ids): same order,
    checks and labels; candidates and edge classes sliced. Its matches are exactly the plan's
    matches whose image lies in ``nodes``, with ids local to ``nodes``."""
    sub, ecl = _induced(plan.G, plan.eclass, nodes)
    cand = np.ascontiguousarray(plan.cand[:, nodes])
    p = replace(plan, G=sub, eclass=ecl, empty=bool(plan.empty or nodes.size < plan.k or
                                                    (plan.k and cand.sum(axis=1).min() == 0)))
    return reorder(p, plan.order, cand=cand)


# -- the pattern's pairs and their automorphism orbits ------------------------------------------
def _pairs(H):
    """Unordered pattern pairs (a < b) joined by an edge in either direction."""
    nb = undirected_neighbours(H)
    return [(a, b) for a in range(H.n) for b in sorted(nb[a]) if a < b]


def _connected(H):
    nb = undirected_neighbours(H)
    seen, todo = {0}, [0]
    while todo:
        for w in nb[todo.pop()]:
            if w not in seen:
                seen.add(w)
                todo.append(w)
    return len(seen) == H.n


class _Symmetry:
    """Automorphisms of the pattern as the plan sees it: a permutation A qualifies when it keeps
    multiplicities both ways (self-loops included), candidate rows and edge-label rows, so that
    ``f o A`` is a match of the plan exactly when ``f`` is."""

    def __init__(self, plan):
        H = plan.H
        k = H.n
        self.k = k
        mult = np.zeros((k, k), dtype=np.int64)
        elab = np.full((k, k), -1, dtype=np.int64)
        rows = {}
        for u in range(k):
            for e in range(H.indptr[u], H.indptr[u + 1]):
                w = int(H.indices[e])
                mult[u, w] = H.mult[e]
                if plan.has_elabels:
                    elab[u, w] = rows.setdefault(plan.eok[e].tobytes(), len(rows))
        np.fill_diagonal(mult, H.loops)
        self.mult, self.elab = mult, elab
        ncls = {}
        colour = [ncls.setdefault(plan.cand[u].tobytes(), len(ncls)) for u in range(k)]
        # colour refinement (1-WL): automorphisms keep the stable colours, which prunes the search
        while True:
            sig = [(colour[u], tuple(sorted((int(mult[u, w]), int(mult[w, u]), int(elab[u, w]),
                                             int(elab[w, u]), colour[w])
                                            for w in range(k) if w != u and
                                            (mult[u, w] or mult[w, u]))))
                   for u in range(k)]
            ids = {}
            new = [ids.setdefault(s, len(ids)) for s in sig]
            if len(ids) == len(set(colour)):
                break
            colour = new
        self.colour = colour
        self.nb = undirected_neighbours(H)

    def _ok(self, A, u, x):
        mult, elab = self.mult, self.elab
        if mult[u, u] != mult[x, x]:
            return False
        for w in range(self.k):
            y = A[w]
            if y < 0 or w == u:
                continue
            if (mult[u, w] != mult[x, y] or mult[w, u] != mult[y, x] or
                    elab[u, w] != elab[x, y] or elab[w, u] != elab[y, x]):
                return False
        return True

    def find(self, pins):
        """One automorphism (list, ``A[u]``) extending ``pins`` {u: A(u)}, or None."""
        k = self.k
        A = [-1] * k
        used = [False] * k
        for u, x in pins.items():
            if self.colour[u] != self.colour[x] or used[x] or not self._ok(A, u, x):
                return None
            A[u], used[x] = x, True
        # connectivity-first order keeps every step constrained by an assigned neighbour
        todo = []
        placed = set(pins)
        while len(todo) + len(placed) < k:
            front = [u for u in range(k) if u not in placed and u not in todo and
                     any(w in placed or w in todo for w in self.nb[u])]
            rest = [u for u in range(k) if u not in placed and u not in todo]
            todo.append(front[0] if front else rest[0])

        def extend(i):
            if i == len(todo):
                return True
            u = todo[i]
            for x in range(k):
                if not used[x] and self.colour[x] == self.colour[u] and self._ok(A, u, x):
                    A[u], used[x] = x, True
                    if extend(i + 1):
                        return True
                    A[u], used[x] = -1, False
            return False

        return A if extend(0) else None


def edge_orbits(plan):
    """Orbits of the pattern pairs under the plan's pattern automorphisms (PBE's strict groups).

    Returns a list of groups ``[(pair, A), ...]``; the first member is the representative (``A``
    the identity) and ``A`` maps the representative pair onto ``pair`` (in some orientation).

    Examples
    --------
    >>> import networkx as nx
    >>> from nx_gsm.api import prepare
    >>> plan, _, _ = prepare(nx.complete_graph(5), nx.path_graph(4), "mono")
    >>> sorted(len(g) for g in edge_orbits(plan))
    [1, 2]
    """
    sym = _Symmetry(plan)
    pairs = _pairs(plan.H)
    groups = []
    for p in pairs:
        for g in groups:
            (a, b), _ = g[0]
            A = sym.find({a: p[0], b: p[1]}) or sym.find({a: p[1], b: p[0]})
            if A is not None:
                g.append((p, A))
                break
        else:
            groups.append([(p, list(range(plan.H.n)))])
    return groups


def _pair_order(plan, a, b):
    """A search sequence starting with pattern pair (a, b) (PBE's pi[1:2]), then connectivity
    first as the planner orders: most earlier neighbours, fewer candidates, higher degree."""
    nb = undirected_neighbours(plan.H)
    counts = plan.cand.sum(axis=1)
    if counts[b] < counts[a]:
        a, b = b, a
    order = [a, b]
    back = np.zeros(plan.k, dtype=np.int64)
    for u in order:
        for w in nb[u]:
            back[w] += 1
    while len(order) < plan.k:
        rest = [u for u in range(plan.k) if u not in order]
        u = min(rest, key=lambda x: (-back[x], counts[x], -len(nb[x]), x))
        order.append(u)
        for w in nb[u]:
            back[w] += 1
    return np.asarray(order, dtype=np.int32)


def _back_pairs(H, order):
    """Per depth d >= 2, the earlier depths whose pattern node forms a pair with order[d]."""
    nb = undirected_neighbours(H)
    ptr, js = [0], []
    for d in range(order.size):
        if d >= 2:
            js.extend(j for j in range(d) if int(order[j]) in nb[int(order[d])])
        ptr.append(len(js))
    return np.asarray(ptr, dtype=np.int32), np.asarray(js, dtype=np.int32)


# -- the seeded (cross-partition) search --------------------------------------------------------
@njit(cache=True, inline="always")
def _pair_key(x, y, n):
    return (np.int64(x) * n + y) if x < y else (np.int64(y) * n + x)


@njit(cache=True)
def _dup_ok(part, bk_ptr, bk_j, d, v, m, prime, n):
    """DUPREMOVE (Alg. 3 lines 18-30): no pattern pair at depth d may map onto a cut pair smaller
    than the prime pair m[0], m[1]."""
    pv = part[v]
    for c in range(bk_ptr[d], bk_ptr[d + 1]):
        x = m[bk_j[c]]
        if part[x] != pv and _pair_key(v, x, n) < prime:
            return False
    return True


@njit(cache=True)
def _seed_ok(P, pairs):
    """Which oriented cut pairs (x for depth 0, y for depth 1) pass the plan's checks."""
    k = P[0].size
    ok = np.zeros(pairs.shape[0], dtype=np.bool_)
    m = np.empty(k, dtype=np.int32)
    for i in range(pairs.shape[0]):
        m[0] = pairs[i, 0]
        if consistent(P, 0, m[0], m) and consistent(P, 1, pairs[i, 1], m):
            ok[i] = True
    return ok


@njit(cache=True)
def _grow(P, part, bk_ptr, bk_j, prefix, out, collect):
    """Depth-first search below one seed (depths 0, 1 fixed), DUPREMOVE at every depth."""
    k = P[0].size
    n = part.size
    m = np.empty(k, dtype=np.int32)
    stk = np.empty((STACK_ROWS, k), dtype=np.int64)
    m[0] = prefix[0]
    m[1] = prefix[1]
    if k == 2:
        if collect:
            out[0, 0] = m[0]
            out[0, 1] = m[1]
        return 1
    prime = _pair_key(m[0], m[1], n)
    found = 0
    d = 2
    setup(P, d, m, stk)
    while True:
        if stk[CUR, d] >= stk[HI, d]:
            d -= 1
            if d < 2:
                break
            continue
        i = stk[CUR, d]
        stk[CUR, d] = i + 1
        v = value(P, stk[KIND, d], i)
        if not consistent(P, d, v, m) or conflict(m, d, v) >= 0:
            continue
        if not _dup_ok(part, bk_ptr, bk_j, d, v, m, prime, n):
            continue
        m[d] = v
        if d == k - 1:
            if collect:
                out[found, :] = m
            found += 1
            continue
        d += 1
        setup(P, d, m, stk)
    return found


@njit(cache=True, parallel=True)
def _grow_all(P, part, bk_ptr, bk_j, seeds, collect):
    """Counts per seed, and with ``collect`` the rows (two passes, as the CPU engine expands)."""
    t = seeds.shape[0]
    k = P[0].size
    counts = np.zeros(t + 1, dtype=np.int64)
    dummy = np.empty((1, k), dtype=np.int32)
    for i in prange(t):
        counts[i + 1] = _grow(P, part, bk_ptr, bk_j, seeds[i], dummy, False)
    offs = np.cumsum(counts)
    rows = np.empty((offs[-1] if collect else 0, k), dtype=np.int32)
    if collect:
        for i in prange(t):
            _grow(P, part, bk_ptr, bk_j, seeds[i], rows[offs[i]:offs[i + 1]], True)
    return counts[1:], rows


def cut_pairs(G, part):
    """Unordered data pairs (x < y) joined by an edge in either direction whose ends lie in
    different parts, as an int32 array (pairs, 2)."""
    src = G.sources()
    dst = G.indices.astype(np.int64)
    cut = part[src] != part[dst]
    a, b = np.minimum(src[cut], dst[cut]), np.maximum(src[cut], dst[cut])
    key = np.unique(a * G.n + b)
    return np.stack([key // G.n, key % G.n], axis=1).astype(np.int32)


def halo(G, pairs, hops):
    """Sorted ids of the data nodes within ``hops`` undirected hops of an endpoint of ``pairs``.

    Examples
    --------
    >>> import networkx as nx, nx_gsm, numpy as np
    >>> halo(nx_gsm.from_networkx(nx.path_graph(8)), np.array([[3, 4]]), 2).tolist()
    [1, 2, 3, 4, 5, 6]
    """
    xadj, adj = _skeleton_csr(G)
    seen = np.zeros(G.n, dtype=np.bool_)
    front = np.unique(np.asarray(pairs, dtype=np.int64).ravel())
    seen[front] = True
    for _ in range(hops):
        lo, ln = xadj[front], xadj[front + 1] - xadj[front]
        at = np.repeat(lo - (np.cumsum(ln) - ln), ln) + np.arange(int(ln.sum()))
        nb = adj[at]
        front = np.unique(nb[~seen[nb]])
        if front.size == 0:
            break
        seen[front] = True
    return np.flatnonzero(seen)


class _Prefetch:
    """A part's graph arrays uploaded on a side CuPy stream from pinned host buffers, as the GPU
    engines' graph cache holds them (``_graph_to_device``: non-empty, kernel-ready), so the
    part's search finds them cached instead of uploading."""

    def __init__(self, G, xp):
        self.G = G
        self.xp = xp
        self.stream = xp.cuda.Stream(non_blocking=True)
        self._pinned = []
        self.start = self.stream.record()

        def up(x):
            mem = xp.cuda.alloc_pinned_memory(x.nbytes)
            h = np.frombuffer(mem, dtype=x.dtype, count=x.size)
            h[:] = x
            d = xp.empty(x.shape, dtype=x.dtype)
            d.set(h, stream=self.stream)
            self._pinned.append(mem)  # host pages must outlive the asynchronous copy
            return d

        from .gpu.residency import kernel_adjacency

        self._arrs = kernel_adjacency(G, up)  # wrapped for the kernels once the copies are done
        self.end = self.stream.record()

    def adopt(self, engines):
        """Wait for the copies, then hand the arrays to every engine's graph cache; returns
        (seconds the copies took on the device, seconds waited for them here)."""
        from .gpu.common import kernel_array

        t0 = time.perf_counter()
        self.end.synchronize()
        waited = time.perf_counter() - t0
        self._pinned.clear()
        arrs = tuple(kernel_array(a) for a in self._arrs)
        for eng in engines:
            eng.adopt_graph(self.G, arrs)
        return self.xp.cuda.get_elapsed_time(self.start, self.end) / 1e3, waited


class PartitionedEngine:
    """Engine protocol over a partitioned data graph (PBE); exact for every partition count.

    Parameters
    ----------
    inner : str or engine
        Engine for the matches inside each part: ``"auto"``, ``"cpu"``, a GPU engine name, or
        an engine object.
    max_device_bytes : int, optional
        Budget per part (see :func:`part_bytes`); enough METIS parts are made that each fits.
        None: the device's memory budget when ``inner`` runs on a GPU, else one part.
    parts : int, optional
        Force this many parts (tests, benchmarks); overrides ``max_device_bytes``.
    shared : bool
        Shared execution over the pattern pairs' automorphism orbits (default) or one seeded
        search per pattern pair (PBE's naive baseline).
    cross : str
        Where the cross-partition search runs: ``"auto"`` (gmatch on the halo when the inner
        engine runs on a GPU, else the CPU), ``"gpu"`` (gmatch whatever the inner engine) or
        ``"cpu"``.

    Attributes
    ----------
    last_stats : dict or None
        The last run: ``parts``, ``cut_pairs``, ``inner``/``cross`` counts, ``groups`` (orbits
        searched), ``seeds``, ``routed`` (why it ran unpartitioned, or None), ``cross_on``
        (``"gpu"`` or ``"cpu"``, with the reason after a colon), ``halo_nodes`` (the GPU cross
        search's subgraph, or None) and seconds ``partition_s``, ``inner_s``, ``cross_s``,
        ``cross_transfer_s`` (the GPU cross search's uploads, part of ``cross_s``) and, with a
        GPU inner engine, ``transfer_s`` (its uploads, part of ``inner_s``), ``overlap_s``
        (upload time hidden behind the previous part's search; None without CuPy) and
        ``prefetched`` (parts uploaded that way).

    Examples
    --------
    >>> import networkx as nx, nx_gsm
    >>> from nx_gsm.api import prepare
    >>> from nx_gsm.engines.partitioned import PartitionedEngine
    >>> plan, _, _ = prepare(nx.grid_2d_graph(5, 5), nx.cycle_graph(4), "mono")
    >>> eng = PartitionedEngine(inner="cpu", parts=4)
    >>> eng.count(plan), eng.last_stats["parts"], eng.last_stats["cross_on"]
    (128, 4, 'cpu: the inner engine runs on the CPU')
    """

    name = "partitioned"

    @property
    def capabilities(self):
        """The partitioned engine's, on the device when its inner engine is."""
        inner = self.inner.capabilities
        return replace(capabilities_of("partitioned"), device=inner.device)

    def __init__(self, inner="auto", max_device_bytes=None, parts=None, shared=True,
                 cross="auto"):
        from .registry import resolve_engine

        if inner == "partitioned" or isinstance(inner, PartitionedEngine):
            raise ValueError("the inner engine of the partitioned engine cannot be partitioned")
        if cross not in ("auto", "gpu", "cpu"):
            raise ValueError(f"cross must be 'auto', 'gpu' or 'cpu', got {cross!r}")
        self.inner = resolve_engine(inner)
        self.max_device_bytes = max_device_bytes
        self.parts = parts
        self.shared = bool(shared)
        self.cross = cross
        self._gm = None
        self.last_stats = None

    # -- setup ----------------------------------------------------------------------------------
    def _gpu_engines(self):
        """The inner GPU engines (the auto engine's, or the inner engine itself); empty on a
        CPU inner engine."""
        if self.inner.capabilities.device and not hasattr(self.inner, "engines"):
            return [self.inner]
        return [e for e in getattr(self.inner, "engines", {}).values()
                if e.capabilities.device]

    def _budget_bytes(self):
        if self.max_device_bytes is not None or not self._gpu_engines():
            return self.max_device_bytes
        from .gpu.device import memory_budget

        return memory_budget()

    def _prepare(self, plan):
        gpu = bool(self._gpu_engines())
        st = dict(parts=1, cut_pairs=0, inner=0, cross=0, groups=0, seeds=0, routed=None,
                  shared=self.shared, partition_s=0.0, inner_s=0.0, cross_s=0.0,
                  cross_on=None, halo_nodes=None, cross_transfer_s=0.0,
                  transfer_s=0.0 if gpu else None, overlap_s=None, prefetched=0)
        self.last_stats = st
        if plan.k > 1 and not _connected(plan.H):
            st["routed"] = ("disconnected pattern: a match can span parts without a cut pair, "
                            "so it ran unpartitioned on the inner engine")
            return None
        t0 = time.perf_counter()
        part, nparts = partition(plan.G, parts=self.parts, max_device_bytes=self._budget_bytes(),
                                 k=plan.k)
        st["partition_s"] = time.perf_counter() - t0
        st["parts"] = nparts
        if nparts <= 1:
            st["routed"] = "one part: the graph fits the budget"
            return None
        return part

    def _parts(self, plan, part):
        """(nodes, sub-plan) per part. On a GPU inner engine with CuPy, part i+1's graph arrays
        upload on a side stream (pinned buffers) before part i is handed to the caller, and are
        put in the engines' graph caches when part i+1 is; each part is uploaded once."""
        st = self.last_stats
        engines = self._gpu_engines()
        xp = getattr(engines[0], "xp", np) if engines else np
        ahead = xp is not np
        if ahead:
            st["overlap_s"] = 0.0
        pending = None
        subs = ((nodes, sub_plan(plan, nodes))
                for nodes in (np.flatnonzero(part == i) for i in range(int(part.max()) + 1))
                if nodes.size >= plan.k)
        nxt = next(subs, None)
        try:
            while nxt is not None:
                cur, nxt = nxt, next(subs, None)
                if pending is not None:
                    took, waited = pending.adopt(engines)
                    st["overlap_s"] += max(0.0, took - waited)
                    st["prefetched"] += 1
                    pending = None
                if ahead and nxt is not None and not nxt[1].empty:
                    pending = _Prefetch(nxt[1].G, xp)
                yield cur
        finally:
            if pending is not None:
                # a search that stopped early: its buffers go back to the pools only after
                # the copies into them are done
                pending.end.synchronize()

    def _add_upload(self, st):
        """Add the GPU inner engine's host-to-device time for the part just run (gmatch reports
        it as ``last_stats["t_upload"]``; the auto engine names the engine it ran in
        ``last_choice``)."""
        if st["transfer_s"] is None:
            return
        eng = self.inner
        choice = getattr(eng, "last_choice", None)
        if choice:
            eng = getattr(eng, "engines", {}).get(choice[0], eng)
        stats = getattr(eng, "last_stats", None)
        if isinstance(stats, dict) and "t_upload" in stats:
            st["transfer_s"] += float(stats["t_upload"])

    def _groups(self, plan):
        if self.shared:
            return edge_orbits(plan)
        ident = list(range(plan.k))
        return [[(p, ident)] for p in _pairs(plan.H)]

    def _seeds(self, plan, cp, group):
        """(reordered plan, its kernel arrays, back pairs, seeds) for a group's representative."""
        (a, b), _ = group[0]
        rp = reorder(plan, _pair_order(plan, a, b))
        P = plan_arrays(rp)
        both = np.concatenate([cp, cp[:, ::-1]])
        seeds = np.ascontiguousarray(both[_seed_ok(P, both)])
        bk_ptr, bk_j = _back_pairs(plan.H, rp.order)
        return rp, P, bk_ptr, bk_j, seeds

    # -- the cross search -----------------------------------------------------------------------
    def _cross_engine(self):
        """gmatch for the GPU cross search: the inner engine's own when it has one."""
        if self._gm is None:
            for eng in self._gpu_engines():
                if eng.capabilities.cut_part:
                    self._gm = eng
                    break
            else:
                from .gpu.gmatch import GMatchEngine

                budgets = [e.memory_budget for e in self._gpu_engines()]
                self._gm = GMatchEngine(memory_budget=budgets[0] if budgets else None)
        return self._gm

    def _cross_device(self, plan, cp):
        """``(gmatch, halo ids, halo sub-plan)`` for the GPU cross search, or None with the
        reason in ``last_stats["cross_on"]``."""
        st = self.last_stats
        if self.cross == "cpu":
            st["cross_on"] = "cpu: cross='cpu'"
            return None
        if self.cross == "auto" and not self._gpu_engines():
            st["cross_on"] = "cpu: the inner engine runs on the CPU"
            return None
        eng = self._cross_engine()
        deepest = eng.capabilities.max_pattern
        if deepest is not None and plan.k > deepest:
            st["cross_on"] = (f"cpu: {plan.k} pattern nodes, deeper than {eng.name}'s stack "
                              f"({deepest})")
            return None
        nodes = halo(plan.G, cp, max(plan.k - 2, 0))
        st["halo_nodes"] = int(nodes.size)
        limit = self.max_device_bytes
        if limit is None:
            from .gpu.device import memory_budget

            limit = memory_budget(eng.memory_budget)
        sub = sub_plan(plan, nodes)
        need = part_bytes(int(nodes.size), int(sub.G.indices.size), plan.k, plan.G.directed)
        if need > limit:
            st["cross_on"] = f"cpu: the halo needs {need} device bytes, over the budget {limit}"
            return None
        st["cross_on"] = "gpu"
        return eng, nodes, sub

    def _cross(self, plan, part, collect, budget, left):
        """Yield (count, rows in plan order or None) per batch of seeds of every group;
        ``left()`` is how many more are wanted (None: all)."""
        st = self.last_stats
        cp = cut_pairs(plan.G, part)
        st["cut_pairs"] = int(cp.shape[0])
        pos = np.empty(plan.k, dtype=np.int64)
        pos[plan.order] = np.arange(plan.k)
        dev = self._cross_device(plan, cp)
        if dev is not None:
            eng, nodes, hsp = dev
            loc = np.full(plan.G.n, -1, dtype=np.int32)
            loc[nodes] = np.arange(nodes.size, dtype=np.int32)
            hpart = np.ascontiguousarray(part[nodes], dtype=np.int32)
        batch = _GPU_BATCH if dev is not None else _BATCH_PER_THREAD * numba.get_num_threads()
        for group in self._groups(plan):
            st["groups"] += 1
            rp, P, bk_ptr, bk_j, seeds = self._seeds(plan, cp, group)
            st["seeds"] += int(seeds.shape[0])
            lp = None if dev is None else reorder(hsp, rp.order)
            for s in range(0, seeds.shape[0], batch):
                sd = seeds[s:s + batch]
                got = None
                if lp is not None:
                    want = left()
                    lim = None if want is None else -(-want // len(group))
                    got = self._cross_gpu(eng, lp, loc[sd], hpart, nodes, collect, lim, budget)
                if got is None:
                    with numba.parallel_chunksize(1):
                        counts, rows = launch(_grow_all, P, part, bk_ptr, bk_j, sd, collect)
                    got = sum(int(x) for x in counts.tolist()), rows
                c = got[0] * len(group)
                rows = got[1]
                out = None
                if collect:
                    # REMAP: g = f o A^-1 puts f(order_rep[d]) at pattern node A(order_rep[d])
                    out = np.empty((rows.shape[0] * len(group), plan.k), dtype=np.int32)
                    for g, (_, A) in enumerate(group):
                        cols = pos[np.asarray(A)[rp.order]]
                        out[g * rows.shape[0]:(g + 1) * rows.shape[0], cols] = rows
                yield c, out
                if not budget.keep_going(st["inner"] + st["cross"]):
                    return

    def _cross_gpu(self, eng, lp, seeds, hpart, nodes, collect, limit, budget):
        """One batch of local seeds on gmatch: (count, global rows or None), or None after a
        device fault (the batch is then redone on the CPU)."""
        from .gpu import faults

        st = self.last_stats
        try:
            if collect:
                got = list(eng.iter_from(lp, seeds, chunk=1 << 16, limit=limit, budget=budget,
                                         cut_part=hpart))
                rows = nodes[np.concatenate(got)] if got else np.zeros((0, lp.k), np.int64)
                res = rows.shape[0], rows.astype(np.int32)
            else:
                res = int(eng.count_from(lp, seeds, limit=limit, budget=budget,
                                         cut_part=hpart)), None
        except faults.device_errors() as exc:
            eng._recover(exc)
            st["cross_on"] = "gpu: device faults, batches redone on the CPU"
            log.warning("partitioned: cross search batch redone on the CPU after %s", exc)
            return None
        st["cross_transfer_s"] += float(eng.last_stats.get("t_upload", 0.0))
        return res

    # -- engine protocol ------------------------------------------------------------------------
    def count(self, plan, limit=None, budget=UNLIMITED):
        limit, known = trivial_answer(plan, limit)
        if known is not None:
            self.last_stats = None
            return known
        part = self._prepare(plan)
        st = self.last_stats
        if part is None:
            return self.inner.count(plan, limit, budget=budget)
        total = 0
        t0 = time.perf_counter()
        for _, sp in self._parts(plan, part):
            if sp.empty:
                continue
            c = self.inner.count(sp, None if limit is None else limit - total, budget=budget)
            self._add_upload(st)
            total += int(c)
            if budget.partial:
                st["inner_s"] = time.perf_counter() - t0
                return PartialCount(total)
            if limit is not None and total >= limit:
                st["inner_s"] = time.perf_counter() - t0
                return limit
        st["inner"] = total
        st["inner_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()

        def left():
            return None if limit is None else limit - total - st["cross"]

        for c, _ in self._cross(plan, part, False, budget, left):
            st["cross"] += c
            if limit is not None and total + st["cross"] >= limit:
                break
        st["cross_s"] = time.perf_counter() - t0
        total += st["cross"]
        if budget.partial:
            return PartialCount(total)
        return total if limit is None else min(total, limit)

    def iter_chunks(self, plan, chunk=4096, limit=None, budget=UNLIMITED):
        chunk = check_chunk(chunk)
        limit, known = trivial_answer(plan, limit)
        if known is not None:
            self.last_stats = None
            if known:
                yield trivial_rows(known)
            return
        part = self._prepare(plan)
        if part is None:
            yield from self.inner.iter_chunks(plan, chunk=chunk, limit=limit, budget=budget)
            return
        st = self.last_stats
        left = limit

        def emit(rows):
            nonlocal left
            if left is not None:
                rows = rows[:left]
                left -= rows.shape[0]
            for a in range(0, rows.shape[0], chunk):
                yield rows[a:a + chunk]

        t0 = time.perf_counter()
        for nodes, sp in self._parts(plan, part):
            if sp.empty:
                continue
            for rows in self.inner.iter_chunks(sp, chunk=chunk, limit=left, budget=budget):
                st["inner"] += rows.shape[0]
                yield from emit(nodes[rows].astype(np.int32))
                if left == 0:
                    return
            self._add_upload(st)
            if budget.partial:
                return
        st["inner_s"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        for c, rows in self._cross(plan, part, True, budget, lambda: left):
            st["cross"] += c
            yield from emit(rows)
            if left == 0:
                return
        st["cross_s"] = time.perf_counter() - t0
