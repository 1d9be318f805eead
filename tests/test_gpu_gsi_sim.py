"""gsi's kernels on the CPU, through Numba's CUDA simulator (runs in CI, no GPU needed).

One test per case of ``tests/gpu_sim_gsi_cases.py``; the simulator must be switched on before
numba.cuda is imported, so ``sim_runner`` runs the cases in a child process.
"""

import pytest
from sim_runner import sim_cases

pytestmark = pytest.mark.sim  # minutes under the simulator: `.ci/run` runs them


@pytest.mark.parametrize("case", sim_cases("gpu_sim_gsi_cases.py"))
def test_gsi_kernels_in_cuda_simulator(case):
    case.check()


def test_tier_cost_model_prefers_warps_for_short_rows_and_grid_for_huge_ones():
    from nx_gsm.engines.gpu.gsi import choose_tiers

    hist = [1000] + [0] * 40 + [3] + [0] * 200 + [1]
    x3, x1 = choose_tiers(hist, sms=132)
    assert x3 == 0  # short rows: one warp each
    assert 41 <= x1 < 242  # the 3 rows of bin 41 get blocks, the 1 row of bin 242 the grid
    assert choose_tiers([5, 2], sms=4)[1] == 1  # under 32 bins: no block or grid tier
