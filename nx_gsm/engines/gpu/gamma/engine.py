"""GAMMA's host side: :class:`GammaDelta`, the delta engine of an ``IncrementalMatcher`` (the
device graph, the vertex codes and candidate table, coalesced search, the launches)."""

from __future__ import annotations

import logging
import os
import time

import numpy as np

from ....plan.planner import depth_arrays
from ...catalog import capabilities_of
from .. import faults
from ..common import kernel_array, sim_reset, to_host
from ..device import array_module, device_reason, is_simulator
from .kernels import (ALLKEYS, C_DON, C_MATCH, C_RDY, C_SLC, C_STEAL, KMAX, WPB,
                      delta_kernel)
from .launch import Clock, KernelArgs
from .pma import RowPMA

__all__ = ["GammaDelta", "gamma_reason"]

log = logging.getLogger("nx_gsm.gpu")

_SIM = is_simulator()

EMAX = 63  # most pattern edge entries an int64 label mask holds
# seed splitting: a pair seed whose larger endpoint degree is d becomes min(d // split_row,
# _SPLIT_MAX) tasks
_SPLIT_ROW = 32  # (256 or 64 left a tree's 1% batch ~1.5x slower, SMs idle 2/3 of it)
_SPLIT_MAX = 512
# a busy warp looks for idle warps every (_POLL + 1) levels it makes (GitHub tree pattern,
# 1% batches: every level 1.6-1.9x faster than no donation, every 4th 1.45x, 16th 1.15x, 64th 1.0x;
# dense: no difference)
_POLL = 0
# counting, the last depth of a leaf is made for a chunk of the level above once it has at least
# this many entries left, 0: never (same batches: tree 1% apply 0.061-0.063 s from 1,
# 0.063-0.067 from 4, 0.065-0.069 from 8, 0.069-0.077 from 16, 0.089-0.092 never; the dense
# pattern's 1% apply 0.6-1.3 ms slower from any threshold than never)
_BATCH_MIN = 1
# a candidate row of at least 2 * _SLICE_MIN entries is offered in slices of >= _SLICE_MIN to
# idle warps before its warp scans it (0: never); see kernels._offer_slices (GitHub 1%, same
# batches: tree 52/42/53 ms at 256 against 58/48/54 never, 56/49/58 from 64, 59/47/50 from 1024;
# the dense pattern gives no slice at 256 and the same times from 64)
_SLICE_MIN = 256


def _loop_datum(G, x):
    """The datum ``edge_match`` sees for ``x``'s self-loop in ``G``, None without one."""
    nb = (G._succ if G.is_directed() else G._adj).get(x)
    return None if nb is None else nb.get(x)


def gamma_reason():
    """None if the GAMMA engine can run here (a CUDA device, or Numba's simulator), else why not."""
    if _SIM:
        return None
    return device_reason()


class GammaDelta:
    """The GAMMA engine of an :class:`~nx_gsm.incremental.IncrementalMatcher`: the data graph on
    the device and the batch delta search.

    Parameters
    ----------
    problem : DeltaProblem
        The pattern, its label tables, the mode, the match functions and the matcher's graph
        (read, never changed).
    warps : int, optional
        Upper bound on resident warps (default: enough for the device).
    out_capacity : int, optional
        Initial output rows (grown and re-run when a batch has more).
    steal : bool, optional
        Intra-block work stealing (default on; ``NX_GSM_GAMMA_STEAL=0`` turns it off).
    donate : bool, optional
        Work donation between blocks through a global ring, once the task counter is drained
        (default on; ``NX_GSM_GAMMA_DONATE=0`` turns it off). The answers are the same either
        way.
    split : bool, optional
        Seeds at hubs split into slices of their first candidate row (default on;
        ``NX_GSM_GAMMA_SPLIT=0`` turns it off). The answers are the same either way.
    coalesce : bool, optional
        Coalesced search over automorphic pattern pairs (default on;
        ``NX_GSM_GAMMA_COALESCE=0`` turns it off). The answers are the same either way.

    The attributes ``poll`` (the donation poll every ``poll + 1`` levels), ``batch_min``
    (counting, a leaf's last depth made for a chunk of the level above once it has this many
    entries left; 0: never) and ``slice_min`` (a candidate row of at least twice this many
    entries offered in slices to idle warps, with donation on; 0: never) tune the kernel; the
    answers are the same for any value.

    Device faults (out of memory, a failed launch) are not atomic on the device -- the graph
    update may stop half-way -- so :meth:`delta` drops the device graph and re-raises, and the
    matcher finishes that batch on its CPU path, exactly as without the fault. The device graph
    is reloaded from the matcher's graph before the next batch (``last_stats["recovered"]``).

    Examples
    --------
    >>> m = nx_gsm.IncrementalMatcher(G, H, engine="gamma")   # doctest: +SKIP
    >>> m.apply(insert=[(0, 5)]).num_added                     # doctest: +SKIP
    """

    name = "gamma"
    capabilities = capabilities_of("gamma")

    def __init__(self, problem, warps=None, out_capacity=1 << 16, steal=None, coalesce=None,
                 split=None, donate=None):
        reason = gamma_reason()
        if reason is not None:
            raise RuntimeError(f"engine 'gamma' is not available: {reason}")
        h = problem.pattern
        k = h.n
        if k > KMAX:
            raise ValueError(f"engine 'gamma' supports patterns of at most {KMAX} nodes, got {k}")
        if problem.edge_match is not None and h.indices.size > EMAX:
            raise ValueError(f"engine 'gamma' supports edge_match on patterns of at most {EMAX} "
                             f"edge entries, got {h.indices.size}")
        self.xp = np if _SIM else array_module()
        self.k = k
        self.warps = warps
        self.out_capacity = int(out_capacity)
        env = os.environ.get
        self.steal = bool(steal if steal is not None else env("NX_GSM_GAMMA_STEAL", "1") != "0")
        self.donate = bool(donate if donate is not None
                           else env("NX_GSM_GAMMA_DONATE", "1") != "0")
        self.poll = _POLL
        self.batch_min = _BATCH_MIN
        self.slice_min = _SLICE_MIN
        self.coalesce = bool(coalesce if coalesce is not None
                             else env("NX_GSM_GAMMA_COALESCE", "1") != "0")
        self.split = bool(split if split is not None else env("NX_GSM_GAMMA_SPLIT", "1") != "0")
        self.split_row = _SPLIT_ROW
        self.narrow_row = 32  # rows longer than this are narrowed to a pattern node's classes
        self._orbit_key = None
        self.problem = problem
        self.directed = problem.directed
        self.mono = 0 if problem.induced else 1
        self.node_match = problem.node_match
        self.edge_match = problem.edge_match
        self.last_stats = {}
        self._origin = None  # the current batch's start on the device clock (a CUDA event)
        self._args = None  # kernel arguments kept between launches (_load)
        self._pattern(problem)
        self._stale = True
        try:
            self._load(problem.graph())
        except faults.device_errors() as exc:
            self._fault(exc)

    # -- pattern tables ---------------------------------------------------------------------
    def _pattern(self, problem):
        h, k = problem.pattern, self.k
        self.hkeys = h.node_keys
        self.hdata = list(problem.node_data)
        hl = np.asarray(h.loops, dtype=np.int64)
        self.hloop = hl
        # pattern out-entries (edge-label bit positions, H's out-CSR order)
        self.hentries = list(problem.edge_data)
        self.hloopdata = list(problem.loop_data)
        # classes of equal pattern edge data (-1: no edge), which coalesced search keeps
        self.hecls, self.hlcls = problem.edge_classes, problem.loop_classes
        # saturated distinct out-/in-degree bounds of the vertex code
        self.hout = np.diff(h.indptr).astype(np.int64)
        self.hin = (np.diff(h.in_indptr) if self.directed else self.hout).astype(np.int64)
        self.dsat = int(max(self.hout.max(initial=0), self.hin.max(initial=0)))
        self.loop_used = ((hl > 0) | (self.mono == 0)).astype(np.int32)
        self.isolated = np.array(sorted(problem.isolated), dtype=np.int64)
        # seeds: ordered pattern pairs whose check is not trivial, with their matching order
        hm = problem.multiplicity
        self.hm = hm
        adj = (hm + hm.T) > 0
        pairs = [(a, b) for a in range(k) for b in range(k) if a != b
                 and (self.mono == 0 or hm[a, b] > 0)]
        self.pairs = np.array(pairs, dtype=np.int64).reshape(-1, 2)
        tabs = {}
        orders = []
        for a, b in [(a, -1) for a in range(k)] + pairs:
            order = [a] if b < 0 else [a, b]
            rest = [u for u in range(k) if u not in order]
            while rest:  # connected greedy order: most backward neighbours, then degree
                u = max(rest, key=lambda w: (int(adj[w, order].sum()), int(adj[w].sum()), -w))
                order.append(u)
                rest.remove(u)
            tabs[a, b] = len(orders)
            orders.append(order)
        self.tab = tabs
        chk = {n: [] for n in ("chk_j", "chk_out", "chk_in", "chk_peo", "chk_pei", "drv_j",
                               "drv_dir")}
        chk_ptr, drv_ptr = [], []
        nodrv = np.zeros(len(orders), dtype=bool)
        empty = np.zeros((k, 0), dtype=bool)
        for t, order in enumerate(orders):
            arr = depth_arrays(h, empty, np.asarray(order), problem.mode)
            chk_ptr.extend((arr["chk_ptr"] + len(chk["chk_j"])).tolist())
            drv_ptr.extend((arr["drv_ptr"] + len(chk["drv_j"])).tolist())
            nodrv[t] = bool((np.diff(arr["drv_ptr"])[1 + (t >= k):] == 0).any())
            for n in chk:
                chk[n].extend(arr[n].tolist())
        self.nodrv = nodrv
        self.tab_wt = np.ones(len(orders), dtype=np.int64)
        self.perms = {}
        self._set_reps(self.pairs)
        i32 = lambda x: np.asarray(x if len(x) else [0], dtype=np.int32)  # noqa: E731
        self.ptabs = dict(order_t=i32([u for o in orders for u in o]), chk_ptr=i32(chk_ptr),
                          drv_ptr=i32(drv_ptr), **{n: i32(v) for n, v in chk.items()})

    # -- coalesced search (GAMMA Sec. V-B, the digest's k = 0 case) -----------------------------
    def _orbits(self):
        """Group the seeded pattern pairs into orbits of the pattern's automorphisms that keep
        every node's candidate column (``nbits``: the node-label part of the vertex code, on the
        current graph), loops and multiplicities; only one representative per orbit is searched,
        the rest come from its matches by the automorphism (``_unfold``), and a count weighs the
        representative's matches by the orbit's size. Every filter of the search is invariant
        under such an automorphism, as the digest's A2.10 requires; with ``edge_match`` the
        automorphisms also keep each pattern edge's and loop's data (equal attribute dicts get
        equal ``edge_match`` answers from a callable that reads the attributes' values, as
        NetworkX's matchers do). Off with ``coalesce=False``."""
        k = self.k
        full = (1 << k) - 1
        if self.node_match is None or not self.nbits.size or bool(np.all(self.nbits == full)):
            color = np.zeros(k, dtype=np.int64)
        else:
            cols = [np.packbits(((self.nbits >> a) & 1).astype(np.uint8)).tobytes()
                    for a in range(k)]
            first = {}
            color = np.array([first.setdefault(c, len(first)) for c in cols], dtype=np.int64)
        key = tuple(color.tolist())
        if key == self._orbit_key:
            return
        self._orbit_key = key
        wt = np.ones_like(self.tab_wt)
        perms = {}
        pairs = [tuple(p) for p in self.pairs.tolist()]
        reps = []
        if not self.coalesce or len(pairs) < 2:
            reps = pairs
        else:
            import networkx as nx
            from networkx.algorithms import isomorphism as iso

            hm = self.hm if self.directed else np.maximum(self.hm, self.hm.T)
            ec, lc = self.hecls, self.hlcls
            X = nx.DiGraph()
            X.add_nodes_from((a, {"c": (int(color[a]), int(self.hloop[a]), int(lc[a]))})
                             for a in range(k))
            X.add_edges_from((a, b, {"m": (int(hm[a, b]), int(ec[a, b]))}) for a in range(k)
                             for b in range(k) if hm[a, b] > 0)
            outd, ind = (hm > 0).sum(axis=1), (hm > 0).sum(axis=0)

            def inv(a, b):
                return (X.nodes[a]["c"], X.nodes[b]["c"], int(hm[a, b]), int(hm[b, a]),
                        int(ec[a, b]), int(ec[b, a]), int(outd[a]), int(ind[a]), int(outd[b]),
                        int(ind[b]))

            def marked(a, b):
                Y = X.copy()
                Y.nodes[a]["s"], Y.nodes[b]["s"] = 1, 2
                return Y

            def nm(x, y):
                return x["c"] == y["c"] and x.get("s") == y.get("s")

            def em(x, y):
                return x["m"] == y["m"]

            deadline = time.perf_counter() + 0.5  # a cap for big patterns: then fewer orbits
            for P in pairs:
                hit = None
                if time.perf_counter() < deadline:
                    for R in reps:
                        if inv(*R) != inv(*P):
                            continue
                        M = iso.DiGraphMatcher(marked(*R), marked(*P), node_match=nm,
                                               edge_match=em)
                        if M.is_isomorphic():
                            hit = R, np.array([M.mapping[u] for u in range(k)], dtype=np.int64)
                            break
                if hit is None:
                    reps.append(P)
                else:
                    t = self.tab[hit[0]]
                    perms.setdefault(t, []).append(hit[1])
                    wt[t] += 1
        self.tab_wt = wt
        self.perms = perms
        self._set_reps(reps)

    def _set_reps(self, reps):
        """The pattern pairs searched, with their order tables' ids (the seeds of _tasks)."""
        self.rep_pairs = np.array(reps, dtype=np.int64).reshape(-1, 2)
        self.rep_tabs = np.array([self.tab[int(a), int(b)] for a, b in self.rep_pairs],
                                 dtype=np.int64)

    # -- vertex codes and the candidate table (GAMMA Sec. IV-B) ------------------------------
    def _node_bits(self, datas):
        """Node-label part of the code: bit u set iff node_match(data, H node u)."""
        full = (1 << self.k) - 1
        if self.node_match is None:
            return np.full(len(datas), full, dtype=np.int64)
        from ....plan.labels import compat_table

        dcls, ok = compat_table(self.node_match, list(datas), self.hdata)
        w = (ok.astype(np.int64) << np.arange(self.k, dtype=np.int64)[:, None]).sum(axis=0)
        return w[dcls] if len(datas) else np.zeros(0, dtype=np.int64)

    def _codes(self, ids, loopdata):
        """Candidate-table rows of vertices ``ids`` from their current code parts."""
        k = self.k
        out = np.minimum(self.odeg[ids], self.dsat)
        inn = np.minimum(self.ideg[ids], self.dsat)
        lm = self.loopm[ids]
        ok = ((out[:, None] >= self.hout[None, :]) & (inn[:, None] >= self.hin[None, :]))
        if self.mono:
            ok &= lm[:, None] >= self.hloop[None, :]
        else:
            ok &= lm[:, None] == self.hloop[None, :]
        if self.edge_match is not None:
            for i, ld in enumerate(loopdata):
                for a in range(k):
                    if self.hloop[a] and ok[i, a]:
                        ok[i, a] = bool(self.edge_match(ld, self.hloopdata[a]))
        bits = ok.astype(np.int64) @ (np.int64(1) << np.arange(k, dtype=np.int64))
        return bits & self.nbits[ids] & self.alive[ids]

    def _class_ids(self, nbits):
        """Label classes of vertices with node-label codes ``nbits`` (equal codes, one class; a
        code not seen before gets the next id)."""
        cl = self._classes
        codes, inv = np.unique(nbits, return_inverse=True)
        return np.array([cl.setdefault(b, len(cl)) for b in codes.tolist()],
                        dtype=np.int64)[inv.reshape(-1)]

    def _class_runs(self):
        """The class run each pattern node reads over the classes seen so far (``ukey``: key
        bounds per node, see the kernel's row narrowing)."""
        cl = self._classes
        ukey = np.zeros(2 * self.k, dtype=np.int64)
        for u in range(self.k):
            cs = sorted(c for b, c in cl.items() if (b >> u) & 1)
            if len(cs) == len(cl) or (cs and cs[-1] - cs[0] + 1 != len(cs)):
                ukey[2 * u + 1] = ALLKEYS  # every class, or not one run: whole rows
            elif cs:
                ukey[2 * u], ukey[2 * u + 1] = cs[0] << 32, (cs[-1] + 1) << 32
        return ukey

    def _key(self, ids):
        """RowPMA sort keys of neighbours ``ids``: class in the high bits, then the id."""
        return (self.vcls[ids] << 32) | ids

    def _emasks(self, datas):
        """Edge-label bits of data edges: bit p iff edge_match(datum, H out-entry p)."""
        if self.edge_match is None or not len(datas):
            return np.zeros(len(datas), dtype=np.int64)
        from ....plan.labels import compat_table

        dcls, ok = compat_table(self.edge_match, list(datas), self.hentries)
        w = (ok.astype(np.int64) << np.arange(len(self.hentries), dtype=np.int64)[:, None])
        return w.sum(axis=0)[dcls]

    # -- initial load ---------------------------------------------------------------------
    def _load(self, G):
        xp = self.xp
        self._args = KernelArgs(xp)
        faults.point("graph_upload")
        keys = list(G)
        self.keys = keys
        self.kid = {x: i for i, x in enumerate(keys)}
        n = len(keys)
        self.ident = all(type(x) is int and x == i for i, x in enumerate(keys))
        kid = self.kid
        succ = G._succ if self.directed else G._adj
        multi = G.is_multigraph()
        src, dst, mult, datas = [], [], [], []
        loopm = np.zeros(n, dtype=np.int64)
        loopdata = [None] * n
        for x, nb in succ.items():
            i = kid[x]
            for y, dd in nb.items():
                c = len(dd) if multi else 1
                if y == x:
                    loopm[i] = c
                    loopdata[i] = dd
                    continue
                src.append(i)
                dst.append(kid[y])
                mult.append(c)
                datas.append(dd)
        src = np.asarray(src, dtype=np.int64)
        dst = np.asarray(dst, dtype=np.int64)
        em = self._emasks(datas)
        self.loopm = loopm
        self.nbits = self._node_bits([G._node[x] for x in keys])
        self._classes = {}
        self.vcls = self._class_ids(self.nbits)
        self.ukey = self._class_runs()
        self._orbit_key = None  # orbits are (re)computed from these bits before the next search
        self.alive = np.full(n, -1, dtype=np.int64)
        self.odeg = np.bincount(src, minlength=n).astype(np.int64)
        self.ideg = np.bincount(dst, minlength=n).astype(np.int64)
        self.out = RowPMA(n, src, dst, mult, em, xp, key=self._key(dst))
        self.inn = (RowPMA(n, dst, src, mult, np.zeros_like(em), xp, key=self._key(src))
                    if self.directed else None)
        ct = self._codes(np.arange(n), loopdata)
        self.ct_host = ct
        self.ct = xp.asarray(ct)
        self.trange = xp.zeros(n, dtype=np.int64)
        self.uploads = 0
        self._stale = False

    def reads_plain_ids(self):
        """Whether a batch of plain rows is read as node ids (:meth:`_plain_columns`): the
        device graph is loaded, its node keys are its ids and no ``edge_match`` needs the rows'
        data. The matcher then checks such rows against its edge index and edits its own graph
        only when it is next read."""
        return not self._stale and self.ident and self.edge_match is None

    def drop(self):
        """Forget the device graph (a batch was applied to it and then failed its check): the
        next batch reloads it from the matcher's graph."""
        self._stale = True

    def _fault(self, exc):
        """After a device fault: drop the device graph (it may be half-updated) so that the next
        batch reloads it from the matcher's graph, and note the fault."""
        self._stale = True
        self.out = self.inn = self.ct = self.trange = None
        self._args = None
        faults.release_device_memory()
        what = f"{type(exc).__name__}: {exc}"
        self.last_stats["faults"] = [what]
        self.last_stats["recovered"] = ("batch finished on the CPU path; the device graph is "
                                        "reloaded before the next batch")
        # a string, not the exception: a stored record would keep device arrays alive
        log.warning("gamma: device fault (%s); the CPU path finishes the batch", what)

    def _grow_nodes(self, new_keys):
        xp = self.xp
        for x in new_keys:
            self.ident = self.ident and type(x) is int and x == len(self.keys)
            self.kid[x] = len(self.keys)
            self.keys.append(x)
        e = len(new_keys)
        if not e:
            return
        z = np.zeros(e, dtype=np.int64)
        self.loopm = np.concatenate([self.loopm, z])
        self.odeg = np.concatenate([self.odeg, z])
        self.ideg = np.concatenate([self.ideg, z])
        self.alive = np.concatenate([self.alive, z])
        self.nbits = np.concatenate([self.nbits, z])
        self.ct_host = np.concatenate([self.ct_host, z])
        self.ct = xp.concatenate([self.ct, xp.zeros(e, dtype=np.int64)])
        self.trange = xp.concatenate([self.trange, xp.zeros(e, dtype=np.int64)])
        self.out.add_rows(e)
        if self.inn is not None:
            self.inn.add_rows(e)

    # -- one batch ------------------------------------------------------------------------
    def delta(self, batch, counts_only=False, during=None):
        """(matches of G_before, matches of G_after) that use an updated item, as tuples of G
        keys in the pattern's node order; the device graph moves to G_after on the way.

        With ``counts_only``, when no match can be valid on both sides (every changed pair or
        loop appears or disappears; in induced mode, changes multiplicity), the two sizes are
        returned instead, counted on the device without writing the matches.

        Every user callable runs before the device state changes, so an exception leaves the
        engine consistent with the matcher's (unchanged) graph. A device fault is re-raised after
        the device graph is dropped (the matcher's CPU path then finishes the batch).

        ``during`` (no arguments) is called once while the after-side search runs on the device
        (the asynchronous pipeline of GAMMA Sec. IV-A, on the host's side: the matcher brings its
        own graph up to date there); with ``counts_only`` the before-side search also runs while
        the host prepares the graph update.
        """
        self.last_stats = {}
        try:
            if self._stale:
                self._load(self.problem.graph())
            return self._delta(batch, counts_only, during)
        except faults.device_errors() as exc:
            self._fault(exc)
            raise

    def _delta(self, batch, counts_only, during=None):
        t_start = time.perf_counter()
        # the batch's timeline (stats "timeline_ms"): host marks, and the kernels' spans on the
        # device clock from an event recorded now (the stream is idle between batches)
        self._origin = None
        if self.xp is not np:
            self._origin = self.xp.cuda.Event()
            self._origin.record()
        marks = self.last_stats.setdefault("timeline_ms", {})

        def at(name):
            marks[name] = round(1e3 * (time.perf_counter() - t_start), 3)

        directed = self.directed
        new_keys = list(batch.new_nodes)
        nbits_new = self._node_bits([batch.new_nodes[x] for x in new_keys])
        cols = self._plain_columns(batch)
        # plain id rows not yet checked (see below)
        check = batch.check if getattr(batch, "pending", None) is not None else None
        if cols is None and check is not None:
            check()  # (the general columns read the graph: checked rows only)
            check = None
        # (read only where needed: the matcher's graph may have batches of id rows to catch up;
        # a batch of plain rows was checked when the matcher made it, or is checked below)
        G0 = self.problem.graph() if cols is None else None
        if cols is None:
            # (u, v, mult before, mult after, datum after) per changed pair
            changed = batch.changes(G0, self.problem.pair)
            em_all = np.zeros(len(changed), dtype=np.int64)
            live = [i for i, c in enumerate(changed) if c[3] > 0 and c[0] != c[1]]
            em_all[live] = self._emasks([changed[i][4] for i in live])
        # ---- no callables below this line ----
        uploads0 = self.uploads
        n_old = len(self.keys)
        self._grow_nodes(new_keys)
        self.nbits[n_old:] = nbits_new
        if new_keys:
            self.vcls = np.concatenate([self.vcls, self._class_ids(nbits_new)])
            self.ukey = self._class_runs()
        if new_keys or self._orbit_key is None:  # the orbits follow the node-label bits only
            self._orbits()
        kid = self.kid
        gone = np.array([kid[x] for x in batch.gone_nodes], dtype=np.int64)
        nn = len(self.keys) + 1
        if cols is None:
            cx = np.array([kid[c[0]] for c in changed], dtype=np.int64)
            cy = np.array([kid[c[1]] for c in changed], dtype=np.int64)
            m0 = np.array([c[2] for c in changed], dtype=np.int64)
            m1 = np.array([c[3] for c in changed], dtype=np.int64)
        else:
            cx, cy, m0, m1 = cols
            em_all = np.zeros(cx.size, dtype=np.int64)
        lo, hi = (cx, cy) if directed else (np.minimum(cx, cy), np.maximum(cx, cy))
        o = np.argsort(lo * nn + hi)
        cx, cy, m0, m1, em_all = cx[o], cy[o], m0[o], m1[o], em_all[o]
        prank = np.arange(cx.size, dtype=np.int64)
        newn = np.arange(n_old, len(self.keys), dtype=np.int64)
        use_nodes = self.isolated.size > 0
        gone_rank = cx.size + np.arange(gone.size, dtype=np.int64)
        new_rank = cx.size + gone.size + np.arange(newn.size, dtype=np.int64)
        # the updated items as sorted keys -> ranks (pairs in both orientations if undirected)
        keys = [cx * nn + cy]
        ranks = [prank]
        if not directed:
            keys.append(cy * nn + cx)
            ranks.append(prank)
        if use_nodes:
            keys += [gone * nn + nn - 1, newn * nn + nn - 1]
            ranks += [gone_rank, new_rank]
        mk = np.concatenate(keys)
        mr = np.concatenate(ranks)
        s = np.argsort(mk)  # (equal keys: a loop's two orientations, one rank)
        mk, mr = mk[s], mr[s]
        if mk.size == 0:
            mk, mr = np.full(1, -1, dtype=np.int64), np.zeros(1, dtype=np.int64)
        # a match using an updated item is then invalid on the other side: the sets are disjoint
        disjoint = bool(np.all(m0 != m1) if self.mono == 0 else np.all((m0 > 0) != (m1 > 0)))
        cap = 0 if counts_only and disjoint else None
        # each vertex an updated item touches: its run of keys in mk (see _ok; a new or deleted
        # node's run is empty unless isolated pattern nodes make nodes items)
        mark = np.zeros(len(self.keys), dtype=bool)
        for ids in (cx, cy, gone, newn):
            mark[ids] = True
        touched_ids = np.flatnonzero(mark)
        t_lo = np.searchsorted(mk, touched_ids * nn)
        t_hi = np.searchsorted(mk, (touched_ids + 1) * nn)
        self.trange[:] = 0
        if touched_ids.size:
            (at_ids, ranges), _ = self._args.staged("tr.", [
                (touched_ids, np.int64), (((t_lo + 1) << 32) | t_hi, np.int64)])
            self.trange[at_ids] = ranges
        mk_d, mr_d = self._args.staged("m.", [(mk, np.int64), (mr, np.int64)])[1]
        nn = int(nn)

        at("prepared")
        before = self._run(self._seeds(cx, cy, m0, prank, gone, gone_rank), mk_d, mr_d, nn,
                           cap, which=0)
        at("launched0")
        t_upd = -time.perf_counter()
        # ---- apply the batch to the device graph and the candidate table; the host's part
        # first, while the before-side search may still run (the device's part queues behind it)
        loop = cx == cy
        ex, ey, e1 = cx[~loop], cy[~loop], m1[~loop]
        e0, emk = m0[~loop], em_all[~loop]
        born = (e0 == 0) & (e1 > 0)
        died = (e0 > 0) & (e1 == 0)
        dlt = born.astype(np.int64) - died
        if directed:
            np.add.at(self.odeg, ex, dlt)
            np.add.at(self.ideg, ey, dlt)
        else:
            np.add.at(self.odeg, ex, dlt)
            np.add.at(self.odeg, ey, dlt)
            self.ideg = self.odeg
        self.loopm[cx[loop]] = m1[loop]
        self.alive[newn] = -1
        self.alive[gone] = 0
        # recompute codes of the touched vertices only; upload the rows that changed
        ids = np.zeros(0, dtype=np.int64)
        if touched_ids.size:
            ld = [None] * touched_ids.size
            if self.edge_match is not None:
                gone_set = set(batch.gone_nodes)
                loops1 = {c[0]: c[4] for c in changed if c[0] == c[1]}  # changed loops, after
                ld = []
                for i in touched_ids.tolist():
                    x = self.keys[i]
                    ld.append(loops1[x] if x in loops1 else
                              None if x in gone_set else _loop_datum(G0, x))
            codes = self._codes(touched_ids, ld)
            diff = codes != self.ct_host[touched_ids]
            ids = touched_ids[diff]
            self.ct_host[ids] = codes[diff]
        faults.point("graph_upload")
        # (each entry's presence before is known: no read back waits for the before side)
        had = e0 > 0
        if directed:
            self.out.update(ex, ey, e1, emk, key=self._key(ey), present=had)
            self.inn.update(ey, ex, e1, np.zeros_like(emk), key=self._key(ex), present=had)
        else:
            dst = np.concatenate([ey, ex])
            self.out.update(np.concatenate([ex, ey]), dst, np.concatenate([e1, e1]),
                            np.concatenate([emk, emk]), key=self._key(dst),
                            present=np.concatenate([had, had]))
        if ids.size:
            (at_ids, codes), _ = self._args.staged("ct.", [(ids, np.int64),
                                                          (self.ct_host[ids], np.int64)])
            self.ct[at_ids] = codes
            self.uploads += int(ids.size)
        t_upd += time.perf_counter()
        at("updated")
        after = self._run(self._seeds(cx, cy, m1, prank, newn, new_rank), mk_d, mr_d, nn, cap,
                          which=1)
        at("launched1")
        if check is not None:
            # plain id rows checked in the after-side search's shadow, off the batch's path
            # (~1.1 ms on the card's host, which was the critical path between the
            # launches); a batch that fails here drops the device graph it was applied to (the
            # next batch reloads it from the matcher's graph, which did not change)
            try:
                check()
            except BaseException:
                try:
                    before(), after()  # (their kernels still read the buffers about to go)
                finally:
                    self.drop()
                raise
            at("checked")
        if during is not None:
            during()
            at("during_done")
        before, after = before(), after()
        at("collected")
        st = self.last_stats
        st["update_s"] = t_upd  # graph + candidate-table update (between the two launches)
        st["changed"] = int(cx.size)
        st["ct_rows"] = int(self.uploads - uploads0)
        st["total_s"] = time.perf_counter() - t_start
        return before, after

    def _plain_columns(self, batch):
        """``(cx, cy, m0, m1)`` of a batch of plain ``(u, v)`` rows (``batch.pairs``, each
        deletion present and each insertion new once ``batch.check`` passes; ids past the
        tables give None, so an unchecked batch never makes the kernels read past them) on a
        graph whose node keys are its ids, read straight off the rows (no per-row dict
        lookups); None otherwise, or with ``edge_match`` (whose datum the general path
        reads)."""
        if batch.pairs is None or not self.ident or self.edge_match is not None:
            return None
        ends = batch.ends  # the rows' integer endpoints, deletions first
        if ends is None:
            return None
        n, dels = len(ends), len(batch.pairs[1])
        if n and (ends.min() < 0 or ends.max() >= len(self.keys)):
            return None  # not node ids of this graph (the kernels would read past the tables)
        m0 = np.zeros(n, dtype=np.int64)
        m0[:dels] = 1
        return ends[:, 0].copy(), ends[:, 1].copy(), m0, 1 - m0

    def _seeds(self, cx, cy, mult, prank, nodes, nrank):
        """Seed groups for one side, ``(rank, x, y, table list offset, tables)`` per group, and
        the table list: changed pairs present on this side (or any, in induced mode) onto every
        seeded pattern pair, loops onto each pattern node whose loop is checked, new/deleted
        nodes onto each isolated pattern node. None if there is nothing to search."""
        lists = (self.rep_tabs, np.flatnonzero(self.loop_used), self.isolated)
        off = np.cumsum([0] + [x.size for x in lists])
        loop = cx == cy
        pick = (~loop, loop) if self.mono == 0 else (~loop & (mult > 0), loop & (mult > 0))
        groups = []
        for j, (sel, y) in enumerate(((pick[0], cy), (pick[1], None))):  # pairs, then loops
            i = np.flatnonzero(sel)
            if i.size and lists[j].size:
                groups.append((prank[i], cx[i], np.full(i.size, -1) if y is None else y[i],
                               np.full(i.size, off[j]), np.full(i.size, lists[j].size)))
        if nodes.size and self.isolated.size:
            groups.append((nrank, nodes, np.full(nodes.size, -1), np.full(nodes.size, off[2]),
                           np.full(nodes.size, self.isolated.size)))
        if not groups:
            return None
        return [np.concatenate([g[c] for g in groups]) for c in range(5)], \
            np.concatenate(lists).astype(np.int32)

    def _run(self, seeds, mk, mr, nn, cap=None, which=0):
        """Run the delta kernel over the seed groups ``seeds`` (:meth:`_seeds`) on the device's
        current graph. Returns a function of no arguments giving the matches as a set of key
        tuples (pattern node order), or their number if ``cap`` is 0 (count only): a count is
        launched and not waited for until that function is called (the kernel then overlaps the
        host's next steps; anything queued on the device later runs after it), a set is
        collected at once (a full output buffer relaunches the search on the same graph).
        ``which`` (0 before, 1 after) keeps the two sides' control words apart."""
        if seeds is None:
            empty = set() if cap is None else 0
            return lambda: empty
        xp = self.xp
        (rank, tx, ty, toff, ntab), tlist = seeds
        # heaviest seeds first (a longest-processing-time order): the warps that draw the hub
        # updates start at once instead of holding the kernel's tail
        deg = self.odeg + (self.ideg if self.directed else 0) + 1
        o = np.argsort(-(deg[tx] * np.where(ty >= 0, deg[np.maximum(ty, 0)], 1)),
                       kind="stable")
        rank, tx, ty, toff, ntab = rank[o], tx[o], ty[o], toff[o], ntab[o]
        k = self.k
        # a pair seed at a hub is split into slices of its first candidate row (see the
        # kernel): the longest seeds no longer hold the kernel's tail on one block
        parts = np.ones(rank.size, dtype=np.int64)
        if self.split and k >= 3:
            hub = np.where(ty >= 0, np.maximum(deg[tx], deg[np.maximum(ty, 0)]), 0)
            parts = np.clip(hub // self.split_row, 1, _SPLIT_MAX)
        per = ntab * parts
        first = np.zeros(rank.size + 1, dtype=np.int64)
        np.cumsum(per, out=first[1:])
        n_tasks = int(first[-1])
        if parts.max(initial=1) > 1:
            st = self.last_stats
            st["split_tasks"] = st.get("split_tasks", 0) + n_tasks - int(ntab.sum())
        n_nodes = len(self.keys)
        count_only = cap == 0
        cap = max(self.out.max_length(), self.inn.max_length() if self.inn is not None else 0, 1)
        lists, at = np.unique(toff, return_index=True)  # the table lists searched
        if any(self.nodrv[tlist[a: a + n]].any() for a, n in zip(lists, ntab[at])):
            cap = max(cap, n_nodes)
        if _SIM:
            blocks = 1
        else:
            warps = self.warps or 4096
            warps = min(warps, max(1, (1 << 30) // (4 * k * cap)), max(n_tasks, WPB))
            blocks = max(1, -(-warps // WPB))
        nw = blocks * WPB
        faults.point("dfs_buffers")
        cbuf = self._args.buffer("cbuf", (nw, max(k - 1, 1), cap), np.int32)
        # the donation ring: a slot per warp, at most ~64 MB of entries (none without donation)
        q_cap = max(1, min(nw, (1 << 24) // cap)) if self.donate else 1
        ctl_d, ctl = self._args.buffer(f"ctl{which}", (C_RDY + q_cap,), np.int64)
        ring = [self._args.buffer(n, shape, dt)[1] for n, shape, dt in
                (("q_meta", (q_cap, 6), np.int64), ("q_m", (q_cap, KMAX), np.int32),
                 ("q_ent", (q_cap, cap), np.int32))]
        inn = self.inn if self.inn is not None else self.out
        a, arg = kernel_array, self._args.wrap
        faults.point("plan_upload")
        targs = self._args.staged(f"t{which}.", [
            (first, np.int64), (rank, np.int64), (tx, np.int32), (ty, np.int32),
            (toff, np.int32), (parts, np.int32), (tlist, np.int32)])[1]
        tables = [arg(n, self.ptabs[n]) for n in ("order_t", "chk_ptr", "chk_j", "chk_out",
                                                   "chk_in", "chk_peo", "chk_pei", "drv_ptr",
                                                   "drv_j", "drv_dir")]
        graph = [arg(f"{side}.{n}", getattr(pma, n)) for side, pma, names in
                 (("out", self.out, ("start", "length", "adj", "akey", "mult", "emask")),
                  ("in", inn, ("start", "length", "adj", "akey"))) for n in names]
        out_cap = 0 if count_only else self.out_capacity
        clocks = []
        while True:
            faults.point("output")
            if out_cap:
                out_d = xp.full((out_cap, k), -1, dtype=np.int32)
                tab_d = xp.zeros(out_cap, dtype=np.int32)
                out, out_tab = a(out_d), a(tab_d)
            else:  # counting: the kernel writes no rows
                out = self._args.buffer("out0", (1, k), np.int32)[1]
                out_tab = self._args.buffer("out_tab0", (1,), np.int32)[1]
            ctl_d.fill(0)
            sim_reset()
            faults.point("launch")
            clock = Clock(xp)
            self._args.launch(
                f"delta{which}", delta_kernel, blocks, WPB * 32,
                n_tasks, rank.size, *targs, arg("tab_wt", self.tab_wt), k, *tables,
                arg("loop_used", self.loop_used), arg("ct", self.ct), *graph,
                arg("vcls", self.vcls), arg("ukey", self.ukey), self.narrow_row,
                arg("trange", self.trange), mk, mr, nn, n_nodes,
                int(self.edge_match is not None), self.mono, int(self.directed), cbuf[1],
                out, out_tab, out_cap, ctl,
                int(self.steal) | (2 if self.donate else 0), *ring, q_cap, self.poll,
                self.batch_min, self.slice_min)
            clock.stop()
            if count_only:
                return lambda: self._collect(ctl_d, n_tasks, nw, [clock])
            clocks.append(clock)
            c = to_host(ctl_d[:C_RDY])  # (synchronises)
            total = int(c[C_MATCH])
            if total <= out_cap:
                break
            out_cap = total  # relaunched with room for every row
            self.out_capacity = max(self.out_capacity, total)
        self._collect(ctl_d, n_tasks, nw, clocks, c)
        rows = to_host(out_d[:total])
        tabs = to_host(tab_d[:total])
        rows = self._unfold(rows, tabs)
        keys = self.keys
        if self.ident:  # node keys are the ids 0..n-1 (as read from an edge list)
            found = set(map(tuple, rows.tolist()))
        else:
            found = {tuple([keys[v] for v in r]) for r in rows.tolist()}
        return lambda: found

    def _collect(self, ctl, n_tasks, nw, clocks, c=None):
        """Wait for the delta kernel's last launch (``clocks``: every launch of this search);
        its number of matches, with the stats noted. ``c``: the control word, if already read
        (one read per search)."""
        faults.point("collect")
        if c is None:
            c = to_host(ctl[:C_RDY])  # (synchronises)
        total = int(c[C_MATCH])
        dt = sum(c.seconds() for c in clocks)
        st = self.last_stats
        st["tasks"] = st.get("tasks", 0) + int(n_tasks)
        st["matches"] = st.get("matches", 0) + total
        st["warps"] = nw
        st["steals"] = st.get("steals", 0) + int(c[C_STEAL])
        st["donations"] = st.get("donations", 0) + int(c[C_DON])
        st["slices"] = st.get("slices", 0) + int(c[C_SLC])
        st["pairs_searched"] = f"{len(self.rep_pairs)} of {len(self.pairs)}"
        st["kernel_s"] = st.get("kernel_s", 0.0) + dt
        # (tasks, matches, seconds) per launch: the before-side search, then the after-side
        st.setdefault("launches", []).append((int(n_tasks), total, round(dt, 6)))
        span = clocks[-1].span(self._origin)
        if span is not None:
            st.setdefault("timeline_ms", {}).setdefault("kernels", []).append(span)
        return total

    def _unfold(self, rows, tabs):
        """The rows searched from an orbit's representative pattern pair, plus their images
        under each other member's automorphism (coalesced search, Sec. V-B): a match ``f`` seeded
        on ``(a, b)`` gives ``f o sigma^-1`` seeded on ``(sigma(a), sigma(b))``."""
        if not self.perms or not rows.shape[0]:
            return rows
        parts = [rows]
        for t, sigmas in self.perms.items():
            sel = rows[tabs == t]
            if not sel.shape[0]:
                continue
            for sigma in sigmas:
                img = np.empty_like(sel)
                img[:, sigma] = sel
                parts.append(img)
        return np.concatenate(parts)
