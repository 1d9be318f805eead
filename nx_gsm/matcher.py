"""Drop-in replacements for NetworkX's VF2 matcher classes.

``nx_gsm.GraphMatcher(G1, G2, node_match=None, edge_match=None)`` behaves like
:class:`networkx.algorithms.isomorphism.GraphMatcher` (same constructor, errors, ``mapping``,
``test`` attribute and ``is_*`` methods; ``isinstance`` checks against NetworkX's class still pass),
but ``isomorphisms_iter``, ``subgraph_isomorphisms_iter`` and ``subgraph_monomorphisms_iter`` run
nx_gsm's engines. G1 is the data (big) graph, G2 the pattern; mappings are ``{G1_node: G2_node}``.

A subclass that overrides the VF2 hooks (``semantic_feasibility``, ``syntactic_feasibility``,
``candidate_pairs_iter``, ``match``) changes the semantics in ways no plan can express, so such a
subclass runs NetworkX's own VF2 code unchanged.
"""

from __future__ import annotations

from networkx.algorithms.isomorphism import vf2userfunc as _nxu

from . import api
from .engines import resolve_engine

__all__ = ["GraphMatcher", "DiGraphMatcher", "MultiGraphMatcher", "MultiDiGraphMatcher"]

_HOOKS = ("semantic_feasibility", "syntactic_feasibility", "candidate_pairs_iter", "match",
          "initialize")


class _GsmMatcherMixin:
    engine = "auto"

    def __init__(self, G1, G2, *args, engine="auto", **kwargs):
        super().__init__(G1, G2, *args, **kwargs)
        # a name or an engine object (nx_gsm.resolve_engine), as the functions' engine=
        self.engine = engine

    def _own_path(self):
        cls = type(self)
        base = _nxu.DiGraphMatcher if self._is_directed_matcher() else _nxu.GraphMatcher
        return all(getattr(cls, h) is getattr(base, h) for h in _HOOKS)

    def _run(self, mode, test, nx_iter):
        if not self._own_path():
            yield from nx_iter()
            return
        self.test = test
        self.initialize()
        plan, _, _ = api.prepare(self.G1, self.G2, mode, node_match=self.node_match,
                                 edge_match=self.edge_match, fn_name=type(self).__name__)
        for m in api.iter_mappings(plan, resolve_engine(self.engine)):
            # as VF2 leaves them: while the iterator is paused at a mapping (e.g. after
            # subgraph_is_isomorphic()), core_1/core_2 hold it both ways; ``mapping`` keeps the
            # last one found
            self.mapping = m
            self.core_1 = dict(m)
            self.core_2 = {h: g for g, h in m.items()}
            yield m
        self.core_1, self.core_2 = {}, {}

    def isomorphisms_iter(self):
        """Iterate over all isomorphisms between G1 and G2 (``{G1_node: G2_node}``)."""
        sup = super().isomorphisms_iter
        yield from self._run("iso", "graph", sup)

    def subgraph_isomorphisms_iter(self):
        """Iterate over node-induced subgraph isomorphisms of G2 into G1."""
        sup = super().subgraph_isomorphisms_iter
        yield from self._run("induced", "subgraph", sup)

    def subgraph_monomorphisms_iter(self):
        """Iterate over monomorphisms (non-induced embeddings) of G2 into G1."""
        sup = super().subgraph_monomorphisms_iter
        yield from self._run("mono", "mono", sup)


class GraphMatcher(_GsmMatcherMixin, _nxu.GraphMatcher):
    """Drop-in :class:`networkx.algorithms.isomorphism.GraphMatcher` running nx_gsm engines.

    Examples
    --------
    >>> import networkx as nx, nx_gsm
    >>> GM = nx_gsm.GraphMatcher(nx.complete_graph(4), nx.cycle_graph(3))
    >>> GM.subgraph_is_isomorphic(), len(list(GM.subgraph_isomorphisms_iter()))
    (True, 24)
    """


class DiGraphMatcher(_GsmMatcherMixin, _nxu.DiGraphMatcher):
    """Drop-in :class:`networkx.algorithms.isomorphism.DiGraphMatcher` running nx_gsm engines."""


class MultiGraphMatcher(_GsmMatcherMixin, _nxu.MultiGraphMatcher):
    """Drop-in ``MultiGraphMatcher`` (edge_match receives key-dicts of parallel edges)."""


class MultiDiGraphMatcher(_GsmMatcherMixin, _nxu.MultiDiGraphMatcher):
    """Drop-in ``MultiDiGraphMatcher``."""
