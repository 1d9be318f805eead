"""Where compiled kernels are cached: a per-user cache folder, never the installed package.

Numba's on-disk cache defaults to ``__pycache__`` beside the sources. Inside ``site-packages``
that leaves files pip's record does not list (a later ``pip install -e .`` leaves the folder
behind as an empty namespace package that shadows the real one), and the cache files are pickles
that get loaded, so they must live where only their owner writes. Every module that compiles with
``cache=True`` imports this module first: importing it points Numba at :func:`cache_dir`.

The folder is ``$NX_GSM_CACHE_DIR`` when set, else the platform's user cache folder
(``~/.cache/nx-gsm`` on Linux, via platformdirs). A ``NUMBA_CACHE_DIR`` the user set is respected.
Numba keys each entry by its source file's path, size and modification time, so entries of
another install or an older source are never loaded.
"""

from __future__ import annotations

import os
from pathlib import Path

import numba
import platformdirs

__all__ = ["cache_dir"]


def cache_dir() -> Path:
    """The folder holding nx-gsm's compiled-kernel caches (Numba's included).

    Returns
    -------
    pathlib.Path
        ``$NX_GSM_CACHE_DIR`` if set, else the user cache folder of the platform.
    """
    env = os.environ.get("NX_GSM_CACHE_DIR")
    if env:
        return Path(env).expanduser()
    return Path(platformdirs.user_cache_dir("nx-gsm", appauthor=False))


def numba_cache_dir() -> Path:
    """The folder Numba writes its cache to for nx-gsm's kernels."""
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"])
    return cache_dir() / "numba"


# Numba picks a function's cache locator when the decorator runs, so this has to happen before
# any @njit(cache=True) in the package executes: the kernel modules import this module first.
if not os.environ.get("NUMBA_CACHE_DIR"):
    numba.config.CACHE_DIR = str(numba_cache_dir())
