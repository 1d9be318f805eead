"""gsi's kernels on the CPU, through Numba's CUDA simulator (runs in CI, no GPU needed).

The simulator must be switched on before numba.cuda is imported, so the cases run in a
subprocess (``tests/gpu_sim_gsi_cases.py``) with ``NUMBA_ENABLE_CUDASIM=1``.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


def test_gsi_kernels_in_cuda_simulator():
    pytest.importorskip("numba.cuda")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", NX_GSM_SIM_TIMEOUT="300")
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, str(HERE / "gpu_sim_gsi_cases.py")], env=env,
                          capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "SIM OK" in proc.stdout, out[-5000:]


def test_tier_cost_model_prefers_warps_for_short_rows_and_grid_for_huge_ones():
    from nx_gsm.engines.gpu.gsi import choose_tiers

    hist = [1000] + [0] * 40 + [3] + [0] * 200 + [1]
    x3, x1 = choose_tiers(hist, sms=132)
    assert x3 == 0  # short rows: one warp each
    assert 41 <= x1 < 242  # the 3 rows of bin 41 get blocks, the 1 row of bin 242 the grid
    assert choose_tiers([5, 2], sms=4)[1] == 1  # under 32 bins: no block or grid tier
