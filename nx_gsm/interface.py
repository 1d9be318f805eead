"""The ``networkx.backends`` entry point: NetworkX dispatches to :class:`BackendInterface`.

Implemented dispatch names are in :data:`nx_gsm.backend_info.FUNCTIONS`; those NetworkX lacks
(the subgraph/monomorphism ``vf2pp_*`` functions before NetworkX 3.7) are simply not registered.
Each function keeps NetworkX's exact signature (parameter names differ between releases: 3.6 uses
``G1, G2``, 3.7 ``FG, SG``) and returns plain Python values with the original node keys.
"""

from __future__ import annotations

import collections
import inspect
import operator

import networkx as nx

from . import api
from .backend_info import EXTRA_PARAMETERS, FUNCTIONS
from .engines import resolve_engine
from .graph import GsmGraph
from .interop.networkx import from_networkx, to_networkx

__all__ = ["BackendInterface", "CALLS"]

# dispatch name -> number of calls served by gsm (read by the NetworkX test-suite runner)
CALLS = collections.Counter()


def _node_labels(X, node_label, default_label):
    """Every node's VF2++ label: its ``node_label`` value, else ``default_label`` (with
    ``node_label=None`` too, as NetworkX reads ``X.nodes(data=None, default=...)``)."""
    if isinstance(X, GsmGraph):
        return [d.get(node_label, default_label) for d in X.node_data or [{}] * X.n]
    return [lab for _, lab in X.nodes(data=node_label, default=default_label)]


def _vf2pp_plan(FG, SG, node_label, default_label, mode, engine):
    """The plan of VF2++'s search, or None where VF2++ returns before searching.

    VF2++'s early returns, in NetworkX's order: an empty graph on either side has no mapping;
    then the data graph's labels are grouped by hash (TypeError if one is unhashable); then a
    pattern that cannot fit the data graph has no mapping, before the pattern's own labels are
    hashed (the planner hashes them, and the data graph's, when it builds its label table).
    """
    if len(SG) == 0 or len(FG) == 0:
        return None
    if SG.is_directed() != FG.is_directed():
        raise nx.NetworkXError("SG and FG must have the same directedness")
    fits = operator.eq if mode == "iso" else operator.le
    if node_label is None or not fits(len(SG), len(FG)):
        # the planner has no label table to build for node_label=None (every node is labelled
        # default_label), nor a plan for a pattern that does not fit: hash the labels here
        set(_node_labels(FG, node_label, default_label))
    if not fits(len(SG), len(FG)):
        return None
    plan, _, _ = api.prepare(FG, SG, mode, vf2pp_label=node_label, vf2pp_default=default_label,
                             fn_name=f"vf2pp ({mode})", engine=engine)
    return plan


def _vf2pp_all(mode):
    def all_(FG, SG, node_label=None, default_label=None, *, engine=None):
        eng = resolve_engine(engine)
        plan = _vf2pp_plan(FG, SG, node_label, default_label, mode, eng)
        if plan is not None:
            yield from api.iter_mappings(plan, eng)

    return all_


def _vf2pp_first(mode):
    def first(FG, SG, node_label=None, default_label=None, *, engine=None):
        eng = resolve_engine(engine)
        plan = _vf2pp_plan(FG, SG, node_label, default_label, mode, eng)
        if plan is None:
            return None
        return next(api.iter_mappings(plan, eng, limit=1), None)

    return first


def _vf2pp_is(mode):
    first = _vf2pp_first(mode)

    def is_(FG, SG, node_label=None, default_label=None, *, engine=None):
        # VF2++ never yields an empty mapping (empty graphs have none), so None means "no match"
        return first(FG, SG, node_label, default_label, engine=engine) is not None

    return is_


def is_isomorphic(G1, G2, node_match=None, edge_match=None, *, engine=None):
    if G1.is_directed() != G2.is_directed():
        raise nx.NetworkXError("Graphs G1 and G2 are not of the same type.")
    eng = resolve_engine(engine)
    plan, _, _ = api.prepare(G1, G2, "iso", node_match=node_match, edge_match=edge_match,
                             fn_name="is_isomorphic", engine=eng)
    return next(api.iter_mappings(plan, eng, limit=1), None) is not None


_IMPLS = {
    "is_isomorphic": is_isomorphic,
    "vf2pp_isomorphism": _vf2pp_first("iso"),
    "vf2pp_is_isomorphic": _vf2pp_is("iso"),
    "vf2pp_all_isomorphisms": _vf2pp_all("iso"),
    "vf2pp_subgraph_isomorphism": _vf2pp_first("induced"),
    "vf2pp_subgraph_is_isomorphic": _vf2pp_is("induced"),
    "vf2pp_all_subgraph_isomorphisms": _vf2pp_all("induced"),
    "vf2pp_monomorphism": _vf2pp_first("mono"),
    "vf2pp_is_monomorphic": _vf2pp_is("mono"),
    "vf2pp_all_monomorphisms": _vf2pp_all("mono"),
}


def _with_signature(name, impl, nx_func):
    """Wrap ``impl`` so it accepts exactly ``nx_func``'s parameters (names vary by release) plus
    the backend's own keyword-only ones (:data:`~nx_gsm.backend_info.EXTRA_PARAMETERS`), which
    NetworkX passes through from ``nx.func(..., backend="gsm", engine="cpu")``."""
    sig = inspect.signature(nx_func)
    params = [p for p in sig.parameters.values() if p.kind != p.VAR_KEYWORD and p.name != "backend"]
    extras = [inspect.Parameter(p, inspect.Parameter.KEYWORD_ONLY, default=d)
              for p, d in EXTRA_PARAMETERS.items()]
    sig = sig.replace(parameters=params + extras)

    def wrapper(*args, **kwargs):
        CALLS[name] += 1
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        return impl(*bound.args, **bound.kwargs)

    wrapper.__name__ = wrapper.__qualname__ = name
    wrapper.__signature__ = sig
    wrapper.__doc__ = impl.__doc__ or f"nx_gsm implementation of networkx.{name}."
    wrapper.__module__ = __name__
    return wrapper


def _registered():
    reg = nx.utils.backends._registered_algorithms
    return {name: reg[name] for name in FUNCTIONS if name in reg}


class BackendInterface:
    """NetworkX backend ``gsm``: conversion hooks plus one attribute per implemented function."""

    @staticmethod
    def convert_from_nx(G, *, edge_attrs=None, node_attrs=None, preserve_edge_attrs=False,
                        preserve_node_attrs=False, preserve_graph_attrs=False, name=None,
                        graph_name=None):
        return from_networkx(
            G,
            node_attrs=list(node_attrs) if node_attrs else None,
            edge_attrs=list(edge_attrs) if edge_attrs else None,
            preserve_node_attrs=bool(preserve_node_attrs),
            preserve_edge_attrs=bool(preserve_edge_attrs),
            preserve_graph_attrs=bool(preserve_graph_attrs),
        )

    @staticmethod
    def convert_to_nx(obj, *, name=None):
        return to_networkx(obj) if isinstance(obj, GsmGraph) else obj

    @staticmethod
    def can_run(name, args, kwargs):
        if name not in _IMPLS:
            return f"nx_gsm does not implement {name}"
        return True

    @staticmethod
    def should_run(name, args, kwargs):
        graphs = [a for a in list(args[:1]) + list(kwargs.values())[:1]
                  if hasattr(a, "number_of_edges")]
        if not graphs:
            return True
        try:
            threshold = nx.config.backends.gsm.min_edges
        except AttributeError:
            threshold = 0
        m = graphs[0].number_of_edges()
        if m < threshold:
            return (f"the data graph has {m} edges, below nx.config.backends.gsm.min_edges="
                    f"{threshold}: NetworkX's own code is faster than converting")
        return True

    @staticmethod
    def on_start_tests(items):
        """Nothing to mark: every dispatched isomorphism test is expected to pass on gsm."""


for _name, _nx_func in _registered().items():
    setattr(BackendInterface, _name,
            staticmethod(_with_signature(_name, _IMPLS[_name], _nx_func.orig_func)))
