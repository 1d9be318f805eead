"""The GPU engines' host bookkeeping (plan slots, memory budget, exact sums) under Numba's CUDA
simulator: CI has no GPU, and these are the parts of a device search that run on the host.
One test per case of ``tests/gpu_sim_host_cases.py`` (``sim_runner`` runs them in a child)."""

import pytest
from sim_runner import sim_cases

pytestmark = pytest.mark.sim  # minutes under the simulator: `.ci/run` runs them


@pytest.mark.parametrize("case", sim_cases("gpu_sim_host_cases.py"))
def test_plan_slots_budget_and_sums(case):
    case.check()
