"""A batch of updates once validated (:class:`Batch`, :class:`PairsBatch` for plain ``(u, v)``
rows), what a batch returns (:class:`BatchResult`, :class:`MatchList`) and rejects
(:class:`BatchError`), and the edge index that checks plain integer rows (:class:`EdgeIndex`)."""

from __future__ import annotations

import collections.abc as cabc
from itertools import chain

import networkx as nx
import numpy as np

from .values import datum_mult, edit_plain, out_adj, remove_edge, same

__all__ = ["BatchError", "MatchList", "BatchResult", "NotPlain", "EdgeIndex", "Batch",
           "PairsBatch"]


class BatchError(nx.NetworkXError, ValueError):
    """A batch was rejected (the matcher's state is unchanged). A ``NetworkXError`` and a
    ``ValueError``; the message names the offending item."""


class MatchList(cabc.Sequence):
    """The mappings a batch added or removed: a read-only sequence of ``{G_node: H_node}``
    dicts, each made when it is read (``len`` reads none). A batch of 1% of GitHub's edges on
    the dense 6-vertex pattern adds and removes ~3 million matches: building every dict up
    front took about twice as long as finding and differencing the matches themselves
    (~9 s against ~4.5 s for 3 million on a 2-core VM). Compares equal to a list or tuple of
    the same dicts in the same order; ``list(d.added)`` makes a plain list."""

    __slots__ = ("_rows", "_keys")
    __hash__ = None

    def __init__(self, rows, keys):
        self._rows = rows  # tuples of G nodes, in the order of the pattern's nodes ``keys``
        self._keys = keys

    def __len__(self):
        return len(self._rows)

    def __getitem__(self, i):
        keys = self._keys
        if isinstance(i, slice):
            return [dict(zip(t, keys)) for t in self._rows[i]]
        return dict(zip(self._rows[i], keys))

    def __iter__(self):
        keys = self._keys
        return (dict(zip(t, keys)) for t in self._rows)

    def __eq__(self, other):
        if not isinstance(other, (MatchList, list, tuple)):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    def __repr__(self):
        n = len(self)
        return f"MatchList({list(self)!r})" if n <= 8 else f"<MatchList of {n} mappings>"


class BatchResult:
    """The net change of one batch.

    ``added`` / ``removed`` are :class:`MatchList` sequences of ``{G_node: H_node}`` dicts (each
    mapping once, in no particular order; a dict is made when it is read), or None after
    ``apply(..., counts_only=True)``; ``num_added`` /
    ``num_removed`` their sizes; ``count`` the total number of matches after the batch when it is
    known (after :meth:`IncrementalMatcher.count` was called once), else None.
    """

    __slots__ = ("added", "removed", "count", "_nums")

    def __init__(self, added, removed, count=None, nums=None):
        self.added = added
        self.removed = removed
        self.count = count
        self._nums = nums if nums is not None else (len(added), len(removed))

    @property
    def num_added(self):
        return self._nums[0]

    @property
    def num_removed(self):
        return self._nums[1]

    def __repr__(self):
        return f"<BatchResult +{self.num_added} -{self.num_removed}>"


class NotPlain(Exception):
    """A batch of plain rows that failed its check: it goes down the general path, which
    resolves it or names the problem (internal; never reaches the user)."""


class EdgeIndex:
    """The edges of a simple graph whose node keys are integer ids, as sorted int64 keys
    (``u * n + v``, undirected pairs lowest id first), with the ids that are nodes: a batch of
    plain id rows is checked by binary searches instead of against the NetworkX graph's dicts,
    whose lookups miss the cache (the graph edit with its check was 4-5 ms of a 1% batch
    on GitHub, ~1.5 us per row on the card's host; this check ~0.2 ms). Raises TypeError or
    ValueError for a graph whose node keys are not such ids."""

    def __init__(self, G):
        nodes = np.fromiter(G, dtype=np.int64, count=len(G))
        if nodes.size and (nodes.min() < 0 or nodes.max() > (1 << 31)):
            raise ValueError("node keys out of the index's range")
        self.n = int(nodes.max()) + 1 if nodes.size else 0
        self.node = np.zeros(self.n, dtype=bool)
        self.node[nodes] = True
        self.directed = G.is_directed()
        m = G.number_of_edges()
        e = np.fromiter(chain.from_iterable(G.edges()), dtype=np.int64,
                        count=2 * m).reshape(m, 2)
        self.keys = np.sort(self._key(e))

    def _key(self, ends):
        u, v = ends[:, 0], ends[:, 1]
        if not self.directed:
            u, v = np.minimum(u, v), np.maximum(u, v)
        return u * self.n + v

    def check(self, ends, ndel):
        """True if the first ``ndel`` rows of ``ends`` are distinct edges, the others distinct
        non-edges, and every endpoint is a node (a pair in both parts cannot pass). Each part's
        keys are sorted first (a repeat is then a neighbour; the binary searches walk the keys
        in order). On the card's host ~0.6-0.75 ms for a 1% GitHub batch."""
        if ends.size and (ends.min() < 0 or ends.max() >= self.n or not self.node[ends].all()):
            return False
        k = self._key(ends)
        keys = self.keys
        for part, edges in ((k[:ndel], True), (k[ndel:], False)):
            part = np.sort(part)
            if (part[1:] == part[:-1]).any():
                return False
            if not keys.size:
                if edges and part.size:
                    return False
                continue
            pos = np.minimum(np.searchsorted(keys, part), keys.size - 1)
            hit = keys[pos] == part
            if not (hit.all() if edges else not hit.any()):
                return False
        return True

    def updated(self, ends, ndel):
        """The keys once the checked rows are applied (deletions first)."""
        return self._edit(self.keys, self._key(ends[:ndel]), self._key(ends[ndel:]))

    @staticmethod
    def _edit(keys, gone, new):
        keys = np.delete(keys, np.searchsorted(keys, gone))
        new = np.sort(new)
        return np.insert(keys, np.searchsorted(keys, new), new)

    def follow(self, batch):
        """Take a validated batch of any kind (:meth:`Batch.apply_to`'s order: edges deleted,
        nodes deleted, nodes added, edges added), so that the index is not rebuilt (~0.15 s on
        GitHub) after every batch that is not plain id rows. False if a key is not an id."""
        dels = [x for u, v, _ in batch.del_edges for x in (u, v)]
        adds = [x for e in batch.add_edges for x in e[:2]]
        gone, new = list(batch.gone_nodes), list(batch.new_nodes)
        if not all(type(x) is int and x >= 0 for x in chain(dels, adds, gone, new)):
            return False
        dels, adds, gone, new = (np.array(x, dtype=np.int64) for x in (dels, adds, gone, new))
        none = np.zeros(0, dtype=np.int64)
        self.keys = self._edit(self.keys, self._key(dels.reshape(-1, 2)), none)
        if gone.size:
            u, v = np.divmod(self.keys, max(self.n, 1))
            self.node[gone] = False
            self.keys = self.keys[self.node[u] & self.node[v]]
        if new.size:
            n = max(self.n, int(new.max()) + 1)
            if n > self.n:  # a wider key: (u, v) order is kept
                u, v = np.divmod(self.keys, max(self.n, 1))
                self.keys = u * n + v
                self.node = np.concatenate([self.node, np.zeros(n - self.n, dtype=bool)])
                self.n = n
            self.node[new] = True
        self.keys = self._edit(self.keys, none, self._key(adds.reshape(-1, 2)))
        return True


class Batch:
    """A validated, order-free batch: the resolved operations and what they touch."""

    def __init__(self):
        self.new_nodes = {}  # node -> attrs (insertion order)
        self.gone_nodes = []
        self.del_edges = []  # (u, v, key or None)
        self.add_edges = []  # (u, v, key or None, attrs)
        self.touched = {}  # canonical pair -> (u, v) orientation
        self.replaced = {}  # simple graphs: pair -> (u, v, datum before, attrs after)
        self.pairs = None  # (insert rows, delete rows): a batch of plain (u, v) rows only
        self.on_graph = False  # applied to the matcher's graph during the device search
        self.lazy = False  # checked against the edge index; the matcher's graph takes it later

    def apply_to(self, G):
        """Apply to a NetworkX graph (all items were validated against the before state)."""
        if type(G) in (nx.Graph, nx.DiGraph):
            self._apply_plain(G)
            return
        multi = G.is_multigraph()
        for u, v, key in self.del_edges:
            remove_edge(G, u, v, key)
        G.remove_nodes_from(self.gone_nodes)
        # the *_from forms: attribute names need not be strings
        G.add_nodes_from(self.new_nodes.items())
        if multi:
            G.add_edges_from(self.add_edges)
        else:
            G.add_edges_from((u, v, attrs) for u, v, _, attrs in self.add_edges)

    def _apply_plain(self, G):
        """:meth:`apply_to` on a plain ``nx.Graph`` / ``nx.DiGraph`` through its adjacency dicts:
        what ``remove_edge`` / ``add_edges_from`` do for validated edges (each inserted edge
        is absent by then, so it gets a fresh attribute dict) without their per-edge call and
        cache clearing (a 10% batch on GitHub: 0.10 -> 0.04 s here)."""
        edit_plain(G, self.del_edges, [(u, v, dict(a)) for u, v, _, a in self.add_edges],
                    self.gone_nodes, self.new_nodes.items())

    @property
    def empty(self):
        return not (self.new_nodes or self.gone_nodes or self.del_edges or self.add_edges)

    def changes(self, G0, pair):
        """The touched pairs whose datum changes, ``(u, v, m0, m1, d1)`` each: the multiplicity
        in ``G0`` and in ``G_after`` (0: no edge) and the datum after (as :meth:`pair_states`).
        In a simple graph without node deletions the deletions and insertions say it all, and a
        replaced edge changes iff its attributes do: no state per pair is built."""
        if G0.is_multigraph() or self.gone_nodes:
            before, after = self.pair_states(G0, pair)
            multi = G0.is_multigraph()
            return [(u, v, datum_mult(before[p], multi), datum_mult(after[p], multi), after[p])
                    for p, (u, v) in self.touched.items() if not same(before[p], after[p])]
        rep = self.replaced
        if not rep:
            return [(u, v, 1, 0, None) for u, v, _ in self.del_edges] + \
                [(u, v, 0, 1, a) for u, v, _, a in self.add_edges]
        return [(u, v, 1, 0, None) for u, v, _ in self.del_edges if pair(u, v) not in rep] + \
            [(u, v, 0, 1, a) for u, v, _, a in self.add_edges if pair(u, v) not in rep] + \
            [(u, v, 1, 1, a) for u, v, d, a in rep.values() if not same(d, a)]

    def pair_states(self, G0, pair):
        """``(before, after)``, each ``{pair: datum}`` over the touched pairs (keys made by
        ``pair(u, v)``, the matcher's canonical pair): the datum in ``G0`` and in ``G_after``
        (attribute dict, multigraph key-dict in NetworkX's key order, or None), the latter read
        off the batch without building any part of ``G_after`` (what :meth:`apply_to` would make
        of ``G0``'s copy on these pairs). The data ``G0`` keeps are shared, not copied."""
        succ = out_adj(G0)
        empty = {}  # datum inlined: a call per touched pair
        before = {p: succ.get(u, empty).get(v) for p, (u, v) in self.touched.items()}
        if self.gone_nodes:
            gone = set(self.gone_nodes)
            out = {p: None if u in gone or v in gone else before[p]
                   for p, (u, v) in self.touched.items()}
        else:
            out = dict(before)
        if not G0.is_multigraph():
            for u, v, _ in self.del_edges:
                out[pair(u, v)] = None
            for u, v, _, attrs in self.add_edges:
                out[pair(u, v)] = dict(attrs)
            return before, out
        dead = {}
        for u, v, key in self.del_edges:
            dead.setdefault(pair(u, v), set()).add(key)
        own = set()  # pairs whose key-dict here is a new one (G0's must not change)
        for p, keys in dead.items():
            kd = {k: d for k, d in (out[p] or {}).items() if k not in keys}
            out[p] = kd or None
            own.add(p)
        for u, v, key, attrs in self.add_edges:
            p = pair(u, v)
            if p not in own:
                out[p] = dict(out[p] or {})
                own.add(p)
            elif out[p] is None:
                out[p] = {}
            out[p][key] = dict(attrs)
        return before, out


class PairsBatch(Batch):
    """A batch of plain ``(u, v)`` rows between existing nodes of a simple graph (see
    ``IncrementalMatcher._pairs_batch``). Its ``del_edges``, ``add_edges`` and ``touched`` are
    built from the rows on first use: GAMMA reads the rows as id columns and the NetworkX update
    reads the rows, so a batch that goes there never builds them (2,890 rows: ~2 ms of Python)."""

    def __init__(self, ins, dels, canon):
        self.pairs = (ins, dels)
        self._canon = canon  # the matcher's canonical pair type
        self.new_nodes = {}
        self.gone_nodes = []
        self.replaced = {}
        self.on_graph = False
        self.lazy = False
        self.ends = None  # the rows' endpoints, deletions first (row_ends), if integers
        self.next_keys = None  # the edge index's keys after this batch, once computed
        self.pending = None  # the edge index while integer rows are not yet checked

    def check(self):
        """Check integer rows not yet checked (:attr:`pending`) against the edge index: every
        deletion an edge, every insertion new between nodes. Raises :class:`NotPlain` if not
        (the general path then resolves the rows or names the problem); the matcher's own
        state has not changed then (GAMMA, which checks while its after-side search runs, drops
        its device graph: see ``GammaDelta._delta``)."""
        if self.pending is None:
            return
        if not self.pending.check(self.ends, len(self.pairs[1])):
            raise NotPlain()
        self.pending = None

    def __getattr__(self, name):  # only for attributes not set yet
        if name not in ("del_edges", "add_edges", "touched"):
            raise AttributeError(name)
        ins, dels = self.pairs
        if name == "del_edges":
            value = [(u, v, None) for u, v in dels]
        elif name == "add_edges":
            value = [(u, v, None, {}) for u, v in ins]
        elif name == "touched":
            canon = self._canon
            value = dict(zip(map(canon, dels), dels))
            value.update(zip(map(canon, ins), ins))
        setattr(self, name, value)
        return value

    @property
    def empty(self):
        return not (self.pairs[0] or self.pairs[1])

    def verify(self, G):
        """Check the rows against ``G`` (the graph before the batch): every deletion present,
        every insertion new between existing nodes; raises :class:`NotPlain` if not."""
        ins, dels = self.pairs
        succ = out_adj(G)
        try:
            ok = all([v in succ[u] for u, v in dels]) and not any([v in succ[u] for u, v in ins]) \
                and all([v in succ for _, v in ins])
        except (KeyError, TypeError):
            ok = False
        if not ok:
            raise NotPlain()

    def apply_undoable(self, G):
        """Apply the (checked) batch to a plain ``nx.Graph`` / ``nx.DiGraph`` and return what
        :meth:`undo` needs to take it back (the data of the deleted edges, read as they go)."""
        return self._apply_plain(G)

    def undo(self, G, gone):
        """Take back :meth:`apply_undoable` (its return value ``gone``): ``G`` has the edges
        and data dicts it had before (a restored edge comes last among its nodes' neighbours)."""
        ins, dels = self.pairs
        edit_plain(G, ins, [(u, v, d) for (u, v), d in zip(dels, gone)])

    def _apply_plain(self, G):
        ins, dels = self.pairs
        return edit_plain(G, dels, [(u, v, {}) for u, v in ins])
