"""Engines behind one interface.

An engine has a ``name``, ``count(plan, limit=None) -> int`` and
``iter_chunks(plan, chunk=..., limit=None)`` yielding int32 arrays of shape ``(rows, k)`` whose
column ``d`` holds the data node id mapped to pattern node ``plan.order[d]``. Engines see only a
MatchPlan (NumPy arrays), never NetworkX objects.
"""

from __future__ import annotations

__all__ = ["get_engine", "available_engines", "ENGINE_NAMES"]

ENGINE_NAMES = ("auto", "cpu", "gmatch", "gsi", "geneva", "partitioned")


def available_engines():
    """Map engine name -> None if usable here, else the reason it is not."""
    from .gpu import device_reason

    reason = device_reason()
    # partitioned: METIS parts around an inner engine ("auto" falls back to the CPU)
    out = {"cpu": None, "partitioned": None}
    for name in ("gmatch", "gsi", "geneva"):
        out[name] = reason
    if reason is None:
        from . import gpu

        errors = gpu.load_engines()
        for name in ("gmatch", "gsi", "geneva"):
            if name not in gpu.ENGINES:
                out[name] = errors.get(name, f"engine {name!r} is not implemented yet")
    return out


def get_engine(name):
    """Return the engine object for ``name`` (``"auto"`` resolves to the best usable engine)."""
    if not isinstance(name, str) or name not in ENGINE_NAMES:
        raise ValueError(f"unknown engine {name!r}; choose one of {', '.join(ENGINE_NAMES)}")
    if name == "auto":
        # auto: CPU probe first, then the cost model's GPU engine (engines/auto.py); without a
        # usable GPU engine, auto is the CPU engine
        usable = [e for e in ("gmatch", "gsi", "geneva") if available_engines().get(e) is None]
        if usable:
            from . import gpu
            from .auto import AutoEngine

            return AutoEngine({e: gpu.ENGINES[e]() for e in usable})
        name = "cpu"
    if name == "cpu":  # no device query: the CPU engine is always there
        from .cpu import CpuEngine

        return CpuEngine()
    if name == "partitioned":
        from .partitioned import PartitionedEngine

        return PartitionedEngine()
    reason = available_engines()[name]
    if reason is not None:
        raise RuntimeError(f"engine {name!r} is not available: {reason}")
    from . import gpu

    return gpu.ENGINES[name]()
