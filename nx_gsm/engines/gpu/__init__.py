"""GPU engines (Numba CUDA + CuPy). Importing this package never requires CUDA."""

from __future__ import annotations

from .device import device_reason

__all__ = ["device_reason", "ENGINES", "load_engines"]

# name -> engine class, filled by the GPU engine modules when they import successfully
ENGINES = {}

_LOAD_ERRORS = {}


def load_engines():
    """Import the GPU engine modules (lazily, only where CUDA is usable); return load errors."""
    if device_reason() is not None:
        return dict(_LOAD_ERRORS)
    if "gmatch" not in ENGINES and "gmatch" not in _LOAD_ERRORS:
        try:
            from .gmatch import GMatchEngine

            ENGINES["gmatch"] = GMatchEngine
        except Exception as exc:  # a broken install must not break the CPU path
            _LOAD_ERRORS["gmatch"] = f"gmatch failed to load ({exc.__class__.__name__}: {exc})"
    return dict(_LOAD_ERRORS)
