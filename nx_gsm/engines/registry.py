"""Engine objects from the table (:mod:`nx_gsm.engines.catalog`): which engines are usable here,
``get_engine(name)`` and ``resolve_engine(name_or_object)``.

GPU engine modules are imported only when a device is usable.
"""

from __future__ import annotations

import functools
import importlib.util
import sys

from .base import DeltaEngine, Engine
from .catalog import NAMES, SPECS, capabilities_of, engine_class, engines_with

__all__ = ["NAMES", "SPECS", "capabilities_of", "engines_with", "available_engines",
           "get_engine", "resolve_engine"]


@functools.cache
def _found(module):
    # a path search per call was ~0.2 ms of every light count (engine="auto" asks on each call);
    # a package installed while the process runs is seen by a new process
    return importlib.util.find_spec(module) is not None


def _installed(module):
    # an imported module, or one blocked by a None entry (Python's way to make it unimportable)
    if module in sys.modules:
        return sys.modules[module] is not None
    return _found(module)


def available_engines():
    """Map engine name -> None where it is usable here, else the reason it is not.

    Examples
    --------
    >>> from nx_gsm.engines import available_engines
    >>> available_engines()["cpu"] is None
    True
    """
    from .gpu import device_reason

    reason = device_reason()
    out = {}
    for name, spec in SPECS.items():
        out[name] = reason if spec.capabilities.device else None
        for need in spec.capabilities.needs:
            if out[name] is None and need != "cuda" and not _installed(need):
                out[name] = f"{need} is not installed (pip install '.[distributed]')"
    if reason is None:
        from . import gpu

        errors = gpu.load_engines()
        for name in engines_with(device=True):
            if name in errors:
                out[name] = errors[name]
    return out


def get_engine(name, **options):
    """A new engine object for ``name`` (``"auto"``: the best usable engine for each query).

    Parameters
    ----------
    name : str
        One of :data:`NAMES`, or ``"gamma"`` (the incremental engine).
    **options
        Passed to the engine's class (e.g. ``parts=`` for ``"partitioned"``); ``"auto"`` takes
        none.

    Raises
    ------
    ValueError
        ``name`` is not an engine; or it is the incremental engine (``IncrementalMatcher``
        runs it).
    RuntimeError
        The engine needs a GPU (or a package) this machine lacks; the message says which.

    Examples
    --------
    >>> from nx_gsm.engines import get_engine
    >>> get_engine("cpu").name
    'cpu'
    """
    if not isinstance(name, str) or (name != "auto" and name not in SPECS):
        raise ValueError(f"unknown engine {name!r}; choose one of {', '.join(NAMES)}")
    if name == "auto":
        if options:
            raise TypeError(f"engine 'auto' takes no options, got {', '.join(options)}")
        # without a usable GPU engine, auto is the CPU engine
        avail = available_engines()
        usable = [e for e in engines_with(device=True, delta=False) if avail[e] is None]
        if not usable:
            return engine_class("cpu")()
        from .auto import AutoEngine

        return AutoEngine({e: engine_class(e)() for e in usable})
    if SPECS[name].capabilities.needs:
        reason = available_engines()[name]
        if reason is not None:
            raise RuntimeError(f"engine {name!r} is not available: {reason}")
    return engine_class(name)(**options)


def resolve_engine(engine=None):
    """The engine object an ``engine=`` argument means.

    Parameters
    ----------
    engine : str, engine object or None
        A name from :data:`NAMES`, an object implementing :class:`~nx_gsm.engines.base.Engine`
        (used as it is, with its options), or None / ``"auto"`` for the configured default
        (``nx.config.backends.gsm.engine``, ``"auto"`` unless changed).

    Raises
    ------
    TypeError
        ``engine`` is neither a name nor an engine object.

    Examples
    --------
    >>> import nx_gsm
    >>> nx_gsm.resolve_engine("cpu").capabilities.prefix_tasks
    True
    >>> eng = nx_gsm.PartitionedEngine(inner="cpu", parts=2)
    >>> nx_gsm.resolve_engine(eng) is eng
    True
    """
    if engine is None or (isinstance(engine, str) and engine == "auto"):
        engine = _configured()
    if isinstance(engine, str):
        spec = SPECS.get(engine)
        if spec is not None and spec.capabilities.delta:
            raise ValueError(f"engine {engine!r} matches batches of edge updates: use "
                             f"nx_gsm.IncrementalMatcher(..., engine={engine!r})")
        return get_engine(engine)
    if isinstance(engine, Engine):
        return engine
    if isinstance(engine, DeltaEngine):
        raise ValueError(f"engine {engine.name!r} matches batches of edge updates: use it "
                         f"through nx_gsm.IncrementalMatcher")
    raise TypeError(f"engine must be an engine name ({', '.join(NAMES)}) or an engine object "
                    f"with count/iter_chunks and capabilities, got {type(engine).__name__}")


def _configured():
    try:
        import networkx as nx

        return nx.config.backends.gsm.engine
    except AttributeError:
        return "auto"
