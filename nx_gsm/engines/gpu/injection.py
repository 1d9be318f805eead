"""Named fault sites and the test hook that arms them.

The engines call :func:`point` where they allocate device memory, launch kernels or wait for
them; a test arms a site with :func:`inject` and the next pass raises the injected fault. This
module imports nothing of the package, so the device layer (``common``) and the recovery policy
(:mod:`.faults`, which re-exports these names) both use it without importing each other.
"""

from __future__ import annotations

import contextlib
import threading

__all__ = ["SITES", "InjectedOutOfMemory", "InjectedLaunchError", "inject", "point", "hits"]

#: where the engines allocate device memory, launch kernels or wait for them ("collect": GAMMA's
#: wait for a search, which may come after the matcher updated its own graph)
SITES = ("graph_upload", "plan_upload", "bfs", "dfs_buffers", "output", "launch", "collect")


class InjectedOutOfMemory(MemoryError):
    """Raised by :func:`point` at an armed site: stands for a device allocation failure."""


class InjectedLaunchError(RuntimeError):
    """Raised by :func:`point` at an armed site: stands for a failed kernel launch."""


_lock = threading.Lock()
_armed = {}  # site -> [kind, shots left, hits to skip first]
hits = {}  # site -> times the site was reached (so a test can tell a fault really fired)


@contextlib.contextmanager
def inject(site, kind="oom", times=1, skip=0):
    """Arm ``site`` to fail ``times`` times (after ``skip`` passes) while the block runs.

    ``kind`` is ``"oom"`` (:class:`InjectedOutOfMemory`) or ``"launch"``
    (:class:`InjectedLaunchError`). ``times=None`` fails every time.
    """
    if site not in SITES:
        raise ValueError(f"unknown fault site {site!r}; sites: {', '.join(SITES)}")
    if kind not in ("oom", "launch"):
        raise ValueError(f"unknown fault kind {kind!r}; use 'oom' or 'launch'")
    with _lock:
        _armed[site] = [kind, times, int(skip)]
        hits[site] = 0
    try:
        yield
    finally:
        with _lock:
            _armed.pop(site, None)


def point(site):
    """Mark a fault site; raises the injected fault when the site is armed (cheap otherwise)."""
    if not _armed:
        return
    with _lock:
        hits[site] = hits.get(site, 0) + 1
        arm = _armed.get(site)
        if arm is None:
            return
        if arm[2] > 0:
            arm[2] -= 1
            return
        if arm[1] is not None:
            if arm[1] <= 0:
                return
            arm[1] -= 1
        kind = arm[0]
    if kind == "oom":
        raise InjectedOutOfMemory(f"injected device out-of-memory at {site}")
    raise InjectedLaunchError(f"injected kernel launch failure at {site}")
