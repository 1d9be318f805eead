"""GSI's BFS -> DFS switch and gmatch's count_from/iter_from on the CPU, through Numba's CUDA
simulator (runs in CI, no GPU needed).

The simulator must be switched on before numba.cuda is imported, so the cases run in a
subprocess (``tests/gpu_sim_hybrid_cases.py``) with ``NUMBA_ENABLE_CUDASIM=1``.
"""

import pytest
from sim_runner import run_sim

pytestmark = pytest.mark.sim  # minutes under the simulator: .ci/run runs them, the default run does not


def test_bfs_to_dfs_switch_in_cuda_simulator():
    run_sim("gpu_sim_hybrid_cases.py")
