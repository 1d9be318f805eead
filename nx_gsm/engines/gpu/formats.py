"""Device graph formats built from a :class:`~nx_gsm.graph.GsmGraph`.

Each format is built on the host with NumPy and stored through an array module ``xp`` (``numpy``
or ``cupy``), so the same code runs in CI without a GPU. Every format answers ``N(v, l)``: the
neighbours of ``v`` over edges of label ``l`` (in the out-direction, or the in-direction for the
column-oriented variants), as a sorted int32 NumPy array, through :meth:`neighbors`. ``nbytes``
gives the device footprint.

Edge labels are integers per out-CSR entry of the GsmGraph (``MatchPlan.eclass`` is such an
array); without labels every edge has label 0.

* :class:`LabelledCSR` -- CSR (``direction="out"``) or CSC (``direction="in"``) whose rows are sorted
  by (edge label, neighbour), so ``N(v, l)`` is a contiguous slice found by binary search.
* :class:`PCSR` -- GSI/SGSI's partitioned CSR (SGSI Def. 5, Sec. 4): one partition per edge label;
  its row-offset layer is an array of hash groups of 16 int32 pairs (128 bytes, one memory
  transaction), 15 ``(v, offset)`` pairs plus the ``(GID, END)`` overflow pair; ``Delta = |V(D)|``
  groups, ``f(v) = v mod Delta``, overflowing groups chained into groups left empty by the hash.
* :class:`IntervalPCSR` -- GENEVA's interval-PCSR (GENEVA Sec. 4, Alg. 2): vertices renumbered
  once for all labels by GENMAP so each label partition covers few runs of consecutive ids; per
  label an interval index ``(start, length, first local row)``, row offsets and sorted columns.

:func:`adjacency_bits` is not a neighbour format but an edge test: one bit per ordered node pair
of a small simple graph, so a kernel's check of an earlier image's edge is one load instead of
a binary search (gMatch Sec. 5.2 searches the sorted row: ~log(d) dependent loads).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from ...graph import csr_sources

__all__ = [
    "LabelledCSR",
    "PCSR",
    "IntervalPCSR",
    "genmap",
    "edge_labels",
    "format_nbytes",
    "FORMATS",
    "adjacency_bits",
    "ADJ_BITS_BYTES",
]

#: the largest adjacency bitmap kept on the device (yeast 1.2 MB, human 2.7 MB; n <= ~11,500)
ADJ_BITS_BYTES = 1 << 24


def _host(a):
    """NumPy view of a NumPy or CuPy array."""
    if isinstance(a, np.ndarray):
        return a
    get = getattr(a, "get", None)
    return get() if get is not None else np.asarray(a)


def _nbytes(*arrays):
    return int(sum(int(a.nbytes) for a in arrays))


def edge_labels(G, elabels=None):
    """int32 label per out-CSR entry of ``G`` (zeros when ``elabels`` is None)."""
    if elabels is None:
        return np.zeros(G.indices.size, dtype=np.int32)
    lab = np.ascontiguousarray(elabels, dtype=np.int32)
    if lab.shape != G.indices.shape:
        raise ValueError("elabels must have one entry per out-CSR entry of G")
    return lab


def _adjacency(G, elabels, direction):
    """(indptr, indices, labels) of the out-CSR or the in-CSR (CSC) with per-entry labels."""
    lab = edge_labels(G, elabels)
    if direction == "out":
        return G.indptr, G.indices, lab
    if direction != "in":
        raise ValueError(f"direction must be 'out' or 'in', got {direction!r}")
    if not G.directed:
        return G.indptr, G.indices, lab
    return G.in_indptr, G.in_indices, lab[G.in_pos]


class LabelledCSR:
    """CSR/CSC with an edge-label column, rows sorted by (label, neighbour).

    ``N(v, l)`` is located by two binary searches in row ``v``'s label column.
    """

    name = "labelled_csr"

    def __init__(self, G, elabels=None, direction="out", xp=np):
        indptr, indices, lab = _adjacency(G, elabels, direction)
        rows = csr_sources(indptr)
        order = np.lexsort((indices, lab, rows))
        self.direction = direction
        self.n = G.n
        self.indptr = xp.asarray(np.ascontiguousarray(indptr, dtype=np.int64))
        self.indices = xp.asarray(np.ascontiguousarray(indices[order], dtype=np.int32))
        self.labels = xp.asarray(np.ascontiguousarray(lab[order], dtype=np.int32))
        self._h = None

    @property
    def nbytes(self):
        return _nbytes(self.indptr, self.indices, self.labels)

    def _host_arrays(self):
        if self._h is None:
            self._h = (_host(self.indptr), _host(self.indices), _host(self.labels))
        return self._h

    def neighbors(self, v, l):
        indptr, indices, labels = self._host_arrays()
        lo, hi = int(indptr[v]), int(indptr[v + 1])
        row = labels[lo:hi]
        a = int(np.searchsorted(row, l, side="left"))
        b = int(np.searchsorted(row, l, side="right"))
        return indices[lo + a : lo + b].copy()


class PCSR:
    """GSI's partitioned CSR: per edge label, hashed 128-byte groups of ``(v, offset)`` pairs.

    Per label ``l`` (partition ``D = P(G, l)``): ``groups[l]`` is an int32 array of shape
    ``(Delta, 16, 2)``; pairs 0..14 hold ``(v, o_v)`` (``(-1, -1)`` when unused, used pairs first),
    pair 15 holds ``(GID, END)``: the overflow group (-1 if none) and the end in ``ci`` of the
    group's last list. ``ci[l]`` holds the neighbour lists laid out in group order, so v's list is
    ``ci[o_v : next used pair's offset or END]``.
    """

    name = "pcsr"
    THETA = 16  # pairs per group: 16 x 2 x 4 bytes = 128 bytes
    SLOTS = THETA - 1

    def __init__(self, G, elabels=None, direction="out", xp=np):
        indptr, indices, lab = _adjacency(G, elabels, direction)
        rows = csr_sources(indptr)
        self.direction = direction
        self.n = G.n
        self.label_values = np.unique(lab)
        self.groups, self.ci, self.delta = [], [], []
        self.max_chain = 0
        for l in self.label_values:
            sel = np.flatnonzero(lab == l)
            groups, ci, chain = self._build_one(rows[sel], indices[sel])
            self.groups.append(xp.asarray(groups))
            self.ci.append(xp.asarray(ci))
            self.delta.append(groups.shape[0])
            self.max_chain = max(self.max_chain, chain)
        self._index = {int(l): i for i, l in enumerate(self.label_values)}
        self._h = {}

    @classmethod
    def _build_one(cls, r, c):
        """Groups and column layer of one label partition from its (row, neighbour) entries.

        ``r``/``c`` come sorted by (row, neighbour), as CSR entries are.
        """
        if c.size >= 2**31:
            raise ValueError("PCSR stores 32-bit offsets: a label partition has >= 2**31 entries")
        uverts, udeg = np.unique(r, return_counts=True)
        nd = uverts.size
        delta = max(nd, 1)
        home_u = uverts % delta
        # slot assignment in (home group, v) order; the first SLOTS members of a group stay home
        perm = np.lexsort((uverts, home_u))
        home = home_u[perm]
        counts = np.bincount(home, minlength=delta)
        first = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        group = home.astype(np.int64)
        slot = np.arange(nd, dtype=np.int64) - first[home]
        gid = np.full(delta, -1, dtype=np.int64)
        empty = list(np.flatnonzero(counts == 0)[::-1])  # groups the hash left empty
        chain = 1
        for g in np.flatnonzero(counts > cls.SLOTS):
            members = np.arange(first[g] + cls.SLOTS, first[g] + counts[g])
            prev, length = g, 1
            for a in range(0, members.size, cls.SLOTS):
                part = members[a : a + cls.SLOTS]
                tgt = empty.pop()  # Delta = |V(D)| leaves enough empty groups (SGSI Claim 1)
                group[part] = tgt
                slot[part] = np.arange(part.size)
                gid[prev] = tgt
                prev = tgt
                length += 1
            chain = max(chain, length)
        # lay the column layer out in (group, slot) order
        lay = np.lexsort((slot, group))  # positions in perm order
        offs = np.zeros(nd + 1, dtype=np.int64)
        np.cumsum(udeg[perm][lay], out=offs[1:])
        start_perm = np.empty(nd, dtype=np.int64)
        start_perm[lay] = offs[:-1]
        key_sorted = group[lay] * cls.THETA + slot[lay]
        end = offs[np.searchsorted(key_sorted, np.arange(1, delta + 1) * cls.THETA)]
        groups = np.full((delta, cls.THETA, 2), -1, dtype=np.int32)
        groups[group, slot, 0] = uverts[perm]
        groups[group, slot, 1] = start_perm
        groups[:, cls.SLOTS, 0] = gid
        groups[:, cls.SLOTS, 1] = end
        # each vertex's (sorted) list moves to its start
        start_u = np.empty(nd, dtype=np.int64)
        start_u[perm] = start_perm
        row_first = np.concatenate([[0], np.cumsum(udeg)[:-1]]).astype(np.int64)
        rank = np.searchsorted(uverts, r)
        ci = np.empty(c.size, dtype=np.int32)
        ci[start_u[rank] + (np.arange(c.size) - row_first[rank])] = c
        return groups, ci, chain

    @property
    def nbytes(self):
        return _nbytes(*self.groups, *self.ci)

    def _host_label(self, i):
        if i not in self._h:
            self._h[i] = (_host(self.groups[i]), _host(self.ci[i]))
        return self._h[i]

    def neighbors(self, v, l):
        i = self._index.get(int(l))
        if i is None:
            return np.zeros(0, dtype=np.int32)
        groups, ci = self._host_label(i)
        g = int(v) % groups.shape[0]
        while g != -1:
            grp = groups[g]
            hit = np.flatnonzero(grp[: self.SLOTS, 0] == v)
            if hit.size:
                s = int(hit[0])
                o = int(grp[s, 1])
                nxt = s + 1
                if nxt < self.SLOTS and grp[nxt, 0] != -1:
                    e = int(grp[nxt, 1])
                else:
                    e = int(grp[self.SLOTS, 1])
                return ci[o:e].copy()
            g = int(grp[self.SLOTS, 0])
        return np.zeros(0, dtype=np.int32)


def genmap(elp_vertices, n):
    """GENEVA's GENMAP (Alg. 2): new ids ``1..n`` (0 reserved) for ``n`` vertices.

    ``elp_vertices`` lists, per edge-label partition, the vertex ids it contains. Returns ``MAP``
    (int64, ``MAP[old] = new``). Vertices in no partition get the ids after all others.
    """
    share = defaultdict(set)
    remaining = []
    for i, vs in enumerate(elp_vertices):
        s = set(int(v) for v in np.asarray(vs).ravel())
        remaining.append(s)
        for v in s:
            share[v].add(i)
    share = {v: frozenset(s) for v, s in share.items()}
    new = np.zeros(n, dtype=np.int64)
    nxt = 1
    active = set(range(len(remaining)))
    while active:
        e = max(active, key=lambda i: (len(remaining[i]), -i))  # line 3
        if not remaining[e]:
            break
        by_share = defaultdict(list)  # line 4
        for v in remaining[e]:
            by_share[share[v]].append(v)
        for ss, vs in by_share.items():  # line 6
            vs_set = set(vs)
            for i in ss:
                remaining[i] -= vs_set
        subparts = [(ss, sorted(vs)) for ss, vs in by_share.items()]
        while subparts:  # lines 7-20
            j = max(range(len(subparts)), key=lambda t: (len(subparts[t][0]), len(subparts[t][1])))
            ss, vs = subparts.pop(j)
            new[vs] = np.arange(nxt, nxt + len(vs))
            nxt += len(vs)
            prev = ss
            while subparts:
                j = max(range(len(subparts)), key=lambda t: len(subparts[t][0] & prev))
                if not subparts[j][0] & prev:
                    break
                ss, vs = subparts.pop(j)
                new[vs] = np.arange(nxt, nxt + len(vs))
                nxt += len(vs)
                prev = ss
        active.discard(e)  # line 21
    rest = np.flatnonzero(new == 0)
    new[rest] = np.arange(nxt, nxt + rest.size)
    return new


def _intervals(ids):
    """Maximal runs of consecutive ids in a sorted array: (start, length, first local index)."""
    if ids.size == 0:
        return np.zeros((0, 3), dtype=np.int64)
    brk = np.flatnonzero(np.diff(ids) != 1) + 1
    starts = np.concatenate([[0], brk])
    ends = np.concatenate([brk, [ids.size]])
    return np.stack([ids[starts], ends - starts, starts], axis=1).astype(np.int64)


class IntervalPCSR:
    """GENEVA's interval-PCSR: GENMAP renumbering + per-label interval index over CSR rows.

    ``MAP`` maps old ids to new ids ``1..n``. Per label: ``intervals[l]`` (int64, ``(m, 3)``:
    start, length, first local row), ``row_offsets[l]`` (int64) and ``col[l]`` (new ids, sorted per
    row). ``neighbors`` takes and returns old ids (sorted).
    """

    name = "interval_pcsr"

    def __init__(self, G, elabels=None, direction="out", xp=np, renumber=True):
        indptr, indices, lab = _adjacency(G, elabels, direction)
        rows = csr_sources(indptr)
        self.direction = direction
        self.n = G.n
        self.label_values = np.unique(lab)
        parts = [np.unique(rows[lab == l]) for l in self.label_values]
        MAP = genmap(parts, G.n) if renumber else np.arange(1, G.n + 1, dtype=np.int64)
        inv = np.zeros(G.n + 1, dtype=np.int32)
        inv[MAP] = np.arange(G.n, dtype=np.int32)
        self.MAP = xp.asarray(MAP.astype(np.int32))
        self.inv = xp.asarray(inv)
        self.intervals, self.row_offsets, self.col = [], [], []
        for l in self.label_values:
            sel = np.flatnonzero(lab == l)
            r_new = MAP[rows[sel]]
            c_new = MAP[indices[sel]]
            order = np.lexsort((c_new, r_new))
            r_new, c_new = r_new[order], c_new[order]
            ids, cnt = np.unique(r_new, return_counts=True)
            ro = np.zeros(ids.size + 1, dtype=np.int64)
            np.cumsum(cnt, out=ro[1:])
            self.intervals.append(xp.asarray(_intervals(ids)))
            self.row_offsets.append(xp.asarray(ro))
            self.col.append(xp.asarray(c_new.astype(np.int32)))
        self._index = {int(l): i for i, l in enumerate(self.label_values)}
        self._h = {}

    @property
    def nbytes(self):
        return _nbytes(self.MAP, *self.intervals, *self.row_offsets, *self.col)

    def interval_counts(self):
        """Number of intervals per label partition (GENEVA's index size)."""
        return [int(a.shape[0]) for a in self.intervals]

    def _host_label(self, i):
        if i not in self._h:
            self._h[i] = (_host(self.intervals[i]), _host(self.row_offsets[i]),
                          _host(self.col[i]), _host(self.MAP), _host(self.inv))
        return self._h[i]

    def neighbors(self, v, l):
        i = self._index.get(int(l))
        if i is None:
            return np.zeros(0, dtype=np.int32)
        iv, ro, col, MAP, inv = self._host_label(i)
        vn = int(MAP[v])
        t = int(np.searchsorted(iv[:, 0], vn, side="right")) - 1
        if t < 0 or vn >= iv[t, 0] + iv[t, 1]:
            return np.zeros(0, dtype=np.int32)
        local = int(iv[t, 2] + (vn - iv[t, 0]))
        out = inv[col[ro[local] : ro[local + 1]]]
        return np.sort(out).astype(np.int32)


def adjacency_bits(indptr, indices, n, xp=np):
    """``bits[x, v >> 3] >> (v & 7) & 1`` is 1 exactly when the CSR holds entry ``x -> v``: a
    ``uint8`` array ``(n, ceil(n / 8))`` of ``xp``, built there from ``xp`` arrays (a device
    graph's bits never leave the device). Only a simple graph's multiplicities are its bits:
    the caller keeps it to graphs whose every entry has multiplicity 1."""
    nb = (int(n) + 7) // 8
    bits = xp.zeros(int(n) * nb, dtype=xp.uint8)
    nnz = int(indices.size)
    if nnz:
        src = xp.searchsorted(xp.asarray(indptr)[1:], xp.arange(nnz), side="right")
        dst = xp.asarray(indices).astype(xp.int64)
        cell = src * nb + (dst >> 3)
        bit = dst & 7
        # a row's entries are distinct, so one bit plane's cells are too: an indexed |= per
        # plane is exact (a plain fancy |= would drop all but one of a byte's repeated cells)
        for b in range(8):
            sel = bit == b
            bits[cell[sel]] |= xp.uint8(1 << b)
    return bits.reshape(int(n), nb) if n else bits.reshape(0, 1)


FORMATS = {"labelled_csr": LabelledCSR, "pcsr": PCSR, "interval_pcsr": IntervalPCSR}


def format_nbytes(G, elabels=None, xp=np):
    """Bytes of the plain CSR and of every format (out-direction; ``_in`` keys add the CSC side
    of directed graphs), ``largest_interval_partition``: the interval-PCSR bytes of the
    largest edge-label partition (what GENEVA keeps on the card at once), and
    ``adjacency_bits``: the edge-test bitmap's (``adjacency_bits_kept``: within
    :data:`ADJ_BITS_BYTES` on a simple graph, where the GPU engines keep it; a memory budget
    under 16 times its size drops it too)."""
    lab = edge_labels(G, elabels)
    out = {"csr": _nbytes(G.indptr, G.indices) + (lab.nbytes if elabels is not None else 0)}
    largest = 0
    for name, cls in FORMATS.items():
        for d in ("out", "in") if G.directed else ("out",):
            f = cls(G, elabels, d, xp)
            out[name if d == "out" else name + "_in"] = f.nbytes
            if name == "interval_pcsr":
                for parts in zip(f.intervals, f.row_offsets, f.col):
                    largest = max(largest, _nbytes(*parts))
    out["largest_interval_partition"] = largest
    # the edge-test bitmap's bytes, and whether the GPU engines keep one for this graph
    nbits = int(G.n) * ((int(G.n) + 7) // 8)
    out["adjacency_bits"] = nbits
    out["adjacency_bits_kept"] = bool(G.n) and nbits <= ADJ_BITS_BYTES and \
        not (G.indices.size and int(G.mult.max()) > 1)
    return out
