"""RowPMA (GAMMA's dynamic graph, nx_gsm.engines.gpu.gamma): batches of insertions, deletions and
multiplicity changes against a dict-of-dicts reference, through relocations, arena growth and
re-spreads. Here with NumPy's array merge; the same checks run the device merge kernels under the
CUDA simulator (tests/gpu_sim_pma_cases.py, where RowPMA merges with them by default) and on the
card (tests/test_card_pma.py)."""

import random

import numpy as np
import pytest

from nx_gsm.engines.gpu.gamma import RowPMA


def _check(p, ref, key=lambda y: y):
    assert p.n == len(ref)
    for v, row in enumerate(ref):
        got = p.row(v)
        assert got == sorted(row, key=key), v
        a, n = int(p.start[v]), int(p.length[v])
        assert n <= int(p.cap[v])
        assert p.akey[a : a + n].tolist() == [key(y) for y in got]
        assert p.mult[a : a + n].tolist() == [row[y][0] for y in got]
        assert p.emask[a : a + n].tolist() == [row[y][1] for y in got]
    # live segments never overlap
    segs = sorted((int(p.start[v]), int(p.cap[v])) for v in range(p.n) if int(p.length[v]))
    for (a, c), (b, _) in zip(segs, segs[1:]):
        assert a + c <= b
    assert all(a + c <= p.adj.size for a, c in segs)


def _batch(rnd, ref, size, n):
    upd = {}
    for _ in range(size):
        x = rnd.randrange(n)
        if ref[x] and rnd.random() < 0.4:
            y = rnd.choice(list(ref[x]))
            upd[x, y] = (0, 0) if rnd.random() < 0.7 else (rnd.randint(1, 3), rnd.randrange(8))
        else:
            upd[x, rnd.randrange(n)] = (rnd.randint(1, 3), rnd.randrange(8))
    return upd


@pytest.mark.parametrize("keyed", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_random_batches_match_reference(seed, keyed, merge=None, steps=30, xp=np):
    """With ``keyed``, rows are ordered by GAMMA's key (a class per vertex, then the id); every
    other batch passes ``present`` (the kernel merge then reads nothing back)."""
    rnd = random.Random(seed)
    n = rnd.randint(1, 40)
    cls = [rnd.randrange(3) for _ in range(n + 200)]

    def key(y):
        return (cls[y] << 32) | y if keyed else y

    def sort_keys(ys):
        return np.array([key(y) for y in ys], dtype=np.int64) if keyed else None

    ref = [{} for _ in range(n)]
    for _ in range(rnd.randint(0, 4 * n)):
        ref[rnd.randrange(n)][rnd.randrange(n)] = (rnd.randint(1, 3), rnd.randrange(8))
    src = [x for x in range(n) for y in ref[x]]
    dst = [y for x in range(n) for y in ref[x]]
    p = RowPMA(n, np.array(src, dtype=np.int64), np.array(dst, dtype=np.int64),
               np.array([ref[x][y][0] for x, y in zip(src, dst)]),
               np.array([ref[x][y][1] for x, y in zip(src, dst)]), xp=xp, key=sort_keys(dst),
               merge=merge)
    _check(p, ref, key)
    for step in range(steps):
        if rnd.random() < 0.1:
            extra = rnd.randint(1, 3)
            p.add_rows(extra)
            ref.extend({} for _ in range(extra))
            n += extra
        # skewed batches: some rows grow far past their slack (relocation), others shrink
        size = rnd.choice([1, 5, 50, 300])
        upd = _batch(rnd, ref, size, n)
        keys = list(upd)
        rnd.shuffle(keys)  # the update order inside a batch does not matter
        # every other batch tells which entries exist (GAMMA does): no read back
        present = [k[1] in ref[k[0]] for k in keys] if step % 2 else None
        p.update(np.array([k[0] for k in keys]), np.array([k[1] for k in keys]),
                 np.array([upd[k][0] for k in keys]), np.array([upd[k][1] for k in keys]),
                 key=sort_keys([k[1] for k in keys]), present=present)
        for (x, y), (m, e) in upd.items():
            if m:
                ref[x][y] = (m, e)
            else:
                ref[x].pop(y, None)
        _check(p, ref, key)
    assert p.relocations > 0


def test_hot_row_relocates_and_sparse_arena_respreads(xp=np):
    p = RowPMA(4, np.array([0]), np.array([1]), np.array([1]), np.zeros(1), xp=xp)
    ref = [{1: (1, 0)}, {}, {}, {}]
    for i in range(200):  # one row doubles again and again; old segments become garbage
        p.update(np.array([0]), np.array([(i % 3) + 1]), np.array([i % 2]), np.zeros(1))
        p.add_rows(1)
        ref.append({})
        if i % 2:
            ref[0][(i % 3) + 1] = (1, 0)
        else:
            ref[0].pop((i % 3) + 1, None)
        p.update(np.array([0] * 40), np.arange(4, 44) + 40 * i, np.ones(40), np.zeros(40))
        for y in range(4 + 40 * i, 44 + 40 * i):
            ref[0][y] = (1, 0)
        _check(p, ref)
    assert p.relocations > 3
    rebuilds = p.rebuilds
    # deleting most of it drops the arena under its lower density bound: re-spread
    rows = [(x, y) for x in range(len(ref)) for y in ref[x]][10:]
    p.update(np.array([r[0] for r in rows]), np.array([r[1] for r in rows]),
             np.zeros(len(rows)), np.zeros(len(rows)))
    for x, y in rows:
        del ref[x][y]
    _check(p, ref)
    assert p.rebuilds == rebuilds + 1 and p.used < 100


def test_empty_and_noop_batches(xp=np):
    p = RowPMA(0, np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0), xp=xp)
    assert p.n == 0 and p.max_length() == 0
    p.add_rows(2)
    p.update(np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0))
    p.update(np.array([1]), np.array([0]), np.array([0]), np.zeros(1))  # delete a missing entry
    _check(p, [{}, {}])
