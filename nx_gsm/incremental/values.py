"""What the batch code reads off a NetworkX graph: the datum ``edge_match`` sees for a node
pair, its multiplicity, node-key identity, and the direct edit of a plain graph's dicts."""

from __future__ import annotations

import networkx as nx

from ..plan.labels import indistinguishable

__all__ = ["NOKEY", "out_adj", "datum", "mult", "same_node", "degrees", "datum_mult", "edit_plain",
           "remove_edge", "same"]


NOKEY = object()  # "no key given" for multigraph rows


# -- graph helpers --------------------------------------------------------------------------------
def out_adj(G):
    return G._succ if G.is_directed() else G._adj


def datum(G, u, v):
    """The object edge_match sees for ``u -> v`` (attr dict, or multigraph key-dict), or None."""
    nb = out_adj(G).get(u)
    if nb is None:
        return None
    return nb.get(v)


def mult(G, u, v):
    return datum_mult(datum(G, u, v), G.is_multigraph())


def same_node(a, b):
    """Whether ``a`` and ``b`` are one node key, as a dict tells keys apart (hash, then
    identity, then ``==``): ``==`` alone is elementwise for a numpy scalar beside a tuple and
    False for NaN."""
    return a is b or len({a, b}) == 1


def degrees(G, x):
    """``x``'s distinct out- and in-neighbours other than itself (undirected: neighbours, 0)."""
    out = len(out_adj(G)[x]) - (x in out_adj(G)[x])
    if not G.is_directed():
        return out, 0
    return out, len(G._pred[x]) - (x in G._pred[x])


def datum_mult(d, multi):
    """The edge multiplicity a datum stands for (None: no edge)."""
    return 0 if d is None else len(d) if multi else 1


def edit_plain(G, remove, add, gone=(), new=()):
    """Edit a plain ``nx.Graph`` / ``nx.DiGraph`` through its adjacency dicts, without NetworkX's
    per-call checks (the edits were validated): delete the edges ``(u, v, ...)`` of ``remove``,
    the nodes ``gone``, add the nodes ``(n, attrs)`` of ``new``, then set the edges
    ``(u, v, datum)`` of ``add`` (one datum object for both entries of an edge, as given).
    Returns the data of the deleted edges, in ``remove``'s order."""
    directed = G.is_directed()
    succ = out_adj(G)
    pred = G._pred if directed else succ
    data = []
    for e in remove:
        u, v = e[0], e[1]
        data.append(succ[u].pop(v))
        if directed or not same_node(u, v):  # an undirected self-loop is one entry
            del pred[v][u]
    G.remove_nodes_from(gone)
    G.add_nodes_from(new)
    for u, v, d in add:
        succ[u][v] = pred[v][u] = d
    getattr(nx, "_clear_cache", lambda g: None)(G)  # NetworkX caches (3.3+)
    return data


_NX_REMOVE_EDGE = (nx.Graph.remove_edge, nx.DiGraph.remove_edge, nx.MultiGraph.remove_edge,
                   nx.MultiDiGraph.remove_edge)


def remove_edge(G, u, v, key=None):
    """``G.remove_edge(u, v[, key])`` for a validated edge, with NetworkX's self-loop test
    ``u != v`` read as a dict reads keys (:func:`same_node`): NaN keys and a numpy scalar beside
    a tuple key make that test wrong or raise. A class that overrides ``remove_edge`` keeps its
    own method."""
    if type(G).remove_edge not in _NX_REMOVE_EDGE:
        if G.is_multigraph():
            G.remove_edge(u, v, key)
        else:
            G.remove_edge(u, v)
        return
    succ = out_adj(G)
    pred = G._pred if G.is_directed() else succ
    if G.is_multigraph():
        keys = succ[u][v]  # one key dict for both entries of an undirected edge
        if key is None:
            keys.popitem()
        else:
            del keys[key]
    if not G.is_multigraph() or not keys:
        del succ[u][v]
        if G.is_directed() or not same_node(u, v):
            del pred[v][u]
    getattr(nx, "_clear_cache", lambda g: None)(G)


def same(a, b):
    # a datum that merely compares equal can still differ for edge_match (-0.0 and 0.0, key
    # order, a namedtuple for a tuple): only an indistinguishable one leaves the pair unchanged
    # (a pair taken as changed when it is not costs a search, never a wrong delta)
    return indistinguishable(a, b)
