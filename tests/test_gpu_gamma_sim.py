"""GAMMA's kernels on the CPU, through Numba's CUDA simulator (runs in CI, no GPU needed).

One test per case of ``tests/gpu_sim_gamma_cases.py`` and ``tests/gpu_sim_pma_cases.py``; the
simulator must be switched on before numba.cuda is imported, so ``sim_runner`` runs the cases in
child processes.
"""

import networkx as nx
import pytest
from sim_runner import sim_cases

pytestmark = pytest.mark.sim  # minutes under the simulator: `.ci/run` runs them


@pytest.mark.parametrize("case", sim_cases("gpu_sim_gamma_cases.py"))
def test_gamma_kernels_in_cuda_simulator(case):
    case.check()


@pytest.mark.parametrize("case", sim_cases("gpu_sim_pma_cases.py"))
def test_pma_merge_kernels_in_cuda_simulator(case):
    case.check()


def test_gamma_without_gpu_is_a_clear_error_and_auto_uses_the_cpu_path():
    from nx_gsm.engines.gpu.gamma import gamma_reason
    from nx_gsm.incremental import IncrementalMatcher

    if gamma_reason() is None:
        pytest.skip("a CUDA device is usable here (tests/test_card_gamma.py covers it)")
    with pytest.raises(RuntimeError, match="engine 'gamma' is not available"):
        IncrementalMatcher(nx.path_graph(4), nx.path_graph(3), engine="gamma")
    m = IncrementalMatcher(nx.path_graph(4), nx.path_graph(3), engine="auto")
    assert m._gamma is None
    assert m.apply(insert=[(3, 4)]).num_added == 2
