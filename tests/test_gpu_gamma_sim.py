"""GAMMA's kernels on the CPU, through Numba's CUDA simulator (runs in CI, no GPU needed).

The simulator must be switched on before numba.cuda is imported, so the cases run in a
subprocess (``tests/gpu_sim_gamma_cases.py``) with ``NUMBA_ENABLE_CUDASIM=1``.
"""

import os
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

HERE = Path(__file__).resolve().parent


def test_gamma_kernels_in_cuda_simulator():
    pytest.importorskip("numba.cuda")
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", NX_GSM_SIM_TIMEOUT="300")
    env["PYTHONPATH"] = os.pathsep.join([str(HERE.parent), env.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, str(HERE / "gpu_sim_gamma_cases.py")], env=env,
                          capture_output=True, text=True, timeout=900)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "SIM OK" in proc.stdout, out[-5000:]


def test_gamma_without_gpu_is_a_clear_error_and_auto_uses_the_cpu_path():
    from nx_gsm.engines.gpu.gamma import gamma_reason
    from nx_gsm.incremental import IncrementalMatcher

    if gamma_reason() is None:
        pytest.skip("a CUDA device is usable here (gpu/tests/test_gamma.py covers it)")
    with pytest.raises(RuntimeError, match="engine 'gamma' is not available"):
        IncrementalMatcher(nx.path_graph(4), nx.path_graph(3), engine="gamma")
    m = IncrementalMatcher(nx.path_graph(4), nx.path_graph(3), engine="auto")
    assert m._gamma is None
    assert m.apply(insert=[(3, 4)]).num_added == 2
