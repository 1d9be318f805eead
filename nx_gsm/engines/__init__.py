"""Engines behind one contract (:mod:`nx_gsm.engines.base`), listed once in
:mod:`nx_gsm.engines.registry`.

An engine has a ``name``, ``capabilities``, ``count(plan, limit=None) -> int`` and
``iter_chunks(plan, chunk=..., limit=None)`` yielding int32 arrays of shape ``(rows, k)`` whose
column ``d`` holds the data node id mapped to pattern node ``plan.order[d]``. Engines see only a
MatchPlan (NumPy arrays), never NetworkX objects.
"""

from __future__ import annotations

from .registry import NAMES, available_engines, get_engine, resolve_engine

__all__ = ["get_engine", "resolve_engine", "available_engines", "NAMES"]
