"""Labels: turn ``node_match``/``edge_match`` into exact integer compatibility tables.

NetworkX converts each graph alone, so labels are encoded here, jointly for the data graph G and
the pattern H, at plan time.

* Recognised NetworkX helpers (``categorical_node_match``/``categorical_edge_match`` and
  ``categorical_multiedge_match``) become a *key* per item: two items are compatible exactly when
  their keys are equal, so G's items are grouped by key and matched by a dictionary lookup. That
  is exact only where ``==`` on the values is transitive and agrees with their hashes, so it is
  taken only when every value is a plain one (:func:`plain`); otherwise the helper is treated
  as any other callable.
* Any other callable (numerical helpers, whose ``isclose`` is not transitive, ``generic_*``,
  lambdas) is evaluated once per (pattern item, class of data items): a class groups only items
  that no callable reading them can tell apart (:func:`exact_key`), and any other item is a
  class of its own. The callable sees a representative of the class, so the result is exact for
  any callable that depends only on the attribute values it is given. With ``allowed``, a
  (pattern item, class) pair is evaluated only where the structural checks left a data item of
  the class for the pattern item, as VF2 checks syntax before semantics.

The result is always a boolean table ``ok[pattern_item, data_class]`` plus ``data_class[item]``.
"""

from __future__ import annotations

import math
import operator

import numpy as np
from networkx.algorithms.isomorphism import matchhelpers as _mh

__all__ = ["exact_key", "indistinguishable", "recognise", "compat_table", "label_key", "plain"]


def _code(f):
    return getattr(f, "__code__", None)


_CAT1 = _code(_mh.categorical_node_match("x", None))
_CATN = _code(_mh.categorical_node_match(["x"], [None]))
_CATM1 = _code(_mh.categorical_multiedge_match("x", None))
_CATMN = _code(_mh.categorical_multiedge_match(["x"], [None]))


class _Unkeyable(Exception):
    pass


class _Tag:
    """A marker opening a container's key; equal only to itself."""

    __slots__ = ("name",)

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<{self.name}>"


_DICT, _TUPLE, _FSET, _BOOL, _FLOAT = (_Tag(n) for n in ("dict", "tuple", "frozenset", "bool",
                                                          "float"))
# their own keys: values of these exact types are equal only to values of the same type among
# keys (a str, bytes, None or int is never equal to a tuple, a tag or one another)
_SELF = frozenset({int, str, bytes, type(None)})
# values whose == is transitive and agrees with hash (a recognised helper's dictionary lookup)
_PLAIN = frozenset({int, str, bytes, type(None), bool, float})


def _float_key(tag, x):
    if x != x:  # NaN: not equal to itself, and its sign and payload can be read
        raise _Unkeyable
    # -0.0 == 0.0, but str, math.copysign and division tell them apart
    return (tag, x) if x else (tag, x, math.copysign(1.0, x))


def exact_key(obj):
    """A hashable key of ``obj``, equal for two objects only when no callable that reads them
    (rather than their identity) can tell them apart.

    Exact ``int``, ``str``, ``bytes``, ``None``, ``bool``, ``float`` (NaN excepted; ``-0.0`` and
    ``0.0`` differ), numpy bool/integer/float scalars (by exact type and value, likewise), and
    ``tuple``, ``frozenset`` and ``dict`` of those, recursively and in iteration order (a
    callable can read the order of a dict's keys or a frozenset's items). Raises
    ``_Unkeyable`` for any other value (subclasses, namedtuples, Decimal, datetime, lists,
    arrays, ...): such an item is a class of its own.

    Examples
    --------
    >>> exact_key({"c": 1}) == exact_key({"c": 1})
    True
    >>> exact_key({"a": 1, "b": 2}) == exact_key({"b": 2, "a": 1})
    False
    >>> exact_key(1) == exact_key(True), exact_key(0.0) == exact_key(-0.0)
    (False, False)
    """
    t = type(obj)
    if t in _SELF:
        return obj
    if t is dict:
        out = [_DICT]
        for k, v in obj.items():
            out.append(k if type(k) in _SELF else exact_key(k))
            out.append(v if type(v) in _SELF else exact_key(v))
        return tuple(out)
    if t is float:
        return _float_key(_FLOAT, obj)
    if t is bool:
        return (_BOOL, obj)
    if t is tuple:
        return (_TUPLE, *[x if type(x) in _SELF else exact_key(x) for x in obj])
    if t is frozenset:
        return (_FSET, *[x if type(x) in _SELF else exact_key(x) for x in obj])
    if isinstance(obj, np.generic):
        kind = obj.dtype.kind
        if kind in "biu":
            return (t, int(obj))
        if kind == "f":
            return _float_key(t, float(obj))
    raise _Unkeyable


def indistinguishable(a, b):
    """Whether no callable that reads ``a`` and ``b`` can tell them apart: the same object, or
    equal :func:`exact_key` s. False where that cannot be shown (a value without an exact key).

    Examples
    --------
    >>> indistinguishable({"w": 0.0}, {"w": 0.0}), indistinguishable({"w": 0.0}, {"w": -0.0})
    (True, False)
    """
    if a is b:
        return True
    try:
        return exact_key(a) == exact_key(b)
    except _Unkeyable:
        return False


def plain(values):
    """True when every value is an exact int, str, bytes, None, bool or float, or a tuple or
    frozenset of those (recursively): among such values ``==`` is transitive and agrees with
    ``hash``, so grouping by a dictionary lookup decides ``==`` exactly. (A numpy integer
    compared with a float goes through float64: ``np.int64(2**53 + 1) == 2.0**53`` is True,
    while the hashes differ.)"""
    if values:  # the common case, one type throughout: a count in C (~25% faster than a set)
        t = type(values[0])
        if t in _PLAIN and operator.countOf(map(type, values), t) == len(values):
            return True
    types = set(map(type, values))
    if types <= _PLAIN:
        return True
    if not types <= _PLAIN | {tuple, frozenset}:
        return False
    return plain([x for v in values if type(v) in (tuple, frozenset) for x in v])


def recognise(fn):
    """Return ``(kind, attrs)`` for a recognised NetworkX helper, else ``None``.

    kind is ``"cat"`` (categorical node/edge match) or ``"catmulti"``; attrs a list of
    ``(attribute, default)`` pairs.
    """
    code = _code(fn)
    if code is None or code not in (_CAT1, _CATN, _CATM1, _CATMN):
        return None
    try:  # the closure's cells by name (inspect.getclosurevars also scans globals: ~15 us)
        nl = dict(zip(code.co_freevars, (c.cell_contents for c in fn.__closure__ or ())))
    except (TypeError, ValueError, AttributeError):
        return None
    attrs = [(nl["attr"], nl["default"])] if "attr" in nl else list(nl["attrs"])
    return ("cat" if code in (_CAT1, _CATN) else "catmulti", attrs)


def label_key(kind, attrs):
    """The key function of a recognised helper (its equality is the helper's result)."""
    if kind == "cat":
        if len(attrs) == 1:
            (a, d), = attrs
            return lambda data: data.get(a, d)
        return lambda data: tuple(data.get(a, d) for a, d in attrs)
    if len(attrs) == 1:
        (a, d), = attrs
        return lambda kd: frozenset(x.get(a, d) for x in kd.values())
    return lambda kd: frozenset(tuple(x.get(a, d) for a, d in attrs) for x in kd.values())


def _keys(kind, attrs, items):
    """``label_key(kind, attrs)`` of every item; the one-attribute categorical key as a
    comprehension (a call per item made the yeast graph's 3,112 nodes ~0.25 ms of a ~1 ms
    end-to-end count)."""
    if kind == "cat" and len(attrs) == 1:
        (a, d), = attrs
        return [x.get(a, d) for x in items]
    key = label_key(kind, attrs)
    return [key(x) for x in items]


def _classes(items):
    """Group ``items`` by :func:`exact_key`; returns (class id per item (int32), representative
    list). An item without an exact key is a class of its own."""
    cls = np.empty(len(items), dtype=np.int32)
    reps, seen = [], {}
    for i, it in enumerate(items):
        try:
            k = exact_key(it)
        except _Unkeyable:
            c = len(reps)
            reps.append(it)
        else:
            c = seen.get(k)
            if c is None:
                c = seen[k] = len(reps)
                reps.append(it)
        cls[i] = c
    return cls, reps


def _key_classes(keys, kept, tag):
    """(key -> class id in order of first appearance, class per item, each class's first item)
    of ``keys``; kept in ``kept[tag]`` and reused while the keys are equal, item by item (a list
    comparison: the same objects compare by identity), so a data graph's classes are worked out
    once for many patterns and still follow attribute edits."""
    got = kept.get(tag) if kept is not None else None
    if got is not None:
        try:
            if got[0] is keys or got[0] == keys:
                return got[1:]
        except (TypeError, ValueError):  # (a new value that does not compare to a bool)
            pass
    lookup = dict.fromkeys(keys)
    for c, k in enumerate(lookup):
        lookup[k] = c
    dcls = np.fromiter(map(lookup.__getitem__, keys), dtype=np.int32, count=len(keys))
    # each class's first item: where the running maximum of the ids steps up
    first = np.flatnonzero(np.diff(np.maximum.accumulate(dcls), prepend=-1)).tolist()
    if kept is not None:
        kept[tag] = (keys, lookup, dcls, first)
    return lookup, dcls, first


# Keys of a data graph's ``__networkx_cache__`` under which the labels' work is kept: the checked
# values of a ``node_label`` attribute on a graph that owns its node dicts (attribute -> list), and
# the data items' classes under a recognised helper (:func:`_key_classes`, helper -> classes).
NODE_LABELS = "nx_gsm_node_labels"
NODE_CLASSES = "nx_gsm_node_classes"


def plain_values(items, attr):
    """``attr``'s value on every item (one pass in C) when all carry it and the values are
    :func:`plain`, else None (the caller then checks item by item and names the one at fault)."""
    try:
        values = [d[attr] for d in items]
    except (KeyError, TypeError):
        return None
    return values if plain(values) else None


def helper_tag(rec):
    """The key under which :func:`_key_classes` keeps a recognised helper's classes; None where
    the helper's defaults are unhashable (then nothing is kept)."""
    tag = (rec[0], tuple(rec[1]))
    try:
        hash(tag)
    except TypeError:
        return None
    return tag


def index_node_labels(g, attrs):
    """Work out, at conversion, what a graph's first ``node_label=a`` call would otherwise do:
    for each attribute ``a`` in ``attrs`` that every node of ``g`` carries with a :func:`plain`
    value, keep the values and their classes in ``g.__networkx_cache__``. For graphs that own
    their node dicts (``GsmGraph.owns_node_data``); on yeast's 3,112 nodes this took ~0.6 ms off
    the first query's ~1.5 ms. Attributes without such values are left to the call, which checks
    them and names the node at fault."""
    if not g.node_data:
        return
    cache = g.__networkx_cache__
    for a in attrs:
        values = plain_values(g.node_data, a)
        tag = None if values is None else helper_tag(
            recognise(_mh.categorical_node_match(a, None)))
        if tag is None:
            continue
        cache.setdefault(NODE_LABELS, {})[a] = values
        _key_classes(values, cache.setdefault(NODE_CLASSES, {}), tag)


def _helper_table(match, rec, data_items, pattern_items, kept, data_keys):
    """:func:`compat_table` for a recognised helper by a dictionary lookup of its keys, or None
    where that would not be exact (a value that is not plain) or the helper cannot read an item
    (the generic path then asks the helper itself, on the pairs it may see)."""
    key = label_key(*rec)
    try:
        keys = _keys(*rec, data_items) if data_keys is None else data_keys
        pkeys = [key(it) for it in pattern_items]
    except Exception:  # e.g. a simple graph's edge datum under categorical_multiedge_match
        return None
    if not ((data_keys is not None or plain(keys)) and plain(pkeys)):
        return None
    tag = helper_tag(rec)
    if tag is None:
        kept = None
    lookup, dcls, first = _key_classes(keys, kept, tag)
    reps = [data_items[i] for i in first]
    ok = np.zeros((len(pattern_items), len(reps)), dtype=bool)
    for p, (it, k) in enumerate(zip(pattern_items, pkeys)):
        c = lookup.get(k)
        # confirm with the helper itself: a hash hit can hide values such as NaN that are not
        # equal to themselves
        if c is not None:
            ok[p, c] = bool(match(reps[c], it))
    return dcls, ok


def compat_table(match, data_items, pattern_items, kept=None, data_keys=None, allowed=None):
    """Compatibility of every pattern item with every data item under ``match``.

    Parameters
    ----------
    match : callable
        Called as ``match(data_item, pattern_item)``, NetworkX's argument order.
    data_items, pattern_items : sequence
        The attribute objects ``match`` receives.
    kept : dict, optional
        Keeps the data items' classes under a recognised helper between calls (see
        :func:`_key_classes`; the caller reads ``data_class`` only).
    data_keys : list, optional
        The helper's key of every data item, read by the caller (for ``node_label``, the strict
        check's values) and already found :func:`plain`; ignored unless ``match`` is
        recognised.
    allowed : callable, optional
        ``allowed(data_class, n_classes)`` returns a bool array ``len(pattern_items) x
        n_classes``: where the structural checks left pattern item ``p`` a data item of class
        ``c``. ``match`` is then called on those pairs only (called at most once, and only when
        ``match`` must be called at all); the other entries of ``ok`` are False. None: every pair.

    Returns
    -------
    data_class : numpy.ndarray
        int32, the class of each data item.
    ok : numpy.ndarray
        bool, ``len(pattern_items) x n_classes``: data item ``i`` is compatible with pattern item
        ``p`` iff ``ok[p, data_class[i]]``.

    Examples
    --------
    >>> cls, ok = compat_table(lambda a, b: a["c"] == b["c"], [{"c": 1}, {"c": 2}, {"c": 1}],
    ...                        [{"c": 1}])
    >>> cls.tolist(), ok.tolist()
    ([0, 1, 0], [[True, False]])
    """
    rec = recognise(match)
    if rec is not None:
        got = _helper_table(match, rec, data_items, pattern_items, kept, data_keys)
        if got is not None:
            return got
    dcls, reps = _classes(data_items)
    pcls, preps = _classes(pattern_items)
    okp = np.zeros((len(preps), len(reps)), dtype=bool)
    if allowed is None:
        for p, pit in enumerate(preps):
            for c, rep in enumerate(reps):
                okp[p, c] = bool(match(rep, pit))
        return dcls, okp[pcls]
    by_item = np.asarray(allowed(dcls, len(reps)), dtype=bool) if len(reps) else \
        np.zeros((len(pcls), 0), dtype=bool)
    asked = np.zeros((len(preps), len(reps)), dtype=bool)
    # pattern items in order, as VF2 takes pattern nodes, each asked about its own allowed
    # classes only; once one has no compatible data item no mapping exists, and nothing more
    # is asked
    for p, pc in enumerate(pcls.tolist()):
        for c in np.flatnonzero(by_item[p] & ~asked[pc]).tolist():
            okp[pc, c] = bool(match(reps[c], preps[pc]))
        asked[pc] |= by_item[p]
        if not (okp[pc] & by_item[p]).any():
            return dcls, np.zeros((len(pcls), len(reps)), dtype=bool)
    return dcls, okp[pcls]


def value_table(values_G, values_H):
    """Equality compatibility of plain label values (VF2++'s ``node_label``); TypeError if a
    value is unhashable, as in NetworkX."""
    ids, dcls, _ = _key_classes(list(values_G), None, None)
    # VF2++ groups the pattern's labels by themselves (in node order) before it looks each
    # group up among the data graph's, so two of them that cannot be compared raise as there
    groups = dict.fromkeys(values_H)
    for v in groups:
        groups[v] = ids.get(v)
    ok = np.zeros((len(values_H), max(len(ids), 1)), dtype=bool)
    for p, v in enumerate(values_H):
        c = groups[v]
        if c is not None:
            ok[p, c] = True
    return dcls, ok
