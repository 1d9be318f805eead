"""The GPU kernels' disk cache (:func:`nx_gsm.kernel_cache.cached_kernel`) without a device:
its key, its files, and what it does with entries it cannot use.

Nothing here compiles a kernel (no GPU): the key is read from the cache object, and entries are
written and read back through Numba's cache machinery with stand-ins for the compiled kernel
(what Numba pickles of it, and what it rebuilds). The card tests
(``tests/test_card_kernel_cache.py``) show that a second process launches without compiling.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest
from numba import cuda, int32, int64

from nx_gsm import kernel_cache

SIG = (numba.types.int32[::1], numba.types.int64)
SIG2 = (numba.types.int64[::1], numba.types.int64)


class _Codegen:
    def __init__(self, cc=(9, 0)):
        self.cc = cc

    def magic_tuple(self):
        return ((13, 0), self.cc)


class _Context:
    def __init__(self, cc=(9, 0)):
        self._codegen = _Codegen(cc)

    def refresh(self):
        pass

    def codegen(self):
        return self._codegen


class _Compiled:
    """A compiled kernel as the cache sees it: the device it was compiled for (``codegen``)
    and what is pickled of it (``_Kernel._reduce_states``)."""

    def __init__(self, cubin, cc=(9, 0)):
        self.cubin = cubin
        self.codegen = _Codegen(cc)

    def _reduce_states(self):
        return {"cubin": self.cubin}


class _Unpicklable:
    def __reduce__(self):
        raise RuntimeError("cannot pickle this")


class _Rebuilt:
    """The kernel Numba rebuilds from an entry; ``bind`` is where the driver loads the cubin."""

    def __init__(self, cubin):
        self.cubin = cubin
        self.bound = False

    def bind(self):
        if self.cubin == b"refused":
            raise RuntimeError("CUDA_ERROR_INVALID_IMAGE")
        self.bound = True


@pytest.fixture
def cache_env(tmp_path, monkeypatch):
    """An empty cache folder, the one-time line not yet shown, and Numba's rebuild of a
    kernel replaced by :class:`_Rebuilt`."""
    monkeypatch.setenv("NX_GSM_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    monkeypatch.setattr(kernel_cache, "_told", False)
    from numba.cuda import dispatcher

    monkeypatch.setattr(dispatcher._Kernel, "_rebuild",
                        classmethod(lambda cls, cubin: _Rebuilt(cubin)))
    return tmp_path


def _factory(K, wide, regs=0):
    """A kernel built per variant, as gmatch's are: a device function capturing the stack
    depth and an index type, called by a kernel capturing that function."""
    IDX = int64 if wide else int32

    @cuda.jit(device=True)
    def run(a):
        s = cuda.local.array(K, IDX)
        s[0] = a[0]
        a[0] = s[0] + K

    kw = {"max_registers": regs} if regs else {}

    @kernel_cache.cached_kernel
    @cuda.jit(**kw)
    def kern(a, n):
        run(a)

    return kern


def _key(disp, sig=SIG, cc=(9, 0)):
    return disp._cache._index_key(sig, _Codegen(cc))


def _files(folder):
    return sorted(p.name for p in folder.rglob("*") if p.is_file())


# -- the key ------------------------------------------------------------------------------------
def test_every_variant_argument_type_and_device_has_its_own_key(cache_env):
    a = _factory(8, False)
    assert _key(a) == _key(_factory(8, False))  # the same variant, built again
    others = [_key(_factory(8, True)), _key(_factory(16, False)), _key(_factory(8, False, 64)),
              _key(a, sig=SIG2), _key(a, cc=(8, 0))]
    assert len({_key(a), *others}) == 1 + len(others)


def test_the_key_follows_the_sources_hash(cache_env, monkeypatch):
    before = _key(_factory(8, False))
    monkeypatch.setattr(kernel_cache, "source_hash", lambda root, extra=None: "edited")
    assert _key(_factory(8, False)) != before


def test_the_key_is_the_same_in_another_process(tmp_path):
    # a kernel's key holds values, not pickled closures: another process, however it was
    # started, computes the same key for the same variant
    mod = tmp_path / "kc_variant.py"
    mod.write_text(textwrap.dedent('''
        from numba import cuda, int32, int64
        from nx_gsm import kernel_cache

        def make(K, wide):
            IDX = int64 if wide else int32

            @cuda.jit(device=True)
            def run(a):
                s = cuda.local.array(K, IDX)
                a[0] = s[0] + K

            @kernel_cache.cached_kernel
            @cuda.jit
            def kern(a):
                run(a)
            return kern

        def key(K, wide):
            return repr(make(K, wide)._cache._key)
    '''))
    code = ("import importlib.util, json, sys; s = importlib.util.spec_from_file_location("
            f"'kc_variant', {str(mod)!r}); m = importlib.util.module_from_spec(s); "
            "s.loader.exec_module(m); print(json.dumps([m.key(8, False), m.key(16, True)]))")
    env = {**os.environ, "NX_GSM_CACHE_DIR": str(tmp_path / "c")}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120, check=True)
    spec = importlib.util.spec_from_file_location("kc_variant", mod)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    assert json.loads(out.stdout) == [m.key(8, False), m.key(16, True)]


def test_source_hash_reads_contents_not_timestamps(tmp_path):
    root = tmp_path / "src"
    (root / "sub").mkdir(parents=True)
    (root / "a.py").write_text("A = 1\n")
    (root / "sub" / "b.py").write_text("B = 2\n")
    first = kernel_cache.source_hash.__wrapped__(root)
    os.utime(root / "a.py", (1, 1))
    assert kernel_cache.source_hash.__wrapped__(root) == first
    (root / "sub" / "b.py").write_text("B = 3\n")
    edited = kernel_cache.source_hash.__wrapped__(root)
    (root / "c.py").write_text("")
    added = kernel_cache.source_hash.__wrapped__(root)
    assert len({first, edited, added}) == 3


def test_a_closure_without_a_value_key_leaves_the_kernel_uncached(cache_env):
    table = np.arange(4)

    @cuda.jit
    def kern(a):
        a[0] = table[1]

    assert kernel_cache.cached_kernel(kern) is kern
    assert type(kern._cache).__name__ == "NullCache"


# -- the files ----------------------------------------------------------------------------------
def test_an_entry_is_written_to_the_user_cache_folder_and_read_back(cache_env, capsys):
    disp = _factory(8, False)
    cache = disp._cache
    assert cache.load_overload(SIG, _Context()) is None  # nothing there yet
    cache.save_overload(SIG, _Compiled(b"cubin-8"))
    got = cache.load_overload(SIG, _Context())
    assert isinstance(got, _Rebuilt) and got.cubin == b"cubin-8" and got.bound
    folder = kernel_cache.gpu_cache_dir()
    assert folder.is_relative_to(cache_env) and folder.name == "cuda"
    names = _files(folder)
    assert any(n.endswith(".nbi") for n in names) and any(n.endswith(".nbc") for n in names)
    assert not any(".tmp." in n for n in names)
    # another device, another variant: not this entry
    assert cache.load_overload(SIG, _Context(cc=(8, 0))) is None
    assert _factory(8, True)._cache.load_overload(SIG, _Context()) is None
    # the one-time line, once a process, at the first compile
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "compiling GPU kernels once" in err[0] and str(folder) in err[0]


def test_a_failed_write_leaves_the_previous_entry_and_no_partial_file(cache_env):
    cache = _factory(8, False)._cache
    cache.save_overload(SIG, _Compiled(b"good"))
    cache.save_overload(SIG, _Compiled(_Unpicklable()))  # fails while writing: not raised
    assert cache.load_overload(SIG, _Context()).cubin == b"good"
    assert not any(".tmp." in n for n in _files(kernel_cache.gpu_cache_dir()))


@pytest.mark.parametrize("which", ["index", "data"])
def test_a_corrupt_file_is_ignored_then_written_again(cache_env, which):
    cache = _factory(8, False)._cache
    cache.save_overload(SIG, _Compiled(b"good"))
    ext = ".nbi" if which == "index" else ".nbc"
    [path] = [p for p in kernel_cache.gpu_cache_dir().rglob("*" + ext)]
    path.write_bytes(b"\x80\x05garbage")
    assert cache.load_overload(SIG, _Context()) is None  # compiled again, not an error
    cache.save_overload(SIG, _Compiled(b"again"))
    assert cache.load_overload(SIG, _Context()).cubin == b"again"


def test_a_cubin_the_driver_refuses_is_compiled_again(cache_env):
    cache = _factory(8, False)._cache
    cache.save_overload(SIG, _Compiled(b"refused"))
    assert cache.load_overload(SIG, _Context()) is None


def test_entries_of_other_sources_are_not_read(cache_env, monkeypatch):
    _factory(8, False)._cache.save_overload(SIG, _Compiled(b"old sources"))
    monkeypatch.setattr(kernel_cache, "source_hash", lambda root, extra=None: "upgraded")
    fresh = _factory(8, False)._cache
    assert fresh.load_overload(SIG, _Context()) is None
    fresh.save_overload(SIG, _Compiled(b"new sources"))
    assert fresh.load_overload(SIG, _Context()).cubin == b"new sources"


# -- the engines' kernels -----------------------------------------------------------------------
def test_compile_like_compiles_each_variant_for_every_signature_seen():
    class Disp:
        def __init__(self, *sigs):
            self.overloads = dict.fromkeys(sigs)
            self.compiled = []

        def compile(self, sig):
            self.compiled.append(sig)
            self.overloads[sig] = True

    a, b, c = Disp(SIG), Disp(), Disp(SIG2)
    assert kernel_cache.compile_like([a, b, c]) == 4
    assert a.compiled == [SIG2] and b.compiled == [SIG, SIG2] and c.compiled == [SIG]
    assert kernel_cache.compile_like([a, b, c]) == 0


ENGINE_KERNELS = r"""
import json
from numba.cuda.dispatcher import CUDADispatcher
from nx_gsm import kernel_cache
from nx_gsm.engines.gpu import geneva, gsi_kernels
from nx_gsm.engines.gpu.gamma import kernels as gamma, pma
from nx_gsm.engines.gpu.gmatch import kernels as gmatch
from nx_gsm.engines.gpu.gmatch.config import BUCKETS, FUSED_REGS

made = [gmatch.dfs_kernel(K, W, w) for K, W in BUCKETS for w in (False, True)]
made += [gmatch.fused_kernel(K, W, w, FUSED_REGS.get(K, 0)) for K, W in BUCKETS
         for w in (False, True)]
made += [k for K in gsi_kernels.JOIN_BUCKETS for k in gsi_kernels.join_kernels(K, 8)]
module = [v for m in (geneva, gsi_kernels, gamma, pma, gmatch) for v in vars(m).values()
          if isinstance(v, CUDADispatcher) and not v.targetoptions.get("device")]
kernels = made + module
print(json.dumps({
    "kernels": len(kernels),
    "module": sorted(k.py_func.__qualname__ for k in module),
    "uncached": [k.py_func.__qualname__ for k in kernels
                 if type(k._cache).__module__ != "nx_gsm.kernel_cache"],
    "keys": len({repr(k._cache._key) for k in made}),
    "made": len(made),
    "paths": sorted({k._cache.cache_path for k in kernels}),
    "registered": kernel_cache.gpu_kernel_stats()["kernels"],
}))
"""


def _child(code, tmp_path, **env):
    base = {k: v for k, v in os.environ.items()
            if k not in ("NUMBA_CACHE_DIR", "NX_GSM_CACHE_DIR", "NUMBA_ENABLE_CUDASIM")}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300, env={**base, "NX_GSM_CACHE_DIR": str(tmp_path), **env})
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_every_engine_kernel_has_the_cache_and_each_variant_its_key(tmp_path):
    got = _child(ENGINE_KERNELS, tmp_path)
    assert got["uncached"] == []
    assert {"bfs_level_kernel", "signature_kernel", "link_kernel", "delta_kernel",
            "_size_kernel", "_filter_kernel", "_extend_kernel", "_pma_find",
            "_pma_merge"} <= set(got["module"])
    assert got["keys"] == got["made"] == 2 * 6 + 2 * 4
    assert got["registered"] == got["kernels"]
    assert got["paths"] and all(p.startswith(str(tmp_path / "numba" / "cuda"))
                                for p in got["paths"])


def test_nothing_is_cached_under_the_simulator(tmp_path):
    code = ("import json; from nx_gsm import kernel_cache; "
            "from nx_gsm.engines.gpu import gsi_kernels, geneva; "
            "from nx_gsm.engines.gpu.gamma import kernels as gamma; "
            "from nx_gsm.engines.gpu.gmatch import kernels as gmatch; "
            "gmatch.dfs_kernel(8, 8, False); gsi_kernels.join_kernels(8, 2); "
            "print(json.dumps([gmatch.compile_variants(), gsi_kernels.compile_variants(), "
            "kernel_cache.gpu_kernel_stats()['kernels']]))")
    assert _child(code, tmp_path, NUMBA_ENABLE_CUDASIM="1") == [0, 0, 0]
    assert not (tmp_path / "numba" / "cuda").exists()


def test_gsi_builds_join_kernels_for_the_lengths_warmup_compiles():
    from nx_gsm.engines.gpu import gsi, gsi_kernels

    assert gsi.JOIN_BUCKETS is gsi_kernels.JOIN_BUCKETS
    assert max(gsi_kernels.JOIN_BUCKETS) == gsi.KMAX_LIMIT
