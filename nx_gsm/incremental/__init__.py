"""Batch-dynamic (incremental) subgraph matching: the net change of the matches per batch.

:class:`IncrementalMatcher` keeps a data graph ``G`` and a fixed pattern ``H``. Each call to
:meth:`IncrementalMatcher.apply` applies one *batch* of updates (edge insertions and deletions, node
insertions and deletions) and returns the **net** change of the set of mappings::

    added   = M(G_after) - M(G_before)
    removed = M(G_before) - M(G_after)

where ``M`` is the set of monomorphisms (``induced=False``) or node-induced subgraph isomorphisms
(``induced=True``), exactly as NetworkX's GraphMatcher family returns them (``{G_node: H_node}``
dicts). A match created and destroyed inside the same batch is not reported, and the result does not
depend on the order of the updates inside the batch (see ``docs/incremental.md``).

Method (the exact CPU path)
---------------------------
A mapping can only appear or disappear if the data it is checked against changed: a data node pair
``(x, y)`` (or a self-loop ``(x, x)``) whose multiplicity or edge attributes differ between
``G_before`` and ``G_after`` and lies in the mapping's image. Mono checks only the images of pattern
edges, so only pattern edges ``(a, b)`` are anchored on a changed pair; induced checks every pair
among the image, so every ordered pattern pair is (an insertion can destroy an induced match and a
deletion create one). For each changed pair and each pattern pair that could map onto it, an
anchored search (``make_plan(..., anchors={a: x, b: y})``) runs on ``G_before`` and on ``G_after``;
the results are collected into sets and ``added``/``removed`` are the set differences. New and
deleted nodes are anchored on the pattern's isolated nodes (no edges, no loops): those may map
anywhere, every other pattern node mapped onto a new or deleted node has an incident pattern edge
whose image is an inserted or deleted data pair.

Two ways to run those searches, both exact (``docs/incremental.md`` has the costs):

* **local** (connected patterns): every node of a match lies within ``diam(H)`` (ignoring edge
  directions) of each anchored node, so each changed pair is searched in the subgraphs of
  ``G_before`` and ``G_after`` induced on that ball; the after-graph is never materialised and a
  batch costs about the regions it touches, not ``|G|``;
* **full** (disconnected patterns, or a region larger than ``max(256, |V| / 8)`` nodes): the data
  graph is copied, updated and converted with :func:`nx_gsm.from_networkx` once per batch
  (``O(|V| + |E|)``), and the anchored searches plan against the whole graph.

The data graph is kept as a NetworkX graph (the CPU reference path, and the fallback).
``engine="gamma"`` runs the delta on the GPU instead (``nx_gsm.engines.gpu.gamma``: the graph on
the device, one warp per updated item, each match reported from its smallest updated item);
``engine="auto"`` picks it when a GPU is usable.
"""

from .batch import BatchError, BatchResult, MatchList
from .matcher import IncrementalMatcher

__all__ = ["IncrementalMatcher", "BatchResult", "BatchError", "MatchList"]
