""":class:`IncrementalMatcher`: the matcher's state, batch normalisation and the delta searches
(the method is described in :mod:`nx_gsm.incremental`)."""

from __future__ import annotations

import collections.abc as cabc
import contextlib
import gc

import networkx as nx
import numpy as np

from ..interop.networkx import from_networkx
from ..engines.base import DeltaProblem
from ..plan.planner import make_plan
from .batch import (Batch, BatchError, BatchResult, EdgeIndex, MatchList, NotPlain,
                    PairsBatch)
from .inputs import (check_node, distinct_pairs, edge_rows, is_frame, node_frame, plain_side,
                     row_ends)
from .regions import Regions
from .values import NOKEY, datum, degrees, edit_plain, mult, out_adj, same, same_node

__all__ = ["IncrementalMatcher"]


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


# a GAMMA matcher applies at most this many plain rows lazily before its graph catches up
_PENDING_MAX = 1 << 20


def _data_classes(k, entries, loopdata):
    """(k x k class of each pattern edge's datum, -1 where none; class of each node's loop
    datum): data that no ``edge_match`` can tell apart share a class."""
    reps = []

    def cls(d):
        for i, r in enumerate(reps):
            if same(r, d):
                return i
        reps.append(d)
        return len(reps) - 1

    ec = np.full((k, k), -1, dtype=np.int64)
    for a, b, d in entries:
        ec[a, b] = cls(d)
    return ec, np.array([cls(d) for d in loopdata], dtype=np.int64)


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
        from ..engines.registry import resolve_engine

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
            for b, _ in out_adj(H)[a].items():
                self._hmult[a, b] = mult(H, a, b)
        self._hloops = {a: self._hmult.get((a, a), 0) for a in keys}
        self._hdeg = {a: degrees(H, a) for a in keys}
        self._mono_pairs = [(a, b) for (a, b) in self._hmult if not same_node(a, b)]
        self._all_pairs = [(a, b) for a in keys for b in keys if a is not b]
        if self.induced:
            self._loop_nodes = list(keys)
        else:
            self._loop_nodes = [a for a in keys if self._hloops[a]]
        pred = H._pred if self._directed else H._adj
        self._isolated = [a for a in keys if not out_adj(H)[a] and not pred[a]]
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
        from ..engines.gpu.gamma import GammaDelta, gamma_reason

        if engine == "auto":
            from ..engines.gpu.device import is_simulator

            if gamma_reason() is not None or is_simulator():
                return None
            try:
                return GammaDelta(self._delta_problem())
            except ValueError:  # a pattern beyond the kernel's limits: the CPU path
                return None
        return GammaDelta(self._delta_problem())

    def _delta_problem(self):
        """What the GPU delta engine reads: the pattern and its label tables, the mode, and
        this matcher's graph (through ``graph()``, which brings it up to date)."""
        h, H = self._h, self._H
        hk = h.node_keys
        k = h.n
        hid = self._hid
        edge_data = tuple(datum(H, hk[a], hk[b]) for a, b in zip(h.sources(), h.indices))
        loop_data = tuple(datum(H, a, a) for a in hk)
        # classes of equal pattern edge data (-1: no edge), which GAMMA's coalesced search keeps
        labelled = self.edge_match is not None
        ents = zip(h.sources().tolist(), h.indices.tolist(),
                   edge_data if labelled else [None] * len(edge_data))
        ecls, lcls = _data_classes(k, list(ents), loop_data if labelled else [None] * k)
        hm = np.zeros((k, k), dtype=np.int64)
        for (a, b), c in self._hmult.items():
            if not same_node(a, b):
                hm[hid[a], hid[b]] = c
        for x in (ecls, lcls, hm):
            x.setflags(write=False)
        return DeltaProblem(
            pattern=h, induced=self.induced, directed=self._directed,
            node_match=self.node_match, edge_match=self.edge_match,
            node_data=tuple(H._node[a] for a in hk), edge_data=edge_data, loop_data=loop_data,
            edge_classes=ecls, loop_classes=lcls, multiplicity=hm,
            isolated=tuple(sorted(hid[a] for a in self._isolated)),
            graph=lambda: self._G, pair=self._pair)

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
            edit_plain(self._graph, rows[:ndel], [(u, v, {}) for u, v in rows[ndel:]])
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
                self._eidx = EdgeIndex(self._G)
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
            # their check there (PairsBatch.check) go the general way
            try:
                before, after, G1, g1 = self._delta(batch, counts_only)
                break
            except NotPlain:
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
        b = Batch()
        ins = edge_rows(insert, "insert", multi, True, source, target, edge_key, edge_attr)
        dels = edge_rows(delete, "delete", multi, False, source, target, edge_key, edge_attr)

        # nodes
        def node_list(what, arg):
            if arg is not None and not is_frame(arg) and callable(getattr(arg, "to_pandas",
                                                                           None)):
                arg = arg.to_pandas()  # a cudf DataFrame or Series of node keys
            if is_frame(arg):
                return node_frame(arg, what, node_key, node_attr)
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
                check_node(n, where)
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
                check_node(n, where)
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
            for v in out_adj(G0)[n]:
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
        columns and no attributes (:func:`plain_side`; ``frame``: ``source``, ``target``,
        ``edge_key``, ``edge_attr`` as ``apply`` takes them). Where GAMMA reads the rows as
        node ids, their membership is checked against the edge index (:class:`EdgeIndex`)
        instead of the graph, whose edit then waits (see ``_G``)."""
        sides = [plain_side(obj, inserting, *frame)
                 for obj, inserting in ((insert, True), (delete, False))]
        if sides[0] is None or sides[1] is None:
            return None
        (ins, ends_i), (dels, ends_d) = sides
        if ends_i is not None and ends_d is not None:  # read off arrays (deletions first)
            ends = np.concatenate([ends_d, ends_i])
        else:
            ends = row_ends(ins, dels)
        b = PairsBatch(ins, dels, tuple if self._directed else frozenset)
        b.ends = ends  # (GAMMA reads integer rows as id columns)
        idx = self._edge_index() if self._lazy_rows(b) else None
        try:  # an unhashable endpoint (TypeError): the general path names it
            if not distinct_pairs(ins, dels, self._directed, ends):
                return None
        except TypeError:
            return None
        if idx is not None:
            # checked against the edge index while GAMMA's searches run, not on the batch's
            # path (see PairsBatch.check)
            b.lazy = True
            b.pending = idx
            return b
        try:
            b.verify(self._G)
        except NotPlain:
            return None
        return b

    def _resolve_simple(self, b, ins, dels):
        succ = out_adj(self._G)
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
            if key is not NOKEY:
                pk = (self._pair(u, v), key)
                if pk in keyed_ins:
                    raise BatchError(f"insert[{i}]: edge {(u, v, key)!r} is given twice "
                                     f"(also insert[{keyed_ins[pk]}])")
                keyed_ins[pk] = i
        for i, (u, v, key, _) in enumerate(dels):
            if key is not NOKEY:
                pk = (self._pair(u, v), key)
                if pk in keyed_del:
                    raise BatchError(f"delete[{i}]: edge {(u, v, key)!r} is given twice "
                                     f"(also delete[{keyed_del[pk]}])")
                keyed_del[pk] = i
        # keyed deletions
        deleted = {}  # pair -> set of keys removed from G0
        for i, (u, v, key, _) in enumerate(dels):
            if key is NOKEY:
                continue
            p = self._pair(u, v)
            kd = datum(G0, u, v)
            if kd is not None and key in kd:
                b.del_edges.append((u, v, key))
                deleted.setdefault(p, set()).add(key)
                b.touched.setdefault(p, (u, v))
            elif (p, key) not in keyed_ins:
                raise BatchError(f"delete[{i}]: edge {(u, v, key)!r} is not in the graph")
        # keyless deletions: the most recently added remaining parallel edges of G0
        pending = {}
        for i, (u, v, key, _) in enumerate(dels):
            if key is NOKEY:
                p = self._pair(u, v)
                pending.setdefault(p, [u, v, 0, i])[2] += 1
        for p, (u, v, c, i) in pending.items():
            kd = datum(G0, u, v) or {}
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
                kd = datum(G0, u, v) or {}
                final[p] = {k: None for k in kd if k not in deleted.get(p, ())}
            return final[p]

        for i, (u, v, key, attrs) in enumerate(ins):
            if key is NOKEY:
                continue
            p = self._pair(u, v)
            kd = datum(G0, u, v)
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
            if key is not NOKEY:
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
            try:
                r = bool(self.node_match(S._node[x], self._H._node[a]))
            except Exception:  # noqa: BLE001 -- not swallowed: the anchored plan asks again
                # this is a prune before any structural check of the whole pattern; the plan
                # of the anchor asks about the pair again exactly when the structural checks
                # let it through (docs/semantics.md), and what the callable raises then
                # reaches the caller, as in a full search
                r = True
            cache[key] = r
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
            # structure before node_match: it is asked only about pairs that pass the degree
            # and self-loop checks (docs/semantics.md), as in a full search
            (o, i), (ho, hi) = degrees(S, x), self._hdeg[a]
            return self._mult_ok(mult(S, x, x), hl[a]) and o >= ho and i >= hi and \
                self._node_ok(S, x, a, cache)

        for x, y in changed:
            if x not in S or y not in S:
                continue
            if same_node(x, y):
                for a in self._loop_nodes:
                    if loop_ok(x, a):
                        add({a: x})
                continue
            mxy, myx = mult(S, x, y), mult(S, y, x)
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
            from ..engines.gpu.faults import device_errors

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
                before, after = self._gamma.delta(batch, counts_only, hook)
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
            reg = Regions(G0, batch, self._radius, limit)
            rest = []
            for centres, pairs in groups.items():
                r = reg.region(centres)
                if r is None:  # the region is too large: the full path below takes it
                    rest.append((centres, pairs))
                    continue
                L0, L1 = r
                changed = [(u, v) for u, v in pairs
                           if not same(datum(L0, u, v), datum(L1, u, v))]
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
            changed = [(u, v) for u, v in pairs if not same(datum(G0, u, v), datum(G1, u, v))]
            n0 = [n for c, _ in rest for n in c if n in gone]
            n1 = [n for c, _ in rest for n in c if n in new]
            before |= self._search(self._full_gsm(), self._anchors(G0, changed, n0, cache))
            after |= self._search(g1, self._anchors(G1, changed, n1, cache))
        return before, after, G1, g1

    def _search_graph(self, L, anchors):
        if not anchors:
            return set()
        return self._search(self._convert(L), anchors)
