"""What every engine shares: the run budget (deadline, progress, Ctrl-C).

Engines run their searches in slices (a bounded number of search steps per compiled call) and
call :meth:`Budget.keep_going` between slices, so a deadline or Ctrl-C stops a search within a
fraction of a second wherever it is, and a progress bar can be refreshed.
"""

from __future__ import annotations

import math
import numbers
import time

import numpy as np

__all__ = ["Budget", "PartialCount"]


class PartialCount(int):
    """An int returned when a count stopped early (timeout or Ctrl-C): a lower bound.

    ``partial`` is True; complete counts are plain ints.
    """

    partial = True

    def __repr__(self):
        return f"PartialCount({int(self)})"


class Budget:
    """Deadline, progress reporting and interruption for one search.

    Parameters
    ----------
    timeout : float or None
        Seconds from now (any real number, NumPy's included); None or ``inf`` for no deadline.
        NaN and negative values raise ValueError, other types TypeError.
    progress : bool or callable
        True shows a tqdm bar (if tqdm is installed); a callable receives
        ``(found, tasks_done, tasks_total)`` after every slice.
    """

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
            try:
                from tqdm.auto import tqdm

                self._bar = tqdm(unit=" tasks", desc="matching", leave=False)
            except ImportError:
                self._bar = None

    def keep_going(self, found=0, done=0, total=0):
        """Report progress; False (and ``partial`` set) once the deadline has passed."""
        if self._cb is not None:
            self._cb(found, done, total)
        if self._bar is not None:
            if total and self._bar.total != total:
                self._bar.total = total
            self._bar.n = done
            self._bar.set_postfix(matches=found, refresh=False)
            self._bar.refresh()
        if self.deadline is not None and time.monotonic() >= self.deadline:
            self.stop("timeout")
            return False
        return True

    def stop(self, reason):
        self.partial = True
        self.reason = reason

    def close(self):
        if self._bar is not None:
            self._bar.close()
            self._bar = None


UNLIMITED = Budget()
