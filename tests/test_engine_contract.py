"""The engine contract: one registry, capabilities instead of names, engine objects everywhere."""

from __future__ import annotations

import sys

import networkx as nx
import pytest
from networkx.algorithms.isomorphism import GraphMatcher

import nx_gsm
from nx_gsm.engines.base import Capabilities, DeltaEngine, Engine, PrefixEngine
from nx_gsm.engines.registry import NAMES, SPECS, engines_with, get_engine, resolve_engine


def _vf2(G, H):
    return {frozenset(m.items()) for m in GraphMatcher(G, H).subgraph_monomorphisms_iter()}


def test_every_engine_is_in_the_one_table_with_its_capabilities():
    assert set(SPECS) == {"cpu", "gmatch", "gsi", "geneva", "partitioned", "gamma"}
    assert NAMES == ("auto", "cpu", "gmatch", "gsi", "geneva", "partitioned")
    assert engines_with(delta=True) == ["gamma"]
    assert engines_with(cut_part=True) == ["gmatch"]
    assert all(isinstance(s.capabilities, Capabilities) for s in SPECS.values())
    assert all("cuda" in s.capabilities.needs for s in SPECS.values() if s.capabilities.device)


def test_host_engines_implement_the_protocols():
    cpu = get_engine("cpu")
    assert isinstance(cpu, Engine) and isinstance(cpu, PrefixEngine)
    assert cpu.capabilities == SPECS["cpu"].capabilities
    part = get_engine("partitioned", inner="cpu", parts=2)
    assert isinstance(part, Engine) and not isinstance(part, PrefixEngine)
    assert part.capabilities.device is False and part.parts == 2
    assert not isinstance(cpu, DeltaEngine)


def test_resolve_engine_takes_names_and_objects_and_names_bad_ones():
    eng = nx_gsm.PartitionedEngine(inner="cpu", parts=3)
    assert resolve_engine(eng) is eng
    assert resolve_engine("cpu").name == "cpu"
    with pytest.raises(ValueError, match="IncrementalMatcher"):
        resolve_engine("gamma")
    with pytest.raises(ValueError, match="unknown engine 'vf3'"):
        resolve_engine("vf3")
    with pytest.raises(TypeError, match="engine must be"):
        resolve_engine(object())
    with pytest.raises(TypeError, match="takes no options"):
        get_engine("auto", parts=2)
    with pytest.raises(ValueError, match="cannot be partitioned"):
        nx_gsm.PartitionedEngine(inner=eng)


def test_engine_objects_carry_their_options_through_the_api():
    G, H = nx.grid_2d_graph(6, 6), nx.cycle_graph(4)
    eng = nx_gsm.PartitionedEngine(inner="cpu", parts=3)
    assert nx_gsm.count_subgraph_monomorphisms(G, H, engine=eng) == len(_vf2(G, H))
    assert eng.last_stats["parts"] == 3
    found = nx_gsm.find_subgraph_monomorphisms(G, H, engine=eng)
    assert {frozenset(m.items()) for m in found} == _vf2(G, H)
    got = {frozenset(m.items()) for m in nx_gsm.subgraph_monomorphisms(G, H, engine=eng)}
    assert got == _vf2(G, H)
    assert nx_gsm.explain(G, H, engine=eng)["engine"] == "partitioned"


class _CountingEngine:
    """A user's own engine: anything with the contract's members runs through the API."""

    name = "counting"
    capabilities = Capabilities()

    def __init__(self):
        self.inner = get_engine("cpu")
        self.calls = 0

    def count(self, plan, limit=None, budget=None):
        self.calls += 1
        return self.inner.count(plan, limit)

    def iter_chunks(self, plan, chunk=4096, limit=None, budget=None):
        self.calls += 1
        return self.inner.iter_chunks(plan, chunk=chunk, limit=limit)


def test_a_user_engine_object_runs_through_the_api_and_the_matcher():
    G, H = nx.petersen_graph(), nx.path_graph(4)
    eng = _CountingEngine()
    assert nx_gsm.count_subgraph_monomorphisms(G, H, engine=eng) == len(_vf2(G, H))
    got = nx_gsm.GraphMatcher(G, H, engine=eng)
    assert {frozenset(m.items()) for m in got.subgraph_monomorphisms_iter()} == _vf2(G, H)
    assert eng.calls == 2


def test_an_engine_whose_package_is_missing_says_which(monkeypatch):
    from nx_gsm.engines.registry import available_engines

    monkeypatch.setitem(sys.modules, "pymetis", None)  # Python's way to make it unimportable
    assert "pymetis is not installed" in available_engines()["partitioned"]
    with pytest.raises(RuntimeError, match="pymetis is not installed"):
        get_engine("partitioned")
