"""GAMMA's staged kernel arguments (``KernelArgs.staged``): the arrays that change every launch
are regions of one kept buffer per prefix, filled by one copy, grown by powers of two. Host
logic, checked with NumPy arrays (Numba's wrap is replaced by the identity: it only views the
buffer; on the card the same layout is filled from pinned memory by one asynchronous copy)."""

import numpy as np

from nx_gsm.engines.gpu.gamma import launch, pma


def test_staged_regions_hold_each_array_and_are_kept(monkeypatch):
    monkeypatch.setattr(launch, "kernel_array", lambda x: x)
    args = launch.KernelArgs(np)
    a = np.array([5, -1, 7, 2**40, 3], dtype=np.int64)
    b = np.array([1, 2, 3], dtype=np.int64)
    views, first = args.staged("t0.", [(a, np.int64), (b, np.int32), (np.zeros(0), np.int32)])
    assert [x.size for x in first] == [8, 4, 2]  # powers of two, whole 8-byte words
    assert [x.size for x in views] == [5, 3, 0]  # the views: each array's own length
    assert [x.dtype for x in first] == [np.int64, np.int32, np.int32]
    assert views[0].tolist() == a.tolist() and views[1].tolist() == [1, 2, 3]
    # every region is its own memory: one buffer, no overlap
    assert all(np.shares_memory(first[0], x) is False for x in first[1:])
    assert first[1].base is first[0].base or np.shares_memory(first[1].base, first[0].base)
    # shorter arrays reuse the layout (the same argument objects); a longer one lays it out
    # afresh with that region grown
    views2, again = args.staged("t0.", [(a[:2], np.int64), (b[:1], np.int32),
                                        (b[2:], np.int32)])
    assert all(x is y for x, y in zip(again, first))
    assert views2[0].tolist() == [5, -1] and views2[1].tolist() == [1] and \
        views2[2].tolist() == [3]
    views3, grown = args.staged("t0.", [(a[:2], np.int64), (np.arange(9), np.int32),
                                        (b, np.int32)])
    assert grown[1] is not first[1] and grown[1].size == 16
    assert views3[0].tolist() == [5, -1] and views3[1].tolist() == list(range(9))
    assert views3[2].tolist() == [1, 2, 3]
    # another prefix (the other side's search) has a buffer of its own
    _, other = args.staged("t1.", [(b, np.int64)])
    assert not np.shares_memory(other[0], grown[0])
    assert grown[0][:2].tolist() == [5, -1]
    # a dtype change lays the prefix out afresh
    _, typed = args.staged("t1.", [(b, np.int32)])
    assert typed[0].dtype == np.int32 and typed[0][:3].tolist() == [1, 2, 3]


def test_row_order_is_lexsorts_stable_order():
    """The PMA update's order by (row, key): one int64 key where it fits, else NumPy's lexsort;
    the same permutation as lexsort, repeats (later wins) and keys past 32 bits included."""
    rng = np.random.default_rng(0)
    for t in range(600):
        u = int(rng.integers(1, 200))
        src = rng.integers(0, int(rng.integers(1, 50)), u)
        if t % 3 == 0:  # class in the high bits
            key = (rng.integers(0, 4, u) << 32) | rng.integers(0, 30, u)
        elif t % 3 == 1:  # plain ids, with repeats
            key = rng.integers(0, 10, u)
        else:  # negative and huge keys: lexsort
            key = rng.integers(-5, 2**62, u)
        if t % 7 == 0:
            src = rng.integers(0, 2**40, u)
        assert pma._row_order(src, key).tolist() == np.lexsort((key, src)).tolist(), t
