"""MatchSet: an array-level result (one row per mapping, one column per pattern node)."""

from __future__ import annotations

import numpy as np

__all__ = ["MatchSet", "frame_from_rows"]


def node_key_array(g_keys):
    """The G node keys as an array: int64 when every key is an int that fits, else objects
    (the keys themselves: big ints, tuples, strings...)."""
    # integer keys 0..n-1 (the common case) stay integer columns
    if all(type(k) is int for k in g_keys[:64]) and all(type(k) is int for k in g_keys):
        try:
            return np.asarray(g_keys, dtype=np.int64)
        except OverflowError:  # an int past int64 (2**70): exact only as a Python int
            pass
    arr = np.empty(len(g_keys), dtype=object)
    arr[:] = g_keys
    return arr


def frame_from_rows(rows, g_keys, h_keys, key_array=None):
    """pandas DataFrame of original G keys from an id array (columns = pattern nodes).

    The index counts the rows, so the empty pattern's one empty mapping is one row without
    columns, as every other result form counts it.
    """
    import pandas as pd

    keys = node_key_array(g_keys) if key_array is None else key_array
    # object columns stay the key objects: pandas would otherwise infer a string column for
    # strings beside a NaN key. Built by position and labelled after, as a label dict cannot
    # hold two NaN pattern keys (nor keep tuple labels from becoming a MultiIndex).
    dtype = object if keys.dtype == object else None
    df = pd.DataFrame({i: keys[rows[:, i]] for i in range(len(h_keys))}, dtype=dtype,
                      index=pd.RangeIndex(rows.shape[0]))
    labels = node_key_array(list(h_keys))
    df.columns = pd.Index(labels, dtype=labels.dtype, tupleize_cols=False)
    return df


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

    @property
    def on_device(self):
        """True when the rows live in GPU memory (results of a DeviceGraph search)."""
        return not isinstance(self._rows, np.ndarray)

    def _host_rows(self):
        return self._rows.get() if self.on_device else self._rows

    def to_numpy(self, *, keys=False):
        """The id array (``keys=False``) or an array of original G node keys."""
        rows = self._host_rows()
        if not keys:
            return rows
        return node_key_array(self._g_keys)[rows]

    def to_pandas(self):
        """A DataFrame with one column per pattern node holding original G node keys."""
        return frame_from_rows(self._host_rows(), self._g_keys, self._h_keys)

    def iter_pandas(self, rows_per_frame=1_000_000):
        """The same frame in pieces of at most ``rows_per_frame`` rows (bounded memory)."""
        keys = node_key_array(self._g_keys)
        for s in range(0, self.count, rows_per_frame):
            part = self._rows[s:s + rows_per_frame]
            yield frame_from_rows(part.get() if self.on_device else part, self._g_keys,
                                  self._h_keys, keys)

    def to_cupy(self):
        """The id array on the GPU (CuPy): column i = data node id for pattern node i. Results
        of a DeviceGraph search are returned as they are, without a copy."""
        import cupy

        return self._rows if self.on_device else cupy.asarray(self._rows)

    def to_cudf(self):
        """A cuDF DataFrame, one column per pattern node (string names, like cuGraph's
        ``subgraph_monomorphism``), holding the original G node keys.

        Raises
        ------
        ImportError
            When cuDF is not installed (it comes with RAPIDS, not with nx-gsm).
        """
        try:
            import cudf
        except ImportError as exc:
            raise ImportError(
                "MatchSet.to_cudf() needs cuDF, which is not installed: install cudf from "
                "RAPIDS (e.g. pip install cudf-cu12, see https://docs.rapids.ai/install), or "
                "use to_pandas()") from exc

        if self.on_device and isinstance(self._g_keys, range) and self._g_keys.start == 0 \
                and self._g_keys.step == 1:
            # node keys are the ids: the columns are views of the device rows
            return cudf.DataFrame({str(h): self._rows[:, i] for i, h in enumerate(self._h_keys)})
        return cudf.DataFrame.from_pandas(self.to_pandas().rename(columns=str))

    def __iter__(self):
        gk, hk = self._g_keys, self._h_keys
        for row in self._host_rows().tolist():
            yield dict(zip([gk[v] for v in row], hk))

    def __repr__(self):
        return f"<MatchSet {self.count} mappings x {len(self._h_keys)} pattern nodes>"
