"""Labels: turn ``node_match``/``edge_match`` into exact integer compatibility tables.

NetworkX converts each graph alone, so labels are encoded here, jointly for the data graph G and
the pattern H, at plan time.

* Recognised NetworkX helpers (``categorical_node_match``/``categorical_edge_match`` and
  ``categorical_multiedge_match``) become a *key* per item: two items are compatible exactly when
  their keys are equal, so G's items are grouped by key and matched by a dictionary lookup.
* Any other callable (numerical helpers, whose ``isclose`` is not transitive, ``generic_*``,
  lambdas) is evaluated once per (pattern item, class of identical data items): data items whose
  attribute objects are equal *with equal types*, recursively, share a class. The callable sees a
  representative of the class, so the result is exact for any callable that depends only on the
  attribute values it is given.

The result is always a boolean table ``ok[pattern_item, data_class]`` plus ``data_class[item]``.
"""

from __future__ import annotations

import numpy as np
from networkx.algorithms.isomorphism import matchhelpers as _mh

__all__ = ["freeze", "recognise", "compat_table", "label_key"]


def _code(f):
    return getattr(f, "__code__", None)


_CAT1 = _code(_mh.categorical_node_match("x", None))
_CATN = _code(_mh.categorical_node_match(["x"], [None]))
_CATM1 = _code(_mh.categorical_multiedge_match("x", None))
_CATMN = _code(_mh.categorical_multiedge_match(["x"], [None]))


class _Unfreezable(Exception):
    pass


def freeze(obj):
    """A hashable stand-in for ``obj`` that is equal for two objects only when they are equal
    and of the same types, recursively. Raises ``_Unfreezable`` for objects it cannot represent."""
    t = type(obj)
    if t is dict:
        try:
            items = sorted((freeze(k), freeze(v)) for k, v in obj.items())
        except TypeError:  # keys of mixed, unorderable types
            items = frozenset((freeze(k), freeze(v)) for k, v in obj.items())
        return ("dict", tuple(items) if isinstance(items, list) else items)
    if t in (list, tuple):
        return (t.__name__, tuple(freeze(x) for x in obj))
    if t in (set, frozenset):
        return (t.__name__, frozenset(freeze(x) for x in obj))
    try:
        hash(obj)
    except TypeError:
        raise _Unfreezable from None
    return (t.__module__, t.__qualname__, obj)


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


def _classes(items, keyfn):
    """Group ``items`` by ``keyfn``; returns (class id per item (int32), representative list).
    Items whose key cannot be hashed each get a class of their own."""
    cls = np.empty(len(items), dtype=np.int32)
    reps, seen = [], {}
    for i, it in enumerate(items):
        try:
            k = keyfn(it)
            c = seen.get(k)
            if c is None:
                c = seen[k] = len(reps)
                reps.append(it)
        except (TypeError, _Unfreezable):
            c = len(reps)
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
            if got[0] == keys:
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


def compat_table(match, data_items, pattern_items, kept=None, data_keys=None):
    """Compatibility of every pattern item with every data item under ``match``.

    Returns ``(data_class, ok)``: ``data_class`` (int32, one per data item) and ``ok`` (bool,
    ``len(pattern_items) x n_classes``), so item ``i`` of the data is compatible with pattern item
    ``p`` iff ``ok[p, data_class[i]]``. ``match`` is called as ``match(data_item, pattern_item)``,
    NetworkX's argument order. ``kept``: a dict that keeps the data items' classes under a
    recognised helper between calls (see :func:`_key_classes`; the caller reads ``data_class``
    only). ``data_keys``: the helper's key of every data item, read by the caller (for
    ``node_label``, the strict check's values); ignored unless ``match`` is recognised.
    """
    rec = recognise(match)
    if rec is not None:
        key = label_key(*rec)
        try:
            keys = _keys(*rec, data_items) if data_keys is None else data_keys
            try:
                tag = (rec[0], tuple(rec[1]))
                hash(tag)
            except TypeError:  # an unhashable default: not kept
                tag, kept = None, None
            lookup, dcls, first = _key_classes(keys, kept, tag)
            reps = [data_items[i] for i in first]
            ok = np.zeros((len(pattern_items), len(reps)), dtype=bool)
            for p, it in enumerate(pattern_items):
                c = lookup.get(key(it))
                # confirm with the helper itself: a hash hit can hide values such as NaN that
                # are not equal to themselves
                if c is not None:
                    ok[p, c] = bool(match(reps[c], it))
            return dcls, ok
        except TypeError:
            pass  # an unhashable label value: the generic path below is still exact
    dcls, reps = _classes(data_items, freeze)
    pcls, preps = _classes(pattern_items, freeze)
    okp = np.empty((len(preps), len(reps)), dtype=bool)
    for p, pit in enumerate(preps):
        for c, rep in enumerate(reps):
            okp[p, c] = bool(match(rep, pit))
    return dcls, okp[pcls]


def value_table(values_G, values_H):
    """Equality compatibility of plain label values (VF2++'s ``node_label``); TypeError if a
    value is unhashable, as in NetworkX."""
    ids, dcls, _ = _key_classes(list(values_G), None, None)
    ok = np.zeros((len(values_H), max(len(ids), 1)), dtype=bool)
    for p, v in enumerate(values_H):
        c = ids.get(v)
        if c is not None:
            ok[p, c] = True
    return dcls, ok
