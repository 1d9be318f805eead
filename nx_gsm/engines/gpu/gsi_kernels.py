"""GSI's device code: the signature filter (GSI Sec. 3.1, exact form), the bound and join
kernels of a BFS level with Prealloc-Combine and the write cache (GSI Sec. 5, SGSI Sec. 7
tiers), and the link kernel of the column-wise table (SGSI Sec. 6.2)."""

from __future__ import annotations

from numba import cuda, int32, int64

from ...kernel_cache import cached_kernel, compile_like
from .common import ballot, feasible, wsync
from .device import is_simulator

__all__ = ["JOIN_BUCKETS", "JOIN_WARPS", "compile_variants", "join_kernels", "link_kernel",
           "signature_kernel"]

# the partial-match lengths (KMAX) GsiEngine builds join kernels for, and its default warps per
# block: the variants :func:`compile_variants` compiles
JOIN_BUCKETS = (8, 16, 32, 64)
JOIN_WARPS = 8


@cuda.jit(device=True)
def _rebuild(m, r, L, col, par):
    """SGSI Sec. 6.2: the partial match of table row ``r`` (L columns) from the parent chain."""
    idx = r
    for j in range(L - 1, -1, -1):
        m[j] = col[idx]
        idx = par[idx]


@cuda.jit(device=True)
def _pcsr_find(groups, gbase, delta, cbase, li, v):
    """GSI Sec. 4 (Def. 5): N(v, l) in a PCSR partition -> (start in the packed ``ci``, length).

    Hash group ``v mod Delta``, then the overflow chain (GID). The paper has a warp probe the
    16 pairs of a group in parallel; here one thread scans them (all in one 128-byte line), since
    a lookup is made once per row in the bound kernel.
    """
    g = v % delta[li]
    base = gbase[li]
    while g != -1:
        for s in range(15):
            if groups[base + g, s, 0] == v:
                o = groups[base + g, s, 1]
                e = groups[base + g, 15, 1]
                if s + 1 < 15:
                    if groups[base + g, s + 1, 0] != -1:
                        e = groups[base + g, s + 1, 1]
                return cbase[li] + o, e - o
        g = groups[base + g, 15, 0]
    return cbase[li] * 0, 0


@cuda.jit(device=True)
def _linking_list(d, m, drv_ptr, drv_j, drv_dir, drv_cls, indptr, in_indptr, cand_ptr,
                  g_out, gb_out, dl_out, cb_out, g_in, gb_in, dl_in, cb_in):
    """GSI Alg. 3 l.1-2: the linking edge with the shortest list and that list, for depth ``d``.

    Returns (start, length, kind); kind 0 = the plan's candidate list (no backward neighbour),
    1/2 = CSR out/in row, 3/4 = PCSR out/in list of the edge class ``drv_cls`` (>= 0).
    """
    t0 = drv_ptr[d]
    t1 = drv_ptr[d + 1]
    if t0 == t1:
        return cand_ptr[d], cand_ptr[d + 1] - cand_ptr[d], 0
    best_lo = cand_ptr[0] * 0
    best_n = best_lo - 1
    kind = 1
    for t in range(t0, t1):
        x = m[drv_j[t]]
        c = drv_cls[t]
        if c >= 0:
            if drv_dir[t] == 0:
                a, n = _pcsr_find(g_out, gb_out, dl_out, cb_out, c, x)
                kd = 3
            else:
                a, n = _pcsr_find(g_in, gb_in, dl_in, cb_in, c, x)
                kd = 4
        elif drv_dir[t] == 0:
            a = indptr[x]
            n = indptr[x + 1] - a
            kd = 1
        else:
            a = in_indptr[x]
            n = in_indptr[x + 1] - a
            kd = 2
        if best_n < 0 or n < best_n:
            best_lo = a
            best_n = n
            kind = kd
    return best_lo, best_n, kind


@cuda.jit(device=True)
def _cand(kind, idx, cand_flat, indices, in_indices, ci_out, ci_in):
    if kind == 0:
        return cand_flat[idx]
    if kind == 1:
        return indices[idx]
    if kind == 2:
        return in_indices[idx]
    if kind == 3:
        return ci_out[idx]
    return ci_in[idx]


@cached_kernel
@cuda.jit
def signature_kernel(n, verts, n_groups, need, ent, cand_bits, indptr, indices, emult, eclass,
                      eok, has_el, out_ok):
    """GSI Sec. 3.1 (exact form): does data node ``verts[i]`` fit every neighbour group of u?

    One thread per candidate of one pattern node u. Group ``g`` stands for ``need[g]`` pattern
    neighbours w of u with one key: edge compatibility (pattern entry ``ent[g, 0]``), candidate
    set (of ``w = ent[g, 1]``) and multiplicity ``ent[g, 2]``. A neighbour x of v counts when x is
    a candidate of w and the edge v -> x has the multiplicity and a compatible class; injectivity
    needs ``need[g]`` distinct such x (GSI's 2-bit group state, without hashing or saturation).
    """
    start = cuda.grid(1)
    stride = cuda.gridsize(1)
    for i in range(start, n, stride):
        v = verts[i]
        good = True
        for g in range(n_groups):
            pe = ent[g, 0]
            w = ent[g, 1]
            mu = ent[g, 2]
            c = 0
            for e in range(indptr[v], indptr[v + 1]):
                x = indices[e]
                if (cand_bits[w, x >> 3] >> (x & 7)) & 1 == 0 or emult[e] < mu:
                    continue
                if has_el != 0 and eok[pe, eclass[e]] == 0:
                    continue
                c += 1
                if c >= need[g]:
                    break
            if c < need[g]:
                good = False
                break
        out_ok[i] = 1 if good else 0


_KERNELS = {}


def join_kernels(KMAX, W):
    """The bound and join kernels for partial matches of up to ``KMAX`` nodes, ``W`` warps/block."""
    key = (KMAX, W)
    if key in _KERNELS:
        return _KERNELS[key]

    @cached_kernel
    @cuda.jit
    def bound(n, base, L, col, par, drv_ptr, drv_j, drv_dir, drv_cls, indptr, in_indptr,
              cand_ptr, g_out, gb_out, dl_out, cb_out, g_in, gb_in, dl_in, cb_in, lo_out, len_out,
              kind_out):
        """GSI Alg. 3 (pre-allocation): each row's linking list and its length, the exact bound
        on the row's extensions. One thread per row of the frontier."""
        m = cuda.local.array(KMAX, int32)
        start = cuda.grid(1)
        stride = cuda.gridsize(1)
        for i in range(start, n, stride):
            _rebuild(m, base + i, L, col, par)
            lo, cnt, kd = _linking_list(L, m, drv_ptr, drv_j, drv_dir, drv_cls, indptr,
                                        in_indptr, cand_ptr, g_out, gb_out, dl_out, cb_out, g_in,
                                        gb_in, dl_in, cb_in)
            lo_out[i] = lo
            len_out[i] = cnt
            kind_out[i] = kd

    @cached_kernel
    @cuda.jit
    def join(n_sel, sel, use_sel, wpr, t_row, t_lo, t_len, t_kind, F, L, col, par, order,
             cand_bits, cand_flat, chk_ptr, chk_j, chk_out, chk_in, chk_peo, chk_pei, indptr,
             indices, emult, adj, in_indices, eclass, eok, has_el, mono, directed, ci_out, ci_in,
             gba, cnt):
        """GSI Alg. 2 with Prealloc-Combine and the write cache (Sec. 5); SGSI Sec. 7 tiers.

        ``wpr`` warps share a row (1: warp, 4: multi-warp, W: block, grid: kernel tier); warp
        ``s`` of a row checks candidates ``32 s + lane``, stride ``32 wpr``. Valid ones go to the
        warp's 32-slot cache in shared memory; a full cache is flushed as one coalesced write to
        the row's GBA slice ``F[t]:``, at an offset reserved by an atomic add on ``cnt[t]``.
        """
        cache = cuda.shared.array((W, 32), int32)
        offs = cuda.shared.array(W, int64)
        m = cuda.local.array(KMAX, int32)
        tid = cuda.threadIdx.x
        lane = tid & 31
        w = tid >> 5
        lt = (int64(1) << lane) - 1
        gw = cuda.blockIdx.x * W + w
        nw = cuda.gridDim.x * W
        for g in range(gw, n_sel * wpr, nw):
            q = g // wpr
            s = g - q * wpr
            t = q
            if use_sel != 0:
                t = sel[q]
            _rebuild(m, t_row[t], L, col, par)
            lo = t_lo[t]
            n = t_len[t]
            kd = t_kind[t]
            dst = F[t]
            pos = 0
            for b in range(s * 32, n, wpr * 32):
                i = b + lane
                ok = False
                v = 0
                if i < n:
                    v = _cand(kd, lo + i, cand_flat, indices, in_indices, ci_out, ci_in)
                    ok = feasible(L, v, m, order, cand_bits, chk_ptr, chk_j, chk_out, chk_in,
                                  chk_peo, chk_pei, indptr, indices, emult, adj, eclass, eok,
                                  has_el, mono, directed)
                mask = ballot(ok)
                tot = cuda.popc(mask)
                slot = pos + cuda.popc(mask & lt)
                if ok and slot < 32:
                    cache[w, slot] = v
                wsync()
                if pos + tot >= 32:
                    if lane == 0:
                        offs[w] = cuda.atomic.add(cnt, t, 32)
                    wsync()
                    gba[dst + offs[w] + lane] = cache[w, lane]
                    wsync()
                    if ok and slot >= 32:
                        cache[w, slot - 32] = v
                    pos = pos + tot - 32
                else:
                    pos = pos + tot
                wsync()
            if pos > 0:
                if lane == 0:
                    offs[w] = cuda.atomic.add(cnt, t, pos)
                wsync()
                if lane < pos:
                    gba[dst + offs[w] + lane] = cache[w, lane]
            wsync()

    _KERNELS[key] = (bound, join)
    return bound, join


def compile_variants(warps=JOIN_WARPS):
    """Compile the bound and join kernels of every :data:`JOIN_BUCKETS` length (``warps`` per
    block) for every signature any of them was launched with in this process (they take the
    same arguments), loading them from the disk cache where they are there. Returns how many
    were compiled or loaded; 0 under the simulator."""
    if is_simulator():
        return 0
    pairs = [join_kernels(K, warps) for K in JOIN_BUCKETS]
    return compile_like(b for b, _ in pairs) + compile_like(j for _, j in pairs)


@cached_kernel
@cuda.jit
def link_kernel(n_t, t_row, F, cnt, excl, gba, col, par, new_base):
    """GSI Alg. 2 (link step), column-wise (SGSI Sec. 6.2): one warp per row copies its valid
    candidates into the new column and points their parent at the row."""
    lane = cuda.threadIdx.x & 31
    gw = cuda.grid(1) >> 5
    nw = cuda.gridsize(1) >> 5
    for t in range(gw, n_t, nw):
        c = cnt[t]
        src = F[t]
        dst = new_base + excl[t]
        r = t_row[t]
        for j in range(lane, c, 32):
            col[dst + j] = gba[src + j]
            par[dst + j] = r
