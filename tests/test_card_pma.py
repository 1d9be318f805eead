"""RowPMA's device merge (``_pma_find`` / ``_pma_merge``, GAMMA's GPMA update) on the card with
CuPy arrays: the reference checks of tests/test_gpma.py (random batches through relocations,
arena growth and re-spreads; a hot row; empty and no-op batches)."""

import importlib.util
from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu  # the card: tests/conftest.py skips it without a device


def _cases():
    path = Path(__file__).resolve().parent / "test_gpma.py"
    spec = importlib.util.spec_from_file_location("gpma_cases", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.parametrize("keyed", [False, True])
@pytest.mark.parametrize("seed", range(12))
def test_merge_kernels_match_reference(seed, keyed):
    import cupy

    _cases().test_random_batches_match_reference(seed, keyed, merge="kernel", xp=cupy)


def test_merge_kernels_hot_row_and_empty_batches():
    import cupy

    c = _cases()
    c.test_hot_row_relocates_and_sparse_arena_respreads(xp=cupy)
    c.test_empty_and_noop_batches(xp=cupy)


def test_merge_kernels_equal_array_merge_on_a_large_random_graph():
    """Large rows (many threads per row, long binary searches), both merges side by side."""
    import cupy
    import numpy as np

    from nx_gsm.engines.gpu.gamma import RowPMA

    rng = np.random.default_rng(0)
    n, m = 3000, 200_000
    src = rng.zipf(1.6, m) % n  # a few rows of thousands of entries
    dst = rng.integers(0, n, m)
    key = (src << 20) | dst
    _, first = np.unique(key, return_index=True)
    src, dst = src[first], dst[first]
    mult = rng.integers(1, 4, src.size)
    em = rng.integers(0, 8, src.size)
    a = RowPMA(n, src, dst, mult, em, xp=cupy)
    b = RowPMA(n, src, dst, mult, em, xp=np)
    assert a.merge == "kernel" and b.merge == "sort"
    for _ in range(8):
        k = 20_000
        us = rng.zipf(1.6, k) % n
        ud = rng.integers(0, n, k)
        um = np.where(rng.random(k) < 0.5, 0, rng.integers(1, 4, k))
        ue = rng.integers(0, 8, k)
        a.update(us, ud, um, ue)
        b.update(us, ud, um, ue)
        host = {x: getattr(a, x).get() for x in ("start", "length", "adj", "mult", "emask",
                                                  "akey")}
        assert host["length"].tolist() == b.length.tolist()
        for v in range(n):
            sa, sb, ln = int(host["start"][v]), int(b.start[v]), int(b.length[v])
            for name in ("adj", "mult", "emask", "akey"):
                assert host[name][sa:sa + ln].tolist() == \
                    getattr(b, name)[sb:sb + ln].tolist(), (v, name)
    assert a.relocations > 0
