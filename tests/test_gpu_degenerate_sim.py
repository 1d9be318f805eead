"""The GPU engine objects on degenerate plans, through Numba's CUDA simulator (issue 53: no
input reachable from Python kills the process).

One test per engine (a case of ``tests/gpu_sim_degenerate_cases.py``, each in its own child
process with ``NUMBA_ENABLE_CUDASIM=1``): VF2's answers on every plan and ValueError/TypeError
for every bad argument.
"""

import pytest
from sim_runner import sim_cases

pytestmark = pytest.mark.sim  # minutes under the simulator: `.ci/run` runs them


@pytest.mark.parametrize("case", sim_cases("gpu_sim_degenerate_cases.py"))
def test_gpu_engine_on_degenerate_plans_in_cuda_simulator(case):
    case.check()
