"""GPU engines (Numba CUDA + CuPy). Importing this package never requires CUDA."""

from __future__ import annotations

import functools

__all__ = ["device_reason", "ENGINES"]

# name -> engine class, filled by the GPU engine modules when they import successfully
ENGINES = {}


@functools.lru_cache(maxsize=1)
def device_reason():
    """None when a CUDA device is usable from Numba, else a one-line reason why not."""
    try:
        from numba import cuda
    except Exception as exc:  # numba-cuda missing or broken
        return f"numba.cuda cannot be imported ({exc.__class__.__name__}: {exc})"
    try:
        if not cuda.is_available():
            return "no CUDA device or driver found (numba.cuda.is_available() is False)"
    except Exception as exc:
        return f"CUDA driver error: {exc}"
    return None
