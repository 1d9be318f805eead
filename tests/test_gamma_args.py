"""GAMMA's kept kernel arguments (``_KernelArgs.packed``): the arrays that change every launch go
up in one upload and land in buffers kept per name, grown by powers of two. Host logic, checked
with NumPy arrays (Numba's wrap is replaced by the identity: it only views the buffer)."""

import numpy as np

from nx_gsm.engines.gpu import gamma


def test_packed_buffers_hold_each_array_and_are_kept(monkeypatch):
    monkeypatch.setattr(gamma, "_kernel_array", lambda x: x)
    args = gamma._KernelArgs(np)
    a = np.array([5, -1, 7, 2**40, 3], dtype=np.int64)
    b = np.array([1, 2, 3], dtype=np.int64)
    first = args.packed("t0.", [(a, np.int64), (b, np.int32), (np.zeros(0), np.int32)])
    assert [x.size for x in first] == [8, 4, 1]  # powers of two (an empty array: one slot)
    assert [x.dtype for x in first] == [np.int64, np.int32, np.int32]
    assert first[0][:5].tolist() == a.tolist() and first[1][:3].tolist() == [1, 2, 3]
    # shorter arrays reuse the buffers; a longer one grows its own buffer only
    again = args.packed("t0.", [(a[:2], np.int64), (np.arange(9), np.int32), (b, np.int32)])
    assert again[0] is first[0] and again[1] is not first[1] and again[1].size == 16
    assert again[0][:2].tolist() == [5, -1] and again[1][:9].tolist() == list(range(9))
    assert again[2][:3].tolist() == [1, 2, 3]
    # another prefix (the other side's search) has buffers of its own
    other = args.packed("t1.", [(b, np.int64)])
    assert other[0] is not first[0] and first[0][:2].tolist() == [5, -1]
