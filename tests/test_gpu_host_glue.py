"""The GPU engines' host bookkeeping (plan slots, memory budget, exact sums) under Numba's CUDA
simulator: CI has no GPU, and these are the parts of a device search that run on the host."""

import pytest
from sim_runner import run_sim

pytestmark = pytest.mark.sim  # minutes under the simulator: .ci/run runs them, the default run does not


def test_plan_slots_budget_and_sums():
    run_sim("gpu_sim_host_cases.py")
