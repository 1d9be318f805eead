"""RowPMA's merge kernels (``_pma_find`` / ``_pma_merge``) under Numba's CUDA simulator (run by
test_gpu_gamma_sim.py, one test per case): under the simulator RowPMA merges with them by default,
so test_gpma.py's reference checks run them -- random batches through relocations and arena
growth, a hot row through re-spreads, empty and no-op batches."""

import os
import sys
from pathlib import Path

assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", "run with NUMBA_ENABLE_CUDASIM=1"

sys.path.insert(0, str(Path(__file__).resolve().parent))

import test_gpma  # noqa: E402
from sim_runner import run_cases, sim_case  # noqa: E402


@sim_case(params=range(3))
def random_batches(seed):
    for keyed in (False, True):
        test_gpma.test_random_batches_match_reference(seed, keyed, merge="kernel")


@sim_case
def hot_row_and_empty_batches():
    test_gpma.test_hot_row_relocates_and_sparse_arena_respreads()
    test_gpma.test_empty_and_noop_batches()


@sim_case
def kernel_merge_is_the_default():
    import numpy as np

    from nx_gsm.engines.gpu.gamma import RowPMA

    assert RowPMA(1, np.zeros(0), np.zeros(0), np.zeros(0), np.zeros(0)).merge == "kernel"


if __name__ == "__main__":
    sys.exit(run_cases())
