"""Launching Numba's parallel functions from several Python threads at once.

Numba's ``workqueue`` threading layer, the one it falls back on where neither TBB nor OpenMP is
installed, aborts the whole process when two Python threads launch parallel code at the same
time. Every call of a ``parallel=True`` kernel goes through :func:`launch`, which serialises
the launches while the layer is ``workqueue`` or not yet known (it is known after the first
launch) and adds nothing once it is OpenMP or TBB, which are thread-safe.
"""

from __future__ import annotations

import threading

import numba

__all__ = ["launch"]

_lock = threading.Lock()
_safe = False


def launch(fn, *args):
    """``fn(*args)`` for a compiled ``parallel=True`` function ``fn``, one Python thread at a
    time unless Numba's threading layer is known to be thread-safe."""
    global _safe
    if _safe:
        return fn(*args)
    with _lock:
        out = fn(*args)
        _safe = numba.threading_layer() in ("omp", "tbb")
    return out
