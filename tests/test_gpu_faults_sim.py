"""Injected device faults in the GPU engines, under Numba's CUDA simulator (CI, no GPU needed)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize("engine", ["gmatch", "gsi", "geneva", "gamma"])
def test_engine_recovers_from_injected_device_faults(engine):
    pytest.importorskip("numba.cuda")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", NX_GSM_SIM_TIMEOUT="300")
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, str(HERE / "gpu_sim_fault_cases.py"), engine],
                          env=env, capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "SIM OK" in proc.stdout, out[-5000:]


def test_fault_hook_rejects_unknown_sites():
    from nx_gsm.engines.gpu import faults

    with pytest.raises(ValueError, match="unknown fault site"):
        with faults.inject("nowhere"):
            pass
    with pytest.raises(ValueError, match="unknown fault kind"):
        with faults.inject("bfs", "meteor"):
            pass
