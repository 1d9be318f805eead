"""RowPMA's merge kernels (``_pma_find`` / ``_pma_merge``) under Numba's CUDA simulator (run by
test_gpu_gamma_sim.py in a subprocess): under the simulator RowPMA merges with them by default,
so test_gpma.py's reference checks run them -- random batches through relocations and arena
growth, a hot row through re-spreads, empty and no-op batches."""

import os
import sys
from pathlib import Path

assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", "run with NUMBA_ENABLE_CUDASIM=1"

sys.path.insert(0, str(Path(__file__).resolve().parent))

import test_gpma  # noqa: E402


def main():
    for seed in range(3):
        for keyed in (False, True):
            test_gpma.test_random_batches_match_reference(seed, keyed, merge="kernel")
    test_gpma.test_hot_row_relocates_and_sparse_arena_respreads()
    test_gpma.test_empty_and_noop_batches()
    from nx_gsm.engines.gpu.gamma import RowPMA
    import numpy as np

    assert RowPMA(1, np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0)).merge == "kernel"
    print("SIM OK")


if __name__ == "__main__":
    main()
