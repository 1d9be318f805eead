"""``networkx.backend_info`` entry point.

NetworkX calls :func:`get_info` while ``import networkx`` is still running, so this module uses the
standard library only and must not import ``networkx`` or the rest of ``nx_gsm``.
"""

# Dispatch names implemented by nx_gsm.interface.BackendInterface. The 3.7-only names are listed
# too: NetworkX ignores entries for functions it does not have.
FUNCTIONS = (
    "is_isomorphic",
    "vf2pp_isomorphism",
    "vf2pp_is_isomorphic",
    "vf2pp_all_isomorphisms",
    "vf2pp_subgraph_isomorphism",
    "vf2pp_subgraph_is_isomorphic",
    "vf2pp_all_subgraph_isomorphisms",
    "vf2pp_monomorphism",
    "vf2pp_is_monomorphic",
    "vf2pp_all_monomorphisms",
)

# Keyword-only parameters every dispatched function accepts beyond NetworkX's own, with their
# defaults: ``nx.vf2pp_all_monomorphisms(G, H, backend="gsm", engine="cpu")``.
EXTRA_PARAMETERS = {"engine": None}

DEFAULT_CONFIG = {
    # "auto" lets the planner choose; "cpu" forces the CPU engine (GPU engines where installed).
    "engine": "auto",
    # should_run declines graphs smaller than this (conversion would cost more than VF2 itself).
    "min_edges": 64,
    # Bytes of device memory the GPU engines may use; None means "what the device reports free".
    "device_memory_budget": None,
}


def get_info():
    return {
        "backend_name": "gsm",
        "project": "nx-gsm",
        "package": "nx_gsm",
        "url": "https://github.com/nx-gsm/nx-gsm",
        "short_summary": "Subgraph isomorphism and monomorphism on GPUs and a parallel CPU engine.",
        "default_config": dict(DEFAULT_CONFIG),
        "functions": {
            name: {
                "additional_docs": (
                    "Exact backtracking with candidate filtering (Numba CPU engine; GPU engines "
                    "where CUDA is present). Same mappings as NetworkX."
                ),
                "additional_parameters": {
                    "engine : str or engine object, optional": (
                        "Engine name (auto, cpu, partitioned, gmatch, gsi, geneva) or an engine "
                        "object such as nx_gsm.PartitionedEngine(inner='cpu', parts=4); "
                        "default: nx.config.backends.gsm.engine."
                    ),
                },
            }
            for name in FUNCTIONS
        },
    }
