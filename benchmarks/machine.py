"""Machine, software and repository facts stored in every benchmark record."""

from __future__ import annotations

import datetime
import os
import platform
import shutil
import subprocess
import sys
from importlib import metadata
from pathlib import Path

__all__ = ["machine_info", "source_fingerprint"]

REPO = Path(__file__).resolve().parents[1]
PACKAGES = ("numpy", "numba", "networkx", "nx-gsm", "rustworkx", "igraph", "tqdm")


def _cpu_model():
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _git(*args):
    try:
        out = subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True,
                             timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def _gpus():
    if not shutil.which("nvidia-smi"):
        return []
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version",
                              "--format=csv,noheader"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return []
    return [line.strip() for line in out.stdout.splitlines() if line.strip()]


def _version(pkg):
    try:
        return metadata.version(pkg)
    except metadata.PackageNotFoundError:
        return None


def source_fingerprint(package="nx_gsm"):
    """``{"path", "sha1", "files"}`` of a package's ``.py`` sources, found without importing it.

    Stored at the start of a run and by every engine worker when it loads, so a record shows when
    the engine's code changed under a running benchmark (a checkout others are committing to).
    """
    import hashlib
    import importlib.util

    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    if spec is None or not spec.origin:
        return None
    root = Path(spec.origin).parent
    h = hashlib.sha1()
    files = sorted(root.rglob("*.py"))
    for f in files:
        h.update(str(f.relative_to(root)).encode())
        h.update(f.read_bytes())
    return {"path": portable(root), "sha1": h.hexdigest(), "files": len(files)}


def portable(path):
    """``path`` as a record keeps it: relative to the checkout when inside it, else its last
    component (records hold no machine paths)."""
    p = Path(path)
    if not p.is_absolute():
        return str(path)
    p = p.resolve()
    return str(p.relative_to(REPO)) if p.is_relative_to(REPO) else p.name


def machine_info():
    """A JSON-able dict: CPU, cores, memory, OS, Python and package versions, git state, date."""
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = os.cpu_count()
    mem = None
    try:
        mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        pass
    status = _git("status", "--porcelain", "--untracked-files=no")
    numba_threads = None
    try:
        import numba

        numba_threads = numba.config.NUMBA_NUM_THREADS
    except Exception:  # numba missing: the engines will say so
        pass
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "hostname": platform.node(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": usable,
        "memory_bytes": mem,
        "gpus": _gpus(),
        "os": platform.platform(),
        "python": sys.version.split()[0],
        "python_implementation": platform.python_implementation(),
        "versions": {p: _version(p) for p in PACKAGES},
        "numba_num_threads": numba_threads,
        "git_commit": _git("rev-parse", "HEAD"),
        "git_dirty": bool(status) if status is not None else None,
        "git_branch": _git("rev-parse", "--abbrev-ref", "HEAD"),
        "nx_gsm_source": source_fingerprint(),
    }
