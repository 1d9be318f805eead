"""GPU engines (Numba CUDA + CuPy). Importing this package never requires CUDA."""

from __future__ import annotations

import importlib

from .device import device_reason
from .faults import clear_device_caches

__all__ = ["device_reason", "ENGINES", "load_engines", "clear_device_caches"]

# name -> engine class, filled by load_engines for the GPU engine modules that import
ENGINES = {}

_LOAD_ERRORS = {}


def load_engines():
    """Import the GPU engine modules (lazily, only where CUDA is usable); return load errors."""
    from ..catalog import SPECS

    if device_reason() is not None:
        return dict(_LOAD_ERRORS)
    for name, spec in SPECS.items():
        if not spec.capabilities.device or name in ENGINES or name in _LOAD_ERRORS:
            continue
        try:
            mod = importlib.import_module(f"..{spec.module}", __name__)
            ENGINES[name] = getattr(mod, spec.cls)
        except Exception as exc:  # a broken install must not break the CPU path
            _LOAD_ERRORS[name] = f"{name} failed to load ({exc.__class__.__name__}: {exc})"
    return dict(_LOAD_ERRORS)
