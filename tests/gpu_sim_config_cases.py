"""gmatch engines made from a GMatchConfig, under Numba's CUDA simulator (run by
test_gpu_config_sim.py, one test per case).

Engine objects with configs go through the matching functions' ``engine=`` (counts and
enumerations equal the CPU engine's, also with every BFS level on the device, the BFS stopped at
the roots, and counts on the chained path); an environment variable of the old
``NX_GSM_GMATCH_*`` form changes nothing; ``count_from``/``iter_from`` search a device plan the
caller made (as GSI hands over its own) as given, exactly as one they upload, and refuse one
that is not the plan's or comes with ``cut_part``.
"""

import os
import sys

assert os.environ.get("NUMBA_ENABLE_CUDASIM") == "1", "run with NUMBA_ENABLE_CUDASIM=1"

import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402

import nx_gsm  # noqa: E402
from nx_gsm.api import prepare  # noqa: E402
from nx_gsm.engines.catalog import engine_class  # noqa: E402
from nx_gsm.engines.cpu import CpuEngine, expand, plan_arrays  # noqa: E402
from nx_gsm.engines.gpu.gmatch import GMatchConfig, GMatchEngine  # noqa: E402
from sim_runner import run_cases, sim_case  # noqa: E402


def fail(msg):
    raise AssertionError(msg)


def as_set(maps):
    return {frozenset(m.items()) for m in maps}


@sim_case
def configs_through_the_api():
    G = nx.gnp_random_graph(11, 0.45, seed=3)
    H = nx.cycle_graph(4)
    cpu = CpuEngine()
    want = nx_gsm.count_subgraph_monomorphisms(G, H, engine=cpu)
    want_maps = as_set(nx_gsm.subgraph_monomorphisms(G, H, engine=cpu))
    want_iso = nx_gsm.count_subgraph_isomorphisms(G, H, engine=cpu)
    if want == 0 or want_iso == 0:
        fail("the case has no matches: it checks nothing")
    base = GMatchConfig(blocks=1, steal=False)
    variants = {
        "default": base,
        "gpu-bfs": GMatchConfig(blocks=1, steal=False, host_rows=0),
        "dfs": GMatchConfig(blocks=1, steal=False, pool_target=1),
        "chained": GMatchConfig(blocks=1, steal=False, fused=False, host_rows=0),
    }
    for name, cfg in variants.items():
        eng = GMatchEngine(config=cfg)
        if eng.config is not cfg:
            fail(f"{name}: the engine does not hold the config it was given")
        got = nx_gsm.count_subgraph_monomorphisms(G, H, engine=eng)
        maps = as_set(nx_gsm.subgraph_monomorphisms(G, H, engine=eng))
        iso = nx_gsm.count_subgraph_isomorphisms(G, H, engine=eng)
        print(f"{name}: count {got} / {want}, maps {len(maps)}, induced {iso} / {want_iso}",
              flush=True)
        if got != want or maps != want_maps or iso != want_iso:
            fail(f"{name}: differs from the CPU engine")
    # the class get_engine("gmatch", config=...) makes where a device is usable (it refuses
    # the simulator)
    eng = engine_class("gmatch")(config=variants["gpu-bfs"])
    if eng.config != variants["gpu-bfs"] or \
            nx_gsm.count_subgraph_monomorphisms(G, H, engine=eng) != want:
        fail("the registry's gmatch class lost its config")
    # keyword shortcuts are the config's fields
    if GMatchEngine(blocks=1, host_rows=0, steal=False).config != variants["gpu-bfs"]:
        fail("keyword shortcuts differ from the config")


@sim_case
def no_environment():
    os.environ["NX_GSM_GMATCH_HOST_ROWS"] = "0"
    os.environ["NX_GSM_GMATCH_STEAL"] = "0"
    os.environ["NX_GSM_GMATCH_POOL_TARGET"] = "1"
    try:
        if GMatchEngine().config != GMatchConfig():
            fail("an NX_GSM_GMATCH_* environment variable changed the engine")
    finally:
        for k in ("NX_GSM_GMATCH_HOST_ROWS", "NX_GSM_GMATCH_STEAL", "NX_GSM_GMATCH_POOL_TARGET"):
            del os.environ[k]


@sim_case
def given_device_plan():
    G = nx.gnp_random_graph(12, 0.4, seed=5)
    H = nx.path_graph(4)
    plan, _, _ = prepare(G, H, "mono")
    cpu = CpuEngine()
    P = plan_arrays(plan)
    pre = expand(P, expand(P, np.zeros((1, 0), dtype=np.int32)))[::2]
    want = cpu.count_from(plan, pre)
    ref = {tuple(r) for c in cpu.iter_from(plan, pre) for r in c.tolist()}
    if want == 0:
        fail("the prefixes have no matches: the case checks nothing")
    gm = GMatchEngine(config=GMatchConfig(blocks=1, steal=False))
    dp = gm._dev_plan(plan)  # what a caller such as GSI holds: the plan on the device
    got = gm.count_from(plan, pre, device_plan=dp)
    rows = [tuple(r) for c in gm.iter_from(plan, pre, chunk=5, device_plan=dp)
            for r in c.tolist()]
    lim = max(1, want // 2)
    got_lim = gm.count_from(plan, pre, limit=lim, device_plan=dp)
    part = [tuple(r) for c in gm.iter_from(plan, pre, limit=lim, device_plan=dp)
            for r in c.tolist()]
    print(f"device plan: count {got} / {want}, rows {len(rows)}, limited {got_lim} / {lim}",
          flush=True)
    if got != want or set(rows) != ref or len(rows) != len(ref):
        fail("a given device plan searched differently from the CPU engine")
    if got_lim != lim or len(part) != lim or not set(part) <= ref:
        fail("a given device plan did not keep the limit")
    if gm.count_from(plan, pre) != want:
        fail("the uploaded plan's count differs")
    # the device plan is searched as given: one without the candidate space (as GSI's is)
    # whose candidate bits are all cleared (as GSI's signature filter clears some) extends no
    # prefix
    raw = GMatchEngine(config=GMatchConfig(blocks=1, steal=False, candidate_space=False))
    pruned = raw._dev_plan(plan)
    if gm.count_from(plan, pre, device_plan=pruned) != want:
        fail("a device plan without the candidate space searched differently")
    pruned.cand_bits = np.zeros_like(pruned.cand_bits)
    if gm.count_from(plan, pre, device_plan=pruned) != 0 or \
            list(gm.iter_from(plan, pre, device_plan=pruned)):
        fail("a given device plan was not the one searched")
    cut = np.zeros(plan.G.n, dtype=np.int32)
    for call in (lambda: gm.count_from(plan, pre, cut_part=cut, device_plan=dp),
                 lambda: list(gm.iter_from(plan, pre, cut_part=cut, device_plan=dp))):
        try:
            call()
            fail("cut_part with a device plan was not refused")
        except ValueError:
            pass
    other, _, _ = prepare(G, nx.path_graph(5), "mono")
    try:
        gm.count_from(other, expand(plan_arrays(other), np.zeros((1, 0), dtype=np.int32)),
                      device_plan=dp)
        fail("another plan's device plan was not refused")
    except ValueError:
        pass


if __name__ == "__main__":
    sys.exit(run_cases())
