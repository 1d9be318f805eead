"""GPU engines (Numba CUDA + CuPy). Importing this package never requires CUDA."""

from __future__ import annotations

import importlib

from .device import device_reason
from .faults import clear_device_caches

__all__ = ["device_reason", "ENGINES", "load_engines", "ENGINE_MODULES", "clear_device_caches"]

# engine name -> (module, class); a module that fails to import leaves its engine unavailable
ENGINE_MODULES = {
    "gmatch": ("gmatch", "GMatchEngine"),
    "gsi": ("gsi", "GsiEngine"),
    "geneva": ("geneva", "GenevaEngine"),
}

# name -> engine class, filled by the GPU engine modules when they import successfully
ENGINES = {}

_LOAD_ERRORS = {}


def load_engines():
    """Import the GPU engine modules (lazily, only where CUDA is usable); return load errors."""
    if device_reason() is not None:
        return dict(_LOAD_ERRORS)
    for name, (mod, cls) in ENGINE_MODULES.items():
        if name in ENGINES or name in _LOAD_ERRORS:
            continue
        try:
            ENGINES[name] = getattr(importlib.import_module(f".{mod}", __name__), cls)
        except Exception as exc:  # a broken install must not break the CPU path
            _LOAD_ERRORS[name] = f"{name} failed to load ({exc.__class__.__name__}: {exc})"
    return dict(_LOAD_ERRORS)
