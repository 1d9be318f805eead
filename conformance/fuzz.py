"""Differential fuzzing of every public result form against NetworkX's VF2, seeded by case index.

Where :mod:`conformance.generator` sweeps the ordinary axes (graph class, mode, label kind, shape),
this module draws what an adversarial user passes: node keys that compare oddly (numpy scalars,
ints past int64, tuples, frozensets, ``None``, NaN objects that equal nothing, strings with a
UTF-8 byte-order mark, NULs or non-ASCII digits, mixed types in one graph), attribute values that
compare equal yet differ (``0.0``/``-0.0``, NaN, namedtuples, ``Decimal``, ``Fraction``, tz-aware
datetimes of one instant, nested dicts and lists, numpy arrays) and callables that tell such
values apart (``repr``/``str``/``type``, one field, the first parallel edge, edge-key order) or
raise. Each case is then checked through one or more *forms* (:data:`FORMS`):

``count``        ``nx_gsm.count_subgraph_*``
``iter``         ``nx_gsm.subgraph_*`` (the iterator)
``find``         ``find_subgraph_*``: the MatchSet iterated, ``to_numpy(keys=True)``, ``to_pandas``
``frames``       ``nx_gsm.match_frames`` (small ``rows_per_frame``, so several frames)
``matcher``      ``nx_gsm.GraphMatcher`` & co, ``subgraph_*_iter``
``dispatch``     ``nx.vf2pp_all_*(..., backend="gsm")`` against the same NetworkX function without
                 a backend (VF2++'s own semantics: no mapping for empty graphs, ``node_label``)
``incremental``  ``IncrementalMatcher``: count and matches after construction, then after one
                 ``apply()`` batch (edge deletions and insertions, self-loops, a new node), against
                 VF2 on the same edit made with NetworkX's own methods
``engine_cpu``   ``engine=nx_gsm.get_engine("cpu")`` (count and iterator)
``engine_partitioned`` ``engine=nx_gsm.PartitionedEngine(inner="cpu", parts=2)``

The oracle is the VF2 matcher of the graph's class (``subgraph_monomorphisms_iter`` or
``subgraph_isomorphisms_iter``) and results are compared as multisets of mappings (a mapping
yielded twice is a difference). A side that raises agrees with a side that raises an exception
of the same family (:func:`same_family`); an exception only one side raises is a difference,
except the *documented divergence* (:func:`_documented_divergence`, counted apart in the
summary): a callable may be asked about any pair that passes the structural checks and what it
raises reaches the caller (docs/semantics.md), so nx_gsm alone raising the fuzz's own
:class:`FuzzCallableError`, or what a NetworkX helper raises on a structurally possible pair
(NumPy's ValueError for arrays compared under ``bool``), where VF2 never reached that pair, is
the documented rule and not a difference. So is a dispatched ``vf2pp_*`` answer that differs
from NetworkX's VF2++ where VF2++ itself differs from VF2 (it misses mappings VF2 finds on some
multigraphs with self-loops, and raises where its search regroups labels that cannot be
compared in that order) and nx_gsm equals VF2 with VF2++'s label semantics.

Reproducible: case ``i`` of seed ``s`` draws from ``random.Random(f"nx-gsm-fuzz:{s}:{i}")`` only,
so ``python -m conformance.fuzz --seed s --case i`` rebuilds and re-checks exactly that case (and
prints it); which forms a case runs depends only on ``i`` (:func:`forms_for`).
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import datetime as dt
import functools
import operator
import random
import sys
import time
import warnings
from dataclasses import dataclass, field
from decimal import Decimal
from fractions import Fraction

import networkx as nx
import numpy as np
from networkx.algorithms import isomorphism as iso

import nx_gsm

from .generator import _copy_relabel, _random_graph, _sample_pattern
from .oracle import MATCHERS

__all__ = [
    "FORMS",
    "FuzzCase",
    "FuzzCallableError",
    "make_case",
    "forms_for",
    "check",
    "run",
    "same_family",
    "summary_line",
    "reproducer",
]

FORMS = ("count", "iter", "find", "frames", "matcher", "dispatch", "incremental", "engine_cpu",
         "engine_partitioned")
CLASSES = ("Graph", "DiGraph", "MultiGraph", "MultiDiGraph")
MODES = ("mono", "induced")


class FuzzCallableError(KeyError):
    """What the fuzz's own callables raise (a type no library code raises by itself): a
    deliberate raise, or any other exception of theirs (a missing attribute, NumPy refusing to
    compare arrays) chained to it as ``__cause__``. A KeyError, as a callable reading a missing
    attribute raises."""


def _fuzz_callable(f):
    """``f`` raising only :class:`FuzzCallableError`, so that an exception on either side can
    be traced to the fuzz's callables (:func:`_from_fuzz_callable`)."""

    @functools.wraps(f)
    def call(a, b):
        try:
            return f(a, b)
        except FuzzCallableError:
            raise
        except Exception as exc:  # noqa: BLE001 -- re-raised as the fuzz's own type
            raise FuzzCallableError(f"{f.__name__}: {type(exc).__name__}: {exc}") from exc

    call.fuzz_callable = True
    return call


P = collections.namedtuple("P", "x y")


# -- node keys ----------------------------------------------------------------------------------
def _key(kind, i):
    """A node key of ``kind`` built from the small int ``i`` (a fresh object every call, so two
    NaN keys are two nodes, as in a NetworkX graph)."""
    if kind == "int":
        return i
    if kind == "np_int":
        return np.int64(i)
    if kind == "np_float":
        return np.float64(i + 0.5)
    if kind == "big":
        return 2**70 + i
    if kind == "tuple":
        return (i % 3, f"t{i}") if i % 2 else (i, (i,))
    if kind == "frozenset":
        return frozenset({i, -i - 1})
    if kind == "none":  # NetworkX refuses None itself as a node
        return (None, i) if i % 2 else frozenset({None, i})
    if kind == "nan":
        return float("nan") if i % 2 else np.float64("nan")
    if kind == "bom":
        return f"\ufeff{i}"
    if kind == "nul":
        return f"n\x00{i}"
    if kind == "digits":  # non-ASCII digits, which str.isdigit accepts and int() may parse
        return ("\u0661\u0662", "\u00b2", "\uff13", "\u0663")[i % 4] + str(i)
    if kind == "equal":  # equal keys of other types are one NetworkX node (dict semantics)
        base = i // 2
        variants = (base, float(base), np.int64(base), np.float64(base)) + \
            ((bool(base),) if base < 2 else ())
        return variants[i % len(variants)]
    raise ValueError(kind)


KEY_KINDS = ("int", "np_int", "np_float", "big", "tuple", "frozenset", "none", "nan", "bom",
             "nul", "digits", "equal")


def _keys(rng, n):
    """``n`` keys: one kind for the whole graph, or (half the time) a mix of kinds."""
    ids = rng.sample(range(40), n)
    if rng.random() < 0.5:
        kinds = [rng.choice(KEY_KINDS)] * n
    else:
        kinds = [rng.choice(KEY_KINDS) for _ in range(n)]
    return [_key(k, i) for k, i in zip(kinds, ids)]


def _relabel(X, keys):
    """``X`` (nodes ``0..n-1`` in some order) with its nodes renamed to ``keys`` in node order.
    Keys that are one dict key (``1`` and ``True``) merge their nodes, as NetworkX does."""
    mapping = dict(zip(X.nodes(), keys))
    Y = X.__class__()
    Y.add_nodes_from((mapping[u], dict(d)) for u, d in X.nodes(data=True))
    if X.is_multigraph():
        Y.add_edges_from((mapping[u], mapping[v], k, dict(d))
                         for u, v, k, d in X.edges(keys=True, data=True))
    else:
        Y.add_edges_from((mapping[u], mapping[v], dict(d)) for u, v, d in X.edges(data=True))
    return Y


# -- attribute values ---------------------------------------------------------------------------
_UTC = dt.timezone.utc
_PLUS2 = dt.timezone(dt.timedelta(hours=2))


def _value_pool():
    """Values that compare equal (or unequal to themselves) yet differ in repr, str, type or a
    field; built fresh per case so that NaN objects are distinct per case."""
    nan = float("nan")
    return [
        0.0, -0.0, nan, float("nan"), np.float64(-0.0), np.float64("nan"),
        1, 1.0, True, np.int64(1), Decimal("1"), Decimal("1.0"), Fraction(1, 1), Fraction(1, 2),
        0.5, P(1, 2), P(1.0, 2), (1, 2), (1.0, 2),
        dt.datetime(2024, 1, 1, 12, tzinfo=_UTC), dt.datetime(2024, 1, 1, 14, tzinfo=_PLUS2),
        "x", "\ufeffx", "x\x00", None, b"x",
        {"k": [1, 2]}, {"k": [1, 2.0]}, [1, [2]], [1.0, [2]], {"k": 1, "j": 2}, {"j": 2, "k": 1},
        np.array([1, 2]), np.array([1]), frozenset({1, 2}), frozenset({1.0, 2}),
    ]


def _palette(rng):
    """A few values of the pool, so that equal-but-different values meet often."""
    pool = _value_pool()
    return rng.sample(pool, rng.randint(1, 4))


def _node_attrs(rng, pal, p_missing, boom):
    d = {}
    if rng.random() >= p_missing:
        d["a"] = rng.choice(pal)
    if rng.random() < 0.3:
        d["b"] = rng.choice(pal)
    if boom and rng.random() < 0.15:
        d["boom"] = True
    return d


def _edge_attrs(rng, pal, p_missing, boom):
    items = []
    if rng.random() >= p_missing:
        items.append(("w", rng.choice(pal)))
    if rng.random() < 0.4:
        items.append(("c", rng.choice(pal)))
    if boom and rng.random() < 0.15:
        items.append(("boom", True))
    rng.shuffle(items)  # key order differs between equal dicts
    return dict(items)


# -- callables ----------------------------------------------------------------------------------
def _truth(x):
    return bool(x)  # numpy arrays raise here, as in VF2's own ``if not node_match(...)``


@_fuzz_callable
def nm_eq(a, b):
    return _truth(a.get("a") == b.get("a"))


@_fuzz_callable
def nm_repr(a, b):
    return repr(a.get("a")) == repr(b.get("a"))


@_fuzz_callable
def nm_str(a, b):
    return str(a.get("a")) == str(b.get("a"))


@_fuzz_callable
def nm_type(a, b):
    return type(a.get("a")) is type(b.get("a"))


def _field(v):
    if isinstance(v, tuple) and hasattr(v, "_fields"):
        return type(v.x), v.x
    if isinstance(v, dt.datetime):
        return v.hour
    if isinstance(v, dict):
        return list(v)
    return v


@_fuzz_callable
def nm_field(a, b):
    return _truth(_field(a.get("a")) == _field(b.get("a")))


@_fuzz_callable
def nm_missing(a, b):
    return _truth(a["a"] == b["a"])  # KeyError where an attribute is missing


@_fuzz_callable
def nm_raise(a, b):
    if a.get("boom") or b.get("boom"):
        raise FuzzCallableError("node_match was asked about a 'boom' node")
    return nm_repr(a, b)


@_fuzz_callable
def nm_ordered(a, b):  # not symmetric: data value at least the pattern's
    x, y = a.get("a"), b.get("a")
    if isinstance(x, (int, float)) and isinstance(y, (int, float)):
        return x >= y
    return nm_repr(a, b)


@_fuzz_callable
def em_eq(e, f):
    return _truth(e.get("w") == f.get("w"))


@_fuzz_callable
def em_repr(e, f):
    return repr(e.get("w")) == repr(f.get("w"))


@_fuzz_callable
def em_str(e, f):
    return str(e.get("w")) == str(f.get("w"))


@_fuzz_callable
def em_type(e, f):
    return type(e.get("w")) is type(f.get("w"))


@_fuzz_callable
def em_keys(e, f):
    return list(e) == list(f)  # attribute order (simple) or parallel-edge keys (multi)


@_fuzz_callable
def em_missing(e, f):
    return _truth(e["w"] == f["w"])


@_fuzz_callable
def em_raise(e, f):
    if e.get("boom") or f.get("boom"):
        raise FuzzCallableError("edge_match was asked about a 'boom' edge")
    return em_repr(e, f)


@_fuzz_callable
def mem_first(e, f):  # only the first parallel edge
    return repr(next(iter(e.values())).get("w")) == repr(next(iter(f.values())).get("w"))


@_fuzz_callable
def mem_reprs(e, f):
    return [repr(d.get("w")) for d in e.values()] == [repr(d.get("w")) for d in f.values()]


@_fuzz_callable
def mem_count(e, f):
    return len(e) == len(f)


@_fuzz_callable
def mem_missing(e, f):
    return _truth([d["w"] for d in e.values()] == [d["w"] for d in f.values()])


@_fuzz_callable
def mem_raise(e, f):
    if any(d.get("boom") for d in e.values()) or any(d.get("boom") for d in f.values()):
        raise FuzzCallableError("edge_match was asked about a 'boom' edge")
    return mem_first(e, f)


NODE_MATCHES = {
    "none": None,
    "categorical": iso.categorical_node_match("a", None),
    "categorical2": iso.categorical_node_match(["a", "b"], [None, 0]),
    "generic": iso.generic_node_match("a", None, operator.eq),
    "eq": nm_eq, "repr": nm_repr, "str": nm_str, "type": nm_type, "field": nm_field,
    "missing": nm_missing, "raise": nm_raise, "ordered": nm_ordered,
}
EDGE_MATCHES = {
    "none": None,
    "categorical": iso.categorical_edge_match("w", None),
    "eq": em_eq, "repr": em_repr, "str": em_str, "type": em_type, "keys": em_keys,
    "missing": em_missing, "raise": em_raise,
}
MULTIEDGE_MATCHES = {
    "none": None,
    "categorical": iso.categorical_multiedge_match("w", None),
    "first": mem_first, "reprs": mem_reprs, "count": mem_count, "keys": em_keys,
    "missing": mem_missing, "raise": mem_raise,
}


# -- the case -----------------------------------------------------------------------------------
@dataclass
class FuzzCase:
    """One drawn case: graphs, mode, matcher names, and what the dispatch and incremental forms
    use (``vf2pp``: ``(node_label, default_label)``; ``batch``: ``apply()`` keyword arguments)."""

    seed: int
    index: int
    cls: str
    mode: str
    G: nx.Graph
    H: nx.Graph
    node_match: str = "none"
    edge_match: str = "none"
    vf2pp: tuple = (None, None)
    batch: dict = field(default_factory=dict)
    rows_per_frame: int = 1

    @property
    def matchers(self):
        edges = MULTIEDGE_MATCHES if self.G.is_multigraph() else EDGE_MATCHES
        return {"node_match": NODE_MATCHES[self.node_match],
                "edge_match": edges[self.edge_match]}

    def describe(self):
        def graph(name, X):
            if X.is_multigraph():
                edges = list(X.edges(keys=True, data=True))
            else:
                edges = list(X.edges(data=True))
            return f"{name} = nx.{type(X).__name__}(); {name}.add_nodes_from(" \
                   f"{list(X.nodes(data=True))!r}); {name}.add_edges_from({edges!r})"

        return "\n".join([
            f"case {self.index} of seed {self.seed}: {self.cls} {self.mode}, "
            f"node_match={self.node_match}, edge_match={self.edge_match}, "
            f"vf2pp={self.vf2pp!r}, rows_per_frame={self.rows_per_frame}",
            graph("G", self.G), graph("H", self.H),
            f"batch = {self.batch!r}",
        ])


def make_case(seed, index):
    """Rebuild case ``index`` of ``seed`` (the same graphs and arguments on every machine)."""
    rng = random.Random(f"nx-gsm-fuzz:{seed}:{index}")
    cls = rng.choice(CLASSES)
    mode = rng.choice(MODES)
    multi = cls.startswith("Multi")
    pal, epal = _palette(rng), _palette(rng)
    nm = rng.choice(list(NODE_MATCHES))
    em = rng.choice(list(MULTIEDGE_MATCHES if multi else EDGE_MATCHES))
    p_missing = rng.choice([0.0, 0.0, 0.2])
    n = rng.randint(0, 9)
    G = _random_graph(rng, cls, n, rng.choice([0.15, 0.3, 0.5]),
                      loops=rng.choice([0.0, 0.2, 0.5]), multi_p=0.35)
    for u in G:
        G.nodes[u].update(_node_attrs(rng, pal, p_missing, nm == "raise"))
    for d in _edge_dicts(G):
        d.update(_edge_attrs(rng, epal, p_missing, em == "raise"))
    k = rng.randint(0, 5)
    if n and rng.random() < 0.65:  # cut from G: non-zero answers are common
        H = _copy_relabel(rng, _sample_pattern(rng, G, k, mode))
        for u in H:
            if rng.random() < 0.2:
                H.nodes[u].clear()
                H.nodes[u].update(_node_attrs(rng, pal, p_missing, False))
    else:
        H = _random_graph(rng, cls, k, rng.choice([0.3, 0.6]), loops=rng.choice([0.0, 0.3]),
                          multi_p=0.3)
        for u in H:
            H.nodes[u].update(_node_attrs(rng, pal, p_missing, False))
        for d in _edge_dicts(H):
            d.update(_edge_attrs(rng, epal, p_missing, False))
    G = _relabel(G, _keys(rng, G.number_of_nodes()))
    H = _relabel(H, _keys(rng, H.number_of_nodes()))
    vf2pp = (rng.choice([None, "a", "a"]), rng.choice([None, 0] + pal))
    return FuzzCase(seed, index, cls, mode, G, H, nm, em, vf2pp, _batch(rng, G, epal, pal),
                    rng.choice([1, 2, 3, 1000]))


def _edge_dicts(X):
    if X.is_multigraph():
        return [d for _, _, _, d in X.edges(keys=True, data=True)]
    return [d for _, _, d in X.edges(data=True)]


def _batch(rng, G, epal, pal):
    """One ``IncrementalMatcher.apply`` batch valid for ``G``: deletions of existing edges (with
    their keys in multigraphs), insertions of new edges (self-loops too) and sometimes a new
    node with an edge to it."""
    nodes = list(G)
    if G.is_multigraph():
        edges = list(G.edges(keys=True))
    else:
        edges = list(G.edges())
    delete = rng.sample(edges, min(len(edges), rng.randint(0, 2)))
    insert, seen = [], set()
    for _ in range(rng.randint(0, 3) if nodes else 0):
        u, v = rng.choice(nodes), rng.choice(nodes)
        if not G.is_multigraph():
            ends = (id(u), id(v)) if G.is_directed() else frozenset((id(u), id(v)))
            if G.has_edge(u, v) or ends in seen:
                continue
            seen.add(ends)
        insert.append((u, v, _edge_attrs(rng, epal, 0.0, False)))
    batch = {"delete": delete, "insert": insert}
    if nodes and rng.random() < 0.3:
        new = ("new", rng.randint(0, 9))
        batch["nodes"] = [(new, _node_attrs(rng, pal, 0.0, False))]
        batch["insert"].append((new, rng.choice(nodes), _edge_attrs(rng, epal, 0.0, False)))
    return batch


def _edited(G, batch):
    """``G`` after ``batch``, rebuilt with NetworkX's own methods (the oracle's graph). Rebuilt
    rather than edited: ``remove_edges_from`` compares endpoints with ``!=``, which a numpy
    scalar beside a tuple key turns into an ambiguous array."""
    X = G.__class__()
    X.add_nodes_from(G.nodes(data=True))
    X.add_nodes_from(batch.get("nodes", ()))
    gone = collections.Counter(_edge_id(G, e) for e in batch["delete"])
    if G.is_multigraph():
        edges = [(u, v, k, d) for u, v, k, d in G.edges(keys=True, data=True)]
    else:
        edges = [(u, v, d) for u, v, d in G.edges(data=True)]
    X.add_edges_from(e for e in edges if not gone[_edge_id(G, e[:-1])])
    X.add_edges_from(batch["insert"])
    return X


def _edge_id(G, e):
    """An edge as a hashable id by endpoint identity (and key), direction-free if undirected."""
    ends = (id(e[0]), id(e[1]))
    if not G.is_directed():
        ends = tuple(sorted(ends))
    return ends + tuple(e[2:3])


# -- comparing ----------------------------------------------------------------------------------
_FAMILIES = (LookupError, ArithmeticError, TypeError, ValueError, AttributeError,
             nx.NetworkXException, FuzzCallableError)


def same_family(a, b):
    """Whether two exceptions count as the same answer: one is an instance of the other's type,
    or both belong to one family (lookup, arithmetic, type, value, attribute, NetworkX, or the
    fuzz's own callables' FuzzCallableError)."""
    if isinstance(a, type(b)) or isinstance(b, type(a)):
        return True
    return any(isinstance(a, f) and isinstance(b, f) for f in _FAMILIES)


class _Raised:
    """An outcome that is an exception. On VF2's side, ``lenient`` computes what VF2 answers
    when each raising call of a user callable counts as "no match" instead, and which exceptions
    those calls raised; ``errors`` what the callables raise on any pair of the graphs: see
    :func:`_differ`."""

    def __init__(self, exc, lenient=None, errors=None):
        self.exc = exc
        self._lenient = lenient
        self._errors = errors
        self._cached = None

    def callable_errors(self):
        """Exceptions the user callables raise (or whose answer raises under ``bool``) on any
        pair of the graphs' attribute dicts (empty when unknown)."""
        return self._errors() if self._errors is not None else []

    def lenient(self):
        if self._cached is None and self._lenient is not None:
            self._cached = self._lenient()
        return self._cached

    def __repr__(self):
        return f"raised {type(self.exc).__name__}: {self.exc}"


def _outcome(fn):
    try:
        return fn()
    except Exception as exc:  # noqa: BLE001 -- an exception is an answer to compare
        return _Raised(exc)


class _Lenient:
    """A user callable that answers False where it would raise, recording what it raised."""

    def __init__(self, f, raised):
        self.f, self.raised = f, raised

    def __call__(self, a, b):
        try:
            return bool(self.f(a, b))  # bool() inside: VF2's ``if not ...`` raises for arrays
        except Exception as exc:  # noqa: BLE001
            self.raised.append(exc)
            return False


def _multiset(mappings):
    return collections.Counter(frozenset(m.items()) for m in mappings)


def _differ(want, got, callables=()):
    """None when the two outcomes agree, else a one-line description.

    Exceptions: both sides raising agree when the exceptions are of one family
    (:func:`same_family`), or nx_gsm's is of the family of one that the user's callables raised
    on a pair VF2 asked about, or nx_gsm's was raised by one of ``callables`` (two callables
    that raise on different pairs: which one a search meets first depends on its order). Only
    nx_gsm raising is a difference here; :func:`check` then tells the documented divergence
    apart (:func:`_documented_divergence`). VF2 raising where nx_gsm returns is no difference
    by itself: VF2 asks a callable about pairs in its own search order, including pairs that
    nx_gsm's structural filters rule out before any callable is asked (issue 53, finding 3).
    nx_gsm's answer then must equal VF2's with every raising callable call read as "no
    match": a mapping nx_gsm yields was built from pairs on which the callables returned, and
    a mapping whose pairs all return is one that both must find.
    """
    if isinstance(got, _Raised):
        if isinstance(want, _Raised):
            len_ = want.lenient()
            seen = [want.exc] + (len_[1] if len_ else [])
            if any(same_family(e, got.exc) for e in seen) or _from_callable(got.exc, callables):
                return None
            if callables and any(same_family(e, got.exc) for e in want.callable_errors()):
                return None
        return f"VF2 {_short(want)}, nx_gsm {_short(got)}"
    if isinstance(want, _Raised):
        len_ = want.lenient()
        if len_ is None:
            return f"VF2 {_short(want)}, nx_gsm {_short(got)}"
        answer = len_[0]
        if not isinstance(got, collections.Counter) and isinstance(answer, collections.Counter):
            answer = sum(answer.values())
        d = _differ(answer, got, callables)
        return None if d is None else f"{d} (VF2 {_short(want)}; compared with raising " \
                                      f"callable calls read as no match)"
    if want == got:
        return None
    if isinstance(want, collections.Counter) and isinstance(got, collections.Counter):
        missing, extra = want - got, got - want
        dup = sum(c - 1 for c in got.values() if c > 1)
        ex = min(missing or extra, key=repr)
        return (f"VF2 {sum(want.values())} mappings, nx_gsm {sum(got.values())} "
                f"({sum(missing.values())} missing, {sum(extra.values())} extra, {dup} repeated;"
                f" e.g. {'missing' if missing else 'extra'} {dict(ex)!r})")
    return f"VF2 {_short(want)}, nx_gsm {_short(got)}"


def _from_callable(exc, callables):
    """Whether ``exc`` was raised inside one of the user callables ``callables``."""
    codes = {getattr(f, "__code__", None) for f in callables} - {None}
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code in codes:
            return True
        tb = tb.tb_next
    return False


def _from_fuzz_callable(exc):
    """Whether ``exc`` is, or was raised from, one of the fuzz's own callables (its type, or a
    :class:`FuzzCallableError` in its cause/context chain)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, FuzzCallableError):
            return True
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return False


def _documented_divergence(want, got, case, possible):
    """Why a difference is the documented divergence, or None where it is a difference.

    docs/semantics.md: a ``node_match``/``edge_match`` may be asked about any pair that passes
    the structural checks (degree, self-loops, multiplicity), and what it raises reaches the
    caller; VF2 may never reach that pair because another semantic check rejects the mapping
    first. So where only nx_gsm raises (VF2 returned), the case is a documented divergence when

    * the exception comes from one of the fuzz's own raising callables
      (:func:`_from_fuzz_callable`), or
    * a NetworkX helper (``categorical_*_match``, ``generic_node_match``; not the fuzz's own
      code, so its exception is not a :class:`FuzzCallableError`) raises an exception of the
      same family when evaluated, under ``bool`` as both searches do, on a pair that passes the
      local structural checks (:func:`_possible_pairs`). NumPy arrays compared by such a helper
      raise ValueError under ``bool``: VF2 raises it too when it reaches the pair, and a search
      that meets it on a structurally possible pair is following the documented rule.

    Any other exception only nx_gsm raises stays a difference (nx_gsm's own errors, an
    exception from a helper on a pair that no structural check lets through).
    ``possible`` returns :func:`_possible_pairs`'s answer (computed once per case)."""
    if not isinstance(got, _Raised) or isinstance(want, _Raised):
        return None
    if _from_fuzz_callable(got.exc):
        return "documented: the fuzz's callable raised on a pair VF2 did not reach"
    nodes, edges = possible()
    for f, pairs in ((case.matchers["node_match"], nodes), (case.matchers["edge_match"], edges)):
        if f is None or getattr(f, "fuzz_callable", False):
            continue
        for x, y in pairs:
            try:
                bool(f(x, y))
            except Exception as exc:  # noqa: BLE001
                if same_family(exc, got.exc):
                    return (f"documented: the NetworkX helper raises {type(exc).__name__} on a "
                            f"structurally possible pair VF2 did not reach")
    return None


def _possible_pairs(case, G=None):
    """The (data, pattern) attribute pairs a callable may be asked about: node pairs whose
    data node has at least the pattern node's distinct out- and in-neighbours and a fitting
    self-loop count (at least, or equal for induced), kept only when every pattern node has
    one; edge pairs whose ends are such node pairs and whose multiplicity fits (at least, or
    equal for induced), a pattern self-loop only on the data node's own. Local necessary
    conditions of docs/semantics.md's structural checks, so a superset of the pairs they pass.
    ``G`` replaces ``case.G`` (an edited graph). Returns ``(node pairs, edge pairs)`` as lists
    of ``(data datum, pattern datum)``."""
    Gi, _ = _int_copy(case.G if G is None else G)
    Hi, _ = _int_copy(case.H)
    fits = operator.ge if case.mode == "mono" else operator.eq

    def profile(X, u):
        out = len(set(X.adj[u]) - {u})
        inn = len(set(X.pred[u]) - {u}) if X.is_directed() else 0
        return out, inn, X.number_of_edges(u, u)

    gp = {g: profile(Gi, g) for g in Gi}
    ok = {h: [g for g in Gi if gp[g][0] >= ph[0] and gp[g][1] >= ph[1] and fits(gp[g][2], ph[2])]
          for h, ph in ((h, profile(Hi, h)) for h in Hi)}
    if not all(ok.values()):
        return [], []
    nodes = [(Gi.nodes[g], Hi.nodes[h]) for h in Hi for g in ok[h]]
    edges = []
    for hu, hv in set(Hi.edges()):
        m = Hi.number_of_edges(hu, hv)
        for gu in ok[hu]:
            # a pattern self-loop meets only the data node's own loop
            for gv in [gu] if hu == hv else ok[hv]:
                if Gi.has_edge(gu, gv) and fits(Gi.number_of_edges(gu, gv), m):
                    edges.append((Gi.adj[gu][gv], Hi.adj[hu][hv]))
    return nodes, edges


def _short(x):
    if isinstance(x, collections.Counter):
        return f"{sum(x.values())} mappings"
    return repr(x)


def _int_copy(X):
    """``X`` with its nodes renamed ``0..n-1`` (node order, attributes, edge keys and the order
    of parallel edges kept) and the list that maps the ints back to ``X``'s key objects.

    The oracle runs on this copy: VF2 itself compares node keys with ``==`` in places
    (``neighbor == G1_node`` when an ``edge_match`` is given), which a NaN key answers False even
    for the node itself and a numpy scalar beside a tuple key answers with an ambiguous array.
    Integer keys make VF2 follow NetworkX's dict semantics exactly, as nx_gsm must."""
    keys = list(X)
    return _relabel(X, range(len(keys))), keys


def _vf2(case, G=None):
    Gi, gk = _int_copy(case.G if G is None else G)
    Hi, hk = _int_copy(case.H)

    def run(matchers):
        M = MATCHERS[case.cls](Gi, Hi, **matchers)
        it = M.subgraph_monomorphisms_iter if case.mode == "mono" else \
            M.subgraph_isomorphisms_iter
        return collections.Counter(frozenset((gk[g], hk[h]) for g, h in m.items())
                                   for m in it())

    def lenient():
        raised = []
        wrapped = {k: None if f is None else _Lenient(f, raised)
                   for k, f in case.matchers.items()}
        try:
            return run(wrapped), raised
        except Exception:  # noqa: BLE001 -- VF2 raising outside the callables: no answer
            return None

    try:
        return run(case.matchers)
    except Exception as exc:  # noqa: BLE001
        return _Raised(exc, lenient, lambda: _callable_errors(
            case.G if G is None else G, case.H, case.matchers))


def _callable_errors(G, H, matchers):
    """What the callables raise on every (data, pattern) pair of node and edge attribute dicts:
    two callables that raise on different pairs make either exception a right answer."""
    out = []

    def ask(f, xs, ys):
        for x in xs:
            for y in ys:
                try:
                    bool(f(x, y))
                except Exception as exc:  # noqa: BLE001
                    out.append(exc)

    nm, em = matchers.get("node_match"), matchers.get("edge_match")
    if nm is not None:
        ask(nm, [G.nodes[u] for u in G], [H.nodes[u] for u in H])
    if em is not None:
        ask(em, [G.adj[u][v] for u, v in G.edges()], [H.adj[u][v] for u, v in H.edges()])
    return out


def _count_of(outcome):
    if isinstance(outcome, _Raised):
        return outcome  # _differ reads the lenient answer's count
    return sum(outcome.values())


_COUNT = {"mono": "count_subgraph_monomorphisms", "induced": "count_subgraph_isomorphisms"}
_ITER = {"mono": "subgraph_monomorphisms", "induced": "subgraph_isomorphisms"}
_FIND = {"mono": "find_subgraph_monomorphisms", "induced": "find_subgraph_isomorphisms"}
_VF2PP = {"mono": "vf2pp_all_monomorphisms", "induced": "vf2pp_all_subgraph_isomorphisms"}
_ENGINES = {}


def _engine(name):
    if name not in _ENGINES:
        _ENGINES[name] = nx_gsm.get_engine("cpu") if name == "cpu" else \
            nx_gsm.PartitionedEngine(inner="cpu", parts=2)
    return _ENGINES[name]


def _rows_to_multiset(rows, h_keys):
    return collections.Counter(frozenset(zip(row, h_keys)) for row in rows)


def _find_forms(case, kw):
    ms = getattr(nx_gsm, _FIND[case.mode])(case.G, case.H, **kw)
    out = {"find": _multiset(ms)}
    h_keys = ms.pattern_nodes
    arr = ms.to_numpy(keys=True)
    if arr.shape != (ms.count, len(h_keys)):
        raise AssertionError(f"to_numpy(keys=True) has shape {arr.shape}, "
                             f"want {(ms.count, len(h_keys))}")
    out["find.to_numpy"] = _rows_to_multiset(arr.tolist() if arr.dtype != object else arr,
                                             h_keys)
    try:
        import pandas  # noqa: F401 -- to_pandas is checked where pandas is installed
    except ImportError:
        return out
    df = ms.to_pandas()
    out["find.to_pandas"] = _frame_multiset(df, h_keys)
    return out


def _frame_multiset(df, h_keys):
    if df.shape[1] != len(h_keys):
        raise AssertionError(f"frame has {df.shape[1]} columns, want {len(h_keys)}")
    cols = [df.iloc[:, i].tolist() for i in range(len(h_keys))]
    rows = [tuple(c[r] for c in cols) for r in range(len(df))]
    return _rows_to_multiset(rows, h_keys)


def _frames(case, kw):
    ms = collections.Counter()
    h_keys = list(case.H)
    for df in nx_gsm.match_frames(case.G, case.H, induced=case.mode == "induced",
                                  rows_per_frame=case.rows_per_frame, **kw):
        if not 0 < len(df) <= case.rows_per_frame:
            raise AssertionError(f"a frame of {len(df)} rows (rows_per_frame="
                                 f"{case.rows_per_frame})")
        ms.update(_frame_multiset(df, h_keys))
    return ms


def _matcher(case):
    M = getattr(nx_gsm, MATCHERS[case.cls].__name__)(case.G, case.H, **case.matchers)
    it = M.subgraph_monomorphisms_iter if case.mode == "mono" else M.subgraph_isomorphisms_iter
    return _multiset(it())


@contextlib.contextmanager
def _no_conversion_cache():
    # the fuzz edits no graph in place, but a cached conversion would make later cases
    # depend on earlier ones
    old = nx.config.cache_converted_graphs
    nx.config.cache_converted_graphs = False
    try:
        yield
    finally:
        nx.config.cache_converted_graphs = old


def _dispatch(case):
    from nx_gsm.interface import CALLS

    name = _VF2PP[case.mode]
    label, default = case.vf2pp
    Gi, gk = _int_copy(case.G)
    Hi, hk = _int_copy(case.H)
    want = _outcome(lambda: collections.Counter(
        frozenset((gk[g], hk[h]) for g, h in m.items())
        for m in getattr(nx, name)(Gi, Hi, label, default)))
    before = CALLS[name]
    with _no_conversion_cache():
        got = _outcome(lambda: _multiset(getattr(nx, name)(case.G, case.H, label, default,
                                                           backend="gsm")))
    if CALLS[name] == before and not isinstance(got, _Raised):
        got = _Raised(AssertionError(f"{name}(backend='gsm') did not reach nx_gsm"))
    if isinstance(got, collections.Counter) and got != want:
        # NetworkX's VF2++ is not VF2 everywhere: it misses mappings VF2 finds on some
        # multigraphs with self-loops, and it regroups neighbours' labels during its search
        # (where two labels of one hash that cannot be compared in that order raise). nx_gsm
        # follows VF2, the project's oracle, with VF2++'s label semantics
        vf2 = _outcome(lambda: _vf2_with_vf2pp_labels(case, Gi, Hi, gk, hk))
        in_search = isinstance(want, _Raised) and _raised_in(want.exc, _VF2PP_SEARCH)
        if vf2 == got and (in_search or isinstance(want, collections.Counter)):
            return {"dispatch": (want, got, "documented: NetworkX's VF2++ differs from VF2 "
                                            "here; nx_gsm equals VF2 with VF2++'s labels")}
    return {"dispatch": (want, got)}


_VF2PP_SEARCH = ("_feasibility", "_feasible_look_ahead")


def _raised_in(exc, names):
    """Whether ``exc`` passed through a frame of a function named in ``names``."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_name in names:
            return True
        tb = tb.tb_next
    return False


def _vf2_with_vf2pp_labels(case, Gi, Hi, gk, hk):
    """VF2's mappings with VF2++'s node labels (``node_label``'s value, else
    ``default_label``; two labels match when they are one dict key)."""
    label, default = case.vf2pp

    def node_match(a, b):
        x, y = a.get(label, default), b.get(label, default)
        return x is y or len({x, y}) == 1

    M = MATCHERS[case.cls](Gi, Hi, node_match=node_match)
    it = M.subgraph_monomorphisms_iter if case.mode == "mono" else M.subgraph_isomorphisms_iter
    return collections.Counter(frozenset((gk[g], hk[h]) for g, h in m.items()) for m in it())


def _incremental(case, vf2):
    out = {}
    m = _outcome(lambda: nx_gsm.IncrementalMatcher(case.G, case.H,
                                                   induced=case.mode == "induced",
                                                   engine="cpu", **case.matchers))
    if isinstance(m, _Raised):
        out["incremental.count"] = (_count_of(vf2), m)
        return out
    out["incremental.count"] = (_count_of(vf2), _outcome(m.count))
    out["incremental.matches"] = (vf2, _outcome(lambda: _multiset(m.matches())))
    G1 = _edited(case.G, case.batch)
    vf2_after = _vf2(case, G1)
    res = _outcome(lambda: m.apply(**case.batch))
    if isinstance(res, _Raised):
        # a batch's delta needs the matches before it too: where VF2 raised on the graph before
        # the batch, the same callables may raise again in apply()
        out["incremental.apply"] = (vf2 if isinstance(vf2, _Raised) else
                                    _count_of(vf2_after), res)
        return out
    out["incremental.apply"] = (_count_of(vf2_after), _outcome(m.count))
    if not isinstance(vf2, _Raised) and not isinstance(vf2_after, _Raised):
        out["incremental.delta"] = ((vf2_after - vf2, vf2 - vf2_after),
                                    (_multiset(res.added), _multiset(res.removed)))
    return out


def forms_for(index):
    """The forms case ``index`` runs: ``count`` always, plus three of the others drawn from the
    index alone (so about 3/8 of the cases run each of them)."""
    return ("count",) + tuple(random.Random(f"nx-gsm-fuzz-forms:{index}").sample(FORMS[1:], 3))


def check(case, forms=None):
    """Compare the given forms (default :func:`forms_for`) with VF2 on ``case``.

    Returns
    -------
    (dict, list, list)
        ``{form: checks run}`` (a form may run several checks, e.g. ``find.to_numpy``), the
        differences and the documented divergences (:func:`_documented_divergence`), each
        ``(check name, description)``.
    """
    forms = forms_for(case.index) if forms is None else forms
    vf2 = _vf2(case)
    kw = dict(case.matchers)
    results = {}  # check name -> (want, got)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # e.g. NumPy's elementwise comparison warnings
        for form in forms:
            if form == "count":
                results["count"] = (_count_of(vf2), _outcome(
                    lambda: getattr(nx_gsm, _COUNT[case.mode])(case.G, case.H, **kw)))
            elif form == "iter":
                results["iter"] = (vf2, _outcome(lambda: _multiset(
                    getattr(nx_gsm, _ITER[case.mode])(case.G, case.H, **kw))))
            elif form == "find":
                got = _outcome(lambda: _find_forms(case, kw))
                if isinstance(got, _Raised):
                    results["find"] = (vf2, got)
                else:
                    results.update({k: (vf2, v) for k, v in got.items()})
            elif form == "frames":
                results["frames"] = (vf2, _outcome(lambda: _frames(case, kw)))
            elif form == "matcher":
                results["matcher"] = (vf2, _outcome(lambda: _matcher(case)))
            elif form == "dispatch":
                results.update(_dispatch(case))
            elif form == "incremental":
                results.update(_incremental(case, vf2))
            elif form in ("engine_cpu", "engine_partitioned"):
                eng = _engine("cpu" if form == "engine_cpu" else "partitioned")
                results[form + ".count"] = (_count_of(vf2), _outcome(
                    lambda: getattr(nx_gsm, _COUNT[case.mode])(case.G, case.H, engine=eng,
                                                               **kw)))
                results[form + ".iter"] = (vf2, _outcome(lambda: _multiset(
                    getattr(nx_gsm, _ITER[case.mode])(case.G, case.H, engine=eng, **kw))))
            else:
                raise ValueError(f"unknown form {form!r}; choose from {FORMS}")
    ran = collections.Counter(name.split(".")[0] for name in results)
    diffs, divergences = [], []
    callables = [f for f in kw.values() if f is not None]
    before = functools.cache(lambda: _possible_pairs(case))
    # IncrementalMatcher.apply searches the graph before and after the batch
    both = functools.cache(lambda: tuple(
        a + b for a, b in zip(before(), _possible_pairs(case, _edited(case.G, case.batch)))))
    for name, (want, got, *why) in results.items():
        d = _differ(want, got, callables)
        if d is None:
            continue
        possible = both if name.startswith("incremental.") else before
        why = why[0] if why else _documented_divergence(want, got, case, possible)
        if why is None:
            diffs.append((name, d))
        else:
            divergences.append((name, f"{d} ({why})"))
    return dict(ran), diffs, divergences


def reproducer(seed, index):
    """The one-line shell command that re-checks and prints case ``index`` of ``seed``."""
    return f"python -m conformance.fuzz --seed {seed} --case {index}"


def run(seed=0, n=300, start=0, forms=None, stop_after=None):
    """Check cases ``start .. start + n - 1`` of ``seed``.

    Parameters
    ----------
    seed : int
        The run's seed; a case depends only on ``(seed, index)``.
    n, start : int
        How many cases, from which index.
    forms : sequence of str, optional
        Forms to run on every case instead of the rotation of :func:`forms_for`.
    stop_after : int, optional
        Stop after this many differing cases.

    Returns
    -------
    dict
        ``cases``, ``per_form`` (cases that ran each form), ``checks`` (checks per check
        name's form), ``differences`` and ``divergences`` (the documented ones, see
        :func:`_documented_divergence`; both lists of ``(index, check, description,
        reproducer)``) and ``seconds``.

    Examples
    --------
    >>> report = run(seed=0, n=3)
    >>> report["cases"], report["per_form"]["count"]
    (3, 3)
    """
    t0 = time.perf_counter()
    per_form, checks, differences = collections.Counter(), collections.Counter(), []
    divergences = []
    bad_cases = 0
    for i in range(start, start + n):
        case = make_case(seed, i)
        fs = forms_for(i) if forms is None else tuple(forms)
        per_form.update(fs)
        ran, diffs, divs = check(case, fs)
        checks.update(ran)
        for name, d in diffs:
            differences.append((i, name, d, reproducer(seed, i)))
        divergences.extend((i, name, d, reproducer(seed, i)) for name, d in divs)
        bad_cases += bool(diffs)
        if stop_after is not None and bad_cases >= stop_after:
            n = i - start + 1
            break
    return {"seed": seed, "cases": n, "per_form": dict(per_form), "checks": dict(checks),
            "differences": differences, "divergences": divergences,
            "seconds": time.perf_counter() - t0}


def summary_line(report):
    """One line: cases, cases per form, differences, documented divergences and time."""
    forms = ", ".join(f"{f} {report['per_form'].get(f, 0)}" for f in FORMS)
    return (f"fuzz seed {report['seed']}: {report['cases']} cases ({forms}); "
            f"{len(report['differences'])} differences, "
            f"{len(report.get('divergences', ()))} documented divergences; "
            f"{report['seconds']:.1f} s")


def format_differences(report, limit=20):
    """The differences as text, one per line with its reproducer."""
    lines = [f"case {i} [{name}]: {d}\n    reproduce: {rep}"
             for i, name, d, rep in report["differences"][:limit]]
    if len(report["differences"]) > limit:
        lines.append(f"... and {len(report['differences']) - limit} more")
    return "\n".join(lines)


def _main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m conformance.fuzz",
                                 description="Differential fuzz of nx_gsm against VF2.")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--case", type=int, help="check and print this one case (every form)")
    ap.add_argument("-n", type=int, default=300, help="cases to run (without --case)")
    ap.add_argument("--start", type=int, default=0)
    args = ap.parse_args(argv)
    if args.case is not None:
        case = make_case(args.seed, args.case)
        print(case.describe())
        ran, diffs, divs = check(case, FORMS)
        for name, d in divs:
            print(f"documented divergence [{name}]: {d}")
        for name, d in diffs:
            print(f"DIFFERENCE [{name}]: {d}")
        print(f"{len(diffs)} differences, {len(divs)} documented divergences over "
              f"{sum(ran.values())} checks")
        return 1 if diffs else 0
    report = run(args.seed, args.n, args.start)
    if report["differences"]:
        print(format_differences(report))
    print(summary_line(report))
    return 1 if report["differences"] else 0


if __name__ == "__main__":
    sys.exit(_main())
