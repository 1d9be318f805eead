"""What every engine shares: the contract (:class:`Engine`, :class:`PrefixEngine`,
:class:`DeltaEngine`, :class:`Capabilities`) and the run budget (deadline, progress, Ctrl-C).

Engines run their searches in slices (a bounded number of search steps per compiled call) and
call :meth:`Budget.keep_going` between slices, so a deadline or Ctrl-C stops a search within a
fraction of a second wherever it is, and a progress bar can be refreshed.
"""

from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

__all__ = ["Budget", "Count", "PartialCount", "Capabilities", "Engine", "PrefixEngine",
           "DeltaEngine", "DeltaProblem"]


class Count(int):
    """The int a count returns: exact, with ``partial`` False and ``reason`` None.

    It behaves as a plain Python int everywhere (``==``, hashing, arithmetic results,
    ``json.dumps``, pickling), so code written for ints keeps working, and every count result
    answers ``partial`` and ``reason`` whether or not it was cut short.

    Examples
    --------
    >>> import json
    >>> c = Count(60)
    >>> c == 60, c + 1, json.dumps(c), c.partial, c.reason
    (True, 61, '60', False, None)
    """

    __slots__ = ()
    partial = False
    reason = None


class PartialCount(Count):
    """A count that stopped early: a lower bound on the number of matches.

    ``partial`` is True and ``reason`` says why: ``"timeout"`` (the ``timeout`` passed) or
    ``"interrupted"`` (Ctrl-C, where the caller asked for partial results by giving
    ``timeout=``); ``None`` where an engine used on its own did not say.

    Examples
    --------
    >>> c = PartialCount(12, "timeout")
    >>> c, c.partial, c.reason, c + 0
    (PartialCount(12, reason='timeout'), True, 'timeout', 12)
    """

    partial = True

    def __new__(cls, value, reason=None):
        self = super().__new__(cls, value)
        self.reason = reason
        return self

    def __getnewargs__(self):
        return (int(self), self.reason)

    def __repr__(self):
        return f"PartialCount({int(self)}, reason={self.reason!r})"

    __str__ = int.__repr__  # print() and f-strings show the number


class Budget:
    """Deadline, progress reporting and interruption for one search.

    Parameters
    ----------
    timeout : float or None
        Seconds from now (any real number, NumPy's included); None or ``inf`` for no deadline.
        NaN and negative values raise ValueError, other types TypeError.
    progress : bool or callable
        True shows a tqdm bar; a callable receives ``(found, done, total)`` after every slice:
        matches so far, then units of work finished out of ``total``. The total is fixed by the
        first report that gives one (the matching functions give the pattern's root
        candidates before the search starts) and ``done`` never decreases; an engine that
        counts its work in other units is scaled to it. A complete search ends with
        ``done == total``.

    Attributes
    ----------
    partial_ok : bool
        Whether the caller asked for partial results (the matching functions set it when
        ``timeout=`` is given). Ctrl-C then ends the search like the deadline does, with
        ``reason == "interrupted"``; otherwise :meth:`finish` lets KeyboardInterrupt through.
    """

    partial_ok = False

    def __init__(self, timeout=None, progress=False):
        if timeout is not None:
            # numbers.Real takes NumPy's numbers too; bool is an int but never a duration
            if isinstance(timeout, (bool, np.bool_)) or not isinstance(timeout, numbers.Real):
                raise TypeError(f"timeout must be a number of seconds or None, got {timeout!r}")
            try:
                timeout = float(timeout)
            except OverflowError:  # an int past float's range: no deadline this side of time
                timeout = math.inf
            # NaN compares False with everything, so a NaN deadline would never pass
            if math.isnan(timeout) or timeout < 0:
                raise ValueError(f"timeout must be a non-negative number of seconds, got "
                                 f"{timeout}")
            if math.isinf(timeout):
                timeout = None
        if not isinstance(progress, (bool, np.bool_)) and not callable(progress):
            raise TypeError(f"progress must be a bool or a callable, got {progress!r}")
        progress = progress if callable(progress) else bool(progress)
        self.start = time.monotonic()
        self.deadline = None if timeout is None else self.start + timeout
        self.partial = False
        self.reason = None
        self._cb = progress if callable(progress) else None
        self._bar = None
        if progress is True:
            from tqdm.auto import tqdm

            self._bar = tqdm(unit=" roots", desc="matching", leave=False)
        self.found = 0
        self.done = 0
        self.total = None

    @property
    def watched(self):
        """Whether a progress callback or bar reads the reports (engines skip working out
        ``done`` otherwise)."""
        return self._cb is not None or self._bar is not None

    def set_total(self, total):
        """Fix the amount of work up front (the first total given wins; None is ignored)."""
        if self.total is None and total:
            self.total = int(total)
            if self._bar is not None:
                self._bar.reset(total=self.total)

    def report(self, found=0, done=0, total=0):
        """Pass progress on to the callback and the bar: ``done`` out of ``total`` units of
        work, scaled to the fixed total, never decreasing."""
        self.found = found
        if not self.watched:
            return
        if total:
            self.set_total(total)
            if total != self.total:
                done = done * self.total // total
            done = min(max(done, self.done), self.total)
        else:
            done = self.done  # work in unknown units (an engine that gave no total)
        self.done = done
        if self._cb is not None:
            self._cb(found, done, self.total or 0)
        if self._bar is not None:
            self._bar.set_postfix(matches=found, refresh=False)
            self._bar.update(done - self._bar.n)

    def keep_going(self, found=0, done=0, total=0):
        """Report progress (:meth:`report`); False (and ``partial`` set) once the deadline has
        passed."""
        self.report(found, done, total)
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.stop("timeout")
            return False
        return True

    def stop(self, reason):
        """Mark the search as stopped early, for ``reason`` ("timeout" or "interrupted")."""
        self.partial = True
        self.reason = reason

    def finish(self, found=None):
        """End of the search: a complete one reports ``done == total``, the bar closes, and a
        search Ctrl-C cut where the caller did not ask for partial results
        (:attr:`partial_ok`) raises KeyboardInterrupt rather than passing a cut result off as
        complete."""
        if not self.partial and self.watched:
            total = self.total or 1
            self.report(self.found if found is None else found, total, total)
        self.close()
        if self.reason == "interrupted" and not self.partial_ok:
            raise KeyboardInterrupt

    def close(self):
        """Close the progress bar (if any)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None


class _Unlimited(Budget):
    """The budget engines run under when none is given, shared by every such search: it has
    no deadline or progress, and Ctrl-C reaches the caller (a mark left on a shared budget
    would stop every later search)."""

    def report(self, found=0, done=0, total=0):
        pass

    def stop(self, reason):
        raise KeyboardInterrupt


UNLIMITED = _Unlimited()


# -- the engine contract ----------------------------------------------------------------------
@dataclass(frozen=True)
class Capabilities:
    """What an engine can do: callers ask these, never an engine's name.

    Attributes
    ----------
    device : bool
        Searches on a CUDA device (needs one to be usable).
    max_pattern : int or None
        Largest pattern (nodes) the engine searches itself; None for no limit. Engines hand
        deeper patterns to the CPU engine, except on device-resident plans.
    prefix_tasks : bool
        Implements :class:`PrefixEngine`: counts and enumerates below given partial matches, so
        a search can be split into prefix tasks (Dask workers, a partitioned cross search).
    prefix_finds : bool
        Its ``iter_from`` runs the prefixes in parallel, so enumerations split by prefixes too.
    cut_part : bool
        Its prefix methods take ``cut_part``: skip matches lying inside one partition (PBE's
        DUPREMOVE), which the partitioned engine's cross search needs.
    device_plans : bool
        Searches plans whose data graph stays on the device (:class:`nx_gsm.DeviceGraph`).
    delta : bool
        Implements :class:`DeltaEngine` (batch-dynamic matching for ``IncrementalMatcher``)
        rather than :class:`Engine`.
    needs : tuple of str
        What must be installed or present for it to be usable (``"cuda"``, ``"pymetis"``).
    """

    device: bool = False
    max_pattern: int | None = None
    prefix_tasks: bool = False
    prefix_finds: bool = False
    cut_part: bool = False
    device_plans: bool = False
    delta: bool = False
    needs: tuple[str, ...] = ()


@runtime_checkable
class Engine(Protocol):
    """Searches a :class:`~nx_gsm.plan.planner.MatchPlan`; sees NumPy arrays, never NetworkX.

    Rows of the arrays ``iter_chunks`` yields hold data node ids by depth: column ``d`` maps
    pattern node ``plan.order[d]``. Counts are exact Python ints (a :class:`PartialCount` when
    the budget stopped the search).
    """

    name: str
    capabilities: Capabilities

    def count(self, plan, limit=None, budget=UNLIMITED) -> int: ...

    def iter_chunks(self, plan, chunk=4096, limit=None,
                    budget=UNLIMITED) -> Iterator[np.ndarray]: ...


@runtime_checkable
class PrefixEngine(Engine, Protocol):
    """An engine that starts from given partial matches (rows of depths ``0..L-1`` in
    ``plan.order``), each prefix's subtree searched once."""

    def count_from(self, plan, prefixes, limit=None, budget=UNLIMITED) -> int: ...

    def iter_from(self, plan, prefixes, chunk=4096, limit=None,
                  budget=UNLIMITED) -> Iterator[np.ndarray]: ...


@dataclass(frozen=True)
class DeltaProblem:
    """What a :class:`DeltaEngine` is given of an ``IncrementalMatcher``: the pattern with its
    label tables, the mode, and the matcher's data graph (engines never read the matcher).

    Attributes
    ----------
    pattern : GsmGraph
        The pattern as arrays; pattern ids ``0..k-1`` follow ``pattern.node_keys``.
    induced : bool
        Node-induced subgraph isomorphisms (True) or monomorphisms (False).
    directed : bool
        Whether the graphs are directed.
    node_match, edge_match : callable or None
        The user's match functions, as NetworkX's GraphMatcher takes them.
    node_data : tuple of dict
        Each pattern node's attribute dict, by pattern id (what ``node_match`` receives).
    edge_data : tuple
        The datum ``edge_match`` receives for each entry of ``pattern.indices`` (the out-CSR
        order): an attribute dict, or a multigraph's key-dict.
    loop_data : tuple
        Each pattern node's self-loop datum, None where it has no loop.
    edge_classes : numpy.ndarray
        ``(k, k)`` int64: the class of the datum of the pattern edge ``a -> b``, -1 where there
        is none; equal data share a class (all one class without ``edge_match``).
    loop_classes : numpy.ndarray
        ``(k,)`` int64: the class of each node's loop datum, in the same numbering.
    multiplicity : numpy.ndarray
        ``(k, k)`` int64: the number of pattern edges ``a -> b`` between distinct nodes.
    isolated : tuple of int
        The pattern ids of nodes without edges or loops.
    graph : callable
        ``graph()`` is the matcher's data graph as it is before the next batch (a NetworkX
        graph, read only). Reading it can cost a catch-up of waiting edits, so an engine
        calls it only where it reads the graph.
    pair : callable
        ``pair(u, v)``: the matcher's key of a data node pair (the keys of a batch's
        ``touched``, and what its ``changes`` and ``pair_states`` take).
    """

    pattern: Any
    induced: bool
    directed: bool
    node_match: Callable | None
    edge_match: Callable | None
    node_data: tuple
    edge_data: tuple
    loop_data: tuple
    edge_classes: np.ndarray
    loop_classes: np.ndarray
    multiplicity: np.ndarray
    isolated: tuple[int, ...]
    graph: Callable[[], Any]
    pair: Callable[[Any, Any], Any]

    @property
    def mode(self):
        """``"induced"`` or ``"mono"``, as the planner names the modes."""
        return "induced" if self.induced else "mono"


@runtime_checkable
class DeltaEngine(Protocol):
    """Batch-dynamic matching: the matches a batch of edge updates creates and destroys.

    An engine is made from a :class:`DeltaProblem` and reads nothing else of the matcher;
    ``delta`` takes one validated batch (before the matcher applies it) and returns the
    matches of the graph before and after it that use an updated item.
    """

    name: str
    capabilities: Capabilities

    def delta(self, batch, counts_only=False, during=None): ...
