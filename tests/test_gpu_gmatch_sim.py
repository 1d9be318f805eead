"""gmatch's kernels on the CPU, through Numba's CUDA simulator (runs in CI, no GPU needed).

The simulator must be switched on before numba.cuda is imported, so the cases run in a
subprocess (``tests/gpu_sim_cases.py``) with ``NUMBA_ENABLE_CUDASIM=1``.
"""

import pytest
from sim_runner import run_sim

pytestmark = pytest.mark.sim  # minutes under the simulator: .ci/run runs them, the default run does not


# two halves, so that each has the runner's timeout (the whole took ~780 s of its 900 in CI)
@pytest.mark.parametrize("part", ["search", "levels"])
def test_gmatch_kernels_in_cuda_simulator(part):
    run_sim("gpu_sim_cases.py", part)
