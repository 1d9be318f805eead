"""Helpers shared by the engine tests (the simulator cases and the card tests
``tests/test_card_*.py``): random graphs of every NetworkX class, and engine output as rows and sets."""

from __future__ import annotations

import random

import networkx as nx
import numpy as np

__all__ = ["CLASSES", "random_graph", "random_case", "rows_of", "row_set", "kill_once_plugin",
           "plain_row_batches"]

CLASSES = [nx.Graph, nx.DiGraph, nx.MultiGraph, nx.MultiDiGraph]


def random_graph(rnd, cls, n, p, loops=False, n_labels=1, n_elabels=1, multi_p=0.3,
                 labels_first=False):
    """A ``cls`` graph on ``0..n-1``: each ordered (directed) or unordered pair an edge with
    probability ``p`` (self-loops only with ``loops``), in multigraphs a parallel edge with
    probability ``multi_p``; node label ``"c"`` and edge label ``"w"`` uniform from
    ``range(n_labels)`` and ``range(n_elabels)``, all drawn from ``rnd`` (a ``random.Random``),
    the node labels after the edges or, with ``labels_first``, before them (the GAMMA tests'
    seeded cases)."""
    G = cls()
    if labels_first:
        G.add_nodes_from((u, {"c": rnd.randrange(n_labels)}) for u in range(n))
    G.add_nodes_from(range(n))
    for u in range(n):
        for v in range(n):
            if (u == v and not loops) or (not G.is_directed() and v < u):
                continue
            if rnd.random() < p:
                G.add_edge(u, v, w=rnd.randrange(n_elabels))
                if G.is_multigraph() and rnd.random() < multi_p:
                    G.add_edge(u, v, w=rnd.randrange(n_elabels))
    if not labels_first:
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


def random_case(seed, *, densities=(0.15, 0.3, 0.5), edge_labels=(1, 2, 3), k_max=8,
                p_edge_match=0.5):
    """A seeded random ``(G, H, kw)`` matching case: ``G`` of class ``CLASSES[seed % 4]`` with
    8-40 nodes, a density from ``densities`` and up to 3 node and ``edge_labels`` edge labels;
    ``H`` of 2..``k_max`` nodes, either an induced subgraph of ``G`` (relabelled, so it has
    matches) or a small random graph; ``kw`` the NetworkX node/edge matchers on the labels, each
    present at random (the edge one with probability ``p_edge_match``)."""
    from networkx.algorithms import isomorphism as iso

    rnd = random.Random(seed)
    cls = CLASSES[seed % 4]
    n = rnd.randint(8, 40)
    G = random_graph(rnd, cls, n, rnd.choice(list(densities)), loops=rnd.random() < 0.3,
                     n_labels=rnd.choice([1, 2, 3]), n_elabels=rnd.choice(list(edge_labels)))
    k = rnd.randint(2, k_max)
    if rnd.random() < 0.6:
        H = G.subgraph(rnd.sample(list(G.nodes), k)).copy()
        H = nx.relabel_nodes(H, {u: f"h{u}" for u in H})
    else:
        H = random_graph(rnd, cls, k, 0.5, n_labels=2, n_elabels=2)
    kw = {}
    if rnd.random() < 0.5:
        kw["node_match"] = iso.categorical_node_match("c", None)
    if rnd.random() < p_edge_match:
        em = iso.categorical_multiedge_match if G.is_multigraph() else iso.categorical_edge_match
        kw["edge_match"] = em("w", None)
    return G, H, kw


def kill_once_plugin(marker, prefix="gsm-count_"):
    """A ``distributed.WorkerPlugin`` that kills its worker process the first time a task whose
    key starts with ``prefix`` begins executing; the file ``marker`` makes "first" hold across
    the restarted worker (the Dask retry tests)."""
    import os

    import distributed

    class KillOnce(distributed.WorkerPlugin):
        def __init__(self, marker):
            self.marker = marker

        def transition(self, key, start, finish, **kwargs):
            name = key if isinstance(key, str) else str(key)
            if finish == "executing" and name.startswith(prefix) and \
                    not os.path.exists(self.marker):
                with open(self.marker, "w") as fh:
                    fh.write(name)
                os._exit(1)

    return KillOnce(marker)


def plain_row_batches(engine):
    """Batches of plain ``(u, v)`` rows, valid and not, applied to an ``IncrementalMatcher`` on
    ``engine`` and to one on the CPU path side by side (undirected and directed, node keys that
    are ids and keys that are not): an invalid batch raises the same ``BatchError`` on both and
    changes nothing in the matcher (on GAMMA, id rows that fail the check made beside its
    searches drop the device graph, reloaded later), and every valid batch after it gives the
    same answers, and the same graph (on GAMMA with id rows, edited when next read). Raises
    AssertionError on a difference; returns the number of batches compared."""
    from .incremental import BatchError, IncrementalMatcher

    def mset(ms):
        return {frozenset(m.items()) for m in ms}

    n = 0
    for directed in (False, True):
        for relabel in (False, True):
            G = nx.gnm_random_graph(40, 140, seed=5, directed=directed)
            if relabel:
                G = nx.relabel_nodes(G, {i: f"v{i}" for i in G})
            key = (lambda i: f"v{i}") if relabel else (lambda i: i)
            H = nx.path_graph(3, create_using=nx.DiGraph if directed else nx.Graph)
            ms = [IncrementalMatcher(G, H, engine=e) for e in (engine, "cpu")]
            edges = sorted(G.edges(), key=str)
            absent = [(key(u), key(v)) for u in range(40) for v in range(40)
                      if u != v and not G.has_edge(key(u), key(v))][:6]
            batches = [
                dict(insert=absent[:2], delete=edges[:2]),  # valid
                dict(insert=absent[2:3], delete=[absent[3]]),  # deletes a missing edge
                dict(insert=[edges[5]], delete=[edges[6]]),  # inserts an existing edge
                dict(insert=[(key(1), key(2)), (key(1), key(2))]),  # a row twice
                dict(insert=[absent[4], (key(3), key(99))]),  # a new node (the general path)
                dict(insert=[absent[5]], delete=[edges[7], (key(0), key(-5))]),  # unknown node
                dict(insert=[edges[0]], delete=[absent[0]]),  # undoes the first batch
                dict(insert=[edges[1], absent[3]], delete=[edges[8]]),  # valid
            ]
            for b in batches:
                out = []
                for m in ms:
                    before = (m.count(), sorted(map(str, m.graph.edges())))
                    stale = m._gamma is not None and m._gamma._stale
                    try:
                        r = m.apply(**b)
                    except BatchError as exc:
                        assert (m.count(), sorted(map(str, m.graph.edges()))) == before, b
                        out.append(("error", str(exc)))
                        if m._gamma is not None and b is batches[1] and not relabel:
                            # id rows: checked while the after-side search ran, on a device
                            # graph that then had the batch; it is dropped (reloaded later)
                            tl = m._gamma.last_stats.get("timeline_ms", {})
                            assert "launched1" in tl and "checked" not in tl, tl
                            assert m._gamma._stale
                        elif m._gamma is not None:  # checked before any device work
                            assert m._gamma._stale == stale
                    else:
                        if m._gamma is not None and b is batches[0]:
                            # id rows: the matcher's graph takes the batch when next read (the
                            # node added by batches[4] ends the ids: the graph is edited at once)
                            assert len(m._pending) == (not relabel)
                        out.append((mset(r.added), mset(r.removed), m.count(),
                                    sorted(map(str, m.graph.edges()))))
                assert out[0] == out[1], (directed, relabel, b, out)
                n += 1
    return n
