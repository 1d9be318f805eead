"""Named query suites.

A :class:`Suite` is one data graph plus a list of :class:`Query` patterns. Names:

``tiny``
    A seeded random 60-node, 3-label graph and five small labelled patterns: no dataset needed,
    every tool finishes in milliseconds (CI smoke tests).
``demo``
    The yeast graph and ten queries bundled with nx_gsm (published counts), no dataset needed.
``<dataset>-<N>`` / ``<dataset>-<N>-dense`` / ``<dataset>-<N>-sparse``
    Sun & Luo query sets, ``dataset`` in yeast, human, wordnet; ``N`` the query size (yeast: 4, 8,
    16, 24, 32; human and wordnet: 4, 8, 12, 16, 20). Without a suffix both the dense and the sparse
    group (size 4 has only a dense group). 200 queries per group; ``--queries K`` takes K of
    them, evenly spaced by index (1, 1+200/K, ...), so the subset is deterministic. Yeast queries
    carry the published count (``yeast_ans.txt``), checked as one more "tool" named
    ``published``.
``github`` / ``lastfm`` / ``facebook`` / ``enron``
    SNAP graphs with small unlabelled patterns: triangle, 4-cycle, diamond, 4-clique, 5-clique,
    paths P3..P5 (Pn has n vertices), stars S3..S4 (Sn has n leaves). ``--labels K --seed S``
    gives data and pattern nodes uniform random labels in ``0..K-1`` (seeded, deterministic).

A suite whose files are missing raises :class:`~benchmarks.datasets.DatasetMissing` from
:func:`build_suite`; the runner reports it as skipped with the reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import networkx as nx
import numpy as np

from . import datasets as ds

__all__ = ["Query", "Suite", "build_suite", "suite_names", "PATTERNS"]

SUN_LUO_SIZES = {
    "yeast": (4, 8, 16, 24, 32),
    "human": (4, 8, 12, 16, 20),
    "wordnet": (4, 8, 12, 16, 20),
}
SNAP = {
    "github": ("snap/github/edges.csv", ds.read_edge_csv),
    "lastfm": ("snap/lastfm/edges.csv", ds.read_edge_csv),
    "facebook": ("snap/facebook/edges.csv", ds.read_edge_csv),
    "enron": ("snap/email-Enron.txt", ds.read_snap_edge_list),
}
GROUP_SIZE = 200  # queries per Sun & Luo group


def _diamond():
    G = nx.complete_graph(4)
    G.remove_edge(0, 3)
    return G


#: SNAP pattern name -> constructor (unlabelled NetworkX graph)
PATTERNS = {
    "triangle": lambda: nx.complete_graph(3),
    "4-cycle": lambda: nx.cycle_graph(4),
    "diamond": _diamond,
    "4-clique": lambda: nx.complete_graph(4),
    "5-clique": lambda: nx.complete_graph(5),
    "P3": lambda: nx.path_graph(3),
    "P4": lambda: nx.path_graph(4),
    "P5": lambda: nx.path_graph(5),
    "S3": lambda: nx.star_graph(3),
    "S4": lambda: nx.star_graph(4),
}
QUICK_PATTERNS = ("triangle", "P3")


@dataclass
class Query:
    """One pattern: ``load()`` returns the NetworkX pattern graph (read lazily)."""

    name: str
    load: Callable[[], nx.Graph]
    group: str = ""
    expected: int | None = None  # published count (monomorphisms, not capped)


@dataclass
class Suite:
    """A data graph (``load()``), its queries, and ``label`` (the node attribute to match, or
    None for unlabelled matching)."""

    name: str
    description: str
    load: Callable[[], nx.Graph]
    queries: list[Query]
    label: str | None = "label"
    source: str = ""
    notes: list[str] = field(default_factory=list)


def suite_names():
    """Every suite name :func:`build_suite` accepts (for ``--help`` and ``list``)."""
    names = ["tiny", "demo"]
    for d, sizes in SUN_LUO_SIZES.items():
        for n in sizes:
            names.append(f"{d}-{n}")
            if n != 4:
                names += [f"{d}-{n}-dense", f"{d}-{n}-sparse"]
    names += list(SNAP)
    return names


def evenly_spaced(k, total=GROUP_SIZE):
    """``k`` indices in ``1..total``, evenly spaced, starting at 1 (all of them when k >= total)."""
    if k is None or k >= total:
        return list(range(1, total + 1))
    return [1 + (j * total) // k for j in range(max(k, 0))]


def build_suite(name, *, root=None, queries=None, quick=False, labels=None, seed=0,
                patterns=None):
    """Build the suite called ``name`` (see the module docstring).

    ``queries`` caps the queries per Sun & Luo group (quick mode: 2); ``patterns`` selects SNAP
    patterns by name (quick mode: triangle and P3); ``labels``/``seed`` label SNAP graphs.
    """
    root = ds.datasets_root(root)
    if name == "tiny":
        return _tiny(seed)
    if name == "demo":
        return _demo(queries, quick)
    m = re.fullmatch(r"(yeast|human|wordnet)-(\d+)(?:-(dense|sparse))?", name)
    if m:
        if queries is None and quick:
            queries = 2
        return _sun_luo(root, m.group(1), int(m.group(2)), m.group(3), queries, name)
    if name in SNAP:
        if patterns is None and quick:
            patterns = QUICK_PATTERNS
        return _snap(root, name, patterns, labels, seed)
    raise ValueError(f"unknown suite {name!r}; known: {', '.join(suite_names())}")


def _tiny(seed):
    rng = np.random.default_rng([seed, 7])
    G = nx.gnm_random_graph(60, 180, seed=int(rng.integers(1 << 30)))
    for v in G:
        G.nodes[v]["label"] = int(rng.integers(3))
    pats = ("triangle", "P3", "4-cycle", "S3", "diamond")

    def make(p, i):
        def load():
            H = PATTERNS[p]()
            r = np.random.default_rng([seed, 11, i])
            for v in H:
                H.nodes[v]["label"] = int(r.integers(3))
            return H

        return load

    qs = [Query(p, make(p, i), group="tiny") for i, p in enumerate(pats)]
    return Suite("tiny", "seeded random 60-node / 180-edge graph, 3 labels, 5 labelled patterns",
                 lambda: G, qs, label="label", source=f"networkx.gnm_random_graph, seed {seed}")


def _demo(queries, quick):
    import nx_gsm

    items = sorted(nx_gsm.demo_queries(), key=lambda pc: (_size_of(pc[0].name), pc[0].name))
    if quick and queries is None:
        queries = 2
    if queries is not None:
        items = items[:queries]
    qs = [Query(p.stem, (lambda p=p: ds.read_sun_luo_graph(p)), group=_group_of(p.name),
                expected=c) for p, c in items]
    path = nx_gsm.demo_graph_path("yeast")
    return Suite("demo", "yeast (bundled with nx_gsm) and its bundled queries",
                 lambda: ds.read_sun_luo_graph(path), qs, label="label", source=str(path))


def _size_of(fname):
    m = re.match(r"query_(?:dense|sparse)_(\d+)_", fname)
    return int(m.group(1)) if m else 0


def _group_of(fname):
    m = re.match(r"query_(dense|sparse)_(\d+)_", fname)
    return f"{m.group(1)}_{m.group(2)}" if m else ""


def _sun_luo(root, dataset, size, density, per_group, name):
    base = ds.require(Path(root) / "sun-luo" / dataset)
    graph_path = ds.require(base / "data_graph" / f"{dataset}.graph")
    if size not in SUN_LUO_SIZES[dataset]:
        raise ValueError(f"{dataset} has no {size}-vertex queries; sizes: "
                         f"{', '.join(map(str, SUN_LUO_SIZES[dataset]))}")
    kinds = [density] if density else ["dense", "sparse"]
    if size == 4:
        if density == "sparse":
            raise ValueError(f"{dataset} has no sparse 4-vertex queries")
        kinds = ["dense"]
    answers = {}
    notes = []
    ans_path = base / f"{dataset}_ans.txt"
    if ans_path.exists():
        answers = ds.read_answers(ans_path)
    qs = []
    for kind in kinds:
        for i in evenly_spaced(per_group):
            fname = f"query_{kind}_{size}_{i}.graph"
            qpath = ds.require(base / "query_graph" / fname)
            qs.append(Query(f"{kind}_{size}_{i}", (lambda p=qpath: ds.read_sun_luo_graph(p)),
                            group=f"{kind}_{size}", expected=answers.get(fname)))
    if answers:
        missing = sum(q.expected is None for q in qs)
        if missing:
            notes.append(f"{missing} queries have no published count")
    desc = (f"Sun & Luo {dataset}, {size}-vertex {' + '.join(kinds)} queries"
            + (f", {per_group} per group (evenly spaced ids)" if per_group else ", all"))
    return Suite(name, desc, lambda: ds.read_sun_luo_graph(graph_path), qs, label="label",
                 source=str(graph_path), notes=notes)


def _snap(root, name, patterns, labels, seed):
    rel, reader = SNAP[name]
    path = ds.require(Path(root) / rel)
    patterns = list(PATTERNS) if patterns is None else list(patterns)
    for p in patterns:
        if p not in PATTERNS:
            raise ValueError(f"unknown pattern {p!r}; known: {', '.join(PATTERNS)}")

    def load():
        G = reader(path)
        if labels:
            lab = np.random.default_rng([seed, 1]).integers(labels, size=G.number_of_nodes())
            for v, x in zip(G, lab.tolist()):
                G.nodes[v]["label"] = x
        return G

    def make(p, i):
        def load_h():
            H = PATTERNS[p]()
            if labels:
                r = np.random.default_rng([seed, 2, i])
                for v in H:
                    H.nodes[v]["label"] = int(r.integers(labels))
            return H

        return load_h

    qs = [Query(p, make(p, i), group="pattern") for i, p in enumerate(patterns)]
    lab = f"{labels} random labels (seed {seed})" if labels else "unlabelled"
    notes = ["self-loops dropped from the data graph"] if name == "facebook" else []
    return Suite(name, f"SNAP {name}, {lab}, {len(qs)} patterns", load, qs,
                 label="label" if labels else None, source=str(path), notes=notes)
