"""nx-gsm: subgraph isomorphism and monomorphism on NVIDIA GPUs and a parallel CPU engine.

Terms (as in NetworkX's ``isomorphvf2`` module): ``G`` is the *data* (big) graph and ``H`` the
*pattern* (small) graph. A **monomorphism** is an injective map of H's nodes into G's that sends every
H edge onto a G edge (with at least its multiplicity); extra G edges among the image are allowed. A
**subgraph isomorphism** is node-induced: additionally every G edge among the image must come from an
H edge, with equal multiplicity. Mappings are dicts ``{G_node: H_node}``, NetworkX's direction.

This module stays cheap to import: NetworkX imports :mod:`nx_gsm.backend_info` while it is itself
still importing, so everything here is loaded lazily on first attribute access.
"""

__version__ = "0.1.0"

_LAZY = {
    "subgraph_monomorphisms": "nx_gsm.api",
    "subgraph_isomorphisms": "nx_gsm.api",
    "count_subgraph_monomorphisms": "nx_gsm.api",
    "count_subgraph_isomorphisms": "nx_gsm.api",
    "find_subgraph_monomorphisms": "nx_gsm.api",
    "find_subgraph_isomorphisms": "nx_gsm.api",
    "is_subgraph_monomorphic": "nx_gsm.api",
    "is_subgraph_isomorphic": "nx_gsm.api",
    "isomorphisms": "nx_gsm.api",
    "explain": "nx_gsm.api",
    "match_frames": "nx_gsm.api",
    "from_edgelist": "nx_gsm.interop.frames",
    "from_csr": "nx_gsm.interop.frames",
    "GraphMatcher": "nx_gsm.matcher",
    "DiGraphMatcher": "nx_gsm.matcher",
    "MultiGraphMatcher": "nx_gsm.matcher",
    "MultiDiGraphMatcher": "nx_gsm.matcher",
    "GsmGraph": "nx_gsm.graph",
    "DeviceGraph": "nx_gsm.interop.device",
    "from_networkx": "nx_gsm.interop.networkx",
    "to_networkx": "nx_gsm.interop.networkx",
    "read_graph": "nx_gsm.interop.files",
    "write_graph": "nx_gsm.interop.files",
    "demo_graph_path": "nx_gsm.data",
    "demo_queries": "nx_gsm.data",
    "MatchSet": "nx_gsm.results",
    "IncrementalMatcher": "nx_gsm.incremental",
    "resolve_engine": "nx_gsm.engines.registry",
    "get_engine": "nx_gsm.engines.registry",
    "available_engines": "nx_gsm.engines.registry",
    "Capabilities": "nx_gsm.engines.base",
    "CpuEngine": "nx_gsm.engines.cpu",
    "PartitionedEngine": "nx_gsm.engines.partitioned",
    "GMatchConfig": "nx_gsm.engines.gpu.gmatch",
    "warmup": "nx_gsm.precompile",
}

__all__ = sorted(_LAZY)


def __getattr__(name):
    modname = _LAZY.get(name)
    if modname is None:
        raise AttributeError(f"module 'nx_gsm' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(modname), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
