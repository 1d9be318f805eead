"""Device graph formats (labelled CSR/CSC, GSI's PCSR, GENEVA's interval-PCSR), checked on the CPU.

The formats are built with NumPy here (the GPU engines build the same arrays with CuPy): for random
graphs, N(v, l) through every format must equal the plain CSR row filtered by label. The byte size
of each format is reported (``-s`` prints it; junit gets it as a property).
"""

import random

import networkx as nx
import numpy as np
import pytest

from nx_gsm.engines.gpu.formats import (
    FORMATS,
    PCSR,
    IntervalPCSR,
    LabelledCSR,
    adjacency_bits,
    format_nbytes,
    genmap,
)
from nx_gsm.interop.networkx import from_networkx


def _random_labelled(seed, directed, n=None, p=None, n_labels=None):
    rnd = random.Random(seed)
    n = n if n is not None else rnd.randint(1, 60)
    p = p if p is not None else rnd.choice([0.02, 0.08, 0.2, 0.5])
    n_labels = n_labels if n_labels is not None else rnd.choice([1, 2, 3, 7])
    G = nx.gnp_random_graph(n, p, seed=seed, directed=directed)
    for u, v in G.edges():
        G.edges[u, v]["label"] = rnd.randrange(n_labels)
    g = from_networkx(G)
    lab = np.array([d["label"] for d in (g.edge_data or [])], dtype=np.int32)
    return g, lab, n_labels


def _reference(g, lab, v, l, direction):
    if direction == "out" or not g.directed:
        lo, hi = g.indptr[v], g.indptr[v + 1]
        row, rl = g.indices[lo:hi], lab[lo:hi]
    else:
        lo, hi = g.in_indptr[v], g.in_indptr[v + 1]
        row, rl = g.in_indices[lo:hi], lab[g.in_pos[lo:hi]]
    return np.sort(row[rl == l])


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_neighbor_lookup_matches_csr(fmt, directed, seed):
    g, lab, n_labels = _random_labelled(seed * 7 + directed, directed)
    for direction in ("out", "in"):
        f = FORMATS[fmt](g, lab, direction, np)
        for v in range(g.n):
            for l in range(n_labels + 1):  # one label beyond those present: empty lists
                got = f.neighbors(v, l)
                want = _reference(g, lab, v, l, direction)
                assert got.dtype == np.int32
                np.testing.assert_array_equal(np.sort(got), want, err_msg=f"{fmt} v={v} l={l}")


def test_unlabelled_graph_single_partition():
    g = from_networkx(nx.karate_club_graph())
    for cls in (LabelledCSR, PCSR, IntervalPCSR):
        f = cls(g)
        for v in range(g.n):
            np.testing.assert_array_equal(
                np.sort(f.neighbors(v, 0)), g.indices[g.indptr[v] : g.indptr[v + 1]]
            )


def test_pcsr_layout_invariants():
    g, lab, _ = _random_labelled(3, False, n=400, p=0.05, n_labels=3)
    f = PCSR(g, lab)
    for groups in f.groups:
        assert groups.dtype == np.int32 and groups.shape[1:] == (16, 2)
        assert groups[0].nbytes == 128  # one memory transaction per group
        delta = groups.shape[0]
        gid = groups[:, 15, 0]
        assert np.all((gid == -1) | ((gid >= 0) & (gid < delta)))
        # every chain ends at GID == -1 (no cycles)
        for g0 in range(delta):
            seen, g1 = set(), g0
            while g1 != -1:
                assert g1 not in seen
                seen.add(g1)
                g1 = int(gid[g1])
    assert 1 <= f.max_chain < 15


def test_pcsr_overflow_chains():
    # a star centre plus vertices hashing to the same group: force long chains
    G = nx.Graph()
    G.add_edges_from((0, i) for i in range(1, 200))
    g = from_networkx(G)
    f = PCSR(g)
    for v in range(g.n):
        np.testing.assert_array_equal(
            np.sort(f.neighbors(v, 0)), g.indices[g.indptr[v] : g.indptr[v + 1]]
        )


def test_genmap_bijection_and_interval_gain():
    g, lab, n_labels = _random_labelled(5, False, n=300, p=0.03, n_labels=4)
    rows = np.repeat(np.arange(g.n), np.diff(g.indptr))
    parts = [np.unique(rows[lab == l]) for l in range(n_labels)]
    MAP = genmap(parts, g.n)
    assert sorted(MAP.tolist()) == list(range(1, g.n + 1))  # bijection onto 1..n, 0 unused
    with_map = IntervalPCSR(g, lab).interval_counts()
    without = IntervalPCSR(g, lab, renumber=False).interval_counts()
    big = int(np.argmax([p.size for p in parts]))
    assert with_map[big] <= without[big]
    assert with_map[big] == 1  # the largest partition is renumbered first, as one run


def test_format_sizes_reported(record_property, capsys):
    rows = []
    for name, (seed, directed, n, p, nl) in {
        "gnp400_undirected_3labels": (11, False, 400, 0.03, 3),
        "gnp400_directed_3labels": (12, True, 400, 0.03, 3),
        "gnp2000_undirected_1label": (13, False, 2000, 0.004, 1),
    }.items():
        g, lab, _ = _random_labelled(seed, directed, n=n, p=p, n_labels=nl)
        sizes = format_nbytes(g, lab)
        for fmt, b in sizes.items():
            record_property(f"{name}:{fmt}", b)
            assert b > 0
        rows.append((name, sizes))
    with capsys.disabled():
        print()
        for name, sizes in rows:
            print(f"format bytes {name}: " + ", ".join(f"{k}={v}" for k, v in sizes.items()))


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("seed", range(8))
def test_adjacency_bits_match_csr(directed, seed):
    """The edge-test bitmap holds exactly the CSR's entries (rows of up to 67 nodes: bytes whose
    bits come from several entries, and a last byte only partly used)."""
    g, _, _ = _random_labelled(seed, directed, n=random.Random(seed).randint(1, 67))
    bits = adjacency_bits(g.indptr, g.indices, g.n)
    assert bits.dtype == np.uint8 and bits.shape == (g.n, (g.n + 7) // 8)
    dense = np.unpackbits(bits, axis=1, bitorder="little")
    want = np.zeros((g.n, dense.shape[1]), dtype=np.uint8)
    for x in range(g.n):
        want[x, g.indices[g.indptr[x] : g.indptr[x + 1]]] = 1
    assert np.array_equal(dense, want)


def test_adjacency_bits_empty_graph():
    g = from_networkx(nx.empty_graph(0))
    assert adjacency_bits(g.indptr, g.indices, g.n).shape == (0, 1)
