"""Runs a ``tests/gpu_sim_*_cases.py`` script under Numba's CUDA simulator.

The simulator must be switched on before numba.cuda is imported, so the cases run in a
subprocess with ``NUMBA_ENABLE_CUDASIM=1``; the script prints ``SIM OK`` when every case passed.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def run_sim(script, *args):
    pytest.importorskip("numba.cuda")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", NX_GSM_SIM_TIMEOUT="300")
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, str(HERE / script), *args], env=env,
                          capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "SIM OK" in proc.stdout, out[-5000:]
