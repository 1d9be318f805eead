"""Device detection and memory accounting for the GPU engines.

Nothing here needs CUDA to import: every probe is wrapped, so a CPU-only machine gets a reason
string instead of an exception. The engines read :func:`memory_budget` before sizing buffers
(task pool, BFS frontier, output chunks); ``nx.config.backends.gsm.device_memory_budget`` caps it
when set (bytes; read defensively since the config key may be absent).
"""

from __future__ import annotations

import functools
import logging

__all__ = [
    "device_reason",
    "device_info",
    "free_and_total",
    "memory_budget",
    "configured_budget",
    "array_module",
    "is_simulator",
]

log = logging.getLogger("nx_gsm.gpu")

# fraction of the free device memory an engine may plan to use when no budget is configured
_FREE_FRACTION = 0.8


def is_simulator():
    """True when Numba's CUDA simulator is active (``NUMBA_ENABLE_CUDASIM=1``)."""
    try:
        from numba import config

        return bool(getattr(config, "ENABLE_CUDASIM", False))
    except Exception:  # pragma: no cover - numba always importable in this package
        return False


@functools.lru_cache(maxsize=1)
def device_reason():
    """None when a CUDA device is usable (Numba CUDA + CuPy), else a one-line reason why not."""
    if is_simulator():
        return "the Numba CUDA simulator is active (NUMBA_ENABLE_CUDASIM=1); GPU engines need a device"
    # numba itself still ships a numba.cuda module that imports fine without numba-cuda and
    # then reports no device: ask for the package first, so the reason names what is missing
    from importlib.metadata import PackageNotFoundError, version

    try:
        version("numba-cuda")
    except PackageNotFoundError:
        return "numba-cuda is not installed (install nx-gsm's gpu extra: pip install '.[gpu]')"
    try:
        from numba import cuda
    except Exception as exc:  # numba-cuda broken
        return f"numba.cuda cannot be imported ({exc.__class__.__name__}: {exc})"
    try:
        if not cuda.is_available():
            return "no CUDA device or driver found (numba.cuda.is_available() is False)"
    except Exception as exc:
        return f"CUDA driver error: {exc}"
    try:
        import cupy  # noqa: F401
    except Exception as exc:
        return f"CuPy cannot be imported ({exc.__class__.__name__}: {exc}); install nx-gsm's gpu extra"
    return None


def array_module():
    """CuPy on a real device, NumPy under the simulator (kernels then run on host arrays)."""
    if is_simulator():
        import numpy

        return numpy
    import cupy

    return cupy


def free_and_total():
    """(free, total) device memory in bytes, or (None, None) when no device is usable."""
    if is_simulator():
        return (1 << 30, 1 << 30)
    try:
        import cupy

        free, total = cupy.cuda.runtime.memGetInfo()
        # memory CuPy's pool holds but does not use is free for us too
        pool = cupy.get_default_memory_pool()
        free += pool.total_bytes() - pool.used_bytes()
        return int(free), int(total)
    except Exception:
        pass
    try:
        from numba import cuda

        free, total = cuda.current_context().get_memory_info()
        return int(free), int(total)
    except Exception:
        return (None, None)


def configured_budget():
    """``nx.config.backends.gsm.device_memory_budget`` as int bytes, or None (unset or absent)."""
    try:
        import networkx as nx

        cfg = nx.config.backends.gsm
    except Exception:
        return None
    try:
        value = cfg["device_memory_budget"] if hasattr(cfg, "__getitem__") else None
    except Exception:
        value = None
    if value is None:
        value = getattr(cfg, "device_memory_budget", None)
    if value is None:
        return None
    try:
        value = int(value)
    except (TypeError, ValueError):
        log.warning("ignoring device_memory_budget=%r (not an integer number of bytes)", value)
        return None
    return value if value > 0 else None


def memory_budget(override=None, free=None):
    """Bytes an engine may allocate: the override, else the configured budget, capped by free memory.

    Falls back to 1 GiB when the device reports nothing (simulator, odd drivers). ``free``: free
    bytes read recently by the caller (else read here).
    """
    if free is None:
        free, _ = free_and_total()
    avail = int(free * _FREE_FRACTION) if free else 1 << 30
    want = override if override is not None else configured_budget()
    if want is None:
        return avail
    return max(1 << 20, min(int(want), avail))


@functools.lru_cache(maxsize=1)
def device_info():
    """Dict with the device's name, compute capability, SM count, shared memory and memory sizes."""
    info = {"name": None, "cc": None, "sm_count": None, "smem_per_sm": None,
            "smem_per_block": None, "regs_per_sm": None, "max_threads_per_sm": None,
            "total_bytes": None, "simulator": is_simulator()}
    if info["simulator"]:
        info.update(name="cudasim", cc=(0, 0), sm_count=1, smem_per_sm=48 * 1024,
                    smem_per_block=48 * 1024, regs_per_sm=65536, max_threads_per_sm=2048,
                    total_bytes=1 << 30)
        return info
    try:
        import cupy

        p = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.runtime.getDevice())
        name = p.get("name")
        info["name"] = name.decode() if isinstance(name, bytes) else str(name)
        info["cc"] = (int(p["major"]), int(p["minor"]))
        info["sm_count"] = int(p["multiProcessorCount"])
        info["smem_per_sm"] = int(p["sharedMemPerMultiprocessor"])
        info["smem_per_block"] = int(p["sharedMemPerBlock"])
        info["regs_per_sm"] = int(p["regsPerMultiprocessor"])
        info["max_threads_per_sm"] = int(p["maxThreadsPerMultiProcessor"])
    except Exception as exc:  # pragma: no cover - only without CuPy or on broken drivers
        log.debug("device_info via CuPy: %s", exc)
        try:
            from numba import cuda

            dev = cuda.get_current_device()
            name = dev.name
            info["name"] = name.decode() if isinstance(name, bytes) else str(name)
            info["cc"] = tuple(dev.compute_capability)
            for key, attr in (("sm_count", "MULTIPROCESSOR_COUNT"),
                              ("smem_per_sm", "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR"),
                              ("smem_per_block", "MAX_SHARED_MEMORY_PER_BLOCK"),
                              ("regs_per_sm", "MAX_REGISTERS_PER_MULTIPROCESSOR"),
                              ("max_threads_per_sm", "MAX_THREADS_PER_MULTI_PROCESSOR")):
                try:
                    info[key] = int(getattr(dev, attr))
                except Exception:
                    pass
        except Exception as exc2:
            log.debug("device_info via numba: %s", exc2)
    defaults = {"sm_count": 1, "smem_per_sm": 100 * 1024, "smem_per_block": 48 * 1024,
                "regs_per_sm": 65536, "max_threads_per_sm": 2048}
    for key, val in defaults.items():
        if not info.get(key):
            info[key] = val
    _, total = free_and_total()
    info["total_bytes"] = total
    return info
