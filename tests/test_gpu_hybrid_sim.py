"""GSI's BFS -> DFS switch and gmatch's count_from/iter_from on the CPU, through Numba's CUDA
simulator (runs in CI, no GPU needed).

One test per case of ``tests/gpu_sim_hybrid_cases.py``; the simulator must be switched on before
numba.cuda is imported, so ``sim_runner`` runs the cases in a child process.
"""

import pytest
from sim_runner import sim_cases

pytestmark = pytest.mark.sim  # minutes under the simulator: `.ci/run` runs them


@pytest.mark.parametrize("case", sim_cases("gpu_sim_hybrid_cases.py"))
def test_bfs_to_dfs_switch_in_cuda_simulator(case):
    case.check()
