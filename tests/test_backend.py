"""NetworkX dispatch: registration, signatures, backend=, backend_priority, config, can/should_run."""

import inspect
import subprocess
import sys

import networkx as nx
import pytest

import nx_gsm
from nx_gsm.backend_info import EXTRA_PARAMETERS, FUNCTIONS, get_info
from nx_gsm.interface import BackendInterface

REGISTERED = [n for n in FUNCTIONS if n in nx.utils.backends._registered_algorithms]
NX37 = tuple(int(x) for x in nx.__version__.split(".")[:2]) >= (3, 7)


def test_entry_points_registered():
    assert "gsm" in nx.utils.backends.backends
    assert nx.config.backends.gsm.engine == "auto"


def test_backend_info_is_cheap():
    code = ("import sys, networkx; "
            "heavy = [m for m in ('numba', 'nx_gsm.api', 'nx_gsm.engines.cpu') if m in sys.modules]; "
            "print(heavy)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr
    info = get_info()
    assert info["backend_name"] == "gsm" and set(info["functions"]) == set(FUNCTIONS)


@pytest.mark.parametrize("name", REGISTERED)
def test_signature_matches_networkx(name):
    ours = inspect.signature(getattr(BackendInterface, name))
    extras = [p for p in ours.parameters.values() if p.name in EXTRA_PARAMETERS]
    assert [p.name for p in extras] == list(EXTRA_PARAMETERS)
    assert all(p.kind == p.KEYWORD_ONLY for p in extras)
    ours = ours.replace(parameters=[p for p in ours.parameters.values() if p not in extras])
    theirs = inspect.signature(nx.utils.backends._registered_algorithms[name].orig_func)
    assert ours == theirs


@pytest.mark.skipif(not NX37, reason="vf2pp monomorphism functions arrived in NetworkX 3.7")
def test_dispatched_engine_parameter_reaches_the_engine():
    G, H = nx.complete_graph(5), nx.path_graph(3)
    ref = {frozenset(m.items()) for m in nx.vf2pp_all_monomorphisms(G, H)}
    for engine in ("cpu", nx_gsm.PartitionedEngine(inner="cpu", parts=2)):
        got = list(nx.vf2pp_all_monomorphisms(G, H, backend="gsm", engine=engine))
        assert {frozenset(m.items()) for m in got} == ref and len(got) == len(ref)
    assert nx.vf2pp_is_isomorphic(G, G, backend="gsm", engine="cpu") is True
    assert nx.is_isomorphic(G, G, backend="gsm", engine="cpu") is True
    with pytest.raises(ValueError, match="unknown engine"):
        nx.vf2pp_is_monomorphic(G, H, backend="gsm", engine="nope")
    with pytest.raises(TypeError, match="engine must be"):
        nx.vf2pp_is_monomorphic(G, H, backend="gsm", engine=3)


def test_vf2pp_37_names_present_when_networkx_has_them():
    expected = {"vf2pp_all_monomorphisms", "vf2pp_monomorphism", "vf2pp_is_monomorphic",
                "vf2pp_all_subgraph_isomorphisms", "vf2pp_subgraph_isomorphism",
                "vf2pp_subgraph_is_isomorphic"}
    if NX37:
        assert expected <= set(REGISTERED)
        assert all(hasattr(BackendInterface, n) for n in expected)
    else:
        assert not expected & set(REGISTERED)


@pytest.mark.skipif(not NX37, reason="vf2pp monomorphism functions arrived in NetworkX 3.7")
def test_vf2pp_mono_dispatch_backend_keyword():
    G, H = nx.complete_graph(5), nx.path_graph(3)
    ours = list(nx.vf2pp_all_monomorphisms(G, H, backend="gsm"))
    ref = list(nx.vf2pp_all_monomorphisms(G, H))
    assert {frozenset(m.items()) for m in ours} == {frozenset(m.items()) for m in ref}
    assert len(ours) == 60
    assert nx.vf2pp_is_monomorphic(G, H, backend="gsm") is True
    assert nx.vf2pp_subgraph_isomorphism(G, H, backend="gsm") is None


def test_backend_priority_dispatches_to_gsm():
    from nx_gsm.interface import CALLS

    G = nx.cycle_graph(80)  # 80 edges: above the default min_edges threshold
    before = CALLS["vf2pp_is_isomorphic"]
    with nx.config(backend_priority=["gsm"]):
        assert nx.vf2pp_is_isomorphic(G, nx.cycle_graph(80)) is True
    assert CALLS["vf2pp_is_isomorphic"] == before + 1


def test_should_run_declines_small_graphs_with_reason():
    small = nx.path_graph(3)
    reason = BackendInterface.should_run("vf2pp_is_isomorphic", (small, small), {})
    assert isinstance(reason, str) and "min_edges" in reason
    with nx.config.backends.gsm(min_edges=0):
        assert BackendInterface.should_run("vf2pp_is_isomorphic", (small, small), {}) is True


def test_can_run_reason_for_unknown_function():
    assert "does not implement" in BackendInterface.can_run("pagerank", (), {})


def test_labels_through_dispatch():
    G = nx.cycle_graph(6)
    H = nx.path_graph(3)
    nx.set_node_attributes(G, {v: v % 2 for v in G}, "c")
    nx.set_node_attributes(H, {0: 0, 1: 1, 2: 0}, "c")
    ours = list(nx.vf2pp_all_isomorphisms(G, G, node_label="c", backend="gsm"))
    ref = list(nx.vf2pp_all_isomorphisms(G, G, node_label="c"))
    assert {frozenset(m.items()) for m in ours} == {frozenset(m.items()) for m in ref}
    nm = nx.algorithms.isomorphism.categorical_node_match("c", None)
    assert nx.is_isomorphic(G, G, node_match=nm, backend="gsm") is True
    assert nx.is_isomorphic(G, nx.path_graph(6), backend="gsm") is False


def test_vf2pp_empty_graph_semantics():
    assert list(nx.vf2pp_all_isomorphisms(nx.Graph(), nx.Graph(), backend="gsm")) == []
    assert nx.vf2pp_isomorphism(nx.path_graph(2), nx.Graph(), backend="gsm") is None
    with pytest.raises(nx.NetworkXError, match="directedness"):
        nx.vf2pp_is_isomorphic(nx.path_graph(2), nx.DiGraph([(0, 1)]), backend="gsm")


def test_backend_graph_inputs_dispatch_by_type():
    g = nx_gsm.from_networkx(nx.cycle_graph(5))
    assert nx.vf2pp_is_isomorphic(g, nx_gsm.from_networkx(nx.cycle_graph(5))) is True


def test_results_are_plain_python():
    res = nx.vf2pp_isomorphism(nx.cycle_graph(4), nx.cycle_graph(4), backend="gsm")
    assert all(type(k) is int and type(v) is int for k, v in res.items())
