"""What the GPU engines share: warp primitives (with simulator stand-ins), the feasibility test
of a candidate under NetworkX semantics, local candidate sets, kept kernel launches and host-side
transfers. The data graph and the plan on the device are :mod:`.residency`'s.

Every GPU engine (gmatch, gsi, geneva) checks candidates with :func:`feasible`, so all of them
have exactly the CPU engine's semantics (``nx_gsm.engines.cpu``).
"""

from __future__ import annotations

import contextlib
import ctypes
import logging
import os
import threading
import warnings

import numpy as np
from numba import cuda, int32, int64, uint32

from .device import is_simulator

log = logging.getLogger("nx_gsm.gpu")

_SIM = is_simulator()
# ---------------------------------------------------------------------------------------------
# warp primitives (real device) and their simulator stand-ins (the simulator has no warp
# intrinsics; there a per-warp threading.Barrier gives the same semantics for converged warps)
# ---------------------------------------------------------------------------------------------
if not _SIM:

    @cuda.jit(device=True)
    def wsync():
        cuda.syncwarp()

    @cuda.jit(device=True)
    def ballot(p):
        # ballot_sync returns int32: widen so lane 31's bit is not a sign bit
        return cuda.ballot_sync(0xFFFFFFFF, p) & 0xFFFFFFFF

    @cuda.jit(device=True)
    def pause(ns):
        cuda.nanosleep(uint32(ns))

else:  # pragma: no cover - exercised only with NUMBA_ENABLE_CUDASIM=1
    _sim_lock = threading.Lock()
    _sim_state = {}
    _SIM_TIMEOUT = float(__import__("os").environ.get("NX_GSM_SIM_TIMEOUT", "600"))

    def _sim_warp():
        t = threading.current_thread()
        key = (t.blockIdx.x, t.blockIdx.y, t.blockIdx.z, t.threadIdx.x // 32)
        with _sim_lock:
            st = _sim_state.get(key)
            if st is None:
                st = _sim_state[key] = (threading.Barrier(32, timeout=_SIM_TIMEOUT), [0] * 32)
        return st, t.threadIdx.x % 32

    def wsync():
        _sim_warp()[0][0].wait()

    def pause(ns):
        __import__("time").sleep(0.0005)

    def ballot(p):
        (bar, buf), lane = _sim_warp()
        bar.wait()
        buf[lane] = 1 if p else 0
        bar.wait()
        m = 0
        for i in range(32):
            if buf[i]:
                m |= 1 << i
        bar.wait()
        return m

    class _KernelCuda:
        """``numba.cuda`` as the device functions of this module see it under the simulator: the
        running kernel's fake module (atomics, fences) while a kernel runs, else ``numba.cuda``.
        The simulator swaps its fake module into the globals of a device function's module for
        each call and back on return; for a module other than the kernel's own, one thread's
        return can swap it back while another thread is still inside (``numba.cuda`` has no
        ``atomic`` outside a kernel). This module holds no global that is ``numba.cuda``, so
        nothing is swapped here."""

        def __init__(self, real):
            self._real = real

        def __getattr__(self, name):
            from numba.cuda.simulator.kernel import _get_kernel_context

            ctx = _get_kernel_context()
            return getattr(self._real if ctx is None else ctx, name)

    cuda = _KernelCuda(cuda)


def sim_reset():
    if _SIM:
        _sim_state.clear()


@contextlib.contextmanager
def quiet():
    """Silence Numba's low-occupancy warning for our launches (small frontiers are expected)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*will likely result in GPU under-utilization")
        yield


# ---------------------------------------------------------------------------------------------
# device functions shared by the BFS and DFS kernels
# ---------------------------------------------------------------------------------------------
@cuda.jit(device=True)
def ring_take(ctl, c_head, c_tail, c_busy, c_idle, ready, r_off, q_cap):
    """gMatch Sec. 4.3's global ring of donated work, the claiming side of GAMMA's ``_claim``
    (gmatch's ``_fetch`` uses a ticket queue instead: under thousands of idle warps this
    compare-and-swap on a shared head hands out about one entry per microsecond), run by lane 0 of an idle warp counted idle and not busy in
    ``ctl[c_idle]`` / ``ctl[c_busy]``. ``ctl[c_head]``/``ctl[c_tail]`` count claims and
    reservations; slot ``h % q_cap``'s ready word ``ready[r_off + h % q_cap]`` carries
    generation ``h + 1`` once its donor has written it. Returns the claimed ``h`` (the warp
    then counts busy, not idle), -1 if nothing was claimed now, -2 if the kernel's work is
    done: the ring was empty, then no warp was busy, then no reservation had been made since
    (every donation is reserved while its donor is busy, and a warp counts itself busy before
    it claims)."""
    h = cuda.atomic.add(ctl, c_head, 0)
    tl = cuda.atomic.add(ctl, c_tail, 0)
    if h < tl:
        cuda.atomic.add(ctl, c_busy, 1)
        cuda.threadfence()
        if cuda.atomic.cas(ctl, c_head, h, h + 1) == h:
            cuda.atomic.add(ctl, c_idle, -1)
            while cuda.atomic.add(ready, r_off + h % q_cap, 0) != h + 1:
                pause(32)
            cuda.threadfence()
            return h
        cuda.atomic.add(ctl, c_busy, -1)  # lost the race for this entry
        cuda.threadfence()
        return h * 0 - 1
    cuda.threadfence()
    if cuda.atomic.add(ctl, c_busy, 0) == 0:
        cuda.threadfence()
        if cuda.atomic.add(ctl, c_tail, 0) == tl:
            return h * 0 - 2
    return h * 0 - 1


@cuda.jit(device=True)
def _find(indptr, indices, x, y):
    """Binary search for ``y`` in the sorted row ``x`` (gMatch Sec. 5.2: log(d_max) per check)."""
    lo = indptr[x]
    hi = indptr[x + 1]
    while lo < hi:
        mid = (lo + hi) >> 1
        t = indices[mid]
        if t < y:
            lo = mid + 1
        elif t > y:
            hi = mid
        else:
            return mid
    return -1


@cuda.jit(device=True)
def _edge(indptr, indices, emult, adj, x, y):
    """(multiplicity of the data edge ``x -> y``, its out-CSR position or -1): one load of
    the adjacency bitmap where the engine gives one (a simple graph without edge labels:
    :func:`~nx_gsm.engines.gpu.formats.adjacency_bits`, no position needed), else the row's
    binary search."""
    if adj.shape[0] != 0:
        return int32((adj[x, y >> 3] >> (y & 7)) & 1), -1
    e = _find(indptr, indices, x, y)
    if e >= 0:
        return int32(emult[e]), e
    return int32(0), e


@cuda.jit(device=True)
def _pair_ok(c, x, v, chk_out, chk_in, chk_peo, chk_pei, indptr, indices, emult, adj, eclass,
             eok, has_el, mono, directed):
    """Check ``c`` of a depth between an earlier image ``x`` and candidate ``v``: the out- (and
    in-) multiplicity, at least the pattern's in mono mode, equal otherwise, and edge classes."""
    have, e = _edge(indptr, indices, emult, adj, x, v)
    need = chk_out[c]
    if mono != 0:
        if have < need:
            return False
    elif have != need:
        return False
    if has_el != 0 and need > 0:
        if eok[chk_peo[c], eclass[e]] == 0:
            return False
    if directed != 0:
        have, e = _edge(indptr, indices, emult, adj, v, x)
        need = chk_in[c]
        if mono != 0:
            if have < need:
                return False
        elif have != need:
            return False
        if has_el != 0 and need > 0:
            if eok[chk_pei[c], eclass[e]] == 0:
                return False
    return True


@cuda.jit(device=True)
def feasible(d, v, m, order, cand_bits, chk_ptr, chk_j, chk_out, chk_in, chk_peo, chk_pei,
             indptr, indices, emult, adj, eclass, eok, has_el, mono, directed):
    """Validity of task (M, u, v) (gMatch Sec. 4.1/5.2, Alg. 2 l.33-41), with NetworkX semantics.

    Label/candidate bit, injectivity scan, then per listed earlier depth the out- (and in-)
    multiplicities: at least the pattern's in mono mode, equal in induced mode; edge classes too.
    """
    return feasible_from(d, v, m, 1, order, cand_bits, chk_ptr, chk_j, chk_out, chk_in,
                         chk_peo, chk_pei, indptr, indices, emult, adj, eclass, eok, has_el,
                         mono, directed)


@cuda.jit(device=True)
def feasible_from(d, v, m, kind, order, cand_bits, chk_ptr, chk_j, chk_out, chk_in, chk_peo,
                  chk_pei, indptr, indices, emult, adj, eclass, eok, has_el, mono, directed):
    """:func:`feasible` for a candidate drawn from a local set of ``kind`` (see
    :func:`local_cands`). A candidate-space list (kind ``3 + j``) holds only candidates of the
    depth's pattern node joined to ``m[j]`` by an edge that fits the pattern's (multiplicity,
    label; :mod:`nx_gsm.plan.space`): the candidate bit is not read again and, on an
    undirected graph, nor is the check towards depth ``j`` -- on sparse patterns often the
    depth's only check, a binary search per candidate saved. A directed check also tests the
    other direction, which the list does not cover."""
    skip = -1
    if kind >= 3:
        if directed == 0:
            skip = kind - 3
    else:
        u = order[d]
        if (cand_bits[u, v >> 3] >> (v & 7)) & 1 == 0:
            return False
    for j in range(d):
        if m[j] == v:
            return False
    for c in range(chk_ptr[d], chk_ptr[d + 1]):
        j = chk_j[c]
        if j == skip:
            continue
        if not _pair_ok(c, m[j], v, chk_out, chk_in, chk_peo, chk_pei, indptr, indices, emult,
                        adj, eclass, eok, has_el, mono, directed):
            return False
    return True


@cuda.jit(device=True)
def dup_ok(d, v, m, cut_part, chk_ptr, chk_j, chk_out, chk_in):
    """PBE's DUPREMOVE (Alg. 3; the CPU twin is ``nx_gsm.engines.partitioned._dup_ok``): no
    pattern pair at depth ``d`` may map onto a cut pair (ends in different parts of
    ``cut_part``) whose key ``(min id, max id)`` is below the seed's, ``m[0], m[1]``.

    The pairs are the checks with a multiplicity in either direction; the other checks are
    induced mode's non-edges, whose images are no data edges and so never cut pairs.
    """
    a = m[0]
    b = m[1]
    if a > b:
        a, b = b, a
    pv = cut_part[v]
    for c in range(chk_ptr[d], chk_ptr[d + 1]):
        if chk_out[c] == 0 and chk_in[c] == 0:
            continue
        x = m[chk_j[c]]
        if cut_part[x] != pv:
            lo = x
            hi = v
            if v < x:
                lo = v
                hi = x
            if lo < a or (lo == a and hi < b):
                return False
    return True


@cuda.jit(device=True)
def local_cands(d, m, drv_ptr, drv_j, drv_dir, indptr, in_indptr, cand_ptr, order, crank,
                row_off, sptr, use_cs):
    """LC(M, u_d) = N(M(u*)) for the backward neighbour u* with the fewest neighbours (Sec. 4.1).

    Returns (start, length, kind): kind 0 = the plan's candidate list (depths without backward
    neighbours), 1 = an out-adjacency row, 2 = an in-adjacency row (directed graphs), ``3 + j``
    = with ``use_cs``, the candidate-space list of ``m[j]`` (:mod:`nx_gsm.plan.space`:
    N(M(u*)) already cut to u_d's candidates joined by a fitting edge; the shortest of the
    drivers' lists). On yeast's 71 labels a raw row is mostly other labels: the space's lists
    hold 4-22x fewer tasks over a whole 16-node search. A list's position
    is read from the space's ``rank`` (its candidate bits and the count below them), not
    from its k x n ``cidx``.
    """
    t0 = drv_ptr[d]
    t1 = drv_ptr[d + 1]
    if t0 == t1:
        return cand_ptr[d], cand_ptr[d + 1] - cand_ptr[d], 0
    best_lo = cand_ptr[0] * 0
    best_n = best_lo - 1
    kind = 1
    for t in range(t0, t1):
        j = drv_j[t]
        x = m[j]
        if use_cs != 0:
            w = order[j]
            bits = crank[w, x >> 5, 0]
            sh = x & 31
            a = best_lo * 0
            b = a
            if (bits >> sh) & 1 != 0:  # (a feasible row's images are candidates: always)
                r = row_off[t] + crank[w, x >> 5, 1] + cuda.popc(bits & ((int64(1) << sh) - 1))
                a = sptr[r]
                b = sptr[r + 1]
            kd = 3 + j
        elif drv_dir[t] == 0:
            a = indptr[x]
            b = indptr[x + 1]
            kd = 1
        else:
            a = in_indptr[x]
            b = in_indptr[x + 1]
            kd = 2
        if best_n < 0 or b - a < best_n:
            best_lo = a
            best_n = b - a
            kind = kd
    return best_lo, best_n, kind


@cuda.jit(device=True)
def cand_at(kind, idx, cand_flat, indices, in_indices, sval):
    """The candidate at position ``idx`` of a local candidate set of the given kind."""
    if kind == 0:
        return cand_flat[idx]
    if kind == 1:
        return indices[idx]
    if kind == 2:
        return in_indices[idx]
    return sval[idx]


# ---------------------------------------------------------------------------------------------
# host side
# ---------------------------------------------------------------------------------------------
def exact_sum(a):
    """Exact Python-int sum of a non-negative int64 NumPy array."""
    if type(a) is not np.ndarray or a.dtype != np.int64:
        a = np.asarray(a, dtype=np.int64)
    if a.size == 0:
        return 0
    if int(np.maximum.reduce(a)) <= (2**63 - 1) // a.size:  # no partial sum can overflow
        return int(np.add.reduce(a))
    hi = int((a >> 32).sum(dtype=np.int64))
    lo = int((a & 0xFFFFFFFF).sum(dtype=np.int64))
    return (hi << 32) + lo


def kernel_array(x):
    """A CuPy array as a Numba device array (zero-copy): launches then skip the
    ``__cuda_array_interface__`` import of every argument. Host arrays under the simulator.

    The import does not synchronise the stream CuPy exports (``sync=False``): CuPy's work and
    every kernel launch share the legacy default stream, which orders them already, and the
    synchronisation (Numba's default) made the host wait for whatever kernel was running -- in
    GAMMA, the before-side search while the host prepares the graph update, which then took
    the before-side kernel's time plus the host's part on every pattern and batch size)."""
    if _SIM:
        return x
    return cuda.as_cuda_array(x, sync=False)


class _NoKept(Exception):
    """A launch that the kept path does not take (Numba's own launch runs it)."""


_CU_LAUNCH = {}  # libcuda's launch entry points, loaded at the first kept launch of each


def _cu_launch(cooperative=False):
    """libcuda's ``cuLaunchKernel`` or, with ``cooperative``, ``cuLaunchCooperativeKernel``
    (the same arguments without ``extra``: every block of the grid resident at once, or the
    launch fails)."""
    f = _CU_LAUNCH.get(cooperative)
    if f is None:
        lib = ctypes.CDLL("libcuda.so.1")
        f = lib.cuLaunchCooperativeKernel if cooperative else lib.cuLaunchKernel
        f.argtypes = [ctypes.c_void_p] + [ctypes.c_uint] * 7 + [
            ctypes.c_void_p, ctypes.POINTER(ctypes.c_void_p)] + \
            ([] if cooperative else [ctypes.c_void_p])
        f.restype = ctypes.c_int
        _CU_LAUNCH[cooperative] = f
    return f


def _dim3(d):
    if type(d) is int:  # (every kept launch's block and most grids: ~6 us less a launch)
        return d, 1, 1
    d = tuple(d) if isinstance(d, tuple) else (int(d),)
    return tuple(int(x) for x in d) + (1,) * (3 - len(d))


class _KeptLaunch:
    """One call site's launches of a Numba kernel with the marshalled arguments kept: Numba's
    launch path types and marshals every argument again (an array is ~10 ctypes values), ~0.7 ms
    for GAMMA's 60 arguments (profiled on the card's host), where the same arrays come back
    launch after launch. The first launch goes through Numba (which compiles and makes the
    context current) and the compiled kernel for these argument types is kept; later launches
    re-marshal only the arrays that are not the same objects as last time (a CuPy or Numba
    array of the compiled dtype, rank and contiguity from its own pointer, shape and strides,
    where the site's first launch showed that to be Numba's marshalling; anything else after
    checking that its Numba type is the compiled one), set the scalars in place, and call the
    driver's ``cuLaunchKernel`` on the legacy default stream (Numba's and CuPy's stream here)
    with the kept parameter array. Anything unexpected -- another type, another scalar type, a
    kernel compiled for debugging -- goes through Numba's launch."""

    def __init__(self, dispatcher, args):
        self.d = dispatcher
        types_ = tuple(dispatcher.typeof_pyval(a) for a in args)
        k = dispatcher.overloads.get(types_)
        if k is None or getattr(k, "debug", False) or getattr(k, "cooperative", False):
            raise _NoKept
        h = k._codelibrary.get_cufunc().handle
        self.func = ctypes.c_void_p(h.value if isinstance(h, ctypes.c_void_p) else int(h))
        self.k, self.types = k, types_
        self.objs, self.cargs, self.off, self.fast = [], [], [], []
        n = 0
        for t, a in zip(types_, args):
            lst = self._marshal(t, a)
            fast = None
            if len(lst) == 1 and not hasattr(t, "ndim"):  # a scalar: kept by Python type
                if not isinstance(lst[0], (ctypes.c_int64, ctypes.c_int32, ctypes.c_uint64,
                                           ctypes.c_uint32, ctypes.c_uint8, ctypes.c_double,
                                           ctypes.c_float)):
                    raise _NoKept
                self.objs.append(type(a))
            elif hasattr(t, "ndim"):
                self.objs.append(a)
                fast = self._fast_spec(t, a, lst)
            else:
                raise _NoKept
            self.fast.append(fast)
            self.cargs.append(lst)
            self.off.append(n)
            n += len(lst)
        self.params = (ctypes.c_void_p * max(n, 1))()
        for i in range(len(args)):
            self._place(i)
        self._scalars = [i for i, o in enumerate(self.objs) if type(o) is type]
        self._arrays = [i for i, o in enumerate(self.objs) if type(o) is not type]

    def _marshal(self, t, a):
        """Numba's parameter values for argument ``a`` of type ``t``, as ctypes values (Numba
        gives ctypes values, NumPy scalars or Python ints -- an array's pointer-sized fields --
        depending on its version)."""
        lst, retr = [], []
        self.k._prepare_args(t, a, 0, retr, lst)
        if retr:  # (a host array copied in and back: not ours to keep)
            raise _NoKept
        out = []
        for x in lst:
            if isinstance(x, ctypes._SimpleCData):
                out.append(x)
            elif isinstance(x, np.generic) and x.dtype.kind in "iubf":
                ct = np.ctypeslib.as_ctypes_type(np.uint8 if x.dtype.kind == "b" else x.dtype)
                out.append(ct(x.item()))
            elif type(x) is int:
                out.append(ctypes.c_int64(x) if x < 1 << 63 else ctypes.c_uint64(x))
            else:
                raise _NoKept
        return out

    @staticmethod
    def _fast_values(a):
        """An array argument's parameter values in Numba's layout (meminfo, parent, items,
        item size, data pointer, shape, strides) straight from a CuPy or Numba device array,
        or None for anything else."""
        data = getattr(a, "data", None)
        if hasattr(data, "ptr"):  # CuPy
            ptr = int(data.ptr)
        elif hasattr(a, "device_ctypes_pointer"):  # Numba
            ptr = a.device_ctypes_pointer.value or 0
        else:
            return None
        c = ctypes.c_ssize_t
        return [ctypes.c_void_p(0), ctypes.c_void_p(0), c(a.size), c(a.dtype.itemsize),
                ctypes.c_void_p(ptr), *(c(x) for x in a.shape), *(c(x) for x in a.strides)]

    def _fast_spec(self, t, a, lst):
        """(dtype, ndim, contiguity flag or None) for an array position whose Numba
        marshalling :meth:`_fast_values` reproduces on this first argument, else None: a
        later array of that dtype, rank and contiguity then skips Numba's typing and
        marshalling (~0.1 ms an array on the card's host)."""
        got = self._fast_values(a)
        if got is None or len(got) != len(lst) or \
                any((x.value or 0) != (y.value or 0) for x, y in zip(got, lst)):
            return None
        flag = {"C": "C_CONTIGUOUS", "F": "F_CONTIGUOUS"}.get(getattr(t, "layout", None))
        if flag is None and getattr(t, "layout", None) != "A":
            return None
        return a.dtype, a.ndim, flag

    def _refresh(self, i, a):
        """New parameter values for array position ``i`` from ``a`` (fast where its
        dtype, rank and contiguity are the compiled type's), or None when ``a`` does not
        fit the compiled kernel."""
        spec = self.fast[i]
        if spec is not None and getattr(a, "dtype", None) == spec[0] and \
                getattr(a, "ndim", None) == spec[1]:
            try:
                ok = spec[2] is None or bool(a.flags[spec[2]])
            except (KeyError, TypeError, AttributeError):
                ok = False
            if ok:
                got = self._fast_values(a)
                if got is not None:
                    return got
        t = self.types[i]
        if self.d.typeof_pyval(a) != t:
            return None
        try:
            return self._marshal(t, a)
        except _NoKept:
            return None

    def _place(self, i):
        for j, c in enumerate(self.cargs[i]):
            self.params[self.off[i] + j] = ctypes.addressof(c)

    def launch(self, grid, block, args, cooperative=False):
        """Launch with ``args``; False (nothing launched) where the kept path does not apply."""
        objs, cargs = self.objs, self.cargs
        if len(args) != len(objs):
            return False
        # (two comprehensions, not one loop over ~45 arguments: ~1 us an argument less)
        if any([type(args[i]) is not objs[i] for i in self._scalars]):
            return False
        for i in self._scalars:
            cargs[i][0].value = args[i]
        for i in [i for i in self._arrays if args[i] is not objs[i]]:
            a = args[i]
            lst = self._refresh(i, a)
            if lst is None or len(lst) != len(cargs[i]):
                return False
            cargs[i], objs[i] = lst, a
            self._place(i)
        g, b = _dim3(grid), _dim3(block)
        extra = () if cooperative else (None,)
        rc = _cu_launch(cooperative)(self.func, *g, *b, 0, None, self.params, *extra)
        if rc:
            from numba.cuda.cudadrv import driver

            name = "cuLaunchCooperativeKernel" if cooperative else "cuLaunchKernel"
            raise driver.CudaAPIError(rc, f"{name} failed ({rc})")
        return True

    def max_blocks(self, block):
        """The most blocks of ``block`` threads that can all be resident at once (the driver's
        occupancy for this compiled kernel: the bound of a cooperative launch), asked once."""
        got = self.__dict__.setdefault("_max_blocks", {})
        if block not in got:
            got[block] = int(self.k.max_cooperative_grid_blocks(block))
        return got[block]


class Launches:
    """Kept launches by call site and kernel (see :class:`_KeptLaunch`): a site whose kernel
    is specialised by the pattern's size keeps one per specialisation. Numba's launch under
    the simulator or with ``NX_GSM_KEPT_LAUNCH=0``. ``kept`` counts the launches that took the
    kept path."""

    def __init__(self):
        self._sites = {}
        self.kept = 0

    def cooperative(self, site, dispatcher, block, *args):
        """The kept site for a cooperative launch of ``dispatcher`` (compiled for ``args``
        here, never launched through Numba, whose launch would not be cooperative), or None
        where kept launches are off or unavailable; launch it with
        ``site.launch(grid, block, args, cooperative=True)``."""
        if _SIM or os.environ.get("NX_GSM_KEPT_LAUNCH", "1") == "0":
            return None
        key = (site, id(dispatcher))
        s = self._sites.get(key)
        if s is None or s.d is not dispatcher:
            try:
                dispatcher.compile(tuple(dispatcher.typeof_pyval(a) for a in args))
                s = self._sites[key] = _KeptLaunch(dispatcher, args)
            except Exception as exc:  # (any Numba version without these internals)
                log.debug("no cooperative kept launch for %s: %r", site, exc)
                return None
        return s

    def __call__(self, site, dispatcher, grid, block, *args):
        key = (site, id(dispatcher))
        s = self._sites.get(key)
        if s is not None and s.d is dispatcher and s.launch(grid, block, args):
            self.kept += 1
            return
        with quiet():
            dispatcher[grid, block](*args)
        if _SIM or os.environ.get("NX_GSM_KEPT_LAUNCH", "1") == "0":
            return
        try:
            self._sites[key] = _KeptLaunch(dispatcher, args)
        except Exception as exc:  # (any Numba version without these internals: its own path)
            log.debug("kept launches off for %s: %r", site, exc)
            self._sites.pop(key, None)


def upload_packed(arrays, xp):
    """Copy host arrays to the device in one transfer (256-byte aligned views of one buffer)."""
    if _SIM:
        return list(arrays)
    offs, total = [], 0
    for x in arrays:
        total = (total + 255) // 256 * 256
        offs.append(total)
        total += x.nbytes
    try:
        buf = np.zeros(max(total, 1), dtype=np.uint8)
        for x, o in zip(arrays, offs):
            buf[o : o + x.nbytes] = x.reshape(-1).view(np.uint8)
        dbuf = xp.asarray(buf)
        return [kernel_array(xp.ndarray(x.shape, dtype=x.dtype, memptr=dbuf.data + o))
                for x, o in zip(arrays, offs)]
    except Exception as exc:  # pragma: no cover - an array module without memptr views
        log.debug("packed upload failed (%s); uploading array by array", exc)
        return [kernel_array(xp.asarray(x)) for x in arrays]


def upload_mixed(arrays, xp):
    """:func:`upload_packed` for the host arrays; device arrays are passed through."""
    host = [x for x in arrays if isinstance(x, np.ndarray)]
    up = iter(upload_packed(host, xp))
    return [next(up) if isinstance(x, np.ndarray) else kernel_array(x) for x in arrays]


def pow2(n):
    return 1 << max(int(n) - 1, 0).bit_length()


def to_host(a):
    if isinstance(a, np.ndarray):
        return a
    return a.get()


def host_copy(a):
    """``a`` on the host, sharing no memory with it (``a`` may be a kept array under the
    simulator, where device arrays are host arrays)."""
    return np.array(a) if isinstance(a, np.ndarray) else a.get()


@cuda.jit(device=True)
def feasible_range(d, v, m, moff, jlo, jhi, bits, order, cand_bits, chk_ptr, chk_j, chk_out,
                   chk_in, chk_peo, chk_pei, indptr, indices, emult, eclass, eok, has_el, mono,
                   directed):
    """:func:`feasible` restricted to the earlier depths ``jlo <= j < jhi`` (``m[j - moff]`` is
    the data node of depth ``j``); the candidate bit is tested only when ``bits`` is non-zero.

    ``feasible_range(d, v, m, 0, 0, d0, 1, ...)`` and ``feasible_range(d, v, t, d0, d0, d, 0,
    ...)`` together are exactly ``feasible(d, v, ...)``: engines that match several depths at once
    (GENEVA Sec. 5.2-5.4) test each candidate against the matched prefix once, then only the
    pairs among the new depths.
    """
    if bits != 0:
        u = order[d]
        if (cand_bits[u, v >> 3] >> (v & 7)) & 1 == 0:
            return False
    for j in range(jlo, jhi):
        if m[j - moff] == v:
            return False
    for c in range(chk_ptr[d], chk_ptr[d + 1]):
        j = chk_j[c]
        if j < jlo or j >= jhi:
            continue
        x = m[j - moff]
        # (GENEVA's graph has no adjacency bitmap: an empty one, the binary search)
        if not _pair_ok(c, x, v, chk_out, chk_in, chk_peo, chk_pei, indptr, indices, emult,
                        cand_bits[:0], eclass, eok, has_el, mono, directed):
            return False
    return True
