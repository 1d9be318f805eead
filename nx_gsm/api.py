"""nx_gsm's own matching API.

Argument order and mapping direction are NetworkX's: ``G`` is the data graph, ``H`` the pattern,
and every mapping is a dict ``{G_node: H_node}``. Monomorphisms are non-induced (extra G edges
among the image allowed), subgraph isomorphisms are node-induced. See :mod:`nx_gsm` for the terms.

Labels
------
``node_match(G_node_attrs, H_node_attrs)`` / ``edge_match(G_edge_attrs, H_edge_attrs)`` work as in
:class:`networkx.algorithms.isomorphism.GraphMatcher` (for multigraphs, edge_match receives the
key-dicts of all parallel edges). Any callable is exact. ``node_label="attr"`` /
``edge_label="attr"`` are strict shortcuts for equality on one attribute: a node or edge without it,
or with an unhashable value, raises an error naming it. On multigraphs ``edge_label`` compares the
*sets* of labels of the parallel edges between two nodes (``categorical_multiedge_match``).
"""

from __future__ import annotations

import numbers
import operator
import time

import networkx as nx
import numpy as np

from .engines import resolve_engine
from .engines.base import UNLIMITED, Budget, Count, PartialCount
from .interop.networkx import as_gsm, is_graph_like
from .plan.labels import NODE_LABELS, plain_values
from .plan.planner import check_stages, make_plan
from .precompile import notice_first_compile

__all__ = [
    "subgraph_monomorphisms",
    "subgraph_isomorphisms",
    "count_subgraph_monomorphisms",
    "count_subgraph_isomorphisms",
    "find_subgraph_monomorphisms",
    "find_subgraph_isomorphisms",
    "is_subgraph_monomorphic",
    "is_subgraph_isomorphic",
    "isomorphisms",
    "explain",
    "match_frames",
]


# -- validation -------------------------------------------------------------------------------
def _check_graph(X, name):
    if not is_graph_like(X):
        raise TypeError(
            f"{name} must be a NetworkX graph, nx_gsm.GsmGraph or RAPIDS graph, got "
            f"{type(X).__name__}"
        )


def _check_limit(limit):
    if limit is None:
        return None
    if isinstance(limit, bool) or not isinstance(limit, numbers.Integral):
        raise TypeError(f"limit must be a non-negative int or None, got {limit!r}")
    limit = operator.index(limit)
    if limit < 0:
        raise ValueError(f"limit must be non-negative, got {limit}")
    return limit


def _check_callable(f, name):
    if f is not None and not callable(f):
        raise TypeError(f"{name} must be callable or None, got {type(f).__name__}")


def _strict_label(fn_name, items, names, attr, what):
    """Every item must carry ``attr`` with a hashable value; errors name the item. Returns the
    values (the planner's label keys: reading them again was ~60 us on yeast's 3,112 nodes)
    when they are plain (:func:`~nx_gsm.plan.labels.plain`, which implies hashable: the
    planner then groups them without checking again), else None."""
    values = plain_values(items, attr)  # one pass in C: the loop below is ~3x slower
    if values is not None:
        return values
    for d, name in zip(items, names):
        if attr not in d:
            raise nx.NetworkXError(f"{fn_name}: {what} {name!r} has no attribute {attr!r}")
        try:
            hash(d[attr])
        except TypeError:
            raise TypeError(
                f"{fn_name}: {what} {name!r} has an unhashable {attr!r} value {d[attr]!r}"
            ) from None
    return None


def _node_label_values(fn_name, x, attr, what):
    """:func:`_strict_label` of ``x``'s nodes. A graph that owns its node dicts
    (``GsmGraph.owns_node_data``) keeps the checked values beside it: no one else holds those
    dicts, and reading 3,112 of them again took ~150 us of a light query's ~1 ms on yeast."""
    kept = x.__networkx_cache__.setdefault(NODE_LABELS, {}) \
        if getattr(x, "owns_node_data", False) else None
    try:
        return kept[attr]
    except (TypeError, KeyError):
        pass
    values = _strict_label(fn_name, x.node_data or [], x.node_keys, attr, what)
    if kept is not None:
        try:
            kept[attr] = values
        except TypeError:  # an unhashable attribute name
            pass
    return values


def _edge_names(x):
    """(u, v) key pairs aligned with x.edge_data (the out-CSR entries)."""
    keys = x.node_keys
    return [(keys[u], keys[v]) for u, v in zip(x.sources().tolist(), x.indices.tolist())]


def _label_match(attr):
    return nx.algorithms.isomorphism.categorical_node_match(attr, None)


def _edge_label_match(attr, multigraph):
    # a multigraph's edge datum is the key-dict of its parallel edges: compare their label sets
    if multigraph:
        return nx.algorithms.isomorphism.categorical_multiedge_match(attr, None)
    return _label_match(attr)


def prepare(G, H, mode, *, node_match=None, edge_match=None, node_label=None, edge_label=None,
            vf2pp_label=None, vf2pp_default=None, fn_name="nx_gsm", engine=None, filter=None,
            order=None):
    """Validate, convert and plan. Returns ``(plan, g, h)``; inputs are never modified.

    A :class:`~nx_gsm.interop.device.DeviceGraph` ``G`` is planned on the device when ``engine``
    (the engine object that will run the plan) can read it there; otherwise it is copied to the
    host once (logged) and planned as usual. ``filter``/``order`` name the planner's stages
    (:func:`~nx_gsm.plan.planner.make_plan`); the host plan's ``stages["seconds"]`` gets the
    conversion's and the label checks' time beside the planner's own stages.
    """
    t0 = time.perf_counter()
    check_stages(filter, order)
    if getattr(G, "on_device", False) and filter in (None, "ldf"):
        # (a device plan's candidates are the "ldf" filter's: another filter plans on the host)
        plan = _device_plan(G, H, mode, node_match, edge_match, node_label, edge_label,
                            vf2pp_label, fn_name, engine, order)
        if plan is not None:
            return plan, G, plan.H
        G = G.to_host("the engine or the options need the host model",
                      label_name=node_label if isinstance(node_label, str) else "label")
    _check_graph(G, "G")
    _check_graph(H, "H")
    if G.is_directed() != H.is_directed():
        raise nx.NetworkXError(
            f"{fn_name}: G and H must have the same directedness "
            f"(G is {'directed' if G.is_directed() else 'undirected'}, "
            f"H is {'directed' if H.is_directed() else 'undirected'})"
        )
    _check_callable(node_match, "node_match")
    _check_callable(edge_match, "edge_match")
    if node_label is not None:
        if node_match is not None:
            raise ValueError("give node_match or node_label, not both")
        node_match = _label_match(node_label)
    if edge_label is not None:
        if edge_match is not None:
            raise ValueError("give edge_match or edge_label, not both")
        edge_match = _edge_label_match(edge_label, G.is_multigraph() or H.is_multigraph())
    want_nodes = node_match is not None or vf2pp_label is not None
    g = as_gsm(G, node_attrs=want_nodes, edge_attrs=edge_match is not None)
    h = as_gsm(H, node_attrs=want_nodes, edge_attrs=edge_match is not None)
    t1 = time.perf_counter()
    data_keys = None
    for x, nm in ((g, "G"), (h, "H")):
        if node_label is not None:
            values = _node_label_values(fn_name, x, node_label, f"{nm} node")
            data_keys = values if x is g else data_keys
        if edge_label is not None:
            items, names = x.edge_data or [], _edge_names(x)
            if x.multigraph:
                names = [nm_ for kd, nm_ in zip(items, names) for _ in kd]
                items = [d for kd in items for d in kd.values()]
            _strict_label(fn_name, items, names, edge_label, f"{nm} edge")
    notice_first_compile()  # the first plan of a process may compile the kernels
    t2 = time.perf_counter()
    plan = make_plan(g, h, mode, node_match=node_match, edge_match=edge_match,
                     node_label=vf2pp_label, default_label=vf2pp_default, data_keys=data_keys,
                     filter=filter, order=order)
    plan.stages["seconds"] = {"convert": t1 - t0, "check_labels": t2 - t1,
                              **plan.stages["seconds"]}
    return plan, g, h


def _device_plan(G, H, mode, node_match, edge_match, node_label, edge_label, vf2pp_label,
                 fn_name, engine, order=None):
    """The device-resident plan of a DeviceGraph, or None where the host model is needed."""
    from .plan.device_plan import make_device_plan

    _check_graph(H, "H")
    if G.is_directed() != H.is_directed():
        raise nx.NetworkXError(f"{fn_name}: G and H must have the same directedness")
    runner = getattr(engine, "gpu", engine)  # engine="auto" runs device plans on its GPU engine
    caps = runner.capabilities
    if not caps.device_plans or mode not in ("mono", "induced") or \
            node_match is not None or edge_match is not None or edge_label is not None or \
            vf2pp_label is not None:
        return None
    h = as_gsm(H, node_attrs=node_label is not None, edge_attrs=False)
    if caps.max_pattern is not None and h.n > caps.max_pattern:
        return None
    labels = None
    if node_label is not None:
        _strict_label(fn_name, h.node_data or [], h.node_keys, node_label, "H node")
        labels = [d[node_label] for d in h.node_data]
    return make_device_plan(G, h, mode, pattern_labels=labels, order=order)




class MatchIterator:
    """The iterator the matching functions return: yields ``{G_node: H_node}`` dicts.

    After it stops, ``partial`` tells whether it stopped early and ``reason`` why
    (``"timeout"``, or ``"interrupted"`` for Ctrl-C where ``timeout=`` was given); ``count``
    is how many mappings it produced. Without ``timeout=``, Ctrl-C raises KeyboardInterrupt
    from the iterator (so ``list(...)`` never returns a cut list as if complete).
    """

    def __init__(self, gen, budget):
        self._gen = gen
        self._budget = budget
        self._ended = False
        self.count = 0

    def __iter__(self):
        return self

    def __next__(self):
        if self._ended:
            raise StopIteration
        try:
            m = next(self._gen)
        except StopIteration:
            self._ended = True
            self._budget.finish(self.count)  # raises KeyboardInterrupt for an unasked cut
            raise
        except KeyboardInterrupt:
            self._ended = True
            if not self._budget.partial_ok:
                self._budget.close()
                raise
            self._budget.stop("interrupted")
            self._budget.finish(self.count)
            raise StopIteration from None
        self.count += 1
        return m

    @property
    def partial(self):
        return self._budget.partial

    @property
    def reason(self):
        return self._budget.reason


def _budget(timeout, progress):
    """The budget of one call: the caller asks for partial results on Ctrl-C by giving
    ``timeout`` (any value, ``inf`` included), and the progress total is the number of root
    candidates, known before the search starts."""
    budget = Budget(timeout, progress)
    budget.partial_ok = timeout is not None
    return budget


def _start(budget, plan):
    """Fix the budget's progress total before the search: the first depth's candidates."""
    ptr = getattr(plan, "cand_ptr", None)
    if plan.k and ptr is not None and len(ptr) > 1:
        budget.set_total(int(ptr[1] - ptr[0]))


def iter_mappings(plan, engine, limit=None, budget=UNLIMITED):
    """Yield ``{G_key: H_key}`` dicts (fresh, original node keys) for a plan."""
    if plan.k == 0:
        # GraphMatcher semantics: the empty pattern has one (empty) mapping, except that an
        # isomorphism also needs G to be empty
        if limit != 0 and not plan.empty:
            yield {}
        return
    gk = plan.G.node_keys
    hk = [plan.H.node_keys[int(u)] for u in plan.order]
    for chunk in engine.iter_chunks(plan, limit=limit, budget=budget):
        for row in chunk.tolist():
            yield dict(zip([gk[v] for v in row], hk))


def _mappings(G, H, mode, node_match, edge_match, node_label, edge_label, limit, engine, fn,
              timeout, progress):
    limit = _check_limit(limit)
    budget = _budget(timeout, progress)
    eng = resolve_engine(engine)
    plan, _, _ = prepare(G, H, mode, node_match=node_match, edge_match=edge_match,
                         node_label=node_label, edge_label=edge_label, fn_name=fn, engine=eng)
    _start(budget, plan)
    return MatchIterator(iter_mappings(plan, eng, limit, budget), budget)


def _count(G, H, mode, node_match, edge_match, node_label, edge_label, limit, engine, fn,
           timeout, progress, client=None):
    limit = _check_limit(limit)
    budget = _budget(timeout, progress)
    eng = resolve_engine(engine) if client is None else None
    plan, _, _ = prepare(G, H, mode, node_match=node_match, edge_match=edge_match,
                         node_label=node_label, edge_label=edge_label, fn_name=fn, engine=eng)
    if plan.k == 0:
        budget.close()
        return Count(0 if limit == 0 or plan.empty else 1)
    if limit == 0:
        budget.close()
        return Count(0)
    if client is not None:
        from .distributed import count_plan

        budget.close()
        c = count_plan(plan, client, engine=engine or "auto", timeout=timeout)
        if getattr(c, "partial", False):
            return PartialCount(c if limit is None else min(c, limit), "timeout")
        return Count(c if limit is None else min(c, limit))
    _start(budget, plan)
    try:
        c = eng.count(plan, limit, budget=budget)
    except KeyboardInterrupt:
        if not budget.partial_ok:
            budget.close()
            raise
        # Ctrl-C landed outside the engine's slices: the last count it reported is a bound
        budget.stop("interrupted")
        c = budget.found
    budget.finish(c)  # raises KeyboardInterrupt for a cut the caller did not ask for
    return PartialCount(c, budget.reason) if budget.partial else Count(c)


def subgraph_monomorphisms(G, H, *, node_match=None, edge_match=None, node_label=None,
                           edge_label=None, limit=None, engine="auto", timeout=None,
                           progress=False):
    """Iterate over the monomorphisms (non-induced embeddings) of pattern ``H`` into ``G``.

    Parameters
    ----------
    G, H : NetworkX graphs (any class) or GsmGraph, both directed or both undirected.
    node_match, edge_match : callable, optional
        As in NetworkX's GraphMatcher; exact whatever they do.
    node_label, edge_label : str, optional
        Strict equality on one attribute (every node/edge must have it).
    limit : int, optional
        Stop after this many mappings.
    engine : str
        ``"auto"`` (default), ``"cpu"``, or a GPU engine name.
    timeout : float, optional
        Seconds (``float("inf")``: no deadline); the search stops within a fraction of a second
        after it, and the iterator's ``partial`` becomes True with ``reason == "timeout"``.
        Giving a timeout also asks for partial results on Ctrl-C: the iterator then ends with
        ``reason == "interrupted"``. Without one, Ctrl-C raises KeyboardInterrupt (from
        ``list(...)`` too: a cut list is never returned as if complete).
    progress : bool or callable
        True shows a tqdm progress bar; a callable receives ``(found, done, total)``: the
        matches so far and the units of work (the pattern's root candidates) done out of a
        total fixed before the search starts.

    Returns
    -------
    MatchIterator
        Yields ``{G_node: H_node}`` for each monomorphism, each exactly once. An empty pattern
        yields one empty mapping, as GraphMatcher does.

    Examples
    --------
    >>> import networkx as nx, nx_gsm
    >>> G = nx.complete_graph(4)
    >>> len(list(nx_gsm.subgraph_monomorphisms(G, nx.path_graph(3))))
    24
    """
    return _mappings(G, H, "mono", node_match, edge_match, node_label, edge_label, limit,
                     engine, "subgraph_monomorphisms", timeout, progress)


def subgraph_isomorphisms(G, H, *, node_match=None, edge_match=None, node_label=None,
                          edge_label=None, limit=None, engine="auto", timeout=None,
                          progress=False):
    """Iterate over node-induced subgraph isomorphisms of ``H`` into ``G``.

    Same parameters as :func:`subgraph_monomorphisms`; a mapping is kept only when every G edge
    among its image comes from an H edge of equal multiplicity.

    Examples
    --------
    >>> import networkx as nx, nx_gsm
    >>> len(list(nx_gsm.subgraph_isomorphisms(nx.complete_graph(4), nx.path_graph(3))))
    0
    >>> len(list(nx_gsm.subgraph_isomorphisms(nx.cycle_graph(4), nx.path_graph(3))))
    8
    """
    return _mappings(G, H, "induced", node_match, edge_match, node_label, edge_label, limit,
                     engine, "subgraph_isomorphisms", timeout, progress)


def isomorphisms(G, H, *, node_match=None, edge_match=None, node_label=None, edge_label=None,
                 limit=None, engine="auto", timeout=None, progress=False):
    """Iterate over the isomorphisms between ``G`` and ``H`` (``{G_node: H_node}``).

    Examples
    --------
    >>> import networkx as nx, nx_gsm
    >>> len(list(nx_gsm.isomorphisms(nx.cycle_graph(5), nx.cycle_graph(5))))
    10
    """
    return _mappings(G, H, "iso", node_match, edge_match, node_label, edge_label, limit,
                     engine, "isomorphisms", timeout, progress)


def count_subgraph_monomorphisms(G, H, *, node_match=None, edge_match=None, node_label=None,
                                 edge_label=None, limit=None, engine="auto", timeout=None,
                                 progress=False, client=None):
    """Number of monomorphisms of ``H`` into ``G`` (exact Python int, no dicts built).

    With ``limit``, counting stops there (the result is ``min(count, limit)``). The result is a
    :class:`~nx_gsm.engines.base.Count`, an int whose ``partial`` is False and ``reason``
    None. When ``timeout`` passes, the count found so far (a lower bound) is returned as a
    :class:`~nx_gsm.engines.base.PartialCount` (``partial`` True, ``reason == "timeout"``);
    Ctrl-C does the same (``reason == "interrupted"``) where ``timeout`` was given
    (``float("inf")`` for no deadline), and raises KeyboardInterrupt otherwise. ``client`` (a
    ``distributed.Client``) splits the search over a Dask cluster (:mod:`nx_gsm.distributed`);
    the count is the same exact int.

    Examples
    --------
    >>> import networkx as nx, nx_gsm
    >>> nx_gsm.count_subgraph_monomorphisms(nx.complete_graph(5), nx.complete_graph(3))
    60
    """
    return _count(G, H, "mono", node_match, edge_match, node_label, edge_label, limit, engine,
                  "count_subgraph_monomorphisms", timeout, progress,
                  client)


def count_subgraph_isomorphisms(G, H, *, node_match=None, edge_match=None, node_label=None,
                                edge_label=None, limit=None, engine="auto", timeout=None,
                                progress=False, client=None):
    """Number of node-induced subgraph isomorphisms of ``H`` into ``G`` (exact Python int).

    Examples
    --------
    >>> import networkx as nx, nx_gsm
    >>> nx_gsm.count_subgraph_isomorphisms(nx.cycle_graph(4), nx.path_graph(3))
    8
    """
    return _count(G, H, "induced", node_match, edge_match, node_label, edge_label, limit, engine,
                  "count_subgraph_isomorphisms", timeout, progress,
                  client)


def _no_limit(kwargs, fn):
    # the search already stops at the first match; another limit could only turn a yes into a
    # no (limit=0), so it is refused rather than silently overridden
    if "limit" in kwargs:
        raise TypeError(f"{fn}() takes no 'limit' argument: it stops at the first match")
    return kwargs


def is_subgraph_monomorphic(G, H, **kwargs):
    """True when some monomorphism of ``H`` into ``G`` exists (stops at the first).

    Parameters
    ----------
    G, H : graphs
        As in :func:`subgraph_monomorphisms`.
    **kwargs
        The keyword arguments of :func:`count_subgraph_monomorphisms` except ``limit``
        (TypeError: the search stops at the first match anyway).

    Returns
    -------
    bool

    Examples
    --------
    >>> import networkx as nx, nx_gsm
    >>> nx_gsm.is_subgraph_monomorphic(nx.cycle_graph(4), nx.path_graph(4))
    True
    """
    kwargs = _no_limit(kwargs, "is_subgraph_monomorphic")
    return count_subgraph_monomorphisms(G, H, limit=1, **kwargs) > 0


def is_subgraph_isomorphic(G, H, **kwargs):
    """True when ``G`` has a node-induced subgraph isomorphic to ``H``.

    Parameters
    ----------
    G, H : graphs
        As in :func:`subgraph_isomorphisms`.
    **kwargs
        The keyword arguments of :func:`count_subgraph_isomorphisms` except ``limit``
        (TypeError: the search stops at the first match anyway).

    Returns
    -------
    bool

    Examples
    --------
    >>> import networkx as nx, nx_gsm
    >>> nx_gsm.is_subgraph_isomorphic(nx.complete_graph(4), nx.path_graph(3))
    False
    """
    kwargs = _no_limit(kwargs, "is_subgraph_isomorphic")
    return count_subgraph_isomorphisms(G, H, limit=1, **kwargs) > 0


def _find(G, H, mode, kwargs, fn):
    from .results import MatchSet

    limit = _check_limit(kwargs.pop("limit", None))
    client, engine = kwargs.pop("client", None), kwargs.pop("engine", "auto")
    eng = resolve_engine(engine) if client is None else None
    timeout = kwargs.pop("timeout", None)
    budget = _budget(timeout, kwargs.pop("progress", False))
    plan, g, h = prepare(G, H, mode, fn_name=fn, engine=eng, **kwargs)
    if plan.k == 0:
        budget.close()
        rows = np.zeros((0 if limit == 0 or plan.empty else 1, 0), dtype=np.int32)
    else:
        if client is not None:
            from .distributed import find_plan

            got, cut = find_plan(plan, client, engine=engine or "auto", timeout=timeout)
            chunks = [got[:limit]]
            if cut:
                budget.stop("timeout")
        else:
            _start(budget, plan)
            chunks = []
            try:
                if getattr(plan.G, "on_device", False):
                    # a DeviceGraph: the rows stay on the device unless they do not fit there
                    runner = getattr(eng, "gpu", eng)
                    dev = runner.device_rows(plan, limit=limit, budget=budget)
                    parts = [dev] if dev is not None else \
                        runner.iter_chunks(plan, limit=limit, budget=budget)
                else:
                    parts = eng.iter_chunks(plan, limit=limit, budget=budget)
                for c in parts:
                    chunks.append(c)
            except KeyboardInterrupt:
                if not budget.partial_ok:
                    budget.close()
                    raise
                budget.stop("interrupted")
        # raises KeyboardInterrupt for a cut the caller did not ask for
        budget.finish(sum(int(c.shape[0]) for c in chunks))
        # columns in pattern-node order (H's node order), not matching order; reordered chunk by
        # chunk so the peak is the chunks plus their concatenation, not a third copy
        inv = np.empty(plan.k, dtype=np.int64)
        inv[plan.order] = np.arange(plan.k)
        if chunks and not isinstance(chunks[0], np.ndarray):
            import cupy

            inv = cupy.asarray(inv)
        for i, c in enumerate(chunks):
            chunks[i] = c[:, inv]
        if len(chunks) == 1:
            rows = chunks[0]
        else:
            rows = np.concatenate(chunks) if chunks else np.zeros((0, plan.k), dtype=np.int32)
        del chunks
    return MatchSet(rows, g.node_keys, h.node_keys, partial=budget.partial)


def find_subgraph_monomorphisms(G, H, **kwargs):
    """All monomorphisms as a :class:`nx_gsm.MatchSet` (an ``n x |H|`` array of G node ids).

    Accepts the keyword arguments of :func:`subgraph_monomorphisms`.

    Examples
    --------
    >>> import networkx as nx, nx_gsm
    >>> ms = nx_gsm.find_subgraph_monomorphisms(nx.complete_graph(3), nx.path_graph(2))
    >>> ms.count, ms.to_numpy().shape
    (6, (6, 2))
    """
    return _find(G, H, "mono", kwargs, "find_subgraph_monomorphisms")


def find_subgraph_isomorphisms(G, H, **kwargs):
    """All node-induced subgraph isomorphisms as a :class:`nx_gsm.MatchSet`."""
    return _find(G, H, "induced", kwargs, "find_subgraph_isomorphisms")


def match_frames(G, H, *, induced=False, rows_per_frame=1_000_000, **kwargs):
    """Stream all mappings as pandas DataFrames of at most ``rows_per_frame`` rows.

    One column per pattern node (H's node order), holding original G node keys (int64 columns
    when every key is an int within int64's range, else object columns of the keys themselves;
    the empty pattern yields one frame of one row and no columns: GraphMatcher's one empty
    mapping). Memory stays
    bounded by one frame (about ``rows_per_frame x |H| x 16`` bytes) however many matches
    there are, so outputs past 2**31 rows are fine. Accepts the keyword arguments of
    :func:`subgraph_monomorphisms` (``limit``, ``timeout``, labels, ``engine``...).

    Examples
    --------
    >>> import networkx as nx, nx_gsm
    >>> frames = nx_gsm.match_frames(nx.complete_graph(4), nx.path_graph(3), rows_per_frame=10)
    >>> [len(f) for f in frames]
    [10, 10, 4]
    """
    from .results import frame_from_rows, node_key_array

    if isinstance(rows_per_frame, (bool, np.bool_)) or \
            not isinstance(rows_per_frame, numbers.Integral):
        raise TypeError(f"rows_per_frame must be a positive int, got {rows_per_frame!r}")
    rows_per_frame = int(rows_per_frame)
    if rows_per_frame < 1:
        raise ValueError(f"rows_per_frame must be a positive int, got {rows_per_frame}")
    limit = _check_limit(kwargs.pop("limit", None))
    eng = resolve_engine(kwargs.pop("engine", "auto"))
    budget = _budget(kwargs.pop("timeout", None), kwargs.pop("progress", False))
    plan, g, h = prepare(G, H, "induced" if induced else "mono", fn_name="match_frames", **kwargs)
    if plan.k == 0:
        # GraphMatcher's one empty mapping: one frame of one row and no columns
        if limit != 0 and not plan.empty:
            yield frame_from_rows(np.zeros((1, 0), dtype=np.int32), g.node_keys, h.node_keys)
        budget.close()
        return
    inv = np.empty(plan.k, dtype=np.int64)
    inv[plan.order] = np.arange(plan.k)
    keys = node_key_array(g.node_keys)
    buf, held = [], 0
    _start(budget, plan)
    for chunk in eng.iter_chunks(plan, limit=limit, budget=budget):
        buf.append(chunk[:, inv])
        held += chunk.shape[0]
        while held >= rows_per_frame:
            rows = np.concatenate(buf)
            yield frame_from_rows(rows[:rows_per_frame], g.node_keys, h.node_keys, keys)
            rest = rows[rows_per_frame:]
            buf, held = ([rest], rest.shape[0]) if rest.shape[0] else ([], 0)
    budget.finish()  # before the last frame: a cut the caller did not ask for raises here
    if held:
        yield frame_from_rows(np.concatenate(buf), g.node_keys, h.node_keys, keys)


def explain(G, H, *, induced=False, engine="auto", limit=None, collect=False, search=False,
            **kwargs):
    """What the planner decides for this query, as a dict, without running the search.

    Keys: ``engine`` (the engine that would run), ``reason`` (why, from the CPU probe and the
    cost model of :mod:`nx_gsm.engines.auto`), ``estimates`` (partial matches per depth, BFS table
    and output bytes, from :func:`nx_gsm.plan.cost.estimate`), ``alternatives`` (every engine and
    why it is not chosen or not usable), ``mode``, ``order``, ``candidates``, ``empty``,
    ``notes``, and ``stages``: the filter and order stages that ran (by name), the candidates
    left, and the seconds of each step outside the search (``convert``, ``check_labels``,
    ``labels``, ``filter``, ``order``, ``depths``, ``space``: the candidate space, and
    ``probe``: the CPU probe, where they ran). ``limit`` is taken into account as in the
    matching functions; ``collect=True`` gives the choice for an enumeration (``find_*``, the
    iterators), the default for a count. ``filter=`` and ``order=`` pick the planner's stages
    by name (:data:`nx_gsm.plan.planner.FILTERS`, :data:`nx_gsm.plan.order.ORDERS`).

    A count the CPU probe does not finish, where no ``order=`` was named, may run in another
    order (:func:`~nx_gsm.engines.cpu.other_order`): ``stages["count_order"]`` names the
    order the CPU engine's count runs in, and ``stages["count_tail"]`` is ``"swapped"`` where
    a count long enough for the tail check (as its probe forecasts it) runs that order's last
    two nodes the other way round (:func:`~nx_gsm.engines.cpu.other_tail`), else ``"kept"``.

    ``search=True`` also runs the count on one CPU thread and adds ``search``: the matches,
    the search tree's partial matches per depth (``nodes``; the last depth's are the
    matches), ``calls`` (the partial matches extended, Sun & Luo's "call count") and
    ``seconds``: a deterministic size to compare filters and orders by.

    Examples
    --------
    >>> import networkx as nx, nx_gsm
    >>> e = nx_gsm.explain(nx.complete_graph(4), nx.path_graph(3))
    >>> e["engine"], e["reason"]
    ('cpu', 'the CPU probe finished the search')
    >>> e = nx_gsm.explain(nx.complete_graph(4), nx.path_graph(3), order="ri", search=True)
    >>> e["stages"]["order"], e["search"]["matches"], e["search"]["nodes"]
    ('ri', 24, [4, 12, 24])
    """
    from .engines import available_engines
    from .engines.auto import choose, probe, skip_probe
    from .engines.registry import capabilities_of, engines_with
    from .engines.cpu import other_order, other_tail, plan_arrays, search_tree
    from .plan.cost import estimate
    from .plan.space import build_space

    limit = _check_limit(limit)
    eng = resolve_engine(engine)
    plan, g, h = prepare(G, H, "induced" if induced else "mono", fn_name="explain",
                         engine=eng, **kwargs)
    stages = {k: (dict(v) if isinstance(v, dict) else v) for k, v in plan.stages.items()}
    seconds = stages.setdefault("seconds", {})
    avail = {e: why for e, why in available_engines().items() if not capabilities_of(e).delta}
    gpu = [e for e in engines_with(device=True, delta=False) if avail.get(e) is None]
    space, probed, P = None, None, None
    on_device = getattr(plan.G, "on_device", False)
    if not plan.empty and plan.k and not on_device and not (gpu and skip_probe(plan)):
        t0 = time.perf_counter()
        space = build_space(plan)
        t1 = time.perf_counter()
        P = plan_arrays(plan)  # (reads the space kept on the plan)
        probed = probe(P, plan.k)[0]
        seconds["space"], seconds["probe"] = t1 - t0, time.perf_counter() - t1
    counted = plan
    if probed is None and not plan.empty and plan.k and not on_device and not collect:
        t0 = time.perf_counter()
        better = other_order(plan, plan_arrays(plan) if P is None else P)
        seconds["count_order"] = time.perf_counter() - t0
        counted = plan if better is None else better[0]
        if not plan.stages.get("order_fixed", True):
            t0 = time.perf_counter()
            tail = other_tail(counted, plan_arrays(counted))
            seconds["count_tail"] = time.perf_counter() - t0
            counted = counted if tail is None else tail[0]
    stages["count_order"] = counted.stages.get("order")
    stages["count_tail"] = counted.stages.get("tail", "kept")
    if engine in (None, "auto"):
        from .engines.gpu.device import memory_budget

        name, reason, est = choose(plan, "collect" if collect else "count",
                                   gpu + ["partitioned"] if gpu else [],
                                   memory_budget(), limit, probed is not None, space)
    else:
        name = eng.name
        reason = "requested (engine=...)"
        est = {}
    if "rows" not in est and plan.k and not plan.empty and not on_device:
        est = dict(estimate(plan, space), **est)
    alternatives = {}
    for e, why in avail.items():
        if e == name:
            continue
        alternatives[e] = why if why else "usable; not chosen"
    out = {
        "engine": name,
        "reason": reason,
        "estimates": {k: (list(v) if isinstance(v, list) else v) for k, v in est.items()},
        "alternatives": alternatives,
        "mode": plan.mode,
        "order": [h.node_keys[int(u)] for u in plan.order],
        "candidates": {h.node_keys[u]: int(c) for u, c in enumerate(plan.candidate_counts())},
        "empty": plan.empty,
        "unavailable_engines": {k: v for k, v in avail.items() if v},
        "notes": list(plan.notes),
        "stages": stages,
    }
    if search and not on_device:
        t0 = time.perf_counter()
        got = search_tree(counted)
        out["search"] = {"matches": got["matches"], "nodes": got["nodes"],
                         "calls": got["calls"], "seconds": time.perf_counter() - t0}
    return out
