"""The one table of engines: name -> where the class lives and what it can do.

Everything that asks "which engines exist" or "which can do X" reads this table; nothing else
lists engine names. It imports no engine module, so engines themselves read their capabilities
here (imports point from the engines to the table, never back), it is cheap, and it works
without CUDA. :mod:`nx_gsm.engines.registry` makes engine objects from it.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from .base import Capabilities

__all__ = ["EngineSpec", "SPECS", "NAMES", "capabilities_of", "engines_with", "engine_class"]


@dataclass(frozen=True)
class EngineSpec:
    """One row of the table: ``module`` (under ``nx_gsm.engines``) holds class ``cls``."""

    name: str
    module: str
    cls: str
    capabilities: Capabilities
    summary: str


_CUDA = ("cuda",)
SPECS = {s.name: s for s in (
    EngineSpec("cpu", "cpu", "CpuEngine", Capabilities(prefix_tasks=True),
               "parallel DFS with set-intersection candidates (Numba)"),
    EngineSpec("gmatch", "gpu.gmatch", "GMatchEngine",
               Capabilities(device=True, max_pattern=32, prefix_tasks=True, prefix_finds=True,
                            cut_part=True, device_plans=True, needs=_CUDA),
               "gMatch: warp-level DFS with a task pool and light stealing"),
    EngineSpec("gsi", "gpu.gsi", "GsiEngine", Capabilities(device=True, needs=_CUDA),
               "GSI: BFS join with PCSR and Prealloc-Combine"),
    EngineSpec("geneva", "gpu.geneva", "GenevaEngine", Capabilities(device=True, needs=_CUDA),
               "GENEVA: BFS matching several pattern nodes per step on interval-PCSR"),
    EngineSpec("partitioned", "partitioned", "PartitionedEngine",
               Capabilities(needs=("pymetis",)),
               "PBE: METIS parts around an inner engine, shared cross-partition search"),
    EngineSpec("gamma", "gpu.gamma", "GammaDelta",
               Capabilities(device=True, max_pattern=16, delta=True, needs=_CUDA),
               "GAMMA: batch-dynamic matching on a GPU packed memory array"),
)}

NAMES = ("auto", *(n for n, s in SPECS.items() if not s.capabilities.delta))
"""Every name the matching functions' ``engine=`` accepts (``"auto"`` lets the planner choose);
the incremental engine is ``IncrementalMatcher``'s."""


def capabilities_of(name):
    """The :class:`Capabilities` of the engine called ``name`` (no import of the engine)."""
    return SPECS[name].capabilities


def engines_with(**wanted):
    """Names of the engines whose capabilities have every given value, in table order.

    Examples
    --------
    >>> from nx_gsm.engines.catalog import engines_with
    >>> engines_with(prefix_tasks=True)
    ['cpu', 'gmatch']
    >>> engines_with(device=True, delta=False)
    ['gmatch', 'gsi', 'geneva']
    """
    return [n for n, s in SPECS.items()
            if all(getattr(s.capabilities, k) == v for k, v in wanted.items())]


def engine_class(name):
    """The class of engine ``name``, its module imported on first use (a GPU engine's module
    needs CUDA: ask :func:`nx_gsm.engines.registry.available_engines` first)."""
    spec = SPECS[name]
    return getattr(importlib.import_module(f".{spec.module}", __package__), spec.cls)
