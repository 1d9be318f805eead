"""The GPU engines' host bookkeeping (plan slots, memory budget, exact sums) under Numba's CUDA
simulator: CI has no GPU, and these are the parts of a device search that run on the host."""

from sim_runner import run_sim


def test_plan_slots_budget_and_sums():
    run_sim("gpu_sim_host_cases.py")
