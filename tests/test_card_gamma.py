"""The GAMMA engine (batch-dynamic matching on the GPU) against the CPU path and VF2 (runs only
where CUDA is usable).

Thousands of random (graph, pattern, batch) cases of all four graph classes, monomorphism and
induced, node and edge labels, self-loops, parallel edges, node insertions and deletions (every
other case with the seeds split into slices): each
batch's added/removed equal the CPU path's and the difference of VF2's results (and
``counts_only`` their sizes); order invariance
(the same batch shuffled) and "one batch equals the same updates split into two, net"; a batch
whose output overflows the first device buffer; work stealing and coalesced search on and off
give the same answers (the digest's T-A5); the device graph after many batches equals the
matcher's graph.
"""

import os
import random

import networkx as nx
import pytest
from networkx.algorithms import isomorphism as iso

from nx_gsm.incremental import IncrementalMatcher
from nx_gsm.testing import plain_row_batches, random_graph

pytestmark = pytest.mark.gpu  # the card: tests/conftest.py skips it without a device

CLASSES = [nx.Graph, nx.DiGraph, nx.MultiGraph, nx.MultiDiGraph]
N_CASES = int(os.environ.get("GAMMA_CASES", "2000"))
# blocks of cases (seed = block mod N_BLOCKS): more blocks, more parallel processes (gpu.check
# sets it to its process count); VF2 on a few cases with 10^5 matches takes minutes of one core
N_BLOCKS = int(os.environ.get("GAMMA_BLOCKS", "20"))


def _vf2(G, H, induced, nm, em):
    M = (iso.DiGraphMatcher if G.is_directed() else iso.GraphMatcher)(G, H, node_match=nm,
                                                                      edge_match=em)
    it = M.subgraph_isomorphisms_iter() if induced else M.subgraph_monomorphisms_iter()
    return {frozenset(m.items()) for m in it}


def _set(ms):
    s = {frozenset(m.items()) for m in ms}
    assert len(s) == len(ms), "a mapping was reported twice"
    return s


def _graph(rnd, cls, n, p, loops, nl, nel):
    return random_graph(rnd, cls, n, p, loops, nl, nel, labels_first=True)


def _batch(rnd, G, nl, nel, size):
    edges = list(G.edges(keys=True) if G.is_multigraph() else G.edges())
    dele = rnd.sample(edges, min(len(edges), rnd.randint(0, size)))
    nodes = list(G)
    new = max(nodes) + 1
    ins = []
    for _ in range(rnd.randint(1, size)):
        u, v = rnd.choice(nodes + [new]), rnd.choice(nodes)
        if not G.is_multigraph() and (G.has_edge(u, v) or (u, v) in ins or
                                      (not G.is_directed() and (v, u) in ins)):
            continue
        ins.append((u, v))
    ins = [(u, v, {"w": rnd.randrange(nel)}) for u, v in ins]
    gone = []
    if rnd.random() < 0.2:
        busy = {x for e in ins for x in e[:2]}
        free = [x for x in nodes if x not in busy]
        gone = rnd.sample(free, 1) if free else []
        dele = [e for e in dele if e[0] not in gone and e[1] not in gone]
    return dict(insert=ins, delete=dele, nodes=[(new, {"c": rnd.randrange(nl)})],
                delete_nodes=gone)


def _case(seed):
    rnd = random.Random(seed)
    cls = CLASSES[seed % 4]
    induced = rnd.random() < 0.5
    nl, nel = rnd.choice([1, 2, 3]), rnd.choice([1, 2])
    G = _graph(rnd, cls, rnd.randint(6, 24), rnd.choice([0.15, 0.3, 0.5]), rnd.random() < 0.3,
               nl, nel)
    k = rnd.randint(2, 6)
    if rnd.random() < 0.6:
        H = nx.convert_node_labels_to_integers(G.subgraph(rnd.sample(list(G), k)).copy())
        H.remove_edges_from(list(nx.selfloop_edges(H)))
    else:
        H = _graph(rnd, cls, k, 0.5, False, nl, nel)
    if rnd.random() < 0.1:
        H.add_node(k, c=0)
    nm = iso.categorical_node_match("c", None) if rnd.random() < 0.5 else None
    em = None
    if rnd.random() < 0.3:
        em = (iso.categorical_multiedge_match if G.is_multigraph()
              else iso.categorical_edge_match)("w", None)
    return G, H, dict(induced=induced, node_match=nm, edge_match=em), rnd, nl, nel


# VF2 on every batch keeps a process busy for minutes: gpu.check deals the blocks over its
# processes one by one
@pytest.mark.gpu(spread=True)
@pytest.mark.parametrize("block", range(N_BLOCKS))
def test_random_batches_equal_cpu_path_and_vf2(block):
    for seed in range(block, N_CASES, N_BLOCKS):
        G, H, kw, rnd, nl, nel = _case(seed)
        cpu = IncrementalMatcher(G, H, engine="cpu", **kw)
        gpu = IncrementalMatcher(G, H, engine="gamma", **kw)
        cnt = IncrementalMatcher(G, H, engine="gamma", **kw)
        if seed % 2:  # seeds split into slices even on these small graphs (degree 2 and up)
            gpu._gamma.split_row = cnt._gamma.split_row = 2
        if seed % 3:  # rows narrowed to label classes even when short
            gpu._gamma.narrow_row = cnt._gamma.narrow_row = 0
        if seed % 4 == 3:  # counting without the batched last depth
            cnt._gamma.batch_min = 0
        if seed % 5 < 2:  # rows of 4 entries and up offered in slices to idle warps
            gpu._gamma.slice_min = cnt._gamma.slice_min = 2
        after = _vf2(gpu.graph, H, kw["induced"], kw["node_match"], kw["edge_match"])
        for _ in range(3):
            b = _batch(rnd, gpu.graph, nl, nel, rnd.choice([2, 6]))
            before = after
            rg, rc = gpu.apply(**b), cpu.apply(**b)
            rn = cnt.apply(**b, counts_only=True)
            assert (rn.num_added, rn.num_removed) == (rg.num_added, rg.num_removed), seed
            after = _vf2(gpu.graph, H, kw["induced"], kw["node_match"], kw["edge_match"])
            ga, gr = _set(rg.added), _set(rg.removed)
            assert ga == _set(rc.added) and gr == _set(rc.removed), seed
            assert ga == after - before and gr == before - after, seed


@pytest.mark.parametrize("seed", range(40))
def test_order_invariance_and_split_batches(seed):
    G, H, kw, rnd, nl, nel = _case(10_000 + seed)
    b = _batch(rnd, G, nl, nel, 6)
    b["delete_nodes"] = []
    one = IncrementalMatcher(G, H, engine="gamma", **kw)
    r1 = one.apply(**b)
    shuf = IncrementalMatcher(G, H, engine="gamma", **kw)
    b2 = {k: list(v) for k, v in b.items()}
    for v in b2.values():
        rnd.shuffle(v)
    r2 = shuf.apply(**b2)
    assert _set(r1.added) == _set(r2.added) and _set(r1.removed) == _set(r2.removed)
    # the same updates in two batches (deletions first, then insertions): the net change agrees
    two = IncrementalMatcher(G, H, engine="gamma", **kw)
    ra = two.apply(delete=b["delete"])
    rb = two.apply(insert=b["insert"], nodes=b["nodes"])
    plus = (_set(ra.added) - _set(rb.removed)) | (_set(rb.added) - _set(ra.removed))
    minus = (_set(ra.removed) - _set(rb.added)) | (_set(rb.removed) - _set(ra.added))
    assert plus == _set(r1.added) and minus == _set(r1.removed)


def _hub_graph(n, m, seed, directed):
    G = nx.gnm_random_graph(n, m, seed=seed, directed=directed)
    G.add_edges_from((0, v) for v in range(1, n, 6))  # hubs: skewed work per update
    G.add_edges_from((v, 1) for v in range(2, n, 9))
    return G


@pytest.mark.parametrize("directed", [False, True])
@pytest.mark.parametrize("induced", [False, True])
def test_stealing_and_coalescing_change_nothing(directed, induced):
    """The digest's T-A5 on the card: patterns with automorphisms (triangle + pendant, star,
    4-cycle, diamond, and a 4-cycle of alternating edge labels under edge_match) on graphs with
    hubs, labelled and not; GAMMA with stealing and coalescing (default), with neither, and with
    each alone, with donation between blocks alone, with the hubs' seeds split into slices and
    without, with candidate rows of 8 entries and up offered in slices to idle warps, give the
    CPU path's answers and counts; the default run steals, splits seeds and searches fewer
    pattern pairs than it seeds, with edge_match too; donation alone donates; rows are sliced."""
    rnd = random.Random(5)
    tri = nx.Graph([(0, 1), (1, 2), (2, 0), (2, 3)])
    diamond = nx.complete_graph(4)
    diamond.remove_edge(0, 1)
    stole = fewer = fewer_em = split = donated = sliced = 0
    ring = nx.Graph()
    ring.add_edges_from([(0, 1, {"w": 0}), (1, 2, {"w": 1}), (2, 3, {"w": 0}), (3, 0, {"w": 1})])
    for i, H in enumerate([tri, nx.star_graph(3), nx.cycle_graph(4), diamond, ring]):
        G = _hub_graph(300, 1200, i, directed)
        if directed:
            H = nx.DiGraph(H.edges()) if i % 2 else H.to_directed()
        nm = em = None
        if 2 <= i <= 3:
            for X in (G, H):
                nx.set_node_attributes(X, {v: v % 2 for v in X}, "c")
            nm = iso.categorical_node_match("c", None)
        if i == 4:
            nx.set_edge_attributes(G, {e: rnd.randrange(2) for e in G.edges()}, "w")
            em = iso.categorical_edge_match("w", None)
        kw = dict(induced=induced, node_match=nm, edge_match=em)
        ref = IncrementalMatcher(G, H, engine="cpu", **kw)
        ms = {}
        for steal in (True, False):
            for co in (True, False):
                ms[steal, co] = IncrementalMatcher(G, H, engine="gamma", **kw)
                g = ms[steal, co]._gamma
                g.steal = g.donate = steal  # (off: no stealing in blocks nor donation between)
                g.coalesce = co
                ms[steal, co]._gamma.split_row = 8  # the two hubs have degree ~45 and ~60 here
        ms["nosplit"] = IncrementalMatcher(G, H, engine="gamma", **kw)
        ms["nosplit"]._gamma.split = False
        ms["ring"] = IncrementalMatcher(G, H, engine="gamma", **kw)  # donation alone
        ms["ring"]._gamma.steal = False
        ms["ring"]._gamma.poll = 0  # (every level: these graphs' searches are short)
        ms["slices"] = IncrementalMatcher(G, H, engine="gamma", **kw)
        ms["slices"]._gamma.slice_min = 4
        cnt = IncrementalMatcher(G, H, engine="gamma", **kw)
        for _ in range(2):
            edges = list(ref.graph.edges())
            dele = rnd.sample(edges, 30)
            ins = set()
            while len(ins) < 30:
                u, v = rnd.randrange(300), rnd.randrange(300)
                if u != v and not ref.graph.has_edge(u, v) and (v, u) not in ins:
                    ins.add((u, v))
            b = dict(insert=[(u, v, {"w": rnd.randrange(2)}) for u, v in sorted(ins)],
                     delete=dele)
            rc = ref.apply(**b)
            want = (_set(rc.added), _set(rc.removed))
            for key, m in ms.items():
                r = m.apply(**b)
                assert (_set(r.added), _set(r.removed)) == want, (i, key)
                assert (r.num_added, r.num_removed) == (len(want[0]), len(want[1])), (i, key)
            rn = cnt.apply(**b, counts_only=True)
            assert (rn.num_added, rn.num_removed) == (len(want[0]), len(want[1])), i
            st = ms[True, True]._gamma.last_stats
            stole += st["steals"] > 0
            donated += ms["ring"]._gamma.last_stats["donations"] > 0
            sliced += ms["slices"]._gamma.last_stats["slices"] > 0
            split += st.get("split_tasks", 0) > 0
            searched, seeded = st["pairs_searched"].split(" of ")
            fewer += int(searched) < int(seeded)
            fewer_em += int(searched) < int(seeded) and em is not None
            assert ms[False, True]._gamma.last_stats["steals"] == 0
            assert ms[False, True]._gamma.last_stats["donations"] == 0
    assert stole > 0 and donated > 0 and split > 0 and fewer > 0 and fewer_em > 0 and sliced > 0, (
        stole, donated, split, fewer, fewer_em, sliced)


def test_output_larger_than_the_device_buffer():
    G = nx.complete_graph(14)
    H = nx.complete_graph(4)
    m = IncrementalMatcher(G, H, engine="gamma")
    m._gamma.out_capacity = 8
    r = m.apply(delete=[(0, 1), (2, 3)])
    c = IncrementalMatcher(G, H, engine="cpu").apply(delete=[(0, 1), (2, 3)])
    assert _set(r.removed) == _set(c.removed) and r.num_removed > 8


def test_device_graph_tracks_many_batches():
    rnd = random.Random(3)
    G = nx.gnm_random_graph(300, 1500, seed=3)
    H = nx.cycle_graph(4)
    gpu = IncrementalMatcher(G, H, engine="gamma")
    cpu = IncrementalMatcher(G, H, engine="cpu")
    for _ in range(15):
        edges = list(gpu.graph.edges())
        dele = rnd.sample(edges, 60)
        ins = []
        while len(ins) < 60:
            u, v = rnd.randrange(320), rnd.randrange(300)
            if u != v and not gpu.graph.has_edge(u, v) and (u, v) not in ins and (v, u) not in ins:
                ins.append((u, v))
        rg, rc = gpu.apply(insert=ins, delete=dele), cpu.apply(insert=ins, delete=dele)
        assert _set(rg.added) == _set(rc.added) and _set(rg.removed) == _set(rc.removed)
    g = gpu._gamma
    for x in gpu.graph:
        row = sorted(g.kid[y] for y in gpu.graph[x] if y != x)
        assert g.out.row(g.kid[x]) == row
    assert gpu.count() == cpu.count()


def test_plain_rows_checked_beside_the_search():
    """Plain (u, v) rows are checked (id rows against the matcher's edge index, while the
    after-side search runs; others before any device work): an invalid batch raises as on the
    CPU path and changes nothing in the matcher (id rows drop the device graph, reloaded by the
    next batch); valid id rows reach the matcher's graph when it is next read, the same graph as
    the CPU path's."""
    assert plain_row_batches("gamma") == 32
