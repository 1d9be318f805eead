"""MatchSet: an array-level result (one row per mapping, one column per pattern node)."""

from __future__ import annotations

import numpy as np

__all__ = ["MatchSet"]


class MatchSet:
    """Mappings stored as an ``n x |H|`` int32 array of G node ids, columns in H's node order.

    Iterating yields ``{G_node: H_node}`` dicts lazily, like the iterator API. ``partial`` is True
    when the search stopped early (timeout or Ctrl-C).

    Examples
    --------
    >>> import networkx as nx, nx_gsm
    >>> ms = nx_gsm.find_subgraph_monomorphisms(nx.path_graph(3), nx.path_graph(2))
    >>> len(ms), sorted(map(sorted, (m.items() for m in ms)))[0]
    (4, [(0, 0), (1, 1)])
    """

    def __init__(self, rows, g_keys, h_keys, partial=False):
        self.partial = bool(partial)
        self._rows = rows
        self._g_keys = g_keys
        self._h_keys = list(h_keys)

    @property
    def count(self):
        return int(self._rows.shape[0])

    def __len__(self):
        return self.count

    @property
    def pattern_nodes(self):
        return list(self._h_keys)

    def to_numpy(self, *, keys=False):
        """The id array (``keys=False``) or an object array of original G node keys."""
        if not keys:
            return self._rows
        gk = np.empty(len(self._g_keys), dtype=object)
        gk[:] = self._g_keys
        return gk[self._rows]

    def to_pandas(self):
        """A DataFrame with one column per pattern node holding original G node keys."""
        import pandas as pd

        vals = self.to_numpy(keys=True)
        return pd.DataFrame({h: vals[:, i] for i, h in enumerate(self._h_keys)},
                            columns=self._h_keys)

    def __iter__(self):
        gk, hk = self._g_keys, self._h_keys
        for row in self._rows.tolist():
            yield dict(zip([gk[v] for v in row], hk))

    def __repr__(self):
        return f"<MatchSet {self.count} mappings x {len(self._h_keys)} pattern nodes>"
