"""Engines behind one interface.

An engine has a ``name``, ``count(plan, limit=None) -> int`` and
``iter_chunks(plan, chunk=..., limit=None)`` yielding int32 arrays of shape ``(rows, k)`` whose
column ``d`` holds the data node id mapped to pattern node ``plan.order[d]``. Engines see only a
MatchPlan (NumPy arrays), never NetworkX objects.
"""

from __future__ import annotations

__all__ = ["get_engine", "available_engines", "ENGINE_NAMES"]

ENGINE_NAMES = ("auto", "cpu", "gmatch", "gsi", "geneva")


def available_engines():
    """Map engine name -> None if usable here, else the reason it is not."""
    from .gpu import device_reason

    reason = device_reason()
    out = {"cpu": None}
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
    if name in ("auto", "cpu"):
        # auto: CPU probe first, GPU engine for what the probe does not finish (engines/auto.py);
        # without a usable GPU engine, auto is the CPU engine
        if name == "auto" and available_engines().get("gmatch") is None:
            from . import gpu
            from .auto import AutoEngine

            return AutoEngine(gpu.ENGINES["gmatch"]())
        from .cpu import CpuEngine

        return CpuEngine()
    reason = available_engines()[name]
    if reason is not None:
        raise RuntimeError(f"engine {name!r} is not available: {reason}")
    from . import gpu

    return gpu.ENGINES[name]()
