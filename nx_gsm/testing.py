"""Helpers shared by the engine tests (CI's simulator scripts in ``tests/`` and the card tests in
``gpu/tests/``): random graphs of every NetworkX class, and engine output as rows and sets."""

from __future__ import annotations

import networkx as nx
import numpy as np

__all__ = ["CLASSES", "random_graph", "rows_of", "row_set"]

CLASSES = [nx.Graph, nx.DiGraph, nx.MultiGraph, nx.MultiDiGraph]


def random_graph(rnd, cls, n, p, loops=False, n_labels=1, n_elabels=1, multi_p=0.3):
    """A ``cls`` graph on ``0..n-1``: each ordered (directed) or unordered pair an edge with
    probability ``p`` (self-loops only with ``loops``), in multigraphs a parallel edge with
    probability ``multi_p``; node label ``"c"`` and edge label ``"w"`` uniform from
    ``range(n_labels)`` and ``range(n_elabels)``, all drawn from ``rnd`` (a ``random.Random``)."""
    G = cls()
    G.add_nodes_from(range(n))
    for u in range(n):
        for v in range(n):
            if (u == v and not loops) or (not G.is_directed() and v < u):
                continue
            if rnd.random() < p:
                G.add_edge(u, v, w=rnd.randrange(n_elabels))
                if G.is_multigraph() and rnd.random() < multi_p:
                    G.add_edge(u, v, w=rnd.randrange(n_elabels))
    for u in G:
        G.nodes[u]["c"] = rnd.randrange(n_labels)
    return G


def rows_of(chunks, k):
    """An engine's ``iter_chunks`` output as one (rows, k) int32 array, checking every chunk's
    type and width on the way."""
    chunks = list(chunks)
    for c in chunks:
        assert c.dtype == np.int32 and c.ndim == 2 and c.shape[1] == k, (c.dtype, c.shape)
    return np.concatenate(chunks) if chunks else np.zeros((0, k), dtype=np.int32)


def row_set(rows):
    """The rows as a set of tuples; raises AssertionError if any row occurs twice."""
    s = set(map(tuple, rows.tolist()))
    assert len(s) == len(rows), "a match was produced twice"
    return s
