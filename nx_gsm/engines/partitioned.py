"""``engine="partitioned"``: the data graph cut into parts that fit a device budget (PBE).

Guo et al., *GPU-Accelerated Subgraph Enumeration on Partitioned Graphs* (SIGMOD 2020), with the
fixes of ``shared/papers/DIGEST-gamma-pbe.md`` (Part B). Every match is found exactly once:

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

Patterns whose pairs do not connect them (isolated nodes, several components) can match across
parts without touching a cut pair: those queries run unpartitioned on the inner engine, and
``last_stats["routed"]`` says so.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numba
import numpy as np
from numba import njit, prange

from ..graph import GsmGraph, in_csr
from ..plan.order import _undirected_neighbours
from ..plan.planner import reorder
from .base import UNLIMITED, PartialCount
from .cpu import _CUR, _HI, _KIND, _STACK_ROWS, _conflict, _consistent, _setup, _value, plan_arrays

__all__ = ["PartitionedEngine", "part_bytes", "partition", "edge_orbits"]

# seeded-search prefixes per budget check (each a prange task): keeps deadlines responsive
_BATCH_PER_THREAD = 2048


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
    src = np.repeat(np.arange(G.n, dtype=np.int64), np.diff(G.indptr))
    dst = G.indices.astype(np.int64)
    if G.directed:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
        key = np.unique(src * G.n + dst)
        src, dst = key // G.n, key % G.n
    xadj = np.zeros(G.n + 1, dtype=np.int64)
    np.cumsum(np.bincount(src, minlength=G.n), out=xadj[1:])
    return xadj, dst


def _sizes(G, part, nparts, k):
    src = np.repeat(np.arange(G.n), np.diff(G.indptr))
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
            import pymetis

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
    src = np.repeat(np.arange(G.n), np.diff(G.indptr))
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
    nb = _undirected_neighbours(H)
    return [(a, b) for a in range(H.n) for b in sorted(nb[a]) if a < b]


def _connected(H):
    nb = _undirected_neighbours(H)
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
        self.nb = _undirected_neighbours(H)

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
    nb = _undirected_neighbours(plan.H)
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
    nb = _undirected_neighbours(H)
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
        if _consistent(P, 0, m[0], m) and _consistent(P, 1, pairs[i, 1], m):
            ok[i] = True
    return ok


@njit(cache=True)
def _grow(P, part, bk_ptr, bk_j, prefix, out, collect):
    """Depth-first search below one seed (depths 0, 1 fixed), DUPREMOVE at every depth."""
    k = P[0].size
    n = part.size
    m = np.empty(k, dtype=np.int32)
    stk = np.empty((_STACK_ROWS, k), dtype=np.int64)
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
    _setup(P, d, m, stk)
    while True:
        if stk[_CUR, d] >= stk[_HI, d]:
            d -= 1
            if d < 2:
                break
            continue
        i = stk[_CUR, d]
        stk[_CUR, d] = i + 1
        v = _value(P, stk[_KIND, d], i)
        if not _consistent(P, d, v, m) or _conflict(m, d, v) >= 0:
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
        _setup(P, d, m, stk)
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
    src = np.repeat(np.arange(G.n, dtype=np.int64), np.diff(G.indptr))
    dst = G.indices.astype(np.int64)
    cut = part[src] != part[dst]
    a, b = np.minimum(src[cut], dst[cut]), np.maximum(src[cut], dst[cut])
    key = np.unique(a * G.n + b)
    return np.stack([key // G.n, key % G.n], axis=1).astype(np.int32)


class PartitionedEngine:
    """Engine protocol over a partitioned data graph (PBE); exact for every partition count.

    Parameters
    ----------
    inner : str
        Engine for the matches inside each part: ``"auto"``, ``"cpu"`` or a GPU engine name.
    max_device_bytes : int, optional
        Budget per part (see :func:`part_bytes`); enough METIS parts are made that each fits.
        None: the device's memory budget when ``inner`` runs on a GPU, else one part.
    parts : int, optional
        Force this many parts (tests, benchmarks); overrides ``max_device_bytes``.
    shared : bool
        Shared execution over the pattern pairs' automorphism orbits (default) or one seeded
        search per pattern pair (PBE's naive baseline).

    ``last_stats`` (dict) describes the last run: ``parts``, ``cut_pairs``, ``inner``/``cross``
    counts, ``groups`` (orbits searched), ``seeds``, ``routed`` (why it ran unpartitioned, or
    None) and seconds ``partition_s``, ``inner_s``, ``cross_s`` and, with a GPU inner engine,
    ``transfer_s`` (its uploads, part of ``inner_s``).

    Examples
    --------
    >>> import networkx as nx, nx_gsm
    >>> from nx_gsm.api import prepare
    >>> from nx_gsm.engines.partitioned import PartitionedEngine
    >>> plan, _, _ = prepare(nx.grid_2d_graph(5, 5), nx.cycle_graph(4), "mono")
    >>> eng = PartitionedEngine(inner="cpu", parts=4)
    >>> eng.count(plan), eng.last_stats["parts"]
    (128, 4)
    """

    name = "partitioned"

    def __init__(self, inner="auto", max_device_bytes=None, parts=None, shared=True):
        from . import get_engine

        if inner == "partitioned":
            raise ValueError("the inner engine of the partitioned engine cannot be partitioned")
        self.inner = get_engine(inner)
        self.max_device_bytes = max_device_bytes
        self.parts = parts
        self.shared = bool(shared)
        self.last_stats = None

    # -- setup ----------------------------------------------------------------------------------
    def _budget_bytes(self):
        if self.max_device_bytes is not None or self.inner.name == "cpu":
            return self.max_device_bytes
        from .gpu.device import memory_budget

        return memory_budget()

    def _prepare(self, plan):
        st = dict(parts=1, cut_pairs=0, inner=0, cross=0, groups=0, seeds=0, routed=None,
                  shared=self.shared, partition_s=0.0, inner_s=0.0, cross_s=0.0,
                  transfer_s=None if self.inner.name == "cpu" else 0.0)
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
        for i in range(int(part.max()) + 1):
            nodes = np.flatnonzero(part == i)
            if nodes.size >= plan.k:
                yield nodes, sub_plan(plan, nodes)

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

    def _cross(self, plan, part, collect, budget):
        """Yield (count, rows in plan order or None) per batch of seeds of every group."""
        cp = cut_pairs(plan.G, part)
        self.last_stats["cut_pairs"] = int(cp.shape[0])
        pos = np.empty(plan.k, dtype=np.int64)
        pos[plan.order] = np.arange(plan.k)
        batch = _BATCH_PER_THREAD * numba.get_num_threads()
        for group in self._groups(plan):
            self.last_stats["groups"] += 1
            rp, P, bk_ptr, bk_j, seeds = self._seeds(plan, cp, group)
            self.last_stats["seeds"] += int(seeds.shape[0])
            for s in range(0, seeds.shape[0], batch):
                with numba.parallel_chunksize(1):
                    counts, rows = _grow_all(P, part, bk_ptr, bk_j, seeds[s:s + batch], collect)
                c = sum(int(x) for x in counts.tolist()) * len(group)
                out = None
                if collect:
                    # REMAP: g = f o A^-1 puts f(order_rep[d]) at pattern node A(order_rep[d])
                    out = np.empty((rows.shape[0] * len(group), plan.k), dtype=np.int32)
                    for g, (_, A) in enumerate(group):
                        cols = pos[np.asarray(A)[rp.order]]
                        out[g * rows.shape[0]:(g + 1) * rows.shape[0], cols] = rows
                yield c, out
                if not budget.keep_going(self.last_stats["inner"] + self.last_stats["cross"]):
                    return

    # -- engine protocol ------------------------------------------------------------------------
    def count(self, plan, limit=None, budget=UNLIMITED):
        if plan.empty:
            self.last_stats = None
            return 0
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
        for c, _ in self._cross(plan, part, False, budget):
            st["cross"] += c
            if limit is not None and total + st["cross"] >= limit:
                break
        st["cross_s"] = time.perf_counter() - t0
        total += st["cross"]
        if budget.partial:
            return PartialCount(total)
        return total if limit is None else min(total, limit)

    def iter_chunks(self, plan, chunk=4096, limit=None, budget=UNLIMITED):
        if plan.empty:
            self.last_stats = None
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
        for c, rows in self._cross(plan, part, True, budget):
            st["cross"] += c
            yield from emit(rows)
            if left == 0:
                return
        st["cross_s"] = time.perf_counter() - t0
