"""Injected device faults in the GPU engines, under Numba's CUDA simulator (CI, no GPU needed)."""

import pytest

from sim_runner import run_sim


@pytest.mark.parametrize("engine", ["gmatch", "gsi", "geneva", "gamma"])
def test_engine_recovers_from_injected_device_faults(engine):
    run_sim("gpu_sim_fault_cases.py", engine)


def test_fault_hook_rejects_unknown_sites():
    from nx_gsm.engines.gpu import faults

    with pytest.raises(ValueError, match="unknown fault site"):
        with faults.inject("nowhere"):
            pass
    with pytest.raises(ValueError, match="unknown fault kind"):
        with faults.inject("bfs", "meteor"):
            pass
