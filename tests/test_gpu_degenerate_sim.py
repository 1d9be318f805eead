"""The GPU engine objects on degenerate plans, through Numba's CUDA simulator (issue 53: no
input reachable from Python kills the process).

Each engine runs in its own child process (``tests/gpu_sim_degenerate_cases.py`` with
``NUMBA_ENABLE_CUDASIM=1``); the child must exit 0 with VF2's answers on every case and
ValueError/TypeError for every bad argument.
"""

import pytest
from sim_runner import run_sim

pytestmark = pytest.mark.sim  # minutes under the simulator: .ci/run runs them, the default run does not


@pytest.mark.parametrize("engine", ["gmatch", "gsi", "geneva", "gamma"])
def test_gpu_engine_on_degenerate_plans_in_cuda_simulator(engine):
    run_sim("gpu_sim_degenerate_cases.py", engine)
