"""Batch-dynamic (incremental) subgraph matching: the net change of the matches per batch.

:class:`IncrementalMatcher` keeps a data graph ``G`` and a fixed pattern ``H``. Each call to
:meth:`IncrementalMatcher.apply` applies one *batch* of updates (edge insertions and deletions, node
insertions and deletions) and returns the **net** change of the set of mappings::

    added   = M(G_after) - M(G_before)
    removed = M(G_before) - M(G_after)

where ``M`` is the set of monomorphisms (``induced=False``) or node-induced subgraph isomorphisms
(``induced=True``), exactly as NetworkX's GraphMatcher family returns them (``{G_node: H_node}``
dicts). A match created and destroyed inside the same batch is not reported, and the result does not
depend on the order of the updates inside the batch (see ``docs/incremental.md``).

Method (the exact CPU path)
---------------------------
A mapping can only appear or disappear if the data it is checked against changed: a data node pair
``(x, y)`` (or a self-loop ``(x, x)``) whose multiplicity or edge attributes differ between
``G_before`` and ``G_after`` and lies in the mapping's image. Mono checks only the images of pattern
edges, so only pattern edges ``(a, b)`` are anchored on a changed pair; induced checks every pair
among the image, so every ordered pattern pair is (an insertion can destroy an induced match and a
deletion create one). For each changed pair and each pattern pair that could map onto it, an
anchored search (``make_plan(..., anchors={a: x, b: y})``) runs on ``G_before`` and on ``G_after``;
the results are collected into sets and ``added``/``removed`` are the set differences. New and
deleted nodes are anchored on the pattern's isolated nodes (no edges, no loops): those may map
anywhere, every other pattern node mapped onto a new or deleted node has an incident pattern edge
whose image is an inserted or deleted data pair.

Two ways to run those searches, both exact (``docs/incremental.md`` has the costs):

* **local** (connected patterns): every node of a match lies within ``diam(H)`` (ignoring edge
  directions) of each anchored node, so each changed pair is searched in the subgraphs of
  ``G_before`` and ``G_after`` induced on that ball; the after-graph is never materialised and a
  batch costs about the regions it touches, not ``|G|``;
* **full** (disconnected patterns, or a region larger than ``max(256, |V| / 8)`` nodes): the data
  graph is copied, updated and converted with :func:`nx_gsm.from_networkx` once per batch
  (``O(|V| + |E|)``), and the anchored searches plan against the whole graph.

The data graph is kept as a NetworkX graph (the CPU reference path, and the fallback).
``engine="gamma"`` runs the delta on the GPU instead (``nx_gsm.engines.gpu.gamma``: the graph on
the device, one warp per updated item, each match reported from its smallest updated item);
``engine="auto"`` picks it when a GPU is usable.
"""

from __future__ import annotations

import collections.abc as cabc
import contextlib
import gc
from itertools import chain

import networkx as nx
import numpy as np

from .interop.networkx import from_networkx
from .plan.labels import indistinguishable
from .plan.planner import make_plan

__all__ = ["IncrementalMatcher", "BatchResult", "BatchError", "MatchList"]

_NOKEY = object()  # "no key given" for multigraph rows


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


# -- input parsing --------------------------------------------------------------------------------
def _is_frame(obj):
    mod = type(obj).__module__ or ""
    return mod.split(".")[0] == "pandas" and hasattr(obj, "columns")


def _to_pandas(obj):
    """pandas DataFrames pass through; cudf (or any frame with ``to_pandas``) is converted."""
    if _is_frame(obj):
        return obj
    conv = getattr(obj, "to_pandas", None)
    if callable(conv) and not isinstance(obj, (list, tuple, dict, str)):
        df = conv()
        if not _is_frame(df):
            raise TypeError(f"{type(obj).__name__}.to_pandas() did not return a pandas DataFrame")
        return df
    return None


def _frame_rows(df, what, source, target, edge_key, edge_attr):
    """Rows ``(u, v, key, attrs)`` of a DataFrame (``key`` is ``_NOKEY`` without ``edge_key``)."""
    cols = list(df.columns)
    for role, c in (("source", source), ("target", target), ("edge_key", edge_key)):
        if c is not None and c not in cols:
            raise BatchError(f"{what}: the DataFrame has no {role} column {c!r} (columns: {cols})")
    used = {source, target} | ({edge_key} if edge_key is not None else set())
    attr_cols = _attr_columns(what, cols, used, edge_attr, "edge")
    src = df[source].tolist()
    dst = df[target].tolist()
    keys = df[edge_key].tolist() if edge_key is not None else [_NOKEY] * len(src)
    vals = [df[c].tolist() for c in attr_cols]
    rows = []
    for i in range(len(src)):
        rows.append((src[i], dst[i], keys[i], {c: v[i] for c, v in zip(attr_cols, vals)}))
    return rows


def _attr_columns(what, cols, used, attr, kind):
    """The attribute columns of a frame: ``attr`` True = every column not in ``used``, None or
    False = none, else a name or a list of names (each must exist)."""
    if attr is True:
        return [c for c in cols if c not in used]
    if attr is None or attr is False:
        return []
    names = [attr] if isinstance(attr, (str, int)) else list(attr)
    for c in names:
        if c not in cols:
            raise BatchError(f"{what}: the DataFrame has no {kind} attribute column {c!r}")
    return names


def _node_frame(df, what, node_key, node_attr):
    """``[(n, attrs), ...]`` from a node DataFrame (``node_key`` column, attribute columns), or
    the keys alone for ``delete_nodes``."""
    cols = list(df.columns)
    if node_key not in cols:
        raise BatchError(f"{what}: the DataFrame has no node column {node_key!r} (columns: "
                         f"{cols}); name it with node_key=")
    keys = df[node_key].tolist()
    if what == "delete_nodes":
        return keys
    attr_cols = _attr_columns(what, cols, {node_key}, node_attr, "node")
    vals = [df[c].tolist() for c in attr_cols]
    return [(n, {c: v[i] for c, v in zip(attr_cols, vals)}) for i, n in enumerate(keys)]


def _check_node(n, where):
    if n is None:
        raise BatchError(f"{where}: None cannot be a node")
    try:
        hash(n)
    except TypeError:
        raise BatchError(f"{where}: node {n!r} is not hashable") from None
    return n


def _tuple_rows(rows, what, multigraph, inserting):
    """Normalise tuple rows to ``(u, v, key, attrs)`` following NetworkX's conventions.

    insert: ``(u, v)``, ``(u, v, attrs)``, and for multigraphs ``(u, v, key)`` and
    ``(u, v, key, attrs)``; delete: ``(u, v)`` (``(u, v, attrs)`` ignores attrs), for multigraphs
    ``(u, v, key)`` and ``(u, v, key, data)`` (data ignored).
    """
    if isinstance(rows, (str, bytes, cabc.Mapping)) or not isinstance(rows, cabc.Iterable):
        raise BatchError(f"{what}: expected a list of edge tuples or a DataFrame, "
                         f"got {type(rows).__name__}")
    out = []
    for i, r in enumerate(rows):
        if type(r) is tuple and len(r) == 2:  # the common row, without the checks below
            out.append((r[0], r[1], _NOKEY, {}))
            continue
        where = f"{what}[{i}]"
        if isinstance(r, (str, bytes)) or not isinstance(r, (tuple, list)):
            raise BatchError(f"{where}: expected an edge tuple (u, v[, ...]), got {r!r}")
        if not 2 <= len(r) <= (4 if multigraph else 3):
            raise BatchError(f"{where}: an edge tuple has 2 to {4 if multigraph else 3} items, "
                             f"got {len(r)}: {r!r}")
        u, v = r[0], r[1]
        key, attrs = _NOKEY, {}
        if len(r) == 3:
            if multigraph and not (inserting and isinstance(r[2], cabc.Mapping)):
                key = r[2]
            else:
                attrs = r[2]
        elif len(r) == 4:
            key, attrs = r[2], r[3]
        if inserting and not isinstance(attrs, cabc.Mapping):
            raise BatchError(f"{where}: edge attributes must be a dict, got {attrs!r}")
        out.append((u, v, key, dict(attrs) if inserting else {}))
    return out


def _edge_rows(obj, what, multigraph, inserting, source, target, edge_key, edge_attr):
    if obj is None:
        return []
    if isinstance(obj, np.ndarray):
        obj = obj.tolist()  # an (m, 2) array of node ids: Python scalars, as NetworkX would get
    df = _to_pandas(obj)
    if df is not None:
        rows = _frame_rows(df, what, source, target, edge_key, edge_attr if inserting else None)
    else:
        rows = _tuple_rows(obj, what, multigraph, inserting)
    for i, (u, v, key, _) in enumerate(rows):
        if key is _NOKEY and u is not None and v is not None:
            try:  # the common row: hashable endpoints, no key
                hash(u), hash(v)
                continue
            except TypeError:
                pass
        where = f"{what}[{i}]"
        _check_node(u, where)
        _check_node(v, where)
        if key is not _NOKEY:
            if not multigraph:
                raise BatchError(f"{where}: edge keys need a multigraph, got key {key!r}")
            try:
                hash(key)
            except TypeError:
                raise BatchError(f"{where}: edge key {key!r} is not hashable") from None
    return rows


@contextlib.contextmanager
def _gc_paused():
    """Python's cyclic garbage collector held off for one batch: a batch allocates many small
    objects (pairs, dicts, tuples) beside a large graph, and every collection they trigger
    walks all of that graph's objects (a 10% batch on GitHub: 0.56-0.82 s with it, 0.35 s
    without). Reference counting still frees all acyclic garbage at once."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


# -- graph helpers --------------------------------------------------------------------------------
def _succ(G):
    return G._succ if G.is_directed() else G._adj


def _datum(G, u, v):
    """The object edge_match sees for ``u -> v`` (attr dict, or multigraph key-dict), or None."""
    nb = _succ(G).get(u)
    if nb is None:
        return None
    return nb.get(v)


def _mult(G, u, v):
    return _datum_mult(_datum(G, u, v), G.is_multigraph())


def _same_node(a, b):
    """Whether ``a`` and ``b`` are one node key, as a dict tells keys apart (hash, then
    identity, then ``==``): ``==`` alone is elementwise for a numpy scalar beside a tuple and
    False for NaN."""
    return a is b or len({a, b}) == 1


def _datum_mult(d, multi):
    """The edge multiplicity a datum stands for (None: no edge)."""
    return 0 if d is None else len(d) if multi else 1


def _edit_plain(G, remove, add, gone=(), new=()):
    """Edit a plain ``nx.Graph`` / ``nx.DiGraph`` through its adjacency dicts, without NetworkX's
    per-call checks (the edits were validated): delete the edges ``(u, v, ...)`` of ``remove``,
    the nodes ``gone``, add the nodes ``(n, attrs)`` of ``new``, then set the edges
    ``(u, v, datum)`` of ``add`` (one datum object for both entries of an edge, as given).
    Returns the data of the deleted edges, in ``remove``'s order."""
    directed = G.is_directed()
    succ = _succ(G)
    pred = G._pred if directed else succ
    data = []
    for e in remove:
        u, v = e[0], e[1]
        data.append(succ[u].pop(v))
        if directed or not _same_node(u, v):  # an undirected self-loop is one entry
            del pred[v][u]
    G.remove_nodes_from(gone)
    G.add_nodes_from(new)
    for u, v, d in add:
        succ[u][v] = pred[v][u] = d
    getattr(nx, "_clear_cache", lambda g: None)(G)  # NetworkX caches (3.3+)
    return data


class _NotPlain(Exception):
    """A batch of plain rows that failed its check: it goes down the general path, which
    resolves it or names the problem (internal; never reaches the user)."""


# a GAMMA matcher applies at most this many plain rows lazily before its graph catches up
_PENDING_MAX = 1 << 20


class _EdgeIndex:
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
        """Take a validated batch of any kind (:meth:`_Batch.apply_to`'s order: edges deleted,
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


def _same(a, b):
    # a datum that merely compares equal can still differ for edge_match (-0.0 and 0.0, key
    # order, a namedtuple for a tuple): only an indistinguishable one leaves the pair unchanged
    # (a pair taken as changed when it is not costs a search, never a wrong delta)
    return indistinguishable(a, b)


class _Batch:
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
            if multi:
                G.remove_edge(u, v, key)
            else:
                G.remove_edge(u, v)
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
        _edit_plain(G, self.del_edges, [(u, v, dict(a)) for u, v, _, a in self.add_edges],
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
            return [(u, v, _datum_mult(before[p], multi), _datum_mult(after[p], multi), after[p])
                    for p, (u, v) in self.touched.items() if not _same(before[p], after[p])]
        rep = self.replaced
        if not rep:
            return [(u, v, 1, 0, None) for u, v, _ in self.del_edges] + \
                [(u, v, 0, 1, a) for u, v, _, a in self.add_edges]
        return [(u, v, 1, 0, None) for u, v, _ in self.del_edges if pair(u, v) not in rep] + \
            [(u, v, 0, 1, a) for u, v, _, a in self.add_edges if pair(u, v) not in rep] + \
            [(u, v, 1, 1, a) for u, v, d, a in rep.values() if not _same(d, a)]

    def pair_states(self, G0, pair):
        """``(before, after)``, each ``{pair: datum}`` over the touched pairs (keys made by
        ``pair(u, v)``, the matcher's canonical pair): the datum in ``G0`` and in ``G_after``
        (attribute dict, multigraph key-dict in NetworkX's key order, or None), the latter read
        off the batch without building any part of ``G_after`` (what :meth:`apply_to` would make
        of ``G0``'s copy on these pairs). The data ``G0`` keeps are shared, not copied."""
        succ = _succ(G0)
        empty = {}  # _datum inlined: a call per touched pair
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


class _PairsBatch(_Batch):
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
        self.ends = None  # the rows' endpoints, deletions first (_row_ends), if integers
        self.next_keys = None  # the edge index's keys after this batch, once computed
        self.pending = None  # the edge index while integer rows are not yet checked

    def check(self):
        """Check integer rows not yet checked (:attr:`pending`) against the edge index: every
        deletion an edge, every insertion new between nodes. Raises :class:`_NotPlain` if not
        (the general path then resolves the rows or names the problem); the matcher's own
        state has not changed then (GAMMA, which checks while its after-side search runs, drops
        its device graph: see ``GammaDelta._delta``)."""
        if self.pending is None:
            return
        if not self.pending.check(self.ends, len(self.pairs[1])):
            raise _NotPlain()
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
        every insertion new between existing nodes; raises :class:`_NotPlain` if not."""
        ins, dels = self.pairs
        succ = _succ(G)
        try:
            ok = all([v in succ[u] for u, v in dels]) and not any([v in succ[u] for u, v in ins]) \
                and all([v in succ for _, v in ins])
        except (KeyError, TypeError):
            ok = False
        if not ok:
            raise _NotPlain()

    def apply_undoable(self, G):
        """Apply the (checked) batch to a plain ``nx.Graph`` / ``nx.DiGraph`` and return what
        :meth:`undo` needs to take it back (the data of the deleted edges, read as they go)."""
        return self._apply_plain(G)

    def undo(self, G, gone):
        """Take back :meth:`apply_undoable` (its return value ``gone``): ``G`` has the edges
        and data dicts it had before (a restored edge comes last among its nodes' neighbours)."""
        ins, dels = self.pairs
        _edit_plain(G, ins, [(u, v, d) for (u, v), d in zip(dels, gone)])

    def _apply_plain(self, G):
        ins, dels = self.pairs
        return _edit_plain(G, dels, [(u, v, {}) for u, v in ins])


def _plain_side(obj, inserting, source, target, edge_key, edge_attr):
    """One side of a batch as plain ``(u, v)`` rows: ``(rows, ends)``, ``ends`` the rows as an
    ``(m, 2)`` int64 array where they came as one (an integer array, or a DataFrame -- pandas,
    or cudf through ``to_pandas`` -- whose ``source`` and ``target`` columns are integers,
    without ``edge_key`` and, when inserting, without attribute columns: ``edge_attr`` selects
    none), else None (tuples: :func:`_row_ends` reads them); None if the side is not plain
    rows. The rows are Python values, as the general path reads them."""
    if obj is None:
        return [], np.zeros((0, 2), dtype=np.int64)
    if type(obj) is list or type(obj) is tuple:
        if not all([type(r) is tuple and len(r) == 2 for r in obj]):
            return None
        return obj, None
    arr = obj if isinstance(obj, np.ndarray) else None
    if arr is None:
        try:
            df = _to_pandas(obj)
        except Exception:  # (the general path names what is wrong)
            return None
        if df is None or edge_key is not None:
            return None
        cols = list(df.columns)
        if source not in cols or target not in cols:
            return None
        if inserting:
            try:
                if _attr_columns("insert", cols, {source, target}, edge_attr, "edge"):
                    return None
            except BatchError:
                return None
        arr = np.column_stack([df[source].to_numpy(), df[target].to_numpy()]) if len(df) \
            else np.zeros((0, 2), dtype=np.int64)
    if arr.ndim != 2 or arr.shape[1] != 2 or arr.dtype.kind not in "iu":
        return None  # (nullable integer columns with missing values come as objects)
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) > np.iinfo(np.int64).max:
        return None
    return list(map(tuple, arr.tolist())), arr.astype(np.int64)


def _row_ends(ins, dels):
    """The rows' endpoints as an ``(n, 2)`` int64 array, deletions first, or None if a key is
    not an integer that fits."""
    n = len(ins) + len(dels)
    try:
        return np.fromiter(chain.from_iterable(chain(dels, ins)), dtype=np.int64,
                           count=2 * n).reshape(n, 2)
    except (TypeError, ValueError, OverflowError):
        return None


def _distinct_pairs(ins, dels, directed, ends=None):
    """True if no pair repeats within ``ins`` or ``dels`` and none is in both (pairs unordered
    unless ``directed``): no pair occurs twice in the two lists together. Integer node keys
    (``ends``, :func:`_row_ends`) are compared as NumPy keys; anything else through sets of
    (frozen)sets. A false answer only sends the batch down the general path, which names the
    repeat, so keys that collide in NumPy (floats, very large ids) are harmless."""
    if ends is not None:
        u, v = ends[:, 0], ends[:, 1]
        if not directed:
            u, v = np.minimum(u, v), np.maximum(u, v)
        keys = np.sort((u << 31) ^ v)  # a repeat: equal keys
        return not (keys[1:] == keys[:-1]).any()
    if not directed:
        ins, dels = map(frozenset, ins), map(frozenset, dels)
    ins, dels = list(ins), list(dels)
    si, sd = set(ins), set(dels)
    return len(si) == len(ins) and len(sd) == len(dels) and si.isdisjoint(sd)


class IncrementalMatcher:
    """Maintain the matches of pattern ``H`` in a data graph ``G`` under batches of updates.

    Parameters
    ----------
    G : networkx.Graph, DiGraph, MultiGraph or MultiDiGraph
        The data graph. The matcher keeps its own copy (attribute dicts are copied shallowly);
        ``G`` itself is never modified unless ``sync=True``.
    H : NetworkX graph of the same directedness
        The pattern (copied; later changes to ``H`` have no effect).
    induced : bool
        False: monomorphisms (non-induced, as ``subgraph_monomorphisms_iter``); True: node-induced
        subgraph isomorphisms (``subgraph_isomorphisms_iter``).
    node_match, edge_match : callable, optional
        As in NetworkX's GraphMatcher (for multigraphs ``edge_match`` receives the key-dicts of all
        parallel edges between two nodes).
    engine : str
        The engine that runs the anchored searches (``"auto"``, ``"cpu"``, ...), or ``"gamma"``:
        the batch delta on the GPU (an error without a usable GPU; ``"auto"`` uses it when a GPU
        is usable and the pattern fits it, the CPU path otherwise). Static counts
        (:meth:`count`, :meth:`matches`) use ``"auto"``'s engine then.
    sync : bool
        If True, ``G`` receives the same updates after each successful batch (with the keys the
        matcher resolved for multigraph edges). ``G`` must then not be changed by other means.

    Examples
    --------
    >>> import networkx as nx, nx_gsm
    >>> m = nx_gsm.IncrementalMatcher(nx.path_graph(3), nx.complete_graph(3))
    >>> m.count()
    0
    >>> d = m.apply(insert=[(0, 2)])
    >>> d.num_added, d.num_removed, m.count()
    (6, 0, 6)
    >>> d = m.apply(delete=[(0, 1)], insert=[(0, 3), (1, 3)])
    >>> d.num_added, d.num_removed, m.count()
    (0, 6, 0)
    """

    # the local path is used while a region has at most max(_LOCAL_MIN, |V| // _LOCAL_FRACTION)
    # nodes; larger regions go to the full path (one copy and conversion of G per batch)
    _LOCAL_MIN = 256
    _LOCAL_FRACTION = 8

    def __init__(self, G, H, *, induced=False, node_match=None, edge_match=None, engine="auto",
                 sync=False):
        from .engines.registry import resolve_engine

        for X, name in ((G, "G"), (H, "H")):
            if not isinstance(X, nx.Graph):
                raise TypeError(f"{name} must be a NetworkX graph, got {type(X).__name__}")
        if G.is_directed() != H.is_directed():
            raise nx.NetworkXError("IncrementalMatcher: G and H must have the same directedness")
        for f, name in ((node_match, "node_match"), (edge_match, "edge_match")):
            if f is not None and not callable(f):
                raise TypeError(f"{name} must be callable or None, got {type(f).__name__}")
        if sync and nx.is_frozen(G):
            raise nx.NetworkXError("IncrementalMatcher: sync=True needs a mutable G (it is frozen)")
        # the static engine of full recounts; "gamma" is the delta engine, over auto's
        self._engine = resolve_engine("auto" if engine == "gamma" else engine)
        self.induced = bool(induced)
        self._mode = "induced" if induced else "mono"
        self.node_match = node_match
        self.edge_match = edge_match
        self.sync = bool(sync)
        self._user = G
        # plain id batches GAMMA took whose edit of the matcher's graph is still to come (see
        # the _G property), and the edge index their rows are checked against
        self._pending = []
        self._pending_rows = 0
        self._eidx = None
        self._G = G.copy()
        self._H = H.copy()
        self._directed = G.is_directed()
        self._multi = G.is_multigraph()
        self._h = self._convert(self._H)
        self._g = None  # GsmGraph of self._G, built lazily and reused by the next batch
        self._count = None
        self._local = "auto"  # "auto" | "always" | "never" (tests force both paths)
        self._pattern_tables()
        self._gamma = self._gamma_engine(engine)

    # -- setup ------------------------------------------------------------------------------
    def _convert(self, X):
        return from_networkx(X, preserve_node_attrs=self.node_match is not None,
                             preserve_edge_attrs=self.edge_match is not None)

    def _pattern_tables(self):
        H = self._H
        keys = self._h.node_keys
        self._hid = self._h.key_to_id
        self._hmult = {}
        for a in keys:
            for b, _ in _succ(H)[a].items():
                self._hmult[a, b] = _mult(H, a, b)
        self._hloops = {a: self._hmult.get((a, a), 0) for a in keys}
        self._mono_pairs = [(a, b) for (a, b) in self._hmult if not _same_node(a, b)]
        self._all_pairs = [(a, b) for a in keys for b in keys if a is not b]
        if self.induced:
            self._loop_nodes = list(keys)
        else:
            self._loop_nodes = [a for a in keys if self._hloops[a]]
        pred = H._pred if self._directed else H._adj
        self._isolated = [a for a in keys if not _succ(H)[a] and not pred[a]]
        # local path: every image node lies within diam(H) (ignoring direction) of an anchored
        # node, so a connected pattern can be searched in a ball around each changed pair
        U = H.to_undirected(as_view=True) if self._directed else H
        if len(keys) and nx.is_connected(U):
            self._radius = max(nx.eccentricity(U).values()) if len(keys) > 1 else 0
        else:
            self._radius = None

    def _gamma_engine(self, engine):
        """The GPU delta engine for ``engine="gamma"`` (or ``"auto"`` where it can run)."""
        if engine not in ("gamma", "auto") or self._h.n == 0:
            return None
        from .engines.gpu.gamma import GammaDelta, gamma_reason

        if engine == "auto":
            from .engines.gpu.device import is_simulator

            if gamma_reason() is not None or is_simulator():
                return None
            try:
                return GammaDelta(self)
            except ValueError:  # a pattern beyond the kernel's limits: the CPU path
                return None
        return GammaDelta(self)

    @property
    def _G(self):
        """The matcher's own graph, brought up to date first: a batch of plain id rows that
        GAMMA took edits it only when something next reads it (the device graph is the one
        the searches use), so a stream of such batches does not pay the edit of NetworkX's
        dicts on each batch's path (4-5 ms of a 1% batch on GitHub)."""
        if self._pending:
            self._catch_up()
        return self._graph

    def _catch_up(self):
        """Apply the waiting batches of plain id rows to the matcher's graph, in order."""
        for ends, ndel in self._pending:
            rows = ends.tolist()  # Python ints, the graph's own key type
            _edit_plain(self._graph, rows[:ndel], [(u, v, {}) for u, v in rows[ndel:]])
        self._pending.clear()
        self._pending_rows = 0

    @_G.setter
    def _G(self, G):
        assert not self._pending, "the graph is replaced only when up to date"
        self._graph = G

    def _edge_index(self):
        """The edge index of the matcher's graph (built on first use), or None if its node keys
        are not integer ids."""
        if self._eidx is None:
            try:
                self._eidx = _EdgeIndex(self._G)
            except (TypeError, ValueError, OverflowError):
                return None
        return self._eidx

    def _lazy_rows(self, b):
        """Whether batch ``b`` of plain rows can skip the graph edit: GAMMA reads its rows as
        node ids on a plain graph (and then the edge index checks them)."""
        return (b.ends is not None and self._gamma is not None
                and type(self._graph) in (nx.Graph, nx.DiGraph)
                and self._gamma.reads_plain_ids())

    # -- public -----------------------------------------------------------------------------
    @property
    def graph(self):
        """A read-only view of the matcher's current data graph."""
        return nx.freeze(self._G.copy(as_view=True))

    @property
    def pattern(self):
        """A read-only view of the pattern."""
        return nx.freeze(self._H.copy(as_view=True))

    def count(self):
        """The current number of matches (exact int). Counted from scratch on the first call, then
        kept up to date by each batch's ``num_added - num_removed``."""
        if self._count is None:
            if self._h.n == 0:
                self._count = 1  # GraphMatcher: the empty pattern has one (empty) mapping
            else:
                plan = self._plan(self._full_gsm(), None)
                self._count = 0 if plan.empty else int(self._engine.count(plan))
        return self._count

    def matches(self):
        """Iterate over the current matches (``{G_node: H_node}`` dicts), from scratch."""
        if self._h.n == 0:
            yield {}
            return
        hk = self._h.node_keys
        for t in self._search(self._full_gsm(), [None]):
            yield dict(zip(t, hk))

    def apply(self, insert=None, delete=None, nodes=None, delete_nodes=None, *,
              source="source", target="target", edge_key=None, edge_attr=True,
              node_key="node", node_attr=True, counts_only=False):
        """Apply one batch atomically and return its net change as a :class:`BatchResult`.

        Parameters
        ----------
        insert, delete : edge lists or DataFrames, optional
            Tuples as NetworkX's ``add_edges_from`` / ``remove_edges_from`` take them: ``(u, v)``
            or ``(u, v, attrs)``; for multigraphs also ``(u, v, key)`` and ``(u, v, key, attrs)``
            (a 3-tuple whose third item is a dict is ``attrs`` for inserts, otherwise a key).
            Or a pandas DataFrame with ``source``/``target`` columns, an optional ``edge_key``
            column and attribute columns (``edge_attr``: True = every other column, None = none,
            a name or list of names), as :func:`networkx.from_pandas_edgelist`; a cudf DataFrame
            (anything with ``to_pandas()``) is converted first. Attributes of deleted edges are
            ignored.
        nodes : iterable or DataFrame, optional
            New nodes: ``n`` or ``(n, attrs)``, or a pandas/cudf DataFrame with a ``node_key``
            column and attribute columns (``node_attr``, read as ``edge_attr``). Adding an
            existing node is an error. Endpoints of inserted edges that are not in the graph are
            created with no attributes, unless ``node_match`` is set, in which case they must be
            given here.
        delete_nodes : iterable or DataFrame, optional
            Nodes to delete with all their edges (a list, array or Series of keys, or a
            DataFrame's ``node_key`` column).
        counts_only : bool
            Return only ``num_added`` / ``num_removed`` (``added`` and ``removed`` are None). The
            GPU engine then counts on the device without building the mappings when no match can
            be valid both before and after (every changed pair appears, disappears or, in induced
            mode, changes multiplicity); otherwise the sets are built and differenced as usual.

        Batch semantics (order-free): every deletion refers to an item of the graph *before* the
        batch, every insertion adds a new item. In a simple graph an edge given both in ``delete``
        and ``insert`` is replaced (its attributes become the inserted ones) if it existed, and the
        pair cancels out if it did not; inserting an existing edge without deleting it, deleting a
        missing one, or giving the same edge twice in ``insert`` (or in ``delete``) is an error.
        In a multigraph an edge is ``(u, v, key)``: keyed items follow the simple-graph rules per
        key; a keyless delete removes one parallel edge of ``G_before`` (the most recently added
        ones first, NetworkX's ``remove_edge`` rule, skipping keyed deletions); a keyless insert
        gets a new key (NetworkX's ``new_edge_key`` rule, in row order, after the deletions and the
        keyed inserts). Inserting edges at a deleted node, or adding a deleted node, is an error.

        Any error raises :class:`BatchError` (a ``ValueError`` and ``NetworkXError``) naming the
        item, and leaves the matcher (and, with ``sync=True``, ``G``) unchanged.
        """
        with _gc_paused():
            return self._apply(insert, delete, nodes, delete_nodes,
                               (source, target, edge_key, edge_attr, node_key, node_attr),
                               counts_only)

    def _apply(self, insert, delete, nodes, delete_nodes, cols, counts_only):
        plain = True
        while True:
            batch = self._normalise(insert, delete, nodes, delete_nodes, *cols, plain=plain)
            if batch.empty:
                return BatchResult(None, None, self._count, (0, 0)) if counts_only else \
                    BatchResult(MatchList([], ()), MatchList([], ()), self._count)
            # nothing below changes any state until the commit, so an exception from a user
            # callable during the searches leaves the matcher as it was; plain rows that fail
            # their check there (_PairsBatch.check) go the general way
            try:
                before, after, G1, g1 = self._delta(batch, counts_only)
                break
            except _NotPlain:
                plain = False
        hk = self._h.node_keys
        if isinstance(before, int):  # counted on the device: the two sides are disjoint
            added = removed = None
            nums = (after, before)
        elif counts_only:
            added = removed = None
            nums = (len(after - before), len(before - after))
        else:
            hk = tuple(hk)
            added = MatchList(list(after - before), hk)
            removed = MatchList(list(before - after), hk)
            nums = (len(added), len(removed))
        # commit (cannot fail: every item was validated against the current graph)
        if G1 is not None:
            self._G, self._g = G1, g1
        else:
            if batch.lazy:
                self._pending.append((batch.ends, len(batch.pairs[1])))
                self._pending_rows += len(batch.ends)
                if self._pending_rows > _PENDING_MAX:  # (memory)
                    self._catch_up()
            elif not batch.on_graph:
                batch.apply_to(self._G)
            self._g = None
        # the edge index follows every batch (dropped if a key is not an id)
        if self._eidx is not None:
            if getattr(batch, "ends", None) is not None:
                self._eidx.keys = batch.next_keys if batch.next_keys is not None else \
                    self._eidx.updated(batch.ends, len(batch.pairs[1]))
            elif not self._eidx.follow(batch):
                self._eidx = None
        if self._count is not None:
            self._count += nums[0] - nums[1]
        if self.sync:
            batch.apply_to(self._user)
        return BatchResult(added, removed, self._count, nums)

    # -- batch normalisation ----------------------------------------------------------------
    def _pair(self, u, v):
        return (u, v) if self._directed else frozenset((u, v))

    def _normalise(self, insert, delete, nodes, delete_nodes, source="source", target="target",
                   edge_key=None, edge_attr=True, node_key="node", node_attr=True, plain=True):
        if plain and not self._multi and nodes is None and delete_nodes is None:
            b = self._pairs_batch(insert, delete, (source, target, edge_key, edge_attr))
            if b is not None:
                return b
        G0 = self._G
        multi = self._multi
        b = _Batch()
        ins = _edge_rows(insert, "insert", multi, True, source, target, edge_key, edge_attr)
        dels = _edge_rows(delete, "delete", multi, False, source, target, edge_key, edge_attr)

        # nodes
        def node_list(what, arg):
            if arg is not None and not _is_frame(arg) and callable(getattr(arg, "to_pandas",
                                                                           None)):
                arg = arg.to_pandas()  # a cudf DataFrame or Series of node keys
            if _is_frame(arg):
                return _node_frame(arg, what, node_key, node_attr)
            if isinstance(arg, np.ndarray) or type(arg).__module__.split(".")[0] == "pandas":
                arg = arg.tolist()  # a Series or Index: Python scalars, as from a frame
            return arg

        nodes = node_list("nodes", nodes)
        delete_nodes = node_list("delete_nodes", delete_nodes)
        if nodes is not None:
            if isinstance(nodes, (str, bytes)) or not isinstance(nodes, cabc.Iterable):
                raise BatchError(f"nodes: expected an iterable of nodes, got {nodes!r}")
            for i, item in enumerate(nodes):
                where = f"nodes[{i}]"
                if (isinstance(item, tuple) and len(item) == 2
                        and isinstance(item[1], cabc.Mapping)):
                    n, attrs = item
                else:
                    n, attrs = item, {}
                _check_node(n, where)
                if n in G0:
                    raise BatchError(f"{where}: node {n!r} already exists")
                if n in b.new_nodes:
                    raise BatchError(f"{where}: node {n!r} is given twice")
                b.new_nodes[n] = dict(attrs)
        gone = {}
        if delete_nodes is not None:
            if isinstance(delete_nodes, (str, bytes)) or not isinstance(delete_nodes,
                                                                       cabc.Iterable):
                raise BatchError(f"delete_nodes: expected an iterable of nodes, "
                                 f"got {delete_nodes!r}")
            for i, n in enumerate(delete_nodes):
                where = f"delete_nodes[{i}]"
                _check_node(n, where)
                if n not in G0:
                    raise BatchError(f"{where}: node {n!r} is not in the graph")
                if n in gone:
                    raise BatchError(f"{where}: node {n!r} is given twice")
                gone[n] = i
        b.gone_nodes = list(gone)

        # endpoints of inserted edges (G0._node: `in G0` is a method call per endpoint)
        have = G0._node
        for i, (u, v, _, _) in enumerate(ins):
            if u in have and v in have and not gone:  # the common row
                continue
            for n in (u, v):
                if n in gone:
                    raise BatchError(f"insert[{i}]: node {n!r} is deleted in this batch")
                if n not in have and n not in b.new_nodes:
                    if self.node_match is not None:
                        raise BatchError(
                            f"insert[{i}]: node {n!r} is not in the graph and node_match needs "
                            f"its attributes: add it with nodes=[({n!r}, {{...}})]")
                    b.new_nodes[n] = {}
        for i, (u, v, _, _) in enumerate(dels):
            if u in have and v in have:
                continue
            for n in (u, v):
                # a new node's edge can only be deleted if it is inserted here too (cancels)
                if n not in have and n not in b.new_nodes:
                    raise BatchError(f"delete[{i}]: edge {(u, v)!r} is not in the graph "
                                     f"(node {n!r} is not)")

        if multi:
            self._resolve_multi(b, ins, dels)
        else:
            self._resolve_simple(b, ins, dels)

        # every pair incident to a deleted node changes
        for n in b.gone_nodes:
            for v in _succ(G0)[n]:
                b.touched.setdefault(self._pair(n, v), (n, v))
            if self._directed:
                for v in G0._pred[n]:
                    b.touched.setdefault(self._pair(v, n), (v, n))
        return b

    def _pairs_batch(self, insert, delete, frame=("source", "target", None, True)):
        """The batch of a simple graph given as plain ``(u, v)`` rows between existing nodes,
        validated and resolved in whole-list passes (a 1% batch on GitHub, on the card's host:
        3-5 ms, was 12 ms), or None whenever anything needs the general path -- other rows, new
        nodes, a pair in both lists, any error (which the general path then names). Rows are
        lists or tuples of 2-tuples, ``(m, 2)`` integer arrays, or DataFrames of two integer
        columns and no attributes (:func:`_plain_side`; ``frame``: ``source``, ``target``,
        ``edge_key``, ``edge_attr`` as ``apply`` takes them). Where GAMMA reads the rows as
        node ids, their membership is checked against the edge index (:class:`_EdgeIndex`)
        instead of the graph, whose edit then waits (see ``_G``)."""
        sides = [_plain_side(obj, inserting, *frame)
                 for obj, inserting in ((insert, True), (delete, False))]
        if sides[0] is None or sides[1] is None:
            return None
        (ins, ends_i), (dels, ends_d) = sides
        if ends_i is not None and ends_d is not None:  # read off arrays (deletions first)
            ends = np.concatenate([ends_d, ends_i])
        else:
            ends = _row_ends(ins, dels)
        b = _PairsBatch(ins, dels, tuple if self._directed else frozenset)
        b.ends = ends  # (GAMMA reads integer rows as id columns)
        idx = self._edge_index() if self._lazy_rows(b) else None
        try:  # an unhashable endpoint (TypeError): the general path names it
            if not _distinct_pairs(ins, dels, self._directed, ends):
                return None
        except TypeError:
            return None
        if idx is not None:
            # checked against the edge index while GAMMA's searches run, not on the batch's
            # path (see _PairsBatch.check)
            b.lazy = True
            b.pending = idx
            return b
        try:
            b.verify(self._G)
        except _NotPlain:
            return None
        return b

    def _resolve_simple(self, b, ins, dels):
        succ = _succ(self._G)
        canon = tuple if self._directed else frozenset  # self._pair, without a call per row
        dp = [canon(r[:2]) for r in dels]
        ip = [canon(r[:2]) for r in ins]
        seen_del = {p: i for i, p in zip(range(len(dp) - 1, -1, -1), reversed(dp))}
        seen_ins = {p: i for i, p in zip(range(len(ip) - 1, -1, -1), reversed(ip))}
        for what, ps, rows, seen in (("delete", dp, dels, seen_del),
                                     ("insert", ip, ins, seen_ins)):
            if len(seen) < len(ps):  # name the first repeat
                for i, p in enumerate(ps):
                    if seen[p] != i:
                        raise BatchError(f"{what}[{i}]: edge {rows[i][:2]!r} is given twice "
                                         f"(also {what}[{seen[p]}])")
        touched = b.touched
        for i, ((u, v, _, _), p) in enumerate(zip(dels, dp)):
            nb = succ.get(u)
            exists = nb is not None and v in nb
            if not exists and p not in seen_ins:
                raise BatchError(f"delete[{i}]: edge {(u, v)!r} is not in the graph")
            if exists:
                b.del_edges.append((u, v, None))
                touched.setdefault(p, (u, v))
            # not exists but inserted in this batch: insert + delete cancel out
        for i, ((u, v, _, attrs), p) in enumerate(zip(ins, ip)):
            nb = succ.get(u)
            exists = nb is not None and v in nb
            if exists and p not in seen_del:
                raise BatchError(f"insert[{i}]: edge {(u, v)!r} is already in the graph (delete "
                                 f"it in the same batch to replace its attributes)")
            if exists or p not in seen_del:
                b.add_edges.append((u, v, None, attrs))
                touched.setdefault(p, (u, v))
            if exists:
                b.replaced[p] = (u, v, nb[v], attrs)

    def _resolve_multi(self, b, ins, dels):
        G0 = self._G
        keyed_ins, keyed_del = {}, {}  # (pair, key) -> row index
        for i, (u, v, key, _) in enumerate(ins):
            if key is not _NOKEY:
                pk = (self._pair(u, v), key)
                if pk in keyed_ins:
                    raise BatchError(f"insert[{i}]: edge {(u, v, key)!r} is given twice "
                                     f"(also insert[{keyed_ins[pk]}])")
                keyed_ins[pk] = i
        for i, (u, v, key, _) in enumerate(dels):
            if key is not _NOKEY:
                pk = (self._pair(u, v), key)
                if pk in keyed_del:
                    raise BatchError(f"delete[{i}]: edge {(u, v, key)!r} is given twice "
                                     f"(also delete[{keyed_del[pk]}])")
                keyed_del[pk] = i
        # keyed deletions
        deleted = {}  # pair -> set of keys removed from G0
        for i, (u, v, key, _) in enumerate(dels):
            if key is _NOKEY:
                continue
            p = self._pair(u, v)
            kd = _datum(G0, u, v)
            if kd is not None and key in kd:
                b.del_edges.append((u, v, key))
                deleted.setdefault(p, set()).add(key)
                b.touched.setdefault(p, (u, v))
            elif (p, key) not in keyed_ins:
                raise BatchError(f"delete[{i}]: edge {(u, v, key)!r} is not in the graph")
        # keyless deletions: the most recently added remaining parallel edges of G0
        pending = {}
        for i, (u, v, key, _) in enumerate(dels):
            if key is _NOKEY:
                p = self._pair(u, v)
                pending.setdefault(p, [u, v, 0, i])[2] += 1
        for p, (u, v, c, i) in pending.items():
            kd = _datum(G0, u, v) or {}
            left = [k for k in kd if k not in deleted.get(p, ())]
            if c > len(left):
                why = ("is not in the graph" if not kd
                       else f"only {len(left)} parallel edges are left")
                raise BatchError(
                    f"delete[{i}]: edge {(u, v)!r} is deleted {c} times without keys but {why}")
            for k in left[len(left) - c:][::-1]:
                b.del_edges.append((u, v, k))
                deleted.setdefault(p, set()).add(k)
            b.touched.setdefault(p, (u, v))
        # keyed insertions
        final = {}  # pair -> dict of keys present after the batch (for new keys)

        def keys_after(p, u, v):
            if p not in final:
                kd = _datum(G0, u, v) or {}
                final[p] = {k: None for k in kd if k not in deleted.get(p, ())}
            return final[p]

        for i, (u, v, key, attrs) in enumerate(ins):
            if key is _NOKEY:
                continue
            p = self._pair(u, v)
            kd = _datum(G0, u, v)
            in_g0 = kd is not None and key in kd
            if in_g0 and key not in deleted.get(p, ()):
                raise BatchError(f"insert[{i}]: edge {(u, v, key)!r} is already in the graph "
                                 f"(delete it in the same batch to replace it)")
            if not in_g0 and (p, key) in keyed_del:
                continue  # inserted and deleted in this batch: cancels out
            keys_after(p, u, v)[key] = None
            b.add_edges.append((u, v, key, attrs))
            b.touched.setdefault(p, (u, v))
        # keyless insertions: NetworkX's new_edge_key over the keys present at that point
        for i, (u, v, key, attrs) in enumerate(ins):
            if key is not _NOKEY:
                continue
            p = self._pair(u, v)
            ks = keys_after(p, u, v)
            k = len(ks)
            while k in ks:
                k += 1
            ks[k] = None
            b.add_edges.append((u, v, k, attrs))
            b.touched.setdefault(p, (u, v))

    # -- searching --------------------------------------------------------------------------
    def _full_gsm(self):
        if self._g is None:
            self._g = self._convert(self._G)
        return self._g

    def _plan(self, g, anchors):
        return make_plan(g, self._h, self._mode, node_match=self.node_match,
                         edge_match=self.edge_match, anchors=anchors)

    def _search(self, g, anchor_list):
        """Mappings (tuples of G keys in H's node order) of every anchored plan, deduplicated.
        ``anchor_list`` holds dicts {H key: G key} (None = unanchored)."""
        out = set()
        gid, hid, gk = g.key_to_id, self._hid, g.node_keys
        k = self._h.n
        for anc in anchor_list:
            ids = None if anc is None else {hid[a]: gid[x] for a, x in anc.items()}
            plan = self._plan(g, ids)
            if plan.empty:
                continue
            inv = np.empty(k, dtype=np.int64)
            inv[plan.order] = np.arange(k)
            for chunk in self._engine.iter_chunks(plan):
                for row in chunk[:, inv].tolist():
                    out.add(tuple([gk[v] for v in row]))
        return out

    def _node_ok(self, S, x, a, cache):
        if self.node_match is None:
            return True
        key = (x, a)
        r = cache.get(key)
        if r is None:
            r = cache[key] = bool(self.node_match(S._node[x], self._H._node[a]))
        return r

    def _mult_ok(self, have, need):
        return have == need if self.induced else have >= need

    def _anchors(self, S, changed, nodes, cache):
        """Anchor dicts {H key: G key} for side ``S`` (cheap necessary conditions prune)."""
        out, seen = [], set()
        hm, hl = self._hmult, self._hloops
        pairs = self._all_pairs if self.induced else self._mono_pairs

        def add(anc):
            f = frozenset(anc.items())
            if f not in seen:
                seen.add(f)
                out.append(anc)

        def loop_ok(x, a):
            return self._mult_ok(_mult(S, x, x), hl[a]) and self._node_ok(S, x, a, cache)

        for x, y in changed:
            if x not in S or y not in S:
                continue
            if _same_node(x, y):
                for a in self._loop_nodes:
                    if loop_ok(x, a):
                        add({a: x})
                continue
            mxy, myx = _mult(S, x, y), _mult(S, y, x)
            for a, b in pairs:
                if not (self._mult_ok(mxy, hm.get((a, b), 0))
                        and self._mult_ok(myx, hm.get((b, a), 0))):
                    continue
                if loop_ok(x, a) and loop_ok(y, b):
                    add({a: x, b: y})
        for n in nodes:
            for a in self._isolated:
                if loop_ok(n, a):
                    add({a: n})
        return out

    def _delta(self, batch, counts_only=False):
        """(mappings of G_before, mappings of G_after) that use a changed pair or a new/deleted
        node, plus (G_after, its GsmGraph) when the full path built them, else (None, None).
        The GPU engine may return the two sets' sizes instead (``counts_only``)."""
        if self._gamma is not None and self._h.n:
            from .engines.gpu.faults import device_errors

            # while the device searches, the host brings the edge index (plain id rows, whose
            # graph edit waits: see _G) or the matcher's graph (other plain pairs on a plain
            # graph; taken back if the batch fails) up to date
            done = []
            hook = None
            if batch.lazy:
                def hook():
                    batch.next_keys = self._eidx.updated(batch.ends, len(batch.pairs[1]))
            elif batch.pairs is not None and type(self._graph) in (nx.Graph, nx.DiGraph):
                hook = lambda: done.append(batch.apply_undoable(self._G))  # noqa: E731
            try:
                before, after = self._gamma.delta(self, batch, counts_only, hook)
                batch.on_graph = bool(done)
                return before, after, None, None
            except BaseException as exc:
                if done:
                    batch.undo(self._G, done.pop())
                if not isinstance(exc, device_errors()):
                    raise
                # GAMMA dropped its device graph; the CPU path below finishes the batch (and
                # the matcher's graph takes it at once)
                batch.lazy = False
        if getattr(batch, "pending", None) is not None:
            batch.check()  # rows GAMMA was to check (it faulted first, or the CPU path's tests)
        if self._h.n == 0:
            return set(), set(), None, None
        G0 = self._G
        # one group per unordered node pair: both orientations share one local region
        groups = {}
        for u, v in batch.touched.values():
            groups.setdefault(frozenset((u, v)), []).append((u, v))
        if self._isolated:  # new / deleted nodes matter only through isolated pattern nodes
            for n in batch.gone_nodes:
                groups.setdefault(frozenset((n,)), [])
            for n in batch.new_nodes:
                groups.setdefault(frozenset((n,)), [])
        gone, new = set(batch.gone_nodes), batch.new_nodes
        cache = {}
        before, after = set(), set()
        rest = list(groups.items())
        if self._radius is not None and self._local != "never":
            limit = None if self._local == "always" else max(self._LOCAL_MIN,
                                                             len(G0) // self._LOCAL_FRACTION)
            reg = _Regions(G0, batch, self._radius, limit)
            rest = []
            for centres, pairs in groups.items():
                r = reg.region(centres)
                if r is None:  # the region is too large: the full path below takes it
                    rest.append((centres, pairs))
                    continue
                L0, L1 = r
                changed = [(u, v) for u, v in pairs
                           if not _same(_datum(L0, u, v), _datum(L1, u, v))]
                n0 = [n for n in centres if n in gone]
                n1 = [n for n in centres if n in new]
                if changed or n0:
                    before |= self._search_graph(L0, self._anchors(L0, changed, n0, cache))
                if changed or n1:
                    after |= self._search_graph(L1, self._anchors(L1, changed, n1, cache))
        G1 = g1 = None
        if rest:
            G1 = G0.copy()
            batch.apply_to(G1)
            g1 = self._convert(G1)
            pairs = [p for _, ps in rest for p in ps]
            changed = [(u, v) for u, v in pairs if not _same(_datum(G0, u, v), _datum(G1, u, v))]
            n0 = [n for c, _ in rest for n in c if n in gone]
            n1 = [n for c, _ in rest for n in c if n in new]
            before |= self._search(self._full_gsm(), self._anchors(G0, changed, n0, cache))
            after |= self._search(g1, self._anchors(G1, changed, n1, cache))
        return before, after, G1, g1

    def _search_graph(self, L, anchors):
        if not anchors:
            return set()
        return self._search(self._convert(L), anchors)


def _nbrs(G, u):
    """Neighbours of ``u`` ignoring direction (may repeat for directed graphs)."""
    if G.is_directed():
        return list(G._succ[u]) + list(G._pred[u])
    return G._adj[u]


def _induced(cls, nodes, edges, multi):
    """A fresh graph of class ``cls`` from ``(node, attrs)`` and ``(u, v, datum)`` (attribute dicts
    copied shallowly; multigraph data are key-dicts)."""
    L = cls()
    L.add_nodes_from(nodes)
    if multi:
        L.add_edges_from((u, v, k, d) for u, v, kd in edges for k, d in kd.items())
    else:
        L.add_edges_from(edges)
    return L


def _touched_nodes(batch):
    """Endpoints of the batch's changed pairs, and its new and deleted nodes."""
    NT = set(batch.new_nodes) | set(batch.gone_nodes)
    for u, v in batch.touched.values():
        NT.add(u)
        NT.add(v)
    return NT


class _Regions:
    """Local regions for the local path: for a set of centre nodes, the induced subgraphs of
    ``G_before`` and ``G_after`` on every node within ``radius`` (ignoring direction) of a centre
    in either graph, built without materialising ``G_after``.

    ``T1`` is ``G_after`` induced on the touched nodes ``NT`` (endpoints of changed pairs, new and
    deleted nodes); every other pair is the same in both graphs.
    """

    def __init__(self, G0, batch, radius, limit):
        self.G0, self.radius, self.limit = G0, radius, limit
        self.multi = G0.is_multigraph()
        NT = _touched_nodes(batch)
        self.NT = NT
        self.T1 = self._build_g0(NT)
        batch.apply_to(self.T1)  # every item of the batch lies inside NT

    def _build_g0(self, B):
        G0 = self.G0
        succ = _succ(G0)
        nodes = [n for n in B if n in G0]
        return _induced(G0.__class__, ((n, G0._node[n]) for n in nodes),
                        ((u, v, d) for u in nodes for v, d in succ[u].items() if v in B),
                        self.multi)

    def _local(self, B, after):
        """``G_before[B]`` or ``G_after[B]`` as a read-only graph that shares the attribute
        objects of ``G0`` / ``T1`` (built directly as dicts: these graphs are only read)."""
        G0, T1, NT = self.G0, self.T1, self.NT
        directed = G0.is_directed()

        def rows(adj0, adj1):
            out = {}
            for n in B:
                if n in NT and after:
                    if n not in T1:
                        continue  # deleted
                    row = {v: d for v, d in adj1[n].items() if v in B}
                    if n in G0:
                        row.update((v, d) for v, d in adj0[n].items()
                                   if v in B and v not in NT)
                elif n in G0:
                    row = {v: d for v, d in adj0[n].items() if v in B}
                else:
                    continue  # new node, before the batch
                out[n] = row
            return out

        L = G0.__class__()
        succ = rows(_succ(G0), _succ(T1))
        L._node = {n: (T1._node[n] if n in NT and after else G0._node[n]) for n in succ}
        L._adj = succ
        if directed:
            L._succ = succ
            L._pred = rows(G0._pred, T1._pred)
        return L

    def _adj1(self, u):
        if u not in self.NT:
            return _nbrs(self.G0, u)
        out = list(_nbrs(self.T1, u)) if u in self.T1 else []
        if u in self.G0 and u in self.T1:
            out.extend(v for v in _nbrs(self.G0, u) if v not in self.NT)
        return out

    def _ball(self, adj, centres, exists):
        seen = {c for c in centres if exists(c)}
        frontier = list(seen)
        for _ in range(self.radius):
            nxt = []
            for u in frontier:
                for v in adj(u):
                    if v not in seen:
                        seen.add(v)
                        nxt.append(v)
                if self.limit is not None and len(seen) > self.limit:
                    return None
            frontier = nxt
        return seen

    def region(self, centres):
        """(G_before[B], G_after[B]) for the ball B around ``centres``, or None if too large."""
        G0, T1, NT = self.G0, self.T1, self.NT
        b0 = self._ball(lambda u: _nbrs(G0, u), centres, lambda n: n in G0)
        if b0 is None:
            return None
        b1 = self._ball(self._adj1, centres,
                        lambda n: (n in T1) if n in NT else (n in G0))
        if b1 is None:
            return None
        B = b0 | b1
        return self._local(B, False), self._local(B, True)
