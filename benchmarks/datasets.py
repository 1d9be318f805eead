"""Where the benchmark datasets live and how to read them.

The shared datasets sit next to the repository checkout, in ``<checkout>/../shared/datasets`` (see
that folder's README for provenance and statistics). ``NX_GSM_DATASETS`` (or the ``--datasets``
option) points elsewhere. Readers return plain NetworkX graphs with nodes ``0..n-1`` inserted in id
order; a vertex label, where there is one, is node attribute ``"label"``.
"""

from __future__ import annotations

import os
from pathlib import Path

import networkx as nx
import numpy as np

__all__ = [
    "datasets_root",
    "DatasetMissing",
    "read_sun_luo_graph",
    "read_edge_csv",
    "read_snap_edge_list",
    "read_answers",
]


class DatasetMissing(Exception):
    """A dataset file or folder is not there; the message says which (the suite is skipped)."""


def datasets_root(override=None):
    """The datasets folder: ``override``, else ``$NX_GSM_DATASETS``, else ``../shared/datasets``."""
    if override:
        return Path(override)
    env = os.environ.get("NX_GSM_DATASETS")
    if env:
        return Path(env)
    return Path(__file__).resolve().parents[1].parent / "shared" / "datasets"


def require(path):
    """``path`` if it exists, else raise :class:`DatasetMissing` naming it."""
    path = Path(path)
    if not path.exists():
        raise DatasetMissing(f"{path} not found")
    return path


def read_sun_luo_graph(path):
    """A ``t/v/e`` ``.graph`` file (vertex labels only; the queries' 4th ``e`` field is ignored)."""
    import nx_gsm

    return nx_gsm.read_graph(require(path), edge_labels=False)


def _graph_from_pairs(n, pairs, drop_self_loops=True):
    """Undirected simple graph on nodes ``0..n-1`` from an ``(m, 2)`` int array."""
    if drop_self_loops:
        pairs = pairs[pairs[:, 0] != pairs[:, 1]]
    G = nx.Graph()
    G.add_nodes_from(range(n))
    G.add_edges_from(map(tuple, pairs.tolist()))
    return G


def read_edge_csv(path):
    """A karateclub ``edges.csv`` (header ``id_1,id_2``, one row per undirected edge).

    Self-loops are dropped (facebook has 179): a pattern without loops never uses them as a
    monomorphism, and tools disagree on how loops interact with induced matching.
    """
    path = require(path)
    pairs = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.int64, ndmin=2)
    n = int(pairs.max()) + 1 if pairs.size else 0
    return _graph_from_pairs(n, pairs)


def read_snap_edge_list(path):
    """SNAP ``email-Enron.txt``: first line ``<n> <rows>``, then ``u<TAB>v`` rows (CRLF).

    Each undirected edge is listed in both directions; the NetworkX Graph merges them.
    """
    path = require(path)
    with open(path, encoding="ascii") as fh:
        header = fh.readline().split()
        n = int(header[0])
        pairs = np.loadtxt(fh, dtype=np.int64, ndmin=2)
    return _graph_from_pairs(max(n, int(pairs.max()) + 1 if pairs.size else 0), pairs)


def read_answers(path):
    """``<query_file_name> <count>`` lines -> ``{file_name: int}`` (counts can exceed 2**53)."""
    out = {}
    with open(path, encoding="ascii") as fh:
        for line in fh:
            parts = line.split()
            if len(parts) == 2:
                out[parts[0]] = int(parts[1])
    return out
