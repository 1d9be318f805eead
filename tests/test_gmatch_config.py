"""gmatch's configuration: one frozen GMatchConfig, checked field by field, and the engine
built from it (keyword shortcuts included) with no environment variables read. Engines with a
config through the matching functions, under the CUDA simulator: test_gpu_config_sim.py."""

from __future__ import annotations

import dataclasses
import doctest
import re
from pathlib import Path

import numpy as np
import pytest

import nx_gsm
from nx_gsm.engines.base import Engine, PrefixEngine
from nx_gsm.engines.gpu.gmatch import GMatchConfig, GMatchEngine, config
from nx_gsm.engines.registry import resolve_engine

REPO = Path(__file__).resolve().parent.parent
OLD_PREFIX = "NX_GSM_" + "GMATCH_"  # (split, so this file does not match its own scan)


def test_defaults_are_the_tuned_constants():
    cfg = GMatchConfig()
    assert cfg.host_rows == config.HOST_BFS_ROWS
    assert cfg.host_count_rows == config.HOST_COUNT_ROWS
    assert cfg.bfs_chain == config.BFS_CHAIN
    assert cfg.host_work == config.HOST_WORK
    assert cfg.small_space == config.SMALL_SPACE
    assert cfg.queue_capacity == config.QUEUE_CAPACITY
    assert cfg.steal and cfg.fused and cfg.candidate_space and cfg.adjacency_bits
    per_search = ("memory_budget", "time_limit", "pool_target", "bfs_levels",
                  "fused_host_rows", "fused_regs", "fused_narrow", "out_capacity", "blocks")
    assert all(getattr(cfg, f) is None for f in per_search)
    assert GMatchConfig.field_names() == tuple(f.name for f in dataclasses.fields(GMatchConfig))
    assert len(GMatchConfig.field_names()) == 19


def test_every_field_is_documented():
    doc = GMatchConfig.__doc__
    for name in GMatchConfig.field_names():
        assert re.search(rf"^    {name} : ", doc, flags=re.MULTILINE), f"{name} is not documented"
    assert doctest.testmod(config).failed == 0


def test_frozen_hashable_and_replace_checks_again():
    cfg = GMatchConfig(steal=False)
    with pytest.raises(dataclasses.FrozenInstanceError):
        cfg.steal = True
    assert cfg == GMatchConfig(steal=False) and hash(cfg) == hash(GMatchConfig(steal=False))
    assert dataclasses.replace(cfg, host_rows=0).host_rows == 0
    with pytest.raises(ValueError, match="host_rows"):
        dataclasses.replace(cfg, host_rows=-1)


def test_numpy_numbers_become_python_numbers():
    cfg = GMatchConfig(pool_target=np.int64(7), host_rows=np.int32(0), steal=np.bool_(False),
                       time_limit=np.float32(1.5), memory_budget=np.uint64(1 << 30))
    assert type(cfg.pool_target) is int and cfg.pool_target == 7
    assert type(cfg.host_rows) is int and type(cfg.steal) is bool and cfg.steal is False
    assert type(cfg.time_limit) is float and cfg.time_limit == 1.5
    assert type(cfg.memory_budget) is int
    assert GMatchConfig(time_limit=2).time_limit == 2.0


@pytest.mark.parametrize("field, value", [
    ("steal", 1), ("steal", "yes"), ("fused", None), ("candidate_space", 0),
    ("adjacency_bits", "0"),
    ("host_rows", 1.0), ("host_rows", None), ("host_rows", True), ("bfs_chain", "4"),
    ("pool_target", 2.5), ("blocks", "8"), ("memory_budget", 1e9), ("queue_capacity", None),
    ("fused_regs", False), ("time_limit", "10"), ("time_limit", True),
])
def test_wrong_types_raise_type_error_naming_the_field(field, value):
    with pytest.raises(TypeError, match=rf"GMatchConfig\.{field} "):
        GMatchConfig(**{field: value})


@pytest.mark.parametrize("field, value", [
    ("host_rows", -1), ("host_count_rows", -1), ("bfs_chain", 0), ("queue_capacity", 0),
    ("pool_target", 0), ("bfs_levels", -1), ("out_capacity", 0), ("blocks", 0),
    ("memory_budget", 0), ("fused_host_rows", -1), ("fused_regs", 256), ("fused_regs", -1),
    ("fused_narrow", -1), ("host_work", -1), ("small_space", -1),
    ("time_limit", 0), ("time_limit", -1.0), ("time_limit", float("inf")),
    ("time_limit", float("nan")),
])
def test_values_out_of_range_raise_value_error_naming_the_field(field, value):
    with pytest.raises(ValueError, match=rf"GMatchConfig\.{field} "):
        GMatchConfig(**{field: value})


def test_edge_values_that_mean_something_are_taken():
    cfg = GMatchConfig(host_rows=0, bfs_levels=0, fused_host_rows=0, fused_regs=0,
                       fused_narrow=0, small_space=0, pool_target=1, bfs_chain=1,
                       queue_capacity=1)
    assert (cfg.host_rows, cfg.bfs_levels, cfg.fused_regs, cfg.pool_target) == (0, 0, 0, 1)
    assert GMatchConfig(fused_regs=255).fused_regs == 255


@pytest.fixture
def host_engine(monkeypatch):
    """GMatchEngine without a device: its array module is NumPy (construction touches nothing
    else of the device), so the options logic runs in the default suite."""
    from nx_gsm.engines.gpu.gmatch import engine as engine_module

    monkeypatch.setattr(engine_module, "array_module", lambda: np)
    return GMatchEngine


def test_engine_holds_its_config_and_forwards_shortcuts(host_engine):
    cfg = GMatchConfig(steal=False, memory_budget=1 << 30)
    eng = host_engine(config=cfg)
    assert eng.config is cfg and eng.memory_budget == 1 << 30
    assert host_engine().config == GMatchConfig()
    assert host_engine(steal=False, host_rows=0).config == GMatchConfig(steal=False, host_rows=0)
    # shortcuts replace the given config's fields; None leaves a field as it is
    eng = host_engine(config=cfg, host_rows=0, pool_target=None, steal=None)
    assert eng.config == GMatchConfig(steal=False, memory_budget=1 << 30, host_rows=0)
    assert cfg.host_rows == config.HOST_BFS_ROWS  # the given config is not changed


def test_engine_refuses_unknown_options_and_non_configs(host_engine):
    with pytest.raises(TypeError, match="unknown options hostrows"):
        host_engine(hostrows=0)
    with pytest.raises(TypeError, match="config must be a GMatchConfig"):
        host_engine(config={"steal": False})
    with pytest.raises(ValueError, match=r"GMatchConfig\.bfs_chain"):
        host_engine(bfs_chain=0)


def test_engine_reads_no_environment(host_engine, monkeypatch):
    for name, value in (("HOST_ROWS", "0"), ("STEAL", "0"), ("POOL_TARGET", "1"),
                        ("FUSED", "0"), ("TIME_LIMIT", "1"), ("ADJ_BITS", "0")):
        monkeypatch.setenv(OLD_PREFIX + name, value)
    assert host_engine().config == GMatchConfig()


def test_no_environment_knob_is_left_in_the_product_or_its_docs():
    roots = [REPO / "nx_gsm", REPO / "docs", REPO / "benchmarks", REPO / "conformance",
             REPO / "README.md", REPO / "gpu" / "variants.py"]
    found = []
    for root in roots:
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*")
                                                     if p.suffix in (".py", ".md"))
        found += [str(p.relative_to(REPO)) for p in files
                  if OLD_PREFIX in p.read_text(encoding="utf-8", errors="replace")]
    assert not found, f"{OLD_PREFIX}* still in {found}"


def test_engine_object_with_a_config_is_accepted_by_the_registry(host_engine):
    eng = host_engine(config=GMatchConfig(blocks=1))
    assert isinstance(eng, Engine) and isinstance(eng, PrefixEngine)
    assert resolve_engine(eng) is eng
    assert nx_gsm.GMatchConfig is GMatchConfig and "GMatchConfig" in nx_gsm.__all__

