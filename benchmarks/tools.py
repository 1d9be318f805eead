"""Tool adapters: one class per thing we time.

Every tool answers the same question, the number of monomorphisms (or, with ``induced``,
node-induced subgraph isomorphisms) of a pattern ``H`` into the data graph ``G``, optionally capped
at ``limit`` ("first N embeddings": the answer is then ``min(count, limit)``). Nodes with the
suite's label attribute (``"label"``) match only nodes with an equal value; unlabelled suites match
anything.

A tool runs inside a worker subprocess (:mod:`benchmarks.worker`) and goes through

``check()``
    raise :class:`Unavailable` when its library is missing (the run continues without it);
``load(G, label)``
    convert the data graph (timed separately, never part of a query's time);
``warmup()``
    engines only: tiny first calls (JIT compilation / cache load), timed and reported separately;
``prepare(H)``
    convert the pattern (untimed);
``count(q, limit=, induced=, deadline=)``
    the timed call; a tool that times itself (a native peer reporting its own run time, not its
    process start and graph loading) returns ``(count, seconds)``. ``deadline`` is a ``time.perf_counter()`` value: tools that can notice time
    passing (between yielded matches) raise :class:`ToolTimeout` past it. Nothing can interrupt a
    long gap inside native code, so the parent process also kills the worker at the timeout.

Name resolution (:func:`resolve_tool`): the peers below by name (``sunluo-cpp``, Sun & Luo's
C++ study code, :mod:`benchmarks.sunluo`; ``nx-vf2``, ``rustworkx``,
``rustworkx-id``, ``igraph-lad``, ``igraph-vf2``); ``module:Class`` imports a plug-in class (its
``name``, ``kind`` and methods as here); anything else is one of our engines: ``cpu``, ``cpu<N>``
(the CPU engine on N Numba threads, e.g. ``cpu1``), or any engine name nx_gsm knows (``gmatch``,
``gsi``, ``geneva``, ``auto``). An engine that raises ``RuntimeError(... not available ...)`` is
reported as unavailable.
"""

from __future__ import annotations

import importlib
import itertools
import operator
import re
import time

__all__ = [
    "Tool",
    "Unavailable",
    "ToolTimeout",
    "resolve_tool",
    "PEERS",
    "DEFAULT_PEERS",
    "DEFAULT_ENGINES",
]


class Unavailable(Exception):
    """The tool cannot run here (library missing, engine not available); the message says why."""


class ToolTimeout(Exception):
    """Raised by a tool that noticed its deadline passing."""


class Tool:
    """Base class; see the module docstring for the protocol."""

    name = "tool"
    kind = "peer"  # "peer" (a baseline) or "engine" (ours)
    supports_induced = True
    description = ""

    def check(self):
        pass

    def load(self, G, label):
        raise NotImplementedError

    def warmup(self):
        return {}

    def prepare(self, H):
        return H

    def count(self, q, *, limit, induced, deadline):
        raise NotImplementedError

    def info(self):
        """Facts about the tool for the record (versions, options)."""
        return {"description": self.description}


def _require(module, pip_name=None):
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise Unavailable(f"{module} is not installed ({exc}); pip install "
                          f"{pip_name or module} (or the 'bench' extra)") from None


def _count_iter(it, limit, deadline):
    """Count items of ``it`` up to ``limit``, checking the clock between items."""
    n = 0
    clock = time.perf_counter
    for _ in it:
        n += 1
        if limit is not None and n >= limit:
            break
        if clock() > deadline:
            raise ToolTimeout
    return n


def _label_index(G, label):
    """``(node -> position, [label value per position])`` for a NetworkX graph."""
    pos = {v: i for i, v in enumerate(G)}
    labels = [d.get(label) for d in G._node.values()] if label else None
    return pos, labels


# -- peers ------------------------------------------------------------------------------------
class NxVF2(Tool):
    """NetworkX ``GraphMatcher`` (VF2), counting ``subgraph_monomorphisms_iter()`` items
    (``subgraph_isomorphisms_iter()`` for induced), ``categorical_node_match(label, None)``."""

    name = "nx-vf2"
    description = "networkx GraphMatcher VF2, counted by iterating"

    def check(self):
        import networkx  # noqa: F401

    def load(self, G, label):
        from networkx.algorithms.isomorphism import GraphMatcher, categorical_node_match

        self.G = G
        self.GM = GraphMatcher
        self.nm = categorical_node_match(label, None) if label else None

    def count(self, q, *, limit, induced, deadline):
        gm = self.GM(self.G, q, node_match=self.nm)
        it = gm.subgraph_isomorphisms_iter() if induced else gm.subgraph_monomorphisms_iter()
        return _count_iter(it, limit, deadline)

    def info(self):
        import networkx

        return {"description": self.description, "version": networkx.__version__}


class Rustworkx(Tool):
    """``rustworkx.vf2_mapping(G, H, subgraph=True, induced=..., id_order=...)``, counted by
    iterating. Graphs come from ``networkx_converter(keep_attributes=True)`` outside the timed
    region, node payloads then replaced by the bare label so ``node_matcher`` is ``operator.eq``
    (the cheapest Python matcher). ``call_limit`` is never set: it silently truncates."""

    def __init__(self, id_order):
        self.id_order = id_order
        self.name = "rustworkx-id" if id_order else "rustworkx"
        self.description = f"rustworkx vf2_mapping(id_order={id_order}), counted by iterating"

    def check(self):
        _require("rustworkx")

    def _convert(self, G):
        import rustworkx as rx

        R = rx.networkx_converter(G, keep_attributes=True)
        for i in R.node_indices():
            R[i] = R[i].get(self.label) if self.label else None
        return R

    def load(self, G, label):
        self.label = label
        self.G = self._convert(G)

    def prepare(self, H):
        return self._convert(H)

    def count(self, q, *, limit, induced, deadline):
        import rustworkx as rx

        it = rx.vf2_mapping(self.G, q, node_matcher=operator.eq if self.label else None,
                            subgraph=True, induced=induced, id_order=self.id_order)
        return _count_iter(it, limit, deadline)

    def info(self):
        import rustworkx

        return {"description": self.description, "version": rustworkx.__version__,
                "id_order": self.id_order}


class _Igraph(Tool):
    def check(self):
        _require("igraph", "igraph")

    def load(self, G, label):
        import igraph as ig

        self.label = label
        pos, labels = _label_index(G, label)
        self.n = len(pos)
        self.G = ig.Graph(n=self.n, edges=[(pos[u], pos[v]) for u, v in G.edges()])
        self.labels = labels
        self.by_label = {}
        if label:
            for i, x in enumerate(labels):
                self.by_label.setdefault(x, []).append(i)

    def _pattern(self, H):
        import igraph as ig

        pos, labels = _label_index(H, self.label)
        return ig.Graph(n=len(pos), edges=[(pos[u], pos[v]) for u, v in H.edges()]), labels

    def info(self):
        import igraph

        return {"description": self.description, "version": igraph.__version__}


class IgraphLAD(_Igraph):
    """``G.get_subisomorphisms_lad(H, domains=..., induced=...)``; labels through ``domains`` (per
    pattern vertex the data vertices of its label, built outside the timed region). LAD has no
    "stop after N": it always enumerates and materialises every embedding, and the answer is
    capped at ``limit`` afterwards (so under first100k its time is a count-all time)."""

    name = "igraph-lad"
    description = "python-igraph get_subisomorphisms_lad (always enumerates all; capped after)"

    def load(self, G, label):
        super().load(G, label)
        import igraph as ig

        # python-igraph documents time_limit, but 1.0 rejects it: use it only where accepted
        try:
            ig.Graph(n=1).subisomorphic_lad(ig.Graph(n=1), time_limit=1)
            self.time_limit_ok = True
        except TypeError:
            self.time_limit_ok = False

    def prepare(self, H):
        Hg, labels = self._pattern(H)
        dom = [self.by_label.get(x, []) for x in labels] if self.label else None
        return Hg, dom

    def count(self, q, *, limit, induced, deadline):
        Hg, dom = q
        if dom is not None and any(not d for d in dom):
            return 0
        kw = {}
        if self.time_limit_ok:
            kw["time_limit"] = max(1, int(deadline - time.perf_counter()) + 1)
        try:
            n = len(self.G.get_subisomorphisms_lad(Hg, domains=dom, induced=induced, **kw))
        except Exception as exc:
            if "time" in str(exc).lower() and "limit" in str(exc).lower():
                raise ToolTimeout from None
            raise
        return n if limit is None else min(n, limit)

    def info(self):
        d = super().info()
        d["time_limit_supported"] = getattr(self, "time_limit_ok", None)
        return d


class IgraphVF2(_Igraph):
    """igraph VF2, non-induced only, vertex colours = labels (mapped to ints). Count-all uses
    ``count_subisomorphisms_vf2`` (all in C); with a limit, ``subisomorphic_vf2(callback=...)``
    counts in a Python callback that stops the search at the limit or the deadline."""

    name = "igraph-vf2"
    supports_induced = False
    description = "python-igraph VF2 (count_subisomorphisms_vf2 / callback with a limit)"

    def load(self, G, label):
        super().load(G, label)
        self.codes = {}
        if label:
            self.codes = {x: i for i, x in enumerate(dict.fromkeys(self.labels))}
            self.colors = [self.codes[x] for x in self.labels]

    def prepare(self, H):
        Hg, labels = self._pattern(H)
        if not self.label:
            return Hg, None
        unused = len(self.codes)
        return Hg, [self.codes.get(x, unused) for x in labels]

    def count(self, q, *, limit, induced, deadline):
        Hg, hcol = q
        kw = dict(color1=self.colors, color2=hcol) if self.label else {}
        if limit is None:
            return self.G.count_subisomorphisms_vf2(Hg, **kw)
        n = 0
        late = False
        clock = time.perf_counter

        def cb(_g1, _g2, _m12, _m21):
            nonlocal n, late
            n += 1
            if n >= limit:
                return False
            if clock() > deadline:
                late = True
                return False
            return True

        self.G.subisomorphic_vf2(Hg, callback=cb, **kw)
        if late:
            raise ToolTimeout
        return n


# -- our engines ------------------------------------------------------------------------------
class NxGsmEngine(Tool):
    """nx_gsm's own API, ``count_subgraph_monomorphisms`` / ``count_subgraph_isomorphisms`` with
    ``node_label=``, ``limit=`` and ``engine=``. The data graph is converted once to a GsmGraph
    (``nx_gsm.from_networkx``) outside the timed region, as the peers' graphs are; the pattern
    goes in as a NetworkX graph (its conversion, label encoding and planning are timed)."""

    kind = "engine"

    def __init__(self, spec):
        self.name = spec
        m = re.fullmatch(r"cpu(\d+)", spec)
        self.engine = "cpu" if m else spec
        self.threads = int(m.group(1)) if m else None
        self.description = (f"nx_gsm engine={self.engine!r}"
                            + (f" on {self.threads} Numba thread(s)" if self.threads else ""))

    def check(self):
        try:
            import nx_gsm  # noqa: F401
        except ImportError as exc:
            raise Unavailable(f"nx_gsm cannot be imported: {exc}") from None
        if self.threads is not None:
            import numba

            if not 1 <= self.threads <= numba.config.NUMBA_NUM_THREADS:
                raise Unavailable(f"{self.threads} threads requested, Numba has "
                                  f"{numba.config.NUMBA_NUM_THREADS}")

    def load(self, G, label):
        import nx_gsm

        if self.threads is not None:
            import numba

            # once per worker (it runs this tool alone), as a program sets it once: set and
            # restored around every call, it was 0.04-0.06 ms of a light query's first call
            numba.set_num_threads(self.threads)
        self.label = label
        self.api = nx_gsm
        self.g = nx_gsm.from_networkx(G, node_attrs=[label] if label else None,
                                      preserve_node_attrs=False, preserve_edge_attrs=False)

    def _call(self, G, H, limit, induced):
        fn = (self.api.count_subgraph_isomorphisms if induced
              else self.api.count_subgraph_monomorphisms)
        return fn(G, H, node_label=self.label, limit=limit, engine=self.engine)

    def warmup(self):
        """Time the first calls (compilation or cache load) and the same calls warm.

        A labelled 6-node graph, a labelled triangle and a 3-path, with and without a limit, non-
        induced and induced: every compiled entry point the benchmark calls. Then a count of 4-
        cliques in K_60, a search of ~2 x 10^5 candidates: the CPU engine's sequential probe
        (2^16 candidates) finishes every tiny search, so without it a worker's first real count
        would load the parallel count path (12-35 ms) inside its timed call. Raises Unavailable
        for an engine that is "not available" here.
        """
        import networkx as nx

        G = nx.complete_graph(6)
        for v in G:
            G.nodes[v]["label"] = v % 2
        pats = [nx.complete_graph(3), nx.path_graph(3)]
        for H in pats:
            for v in H:
                H.nodes[v]["label"] = 0
        big = nx.complete_graph(60)
        nx.set_node_attributes(big, 0, "label")
        clique = nx.complete_graph(4)
        nx.set_node_attributes(clique, 0, "label")
        saved = self.label, self.g
        try:
            out = {}
            for key in ("first_call_seconds", "warm_call_seconds"):
                t0 = time.perf_counter()
                try:
                    self.load(G, "label")
                    for H, limit, induced in itertools.product(pats, (None, 5), (False, True)):
                        self._call(self.g, H, limit, induced)
                    self.load(big, "label")
                    for induced in (False, True):
                        self._call(self.g, clique, None, induced)
                except RuntimeError as exc:
                    if "not available" in str(exc):
                        raise Unavailable(str(exc)) from None
                    raise
                except ValueError as exc:
                    raise Unavailable(str(exc)) from None
                out[key] = time.perf_counter() - t0
        finally:
            self.label, self.g = saved
        return out

    def count(self, q, *, limit, induced, deadline):
        return self._call(self.g, q, limit, induced)

    def info(self):
        import numba

        from .machine import source_fingerprint

        try:
            layer = numba.threading_layer()
        except ValueError:  # no parallel region has run yet
            layer = None
        return {"description": self.description, "engine": self.engine,
                "threads": self.threads or numba.config.NUMBA_NUM_THREADS,
                "numba_threading_layer": layer,
                "nx_gsm_source": source_fingerprint(),
                "nx_gsm_version": getattr(self.api, "__version__", None)}


def _sunluo():
    from .sunluo import SunLuoCpp

    return SunLuoCpp()


PEERS = {
    "sunluo-cpp": _sunluo,
    "nx-vf2": NxVF2,
    "rustworkx": lambda: Rustworkx(id_order=False),
    "rustworkx-id": lambda: Rustworkx(id_order=True),
    "igraph-lad": IgraphLAD,
    "igraph-vf2": IgraphVF2,
}
DEFAULT_PEERS = ("sunluo-cpp", "nx-vf2", "rustworkx", "igraph-lad", "igraph-vf2")
DEFAULT_ENGINES = ("cpu", "cpu1")


def resolve_tool(spec):
    """A Tool instance for a name or a ``module:Class`` spec.

    Construction imports nothing heavy: libraries are imported in the worker, by ``check()``."""
    if spec in PEERS:
        tool = PEERS[spec]()
    elif ":" in spec:
        mod, _, cls = spec.partition(":")
        tool = getattr(importlib.import_module(mod), cls)()
        if not getattr(tool, "name", None) or tool.name == Tool.name:
            tool.name = spec
    elif re.fullmatch(r"[a-z][a-z0-9_-]*", spec):
        tool = NxGsmEngine(spec)
    else:
        raise ValueError(f"bad tool name {spec!r}")
    tool._spec = spec  # what the worker process resolves again
    return tool
