"""Where compiled kernels are cached: a per-user cache folder, never the installed package.

Numba's on-disk cache defaults to ``__pycache__`` beside the sources. Inside ``site-packages``
that leaves files pip's record does not list (a later ``pip install -e .`` leaves the folder
behind as an empty namespace package that shadows the real one), and the cache files are pickles
that get loaded, so they must live where only their owner writes. Every module that compiles with
``cache=True`` imports this module first: importing it points Numba at :func:`cache_dir`.

The folder is ``$NX_GSM_CACHE_DIR`` when set, else the platform's user cache folder
(``~/.cache/nx-gsm`` on Linux, via platformdirs); a ``NUMBA_CACHE_DIR`` the user set takes the
place of its ``numba`` folder.

Numba checks an entry against its own function's file alone (path, size, modification time),
while the code it holds compiles in what that function calls from other files: the parallel
driver's entry holds its own copy of the search from ``kernels.py``, so an edit there alone
left the driver running the old search. The CPU entries therefore live in a folder named by the
stamps of every source file of the package (:func:`source_stamp`): another install or any edit
gets a folder of its own, and the :data:`KEEP_FOLDERS` most recently made are kept.

GPU kernels
-----------
The GPU engines' kernels (``@cuda.jit``) go through :func:`cached_kernel`, which gives each
dispatcher numba-cuda's own disk cache (``CUDACache``: the compiled cubin for the device's
compute capability, loaded with the driver's module loader, ``cuModuleLoadData``, when a later
process launches the kernel) under :func:`gpu_cache_dir`, with the index key replaced by one of
ours. Of the two ways to launch every GPU kernel in a second process without compiling --
numba-cuda's cache, or a cubin store of our own loaded through the driver and launched by
``common._KeptLaunch`` -- this is the one that keeps a loaded kernel a Numba kernel: Numba's
launch, its argument marshalling, the kept launches (which take the ``CUfunction`` from the
loaded kernel's code library) and the register reports work on it unchanged, and the file
handling is Numba's, tested upstream. Stock ``cache=True`` does not do for these kernels:

* its key hashes a kernel's closure by pickling the cells, and the kernels that gmatch and GSI
  build per stack depth (``_make_dfs_kernel`` and friends) capture device functions, which
  pickle by value through cloudpickle -- bytes that depend on how the process was started,
  so a second process may miss (or, for two variants whose cells pickle alike, such as the
  fused kernel with and without its register cap, share an entry it must not);
* its freshness stamp is the kernel's own file, while the device functions it calls (the
  feasibility test, the warp primitives) and the constants it reads live in other files: an
  edit there would load a stale kernel;
* a corrupt entry makes the compile fail instead of being compiled again.

So the key here is: the argument types, numba-cuda's codegen tuple (the CUDA runtime version
and the device's compute capability), the numba-cuda version, the kernel's bytecode, its
closure read as values (numbers, strings and Numba types as they are, a device function as its
name, bytecode and own closure; anything else leaves the kernel uncached), its compile options
(``max_registers``), and a hash of every source file of ``nx_gsm.engines.gpu``, which is also
the index's freshness stamp. Writes are Numba's (a temporary file, then an atomic rename); an
index or entry that does not read back, or whose cubin the driver refuses, is ignored and the
kernel compiled and written again. Under the CUDA simulator nothing is cached.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import logging
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numba
import platformdirs

__all__ = ["cache_dir", "cached_kernel", "compile_like", "gpu_cache_dir", "gpu_kernel_stats",
           "notice_given", "numba_cache_dir", "prune", "source_hash", "source_stamp"]

log = logging.getLogger("nx_gsm.gpu")

# the GPU engines' sources: every file here is hashed into the GPU kernels' cache keys
GPU_SOURCES = Path(__file__).resolve().parent / "engines" / "gpu"


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


# CPU cache folders (one per source state) kept beside the current one
KEEP_FOLDERS = 8
PACKAGE = Path(__file__).resolve().parent


def _py_files(root):
    """The path of every ``.py`` file under ``root`` (``__pycache__`` left out), relative to
    ``root``, in order."""
    out = []
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        rel = os.path.relpath(folder, root)
        out += [name if rel == "." else os.path.join(rel, name) for name in files
                if name.endswith(".py")]
    return sorted(out)


@functools.cache
def source_stamp(root=PACKAGE):
    """A hash of the relative path, size and modification time of every ``.py`` file under
    ``root`` (the package): the name of the CPU kernels' cache folder. Stamps, not contents, as
    Numba's own check: a fresh process pays one stat call per file (about a millisecond), not
    a read of every source."""
    h = hashlib.sha256()
    for rel in _py_files(root):
        st = os.stat(os.path.join(root, rel))
        h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    return h.hexdigest()[:16]


def _numba_root() -> Path:
    if os.environ.get("NUMBA_CACHE_DIR"):
        return Path(os.environ["NUMBA_CACHE_DIR"])
    return cache_dir() / "numba"


def numba_cache_dir() -> Path:
    """The folder Numba writes nx-gsm's CPU kernels to: ``cpu-<source_stamp()>`` in the cache
    folder's ``numba``, or in a ``NUMBA_CACHE_DIR`` the user set."""
    return _numba_root() / f"cpu-{source_stamp()}"


def gpu_cache_dir() -> Path:
    """The folder of the GPU kernels' compiled code (``cuda`` beside the CPU folders; its
    entries are keyed by the GPU sources' hash, see below)."""
    return _numba_root() / "cuda"


def prune(root, keep=KEEP_FOLDERS):
    """Remove all but the ``keep`` most recently modified ``cpu-*`` folders in ``root``
    (best effort: a folder another process is using is compiled again there if it goes)."""
    try:
        folders = sorted((p for p in Path(root).glob("cpu-*") if p.is_dir()),
                         key=lambda p: p.stat().st_mtime, reverse=True)
    except OSError:
        return
    for p in folders[keep:]:
        shutil.rmtree(p, ignore_errors=True)


# Numba picks a function's cache locator when the decorator runs, so this has to happen before
# any @njit(cache=True) in the package executes: the kernel modules import this module first.
_folder = numba_cache_dir()
if not _folder.exists():
    try:
        _folder.mkdir(parents=True)
        prune(_folder.parent)
    except OSError:  # an unwritable cache folder: Numba then warns and compiles per process
        pass
numba.config.CACHE_DIR = str(_folder)


# -- GPU kernels: the key -----------------------------------------------------------------------
@functools.cache
def source_hash(root=GPU_SOURCES, extra=None):
    """SHA-256 over the relative path and bytes of every ``.py`` file under ``root`` (and of
    the file ``extra``, where one is given), in path order.

    Examples
    --------
    >>> from nx_gsm.kernel_cache import source_hash
    >>> len(source_hash())
    64
    """
    root = Path(root)
    h = hashlib.sha256()
    files = [(rel, root / rel) for rel in _py_files(root)]
    if extra is not None and Path(extra) not in [f for _, f in files]:
        files.append((Path(extra).name, Path(extra)))
    for rel, f in files:
        h.update(str(rel).encode())
        h.update(b"\0")
        h.update(f.read_bytes())
        h.update(b"\0")
    return h.hexdigest()


def _code_hash(fn):
    return hashlib.sha256(_code_bytes(fn.__code__)).hexdigest()


def _code_bytes(code):
    """A code object's bytecode and constants (nested code objects by their own bytes, not by
    their ``repr``, which holds an address)."""
    parts = [code.co_code]
    for c in code.co_consts:
        parts.append(_code_bytes(c) if hasattr(c, "co_code") else repr(c).encode())
    return b"\0".join(parts)


def value_key(x):
    """A closure cell's value as a key that is the same in every process: numbers, strings and
    tuples as they are, a Numba type by name, a device function as its module, name, code and
    own closure. Anything else raises TypeError (its kernel is then not cached).

    Examples
    --------
    >>> from nx_gsm.kernel_cache import value_key
    >>> value_key((16, True))
    ('tuple', ('int', 16), ('bool', True))
    """
    if x is None or isinstance(x, (bool, int, float, str, bytes)):
        return (type(x).__name__, x)
    if isinstance(x, (tuple, list)):
        return ("tuple", *(value_key(v) for v in x))
    if isinstance(x, dict):
        return ("dict", *((str(k), value_key(v)) for k, v in sorted(x.items())))
    py = getattr(x, "py_func", None)
    if py is not None:  # a device function the kernel calls (its own cache is not used)
        return ("function", py.__module__, py.__qualname__, _code_hash(py), closure_key(py))
    if any(c.__name__ == "Type" and "types" in c.__module__ for c in type(x).__mro__):
        return ("numba", type(x).__name__, str(x))  # a Numba type picked by a factory (int32)
    raise TypeError(f"no cache key for a {type(x).__name__} in a kernel's closure")


def closure_key(fn):
    """``(name, value_key(value))`` for every variable ``fn`` captures from its factory."""
    cells = fn.__closure__ or ()
    return tuple((name, value_key(c.cell_contents))
                 for name, c in zip(fn.__code__.co_freevars, cells))


def options_key(options):
    """The compile options that change the code (``max_registers``, ``fastmath``, ...)."""
    skip = ("extensions", "link")  # (lists of objects; nx-gsm passes none)
    out = []
    for k, v in sorted(options.items()):
        if k in skip:
            if v:
                raise TypeError(f"no cache key for the compile option {k}={v!r}")
            continue
        out.append((k, value_key(v)))
    return tuple(out)


def _numba_cuda_version():
    try:
        return importlib.metadata.version("numba-cuda")
    except importlib.metadata.PackageNotFoundError:  # Numba's own (older) CUDA target
        return "numba-" + numba.__version__


def kernel_key(py_func, options):
    """What names one kernel variant apart from the argument types and the device: its code,
    its closure, its compile options and the GPU sources' hash (raises TypeError where the
    closure or an option has no key)."""
    return (_numba_cuda_version(), _code_hash(py_func), closure_key(py_func),
            options_key(options), source_hash(GPU_SOURCES, _source_file(py_func)))


def _source_file(py_func):
    """The kernel's file, where it is not under the GPU sources (a test's kernel)."""
    try:
        f = Path(py_func.__code__.co_filename).resolve()
    except OSError:
        return None
    return None if f.is_relative_to(GPU_SOURCES) else str(f)


# -- GPU kernels: the store ---------------------------------------------------------------------
class _Locator:
    """numba-cuda's cache locator, pinned to :func:`gpu_cache_dir` (Numba's own would follow
    ``numba.config.CACHE_DIR``, which Numba resets when it reloads its configuration): one
    subfolder per source folder, so two installs do not overwrite each other's index, and the
    GPU sources' hash as the freshness stamp (an entry of other sources is never read)."""

    def __init__(self, py_func, py_file):
        self._lineno = py_func.__code__.co_firstlineno
        folder = os.path.dirname(os.path.abspath(py_file))
        sub = os.path.basename(folder) + "_" + hashlib.sha1(folder.encode()).hexdigest()[:16]
        self._cache_path = str(gpu_cache_dir() / sub)
        self._stamp = source_hash(GPU_SOURCES, _source_file(py_func))

    @classmethod
    def from_function(cls, py_func, py_file):
        return cls(py_func, py_file)

    def ensure_cache_path(self):
        os.makedirs(self._cache_path, exist_ok=True)
        tempfile.TemporaryFile(dir=self._cache_path).close()  # writable, or OSError

    def get_cache_path(self):
        return self._cache_path

    def get_source_stamp(self):
        return self._stamp

    def get_disambiguator(self):
        return str(self._lineno)


@functools.cache
def _classes():
    """numba-cuda's cache classes with nx-gsm's key, locator and error handling (built on
    first use: importing :mod:`numba.cuda` is for GPU modules only)."""
    from numba.cuda.dispatcher import CUDACache, CUDACacheImpl

    class Impl(CUDACacheImpl):
        _locator_classes = (_Locator,)

    class Cache(CUDACache):
        _impl_class = Impl

        def __init__(self, py_func, key):
            self._key = key
            super().__init__(py_func)
            file = self._cache_file
            file.__class__ = _robust_file(type(file))

        def _index_key(self, sig, codegen):
            key = (sig, codegen.magic_tuple(), self._key)
            lc = getattr(self, "_launch_config_key", None)
            return key if lc is None else key + (("launch_config", lc),)

        def load_overload(self, sig, target_context):
            try:
                kernel = super().load_overload(sig, target_context)
                if kernel is not None:
                    kernel.bind()  # the driver loads the cubin here: a bad one is compiled again
                    return kernel
            except Exception as exc:  # a corrupt entry, a cubin the driver refuses: compile
                log.debug("GPU kernel cache: entry of %s ignored (%r)", self._name, exc)
            _notice()  # (the dispatcher compiles next)
            return None

        def save_overload(self, sig, data):
            try:
                super().save_overload(sig, data)
            except Exception as exc:  # a read-only folder, a full disk: compiled, not kept
                log.debug("GPU kernel cache: %s not saved (%r)", self._name, exc)

    return Cache


@functools.cache
def _robust_file(base):
    """Numba's index file, reading a corrupt index as an empty one (Numba raises, and the
    entry would then never be written again)."""

    class RobustFile(base):
        def _load_index(self):
            try:
                return super()._load_index()
            except Exception as exc:
                log.debug("GPU kernel cache: index %s ignored (%r)", self._index_path, exc)
                return {}

    return RobustFile


_CACHED = []  # (name, dispatcher) of every kernel given the cache, for the statistics
_NOTICE = ("nx-gsm: compiling GPU kernels once (seconds each; `nx-gsm warmup` compiles them all); "
           "later runs load them from {}")
_told = False


def _notice():
    """The one-time-cost line, on stderr, at the first GPU kernel a process compiles."""
    global _told
    if not _told:
        _told = True
        print(_NOTICE.format(gpu_cache_dir()), file=sys.stderr, flush=True)


def notice_given():
    """No one-time-cost line for GPU kernels compiled from now on in this process (warmup
    shows a progress bar instead)."""
    global _told
    _told = True


def cached_kernel(dispatcher):
    """Give a ``@cuda.jit`` kernel nx-gsm's disk cache (see the module's notes); returns it.

    Used as the outer decorator of every GPU kernel, module-level or made by a factory. Under
    the CUDA simulator (whose kernels are not Numba dispatchers), or where the kernel's closure
    has no key, the kernel is returned as it is: it compiles in each process as before.

    Examples
    --------
    >>> from nx_gsm.kernel_cache import cached_kernel
    >>> cached_kernel(len) is len  # not a CUDA dispatcher: returned unchanged
    True
    """
    if not hasattr(dispatcher, "enable_caching") or not hasattr(dispatcher, "targetoptions"):
        return dispatcher
    py_func = dispatcher.py_func
    try:
        key = kernel_key(py_func, dispatcher.targetoptions)
        dispatcher._cache = _classes()(py_func, key)
    except Exception as exc:  # no key, no writable folder, another numba-cuda: no disk cache
        log.debug("GPU kernel cache off for %s: %r", py_func.__qualname__, exc)
        return dispatcher
    _CACHED.append((f"{py_func.__module__}.{py_func.__qualname__}", dispatcher))
    return dispatcher


def compile_like(dispatchers):
    """Compile, on each of ``dispatchers``, every argument-type signature any of them has
    compiled (the variants of one kernel, which take the same arguments). Loads from the disk
    cache where it holds them. Returns how many signatures were compiled or loaded."""
    dispatchers = list(dispatchers)
    sigs = []
    for d in dispatchers:
        sigs += [s for s in d.overloads if s not in sigs]
    done = 0
    for d in dispatchers:
        for s in sigs:
            if s not in d.overloads:
                d.compile(s)
                done += 1
    return done


def gpu_kernel_stats():
    """What the cached GPU kernels did in this process.

    Returns
    -------
    dict
        ``kernels``: dispatchers with the cache; ``compiled``: signatures compiled here (not in
        the cache); ``loaded``: signatures loaded from it; ``by_kernel``: ``{name: [loaded,
        compiled]}`` for the kernels that did either.
    """
    by = {}
    for name, d in _CACHED:
        st = d.stats
        hit, miss = sum(st.cache_hits.values()), sum(st.cache_misses.values())
        if hit or miss:
            got = by.setdefault(name, [0, 0])
            got[0] += hit
            got[1] += miss
    return {"kernels": len(_CACHED), "compiled": sum(v[1] for v in by.values()),
            "loaded": sum(v[0] for v in by.values()), "by_kernel": by}
