"""The local path's regions: the subgraphs of ``G_before`` and ``G_after`` around changed
pairs, built without materialising ``G_after``."""

from __future__ import annotations

from .values import out_adj

__all__ = ["Regions"]


def _nbrs(G, u):
    """Neighbours of ``u`` ignoring direction (may repeat for directed graphs)."""
    if G.is_directed():
        return list(G._succ[u]) + list(G._pred[u])
    return G._adj[u]


def _induced(cls, nodes, edges, multi):
    """A fresh graph of class ``cls`` from ``(node, attrs)`` and ``(u, v, datum)`` (attribute dicts
    copied shallowly; multigraph data are key-dicts)."""
    L = cls()
    L.add_nodes_from(nodes)
    if multi:
        L.add_edges_from((u, v, k, d) for u, v, kd in edges for k, d in kd.items())
    else:
        L.add_edges_from(edges)
    return L


def _touched_nodes(batch):
    """Endpoints of the batch's changed pairs, and its new and deleted nodes."""
    NT = set(batch.new_nodes) | set(batch.gone_nodes)
    for u, v in batch.touched.values():
        NT.add(u)
        NT.add(v)
    return NT


class Regions:
    """Local regions for the local path: for a set of centre nodes, the induced subgraphs of
    ``G_before`` and ``G_after`` on every node within ``radius`` (ignoring direction) of a centre
    in either graph, built without materialising ``G_after``.

    ``T1`` is ``G_after`` induced on the touched nodes ``NT`` (endpoints of changed pairs, new and
    deleted nodes); every other pair is the same in both graphs.
    """

    def __init__(self, G0, batch, radius, limit):
        self.G0, self.radius, self.limit = G0, radius, limit
        self.multi = G0.is_multigraph()
        NT = _touched_nodes(batch)
        self.NT = NT
        self.T1 = self._build_g0(NT)
        batch.apply_to(self.T1)  # every item of the batch lies inside NT

    def _build_g0(self, B):
        G0 = self.G0
        succ = out_adj(G0)
        nodes = [n for n in B if n in G0]
        return _induced(G0.__class__, ((n, G0._node[n]) for n in nodes),
                        ((u, v, d) for u in nodes for v, d in succ[u].items() if v in B),
                        self.multi)

    def _local(self, B, after):
        """``G_before[B]`` or ``G_after[B]`` as a read-only graph that shares the attribute
        objects of ``G0`` / ``T1`` (built directly as dicts: these graphs are only read)."""
        G0, T1, NT = self.G0, self.T1, self.NT
        directed = G0.is_directed()

        def rows(adj0, adj1):
            out = {}
            for n in B:
                if n in NT and after:
                    if n not in T1:
                        continue  # deleted
                    row = {v: d for v, d in adj1[n].items() if v in B}
                    if n in G0:
                        row.update((v, d) for v, d in adj0[n].items()
                                   if v in B and v not in NT)
                elif n in G0:
                    row = {v: d for v, d in adj0[n].items() if v in B}
                else:
                    continue  # new node, before the batch
                out[n] = row
            return out

        L = G0.__class__()
        succ = rows(out_adj(G0), out_adj(T1))
        L._node = {n: (T1._node[n] if n in NT and after else G0._node[n]) for n in succ}
        L._adj = succ
        if directed:
            L._succ = succ
            L._pred = rows(G0._pred, T1._pred)
        return L

    def _adj1(self, u):
        if u not in self.NT:
            return _nbrs(self.G0, u)
        out = list(_nbrs(self.T1, u)) if u in self.T1 else []
        if u in self.G0 and u in self.T1:
            out.extend(v for v in _nbrs(self.G0, u) if v not in self.NT)
        return out

    def _ball(self, adj, centres, exists):
        seen = {c for c in centres if exists(c)}
        frontier = list(seen)
        for _ in range(self.radius):
            nxt = []
            for u in frontier:
                for v in adj(u):
                    if v not in seen:
                        seen.add(v)
                        nxt.append(v)
                if self.limit is not None and len(seen) > self.limit:
                    return None
            frontier = nxt
        return seen

    def region(self, centres):
        """(G_before[B], G_after[B]) for the ball B around ``centres``, or None if too large."""
        G0, T1, NT = self.G0, self.T1, self.NT
        b0 = self._ball(lambda u: _nbrs(G0, u), centres, lambda n: n in G0)
        if b0 is None:
            return None
        b1 = self._ball(self._adj1, centres,
                        lambda n: (n in T1) if n in NT else (n in G0))
        if b1 is None:
            return None
        B = b0 | b1
        return self._local(B, False), self._local(B, True)
