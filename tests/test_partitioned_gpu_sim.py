"""The partitioned engine's GPU cross search (gmatch with DUPREMOVE on the halo) against the CPU
cross search and VF2, through Numba's CUDA simulator (runs in CI, no GPU needed).

The simulator must be switched on before numba.cuda is imported, so the cases run in a
subprocess (``tests/gpu_sim_partitioned_cases.py``) with ``NUMBA_ENABLE_CUDASIM=1``.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def test_partitioned_gpu_cross_search_in_cuda_simulator():
    pytest.importorskip("numba.cuda")
    pytest.importorskip("pymetis")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", NX_GSM_SIM_TIMEOUT="300")
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, str(HERE / "gpu_sim_partitioned_cases.py")], env=env,
                          capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "SIM OK" in proc.stdout, out[-5000:]
