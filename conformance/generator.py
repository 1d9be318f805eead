"""Deterministic generator of small matching cases for the conformance suite.

Every case is a data graph ``G``, a pattern ``H``, a mode (``mono``: non-induced subgraph
monomorphism, ``induced``: node-induced subgraph isomorphism, ``iso``: full isomorphism) and the
matcher arguments to pass to nx_gsm. The cases span, as independent axes:

* the four NetworkX graph classes (``Graph``, ``DiGraph``, ``MultiGraph``, ``MultiDiGraph``);
* the three modes;
* eight *label kinds* (:data:`LABEL_KINDS`): no labels, node labels, edge labels, both (each
  alternating between the strict ``node_label=``/``edge_label=`` shortcuts and the recognised
  ``categorical_*_match`` helpers, one- and two-attribute forms, mixed-type and unhashable values),
  non-equivalence lambdas, ``numerical_*_match`` (non-transitive ``isclose``),
  ``generic_*_match`` with an ordering operator, and callables over attributes that are often
  missing (defaults decide);
* a *shape* (:data:`SUBGRAPH_SHAPES`, :data:`ISO_SHAPES`): empty, one-node, disconnected, too
  large patterns, isolated nodes, self-loops (in the pattern, the data or both), parallel edges
  (multigraphs only), hub-heavy data graphs and structured families (complete graphs, cycles,
  paths, stars, grids, wheels);
* the *node key kind* (:data:`KEY_KINDS`): ints, strings, tuples or a mix of the three.

Why generated and not hand-written: the engines turn NetworkX graphs into arrays and label
callables into tables, and the bugs that matter live in the combinations (a self-loop on a
multigraph with an edge callable, a tuple-keyed pattern whose node order differs from the data's).
Sweeping the axes finds them; the oracle (NetworkX's VF2, see :mod:`conformance.oracle`) tells right
from wrong.

Determinism: each case draws from its own ``random.Random`` seeded with a string built from the
suite seed and the case's coordinates, so a case id names the same graphs on every machine and
Python version, whatever other cases are generated. Patterns are usually cut out of the data graph
(so counts are non-zero), with node order and edge insertion order shuffled and labels sometimes
redrawn (so zero and partial answers occur too). Everything is small (data graphs of at most about
ten nodes, patterns of at most six) so VF2 answers each case in milliseconds.
"""

from __future__ import annotations

import math
import operator
import random
from dataclasses import dataclass, field

import networkx as nx
from networkx.algorithms import isomorphism as iso

__all__ = [
    "CLASSES",
    "MODES",
    "LABEL_KINDS",
    "SUBGRAPH_SHAPES",
    "ISO_SHAPES",
    "KEY_KINDS",
    "FULL_REPS",
    "QUICK_REPS",
    "Case",
    "generate_cases",
    "shapes_for",
    "graph_features",
    "MATCHER_NAMESPACE",
]

CLASSES = ("Graph", "DiGraph", "MultiGraph", "MultiDiGraph")
MODES = ("mono", "induced", "iso")
LABEL_KINDS = ("none", "node", "edge", "both", "lambda", "numerical", "generic", "missing")
SUBGRAPH_SHAPES = (
    "random",
    "empty_pattern",
    "one_node",
    "disconnected",
    "larger_pattern",
    "isolated",
    "selfloops",
    "parallel",
    "hub",
    "structured",
)
ISO_SHAPES = ("copy", "perturbed", "structured", "empty", "selfloops", "parallel")
KEY_KINDS = ("int", "str", "tuple", "mixed")

#: repetitions of every (class, mode, label kind, shape) combination: (mono/induced, iso)
FULL_REPS = (5, 3)
QUICK_REPS = (1, 1)

#: names visible to the matcher source strings (``iso.categorical_node_match(...)`` etc.)
MATCHER_NAMESPACE = {"iso": iso, "operator": operator, "math": math, "nx": nx}


def shapes_for(cls, mode):
    """The shapes generated for a graph class and mode (``parallel`` only for multigraphs)."""
    shapes = ISO_SHAPES if mode == "iso" else SUBGRAPH_SHAPES
    if not cls.startswith("Multi"):
        shapes = tuple(s for s in shapes if s != "parallel")
    return shapes


# -- the case -----------------------------------------------------------------------------------
@dataclass
class Case:
    """One generated case.

    ``matchers`` maps nx_gsm keyword names (``node_match``, ``edge_match``, ``node_label``,
    ``edge_label``) to *Python source* (evaluated in :data:`MATCHER_NAMESPACE`), so a failing case
    prints as exact, runnable code.
    """

    id: str
    cls: str
    mode: str
    labels: str
    shape: str
    keys: str
    G: nx.Graph
    H: nx.Graph
    matchers: dict = field(default_factory=dict)
    variant: str = ""
    _compiled: dict | None = field(default=None, repr=False, compare=False)

    def gsm_kwargs(self):
        """Keyword arguments for the nx_gsm call (callables evaluated once and cached)."""
        if self._compiled is None:
            self._compiled = {k: eval(src, dict(MATCHER_NAMESPACE))  # noqa: S307 (own source)
                              for k, src in self.matchers.items()}
        return dict(self._compiled)

    def oracle_kwargs(self):
        """``node_match``/``edge_match`` for NetworkX's VF2 matcher.

        The strict shortcuts ``node_label="a"`` / ``edge_label="a"`` mean equality of attribute
        ``a``, i.e. ``categorical_node_match("a", None)`` (the generator only uses them when every
        node/edge has the attribute).
        """
        kw = self.gsm_kwargs()
        out = {}
        if "node_label" in kw:
            out["node_match"] = iso.categorical_node_match(kw["node_label"], None)
        elif "node_match" in kw:
            out["node_match"] = kw["node_match"]
        if "edge_label" in kw:
            out["edge_match"] = iso.categorical_edge_match(kw["edge_label"], None)
        elif "edge_match" in kw:
            out["edge_match"] = kw["edge_match"]
        return out

    def with_graphs(self, G, H):
        """A copy of this case with other graphs (used by the shrinker)."""
        return Case(self.id, self.cls, self.mode, self.labels, self.shape, self.keys, G, H,
                    dict(self.matchers), self.variant)

    @property
    def features(self):
        """Structural features actually present (see :func:`graph_features`)."""
        return graph_features(self.G, self.H)

    def describe(self):
        """One line: coordinates, sizes and matcher arguments."""
        m = ", ".join(f"{k}={v}" for k, v in self.matchers.items()) or "no matchers"
        var = f" [{self.variant}]" if self.variant else ""
        return (f"{self.id}: {self.cls} {self.mode} labels={self.labels} shape={self.shape}{var} "
                f"keys={self.keys}; G {self.G.number_of_nodes()}n/{self.G.number_of_edges()}e, "
                f"H {self.H.number_of_nodes()}n/{self.H.number_of_edges()}e; {m}")


def graph_features(G, H):
    """The set of structural edge-case features present in a (G, H) pair."""
    f = set()
    nH, nG = H.number_of_nodes(), G.number_of_nodes()
    if nH == 0:
        f.add("empty_pattern")
    if nG == 0:
        f.add("empty_data")
    if nH == 1:
        f.add("one_node_pattern")
    if nH > nG:
        f.add("pattern_larger")
    if nH > 1 and not _connected(H):
        f.add("disconnected_pattern")
    if nx.number_of_selfloops(H):
        f.add("selfloop_pattern")
    if nx.number_of_selfloops(G):
        f.add("selfloop_data")
    for X, tag in ((G, "data"), (H, "pattern")):
        if any(d == 0 for _, d in X.degree()):
            f.add(f"isolated_{tag}")
        if X.is_multigraph() and any(X.number_of_edges(u, v) > 1 for u, v in set(X.edges())):
            f.add(f"parallel_{tag}")
    if nG and max(len(set(nx.all_neighbors(G, u)) - {u}) for u in G) >= 6:
        f.add("hub_data")
    return f


def _connected(X):
    return nx.is_weakly_connected(X) if X.is_directed() else nx.is_connected(X)


# -- structure helpers (integer nodes 0..n-1; keys are assigned at the end) ---------------------
def _empty(cls):
    return getattr(nx, cls)()


def _random_graph(rng, cls, n, p, *, loops=0.0, multi_p=0.25, max_mult=3):
    """Random graph of class ``cls`` on nodes 0..n-1: every (ordered, if directed) pair is an edge
    with probability ``p``; multigraph edges get extra parallel copies; ``loops`` is the per-node
    self-loop probability."""
    X = _empty(cls)
    X.add_nodes_from(range(n))
    directed = X.is_directed()
    for u in range(n):
        for v in range(n):
            if u == v:
                if rng.random() < loops:
                    _add_multi(rng, X, u, u, multi_p, max_mult)
                continue
            if not directed and v < u:
                continue
            if rng.random() < p:
                _add_multi(rng, X, u, v, multi_p, max_mult)
    return X


def _add_multi(rng, X, u, v, multi_p=0.25, max_mult=3):
    X.add_edge(u, v)
    if X.is_multigraph():
        while X.number_of_edges(u, v) < max_mult and rng.random() < multi_p:
            X.add_edge(u, v)


def _structured(rng, cls, big):
    """A structured graph of class ``cls``: for data (``big``) or pattern."""
    if big:
        fam = rng.choice(["complete", "cycle", "path", "star", "grid", "wheel", "ladder"])
        builders = {
            "complete": lambda: nx.complete_graph(rng.randint(4, 6)),
            "cycle": lambda: nx.cycle_graph(rng.randint(5, 9)),
            "path": lambda: nx.path_graph(rng.randint(5, 9)),
            "star": lambda: nx.star_graph(rng.randint(4, 7)),
            "grid": lambda: nx.grid_2d_graph(rng.randint(2, 3), rng.randint(3, 4)),
            "wheel": lambda: nx.wheel_graph(rng.randint(5, 7)),
            "ladder": lambda: nx.ladder_graph(rng.randint(3, 4)),
        }
    else:
        fam = rng.choice(["path", "cycle", "star", "complete", "grid"])
        builders = {
            "path": lambda: nx.path_graph(rng.randint(2, 4)),
            "cycle": lambda: nx.cycle_graph(rng.randint(3, 4)),
            "star": lambda: nx.star_graph(rng.randint(2, 3)),
            "complete": lambda: nx.complete_graph(rng.randint(2, 3)),
            "grid": lambda: nx.grid_2d_graph(2, 2),
        }
    base = nx.convert_node_labels_to_integers(builders[fam]())
    return _from_undirected(rng, cls, base, big), fam


def _from_undirected(rng, cls, base, big):
    """Turn an undirected simple graph into class ``cls``: directed classes get both directions
    (data) or a random orientation with some reciprocal pairs; multigraphs some parallel edges."""
    X = _empty(cls)
    X.add_nodes_from(base.nodes())
    directed = X.is_directed()
    both = big and rng.random() < 0.5
    for u, v in base.edges():
        if directed:
            if both or rng.random() < 0.2:
                _add_multi(rng, X, u, v, 0.15, 2)
                _add_multi(rng, X, v, u, 0.15, 2)
            elif rng.random() < 0.5:
                _add_multi(rng, X, u, v, 0.15, 2)
            else:
                _add_multi(rng, X, v, u, 0.15, 2)
        else:
            _add_multi(rng, X, u, v, 0.15, 2)
    return X


def _sample_pattern(rng, G, k, mode, drop=0.3):
    """Pattern cut from G on ``k`` random nodes: the induced subgraph, attributes included; for
    ``mono`` each edge is dropped with probability ``drop`` (keeping at least one when possible)."""
    nodes = rng.sample(list(G.nodes()), min(k, G.number_of_nodes()))
    H = G.subgraph(nodes).copy()
    if mode == "mono" and drop:
        edges = list(H.edges(keys=True)) if H.is_multigraph() else list(H.edges())
        for e in edges:
            if len(edges) > 1 and rng.random() < drop:
                H.remove_edge(*e)
    return H


def _copy_relabel(rng, X):
    """Copy of ``X`` with nodes renamed to ``0..n-1`` in a random order, nodes and edges inserted
    in random order (so adjacency order differs from the source); attributes and edge keys kept."""
    nodes = list(X.nodes())
    perm = nodes[:]
    rng.shuffle(perm)
    mapping = {u: i for i, u in enumerate(perm)}
    Y = X.__class__()
    order = nodes[:]
    rng.shuffle(order)
    Y.add_nodes_from((mapping[u], dict(X.nodes[u])) for u in order)
    if X.is_multigraph():
        edges = [(mapping[u], mapping[v], k, dict(d))
                 for u, v, k, d in X.edges(keys=True, data=True)]
    else:
        edges = [(mapping[u], mapping[v], dict(d)) for u, v, d in X.edges(data=True)]
    rng.shuffle(edges)
    Y.add_edges_from(edges)
    return Y


def _apply_keys(rng, X, kind):
    """Rename the nodes ``0..n-1`` of ``X`` to keys of the given kind (order and data kept)."""
    n = X.number_of_nodes()
    ids = rng.sample(range(1000), n)
    if kind == "int":
        keys = ids
    elif kind == "str":
        keys = [f"v{i}" for i in ids]
    elif kind == "tuple":
        keys = [(i % 7, f"t{i}") for i in ids]
    else:  # mixed: ints, strings and tuples in one graph
        keys = [(i, f"s{i}", (i, i))[j % 3] for j, i in enumerate(ids)]
    mapping = dict(zip(X.nodes(), keys))
    return nx.relabel_nodes(X, mapping, copy=True)


def _edge_dicts(X):
    """The attribute dicts of every edge (each parallel edge separately)."""
    if X.is_multigraph():
        return [d for _, _, _, d in X.edges(keys=True, data=True)]
    return [d for _, _, d in X.edges(data=True)]


# -- labels -------------------------------------------------------------------------------------
_PALETTES = {
    "int2": [0, 1],
    "int3": [0, 1, 2],
    "str": ["a", "b"],
    # 1 == 1.0 == True: equal values of different types must stay compatible; NaN equals
    # nothing under ==, yet one NaN object is equal to itself inside sets and tuples
    "mixed": [1, 1.0, True, "x", (1, 2), None, math.nan],
}
_UNHASHABLE = [[0], [1], [0, 1]]
_FLOATS = [1.0, 1.2, 1.45, 1.7, 2.0]  # with rtol 0.2 isclose is not transitive over these


class _Labeller:
    """Assigns attributes to G (and the pattern, by copying or redrawing) for one label kind and
    chooses the matcher source strings."""

    def __init__(self, rng, kind, multigraph):
        self.rng = rng
        self.kind = kind
        self.multi = multigraph
        self.matchers = {}
        self.node_fill = {}  # attr -> (values, presence probability)
        self.edge_fill = {}
        getattr(self, "_setup_" + kind)()

    # each setup picks matcher source and what to write on nodes/edges
    def _setup_none(self):
        if self.rng.random() < 0.3:  # irrelevant attributes must be ignored
            self.node_fill["junk"] = ([0, 1, 2], 0.7)
            self.edge_fill["junk"] = ([0, 1], 0.7)

    def _node_labels(self):
        rng = self.rng
        form = rng.choice(["shortcut", "shortcut", "categorical", "categorical2", "unhashable"])
        pal = _PALETTES[rng.choice(list(_PALETTES))]
        if form == "shortcut":
            self.matchers["node_label"] = "'label'"
            self.node_fill["label"] = (pal, 1.0)
        elif form == "categorical":
            self.matchers["node_match"] = "iso.categorical_node_match('label', None)"
            self.node_fill["label"] = (pal, 1.0)
        elif form == "categorical2":
            self.matchers["node_match"] = (
                "iso.categorical_node_match(['label', 'color'], [None, 'red'])")
            self.node_fill["label"] = (pal, 1.0)
            self.node_fill["color"] = (["red", "blue"], 0.6)
        else:
            self.matchers["node_match"] = "iso.categorical_node_match('label', None)"
            self.node_fill["label"] = (_UNHASHABLE, 1.0)

    def _edge_labels(self):
        rng = self.rng
        pal = _PALETTES[rng.choice(["int2", "int3", "str", "mixed"])]
        if self.multi:
            if rng.random() < 0.6:
                self.matchers["edge_match"] = "iso.categorical_multiedge_match('label', None)"
                self.edge_fill["label"] = (pal, 1.0)
            else:
                self.matchers["edge_match"] = (
                    "iso.categorical_multiedge_match(['label', 'color'], [None, 'red'])")
                self.edge_fill["label"] = (pal, 1.0)
                self.edge_fill["color"] = (["red", "blue"], 0.6)
            return
        form = rng.choice(["shortcut", "shortcut", "categorical", "categorical2", "unhashable"])
        if form == "shortcut":
            self.matchers["edge_label"] = "'label'"
            self.edge_fill["label"] = (pal, 1.0)
        elif form == "categorical":
            self.matchers["edge_match"] = "iso.categorical_edge_match('label', None)"
            self.edge_fill["label"] = (pal, 1.0)
        elif form == "categorical2":
            self.matchers["edge_match"] = (
                "iso.categorical_edge_match(['label', 'color'], [None, 'red'])")
            self.edge_fill["label"] = (pal, 1.0)
            self.edge_fill["color"] = (["red", "blue"], 0.6)
        else:
            self.matchers["edge_match"] = "iso.categorical_edge_match('label', None)"
            self.edge_fill["label"] = (_UNHASHABLE, 1.0)

    def _setup_node(self):
        self._node_labels()

    def _setup_edge(self):
        self._edge_labels()

    def _setup_both(self):
        self._node_labels()
        self._edge_labels()

    def _setup_lambda(self):
        # not equivalences: asymmetric and non-transitive
        which = self.rng.choice(["node", "edge", "both"])
        if which in ("node", "both"):
            self.matchers["node_match"] = "lambda a, b: a.get('c', 0) <= b.get('c', 0) + 1"
            self.node_fill["c"] = ([0, 1, 2, 3], 0.9)
        if which in ("edge", "both"):
            if self.multi:
                self.matchers["edge_match"] = (
                    "lambda e, f: sum(d.get('w', 0) for d in e.values()) >= "
                    "sum(d.get('w', 0) for d in f.values())")
            else:
                self.matchers["edge_match"] = "lambda e, f: abs(e.get('w', 0) - f.get('w', 0)) <= 1"
            self.edge_fill["w"] = ([0, 1, 2, 3], 0.9)

    def _setup_numerical(self):
        which = self.rng.choice(["node", "edge", "both"])
        if which in ("node", "both"):
            self.matchers["node_match"] = "iso.numerical_node_match('x', 1.0, rtol=0.2)"
            self.node_fill["x"] = (_FLOATS, 0.9)
        if which in ("edge", "both"):
            if self.multi:
                self.matchers["edge_match"] = (
                    "iso.numerical_multiedge_match('x', 1.0, rtol=0.2)")
            else:
                self.matchers["edge_match"] = "iso.numerical_edge_match('x', 1.0, atol=0.3)"
            self.edge_fill["x"] = (_FLOATS, 0.9)

    def _setup_generic(self):
        which = self.rng.choice(["node", "edge", "both"])
        if which in ("node", "both"):
            if self.rng.random() < 0.5:
                self.matchers["node_match"] = "iso.generic_node_match('g', 0, operator.ge)"
                self.node_fill["g"] = ([0, 1, 2], 0.9)
            else:
                self.matchers["node_match"] = (
                    "iso.generic_node_match(['g', 'label'], [0, None], "
                    "[operator.ge, operator.eq])")
                self.node_fill["g"] = ([0, 1, 2], 0.9)
                self.node_fill["label"] = (["a", "b"], 1.0)
        if which in ("edge", "both"):
            if self.multi:
                self.matchers["edge_match"] = "iso.generic_multiedge_match('g', 0, operator.le)"
            else:
                self.matchers["edge_match"] = "iso.generic_edge_match('g', 0, operator.le)"
            self.edge_fill["g"] = ([0, 1, 2], 0.9)

    def _setup_missing(self):
        rng = self.rng
        which = rng.choice(["node", "edge", "both"])
        if which in ("node", "both"):
            self.matchers["node_match"] = rng.choice([
                "lambda a, b: a.get('c', 1) == b.get('c', 1)",
                "iso.categorical_node_match('label', 'unset')",
                "lambda a, b: ('c' in a) >= ('c' in b)",
            ])
            self.node_fill["c"] = ([0, 1, 2], 0.5)
            self.node_fill["label"] = (["a", "b", "unset"], 0.5)
        if which in ("edge", "both"):
            if self.multi:
                self.matchers["edge_match"] = rng.choice([
                    "iso.categorical_multiedge_match('w', 2)",
                    "lambda e, f: min(d.get('w', 2) for d in e.values()) <= "
                    "min(d.get('w', 2) for d in f.values())",
                ])
            else:
                self.matchers["edge_match"] = rng.choice([
                    "lambda e, f: e.get('w', 2) <= f.get('w', 2) + 1",
                    "iso.categorical_edge_match('w', 2)",
                ])
            self.edge_fill["w"] = ([1, 2, 3], 0.5)

    def fill(self, X):
        """Write attributes on every node and edge of ``X`` (in place)."""
        rng = self.rng
        for _, d in X.nodes(data=True):
            d.clear()
            for a, (vals, p) in self.node_fill.items():
                if rng.random() < p:
                    d[a] = rng.choice(vals)
        for d in _edge_dicts(X):
            d.clear()
            for a, (vals, p) in self.edge_fill.items():
                if rng.random() < p:
                    d[a] = rng.choice(vals)

    def perturb(self, X, p=0.3):
        """Redraw some of the pattern's attributes (so that not every cut-out pattern matches)."""
        rng = self.rng
        for _, d in X.nodes(data=True):
            if rng.random() < p:
                for a, (vals, pr) in self.node_fill.items():
                    if pr == 1.0 or rng.random() < pr:
                        d[a] = rng.choice(vals)
                    else:
                        d.pop(a, None)
        for d in _edge_dicts(X):
            if rng.random() < p:
                for a, (vals, pr) in self.edge_fill.items():
                    if pr == 1.0 or rng.random() < pr:
                        d[a] = rng.choice(vals)
                    else:
                        d.pop(a, None)


# -- shapes -------------------------------------------------------------------------------------
def _data_graph(rng, cls, n=None, p=None, loops=0.0):
    n = rng.randint(5, 9) if n is None else n
    p = rng.uniform(0.25, 0.45) if p is None else p
    if cls.startswith("Multi"):
        return _random_graph(rng, cls, n, p, loops=loops, multi_p=0.15, max_mult=2)
    return _random_graph(rng, cls, n, p, loops=loops)


def _subgraph_shape(rng, cls, mode, shape, lab):
    """Build (G, H, variant) for a mono/induced case. Attributes are filled here too: patterns
    cut out of G inherit G's attributes and then get some redrawn."""
    variant = ""
    if shape == "random":
        G = _data_graph(rng, cls, loops=0.1 if rng.random() < 0.3 else 0.0)
        lab.fill(G)
        if rng.random() < 0.7:
            H = _sample_pattern(rng, G, rng.randint(2, 5), mode)
            variant = "cut"
        else:
            H = _random_graph(rng, cls, rng.randint(2, 4), rng.uniform(0.3, 0.7))
            lab.fill(H)
            variant = "independent"
    elif shape == "empty_pattern":
        G = _data_graph(rng, cls) if rng.random() < 0.8 else _empty(cls)
        lab.fill(G)
        H = _empty(cls)
        variant = "empty data" if G.number_of_nodes() == 0 else ""
    elif shape == "one_node":
        G = _data_graph(rng, cls, loops=0.3)
        lab.fill(G)
        H = _sample_pattern(rng, G, 1, mode, drop=0)
        if rng.random() < 0.3:
            u = next(iter(H))
            _add_multi(rng, H, u, u)
            variant = "pattern self-loop"
            if lab.edge_fill:
                lab.fill(H)
    elif shape == "disconnected":
        G = _data_graph(rng, cls, n=rng.randint(6, 8))
        lab.fill(G)
        nodes = list(G.nodes())
        rng.shuffle(nodes)
        a, b = rng.randint(1, 3), rng.randint(1, 2)
        if a + b == 5:
            b = 1
        A, B = nodes[:a], nodes[a:a + b]
        H = G.subgraph(A + B).copy()
        H.remove_edges_from([e for e in list(H.edges(keys=True) if H.is_multigraph()
                                               else H.edges())
                             if (e[0] in A) != (e[1] in A)])
        if rng.random() < 0.3:  # a third component: an isolated node
            H.add_node(max(G.nodes()) + 1)
            lab.fill(H)
            variant = "three components"
    elif shape == "larger_pattern":
        G = _data_graph(rng, cls, n=rng.randint(2, 5))
        lab.fill(G)
        H = _random_graph(rng, cls, G.number_of_nodes() + rng.randint(1, 2), 0.3)
        lab.fill(H)
    elif shape == "isolated":
        G = _data_graph(rng, cls, n=rng.randint(4, 6))
        k = G.number_of_nodes()
        G.add_nodes_from(range(k, k + rng.randint(1, 2)))
        lab.fill(G)
        H = _sample_pattern(rng, G, rng.randint(2, 3), mode)
        h = max(H.nodes(), default=-1) + 1000
        H.add_nodes_from(range(h, h + (2 if rng.random() < 0.25 else 1)))
        if rng.random() < 0.3:
            lab.fill(H)
        else:
            _fill_new(lab, H)
    elif shape == "selfloops":
        variant = rng.choice(["data", "pattern", "both"])
        G = _data_graph(rng, cls, loops=0.4 if variant != "pattern" else 0.0)
        lab.fill(G)
        H = _sample_pattern(rng, G, rng.randint(1, 4), mode)
        if variant == "pattern" or (variant == "both" and nx.number_of_selfloops(H) == 0):
            for u in rng.sample(list(H.nodes()), max(1, H.number_of_nodes() // 2)):
                _add_multi(rng, H, u, u)
            _fill_new(lab, H)
        elif variant == "data":
            H.remove_edges_from(list(nx.selfloop_edges(H, keys=True) if H.is_multigraph()
                                     else nx.selfloop_edges(H)))
    elif shape == "parallel":
        n = rng.randint(4, 7)
        G = _random_graph(rng, cls, n, rng.uniform(0.3, 0.5), loops=0.1, multi_p=0.5,
                          max_mult=3)
        lab.fill(G)
        H = _sample_pattern(rng, G, rng.randint(2, 4), mode, drop=0.15)
        if rng.random() < 0.3:  # a pattern edge with more parallel copies than in G
            es = list(set(H.edges()))
            if es:
                u, v = rng.choice(es)
                H.add_edge(u, v)
                H.add_edge(u, v)
                _fill_new(lab, H)
                variant = "pattern multiplicity raised"
    elif shape == "hub":
        n = rng.randint(7, 10)
        G = _random_graph(rng, cls, n, rng.uniform(0.08, 0.2), multi_p=0.1, max_mult=2)
        hub = 0
        for v in range(1, n):
            if rng.random() < 0.85:
                if G.is_directed() and rng.random() < 0.3:
                    G.add_edge(v, hub)
                else:
                    G.add_edge(hub, v)
        lab.fill(G)
        if rng.random() < 0.6:
            # a star (maybe with one extra edge) around the hub, cut from G
            nbrs = [v for v in G.nodes()
                    if v != hub and (G.has_edge(hub, v) or G.has_edge(v, hub))]
            leaves = rng.sample(nbrs, min(len(nbrs), rng.randint(2, 3)))
            H = G.subgraph([hub] + leaves).copy()
            if mode == "mono":
                keep = {(hub, v) for v in leaves} | {(v, hub) for v in leaves}
                H.remove_edges_from([e for e in list(H.edges(keys=True) if H.is_multigraph()
                                                       else H.edges())
                                     if (e[0], e[1]) not in keep and rng.random() < 0.7])
            variant = "hub star"
        else:
            H = _sample_pattern(rng, G, rng.randint(3, 5), mode)
            variant = "cut"
    elif shape == "structured":
        G, fg = _structured(rng, cls, big=True)
        lab.fill(G)
        if rng.random() < 0.6:
            H, fh = _structured(rng, cls, big=False)
            lab.fill(H)
        else:
            H, fh = _sample_pattern(rng, G, rng.randint(2, 4), mode), "cut"
        variant = f"{fg} vs {fh}"
    else:  # pragma: no cover
        raise ValueError(shape)
    if rng.random() < 0.4:
        lab.perturb(H)
    return G, H, variant


def _fill_new(lab, H):
    """Give attributes to nodes/edges of H that have none yet (new ones added by a shape)."""
    rng = lab.rng
    for _, d in H.nodes(data=True):
        if not d:
            for a, (vals, p) in lab.node_fill.items():
                if rng.random() < p:
                    d[a] = rng.choice(vals)
    for d in _edge_dicts(H):
        if not d:
            for a, (vals, p) in lab.edge_fill.items():
                if rng.random() < p:
                    d[a] = rng.choice(vals)


def _iso_shape(rng, cls, shape, lab):
    """Build (G, H, variant) for an isomorphism case: H is a shuffled copy of G, maybe perturbed."""
    variant = ""
    if shape == "copy":
        G = _data_graph(rng, cls, n=rng.randint(3, 8))
    elif shape == "perturbed":
        G = _data_graph(rng, cls, n=rng.randint(3, 7))
    elif shape == "structured":
        fam = rng.choice(["cycle", "complete", "grid", "star", "wheel", "petersen", "path"])
        base = {
            "cycle": lambda: nx.cycle_graph(rng.randint(3, 7)),
            "complete": lambda: nx.complete_graph(rng.randint(3, 5)),
            "grid": lambda: nx.grid_2d_graph(2, 3),
            "star": lambda: nx.star_graph(rng.randint(3, 5)),
            "wheel": lambda: nx.wheel_graph(rng.randint(4, 6)),
            "petersen": nx.petersen_graph,
            "path": lambda: nx.path_graph(rng.randint(3, 6)),
        }[fam]()
        G = _from_undirected(rng, cls, nx.convert_node_labels_to_integers(base), True)
        variant = fam
    elif shape == "empty":
        G = _empty(cls)
        if rng.random() < 0.5:
            G.add_node(0)
            variant = "one node"
        else:
            variant = "both empty"
    elif shape == "selfloops":
        G = _data_graph(rng, cls, n=rng.randint(3, 7), loops=0.4)
    elif shape == "parallel":
        G = _random_graph(rng, cls, rng.randint(3, 6), 0.4, loops=0.1, multi_p=0.5, max_mult=3)
    else:  # pragma: no cover
        raise ValueError(shape)
    lab.fill(G)
    H = _copy_relabel(rng, G)
    if shape == "perturbed" or (shape in ("selfloops", "parallel") and rng.random() < 0.3):
        variant = _perturb_structure(rng, H, lab) or variant
    elif lab.node_fill or lab.edge_fill:
        if rng.random() < 0.25:
            lab.perturb(H, p=0.2)
            variant = "labels redrawn"
    return G, H, variant


def _perturb_structure(rng, H, lab):
    """Move one edge of H (same edge count, usually no longer isomorphic)."""
    edges = list(H.edges(keys=True)) if H.is_multigraph() else list(H.edges())
    nodes = list(H.nodes())
    if not edges or len(nodes) < 2:
        return ""
    H.remove_edge(*rng.choice(edges))
    u, v = rng.choice(nodes), rng.choice(nodes)
    H.add_edge(u, v)
    _fill_new(lab, H)
    return f"edge moved (now {'loop' if u == v else 'edge'})"


# -- the generator ------------------------------------------------------------------------------
def _combos():
    for cls in CLASSES:
        for mode in MODES:
            for labels in LABEL_KINDS:
                for shape in shapes_for(cls, mode):
                    yield cls, mode, labels, shape


def generate_cases(seed=0, quick=False, reps=None):
    """Yield the suite's cases in a fixed order.

    Parameters
    ----------
    seed : int
        Base seed; the same seed gives the same cases everywhere.
    quick : bool
        One case per (class, mode, label kind, shape) combination (about 780 cases) instead of
        :data:`FULL_REPS` (about 3,500).
    reps : (int, int), optional
        Repetitions for (mono/induced, iso) combinations; overrides ``quick``.

    The order is repetition-major: the first sweep covers every combination once, so any prefix
    at least one sweep long covers every category, and the quick suite is a prefix of the full one.
    """
    reps = reps or (QUICK_REPS if quick else FULL_REPS)
    combos = list(_combos())
    for r in range(max(reps)):
        for i, (cls, mode, labels, shape) in enumerate(combos):
            if r >= reps[1 if mode == "iso" else 0]:
                continue
            keys = KEY_KINDS[(i + r) % len(KEY_KINDS)]
            cid = f"{cls}/{mode}/{labels}/{shape}/{keys}/r{r}"
            yield make_case(seed, cid)


def make_case(seed, case_id):
    """Rebuild one case from its id (``cls/mode/labels/shape/keys/rN``) and the suite seed."""
    cls, mode, labels, shape, keys, r = case_id.split("/")
    if cls not in CLASSES or mode not in MODES or labels not in LABEL_KINDS \
            or shape not in shapes_for(cls, mode) or keys not in KEY_KINDS \
            or not r.startswith("r"):
        raise ValueError(f"not a case id: {case_id!r}")
    rng = random.Random(f"nx-gsm-conformance:{seed}:{case_id}")
    lab = _Labeller(rng, labels, cls.startswith("Multi"))
    if mode == "iso":
        G, H, variant = _iso_shape(rng, cls, shape, lab)
    else:
        G, H, variant = _subgraph_shape(rng, cls, mode, shape, lab)
        H = _copy_relabel(rng, H)
    G = _apply_keys(rng, _copy_relabel(rng, G), keys)
    H = _apply_keys(rng, H, keys)
    if mode == "iso" and shape == "structured" and rng.random() < 0.3:
        H = G  # automorphisms: the very same object on both sides
        variant += " (H is G)"
    return Case(case_id, cls, mode, labels, shape, keys, G, H, dict(lab.matchers), variant)
