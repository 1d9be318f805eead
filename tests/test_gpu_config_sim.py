"""gmatch engines made from a GMatchConfig through the matching functions, under Numba's CUDA
simulator (runs in CI, no GPU needed): one test per case of ``tests/gpu_sim_config_cases.py``,
which ``sim_runner`` runs in a child process."""

import pytest
from sim_runner import sim_cases

pytestmark = pytest.mark.sim  # a minute under the simulator: .ci/run runs them, the default run does not


@pytest.mark.parametrize("case", sim_cases("gpu_sim_config_cases.py"))
def test_configured_gmatch_in_cuda_simulator(case):
    case.check()
