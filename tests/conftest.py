"""Test layers, selected with ``pytest -m``:

* ``unit``: everything that carries none of the markers below (added here at collection), the
  default run's tests;
* ``sim``: GPU kernels under Numba's CUDA simulator (``tests/test_gpu_*_sim.py``, one test per
  case of a ``tests/gpu_sim_*_cases.py`` script);
* ``gpu``: the card (``tests/test_card_*.py``), skipped with the reason where no CUDA device is
  usable;
* ``slow``: long conformance and fuzz runs.

The default run (``addopts`` in pyproject.toml) deselects ``sim``, ``gpu`` and ``slow``.

Two options serve ``python -m gpu.check``, which runs ``pytest -m gpu`` as parallel processes on
the card's host: ``--shard I/N`` keeps the I-th of N shares of the selected tests (a test file
stays whole, so each process compiles only its engines' kernels, except the tests marked
``gpu(spread=True)``, dealt one by one), and ``--outcomes FILE`` appends a JSON line per test
as it starts and ends (a process killed at its time limit still reports what it finished, and
which test it was in).
"""

import json
import random

import pytest

from gpu.card_tests import parse_part

LAYERS = ("sim", "gpu", "slow")


def pytest_addoption(parser):
    parser.addoption("--shard", default=None, metavar="I/N", type=parse_part,
                     help="run the I-th (from 0) of N shares of the selected tests")
    parser.addoption("--outcomes", default=None, metavar="FILE",
                     help="append one JSON line per test start and outcome to FILE")


@pytest.hookimpl(wrapper=True)
def pytest_collection_modifyitems(config, items):
    # before ``-m`` deselects: so that ``-m unit`` sees the marker
    for item in items:
        if not any(item.get_closest_marker(m) for m in LAYERS):
            item.add_marker(pytest.mark.unit)
    result = yield
    # after it: shares of what is selected, and the device probed only for card tests
    if config.getoption("shard"):
        i, n = config.getoption("shard")
        mine = share(items, i, n)
        keep = set(map(id, mine))
        config.hook.pytest_deselected(items=[it for it in items if id(it) not in keep])
        items[:] = mine
    card = [item for item in items if item.get_closest_marker("gpu")]
    if card:
        from nx_gsm.engines.gpu import device_reason

        reason = device_reason()
        if reason is not None:
            skip = pytest.mark.skip(reason=f"no usable CUDA device: {reason}")
            for item in card:
                item.add_marker(skip)
    return result


def shard(items, n):
    """``n`` lists of item ids: each file's tests together (files dealt in turn), then the
    tests marked ``gpu(spread=True)`` one by one, continuing the turn."""
    files, spread = {}, []
    for item in items:
        mark = item.get_closest_marker("gpu")
        if mark is not None and mark.kwargs.get("spread"):
            spread.append(id(item))
        else:
            files.setdefault(item.nodeid.split("::")[0], []).append(id(item))
    out = [[] for _ in range(n)]
    units = [files[f] for f in sorted(files)] + [[x] for x in spread]
    for k, unit in enumerate(units):
        out[k % n].extend(unit)
    return out


def share(items, i, n):
    """The ``i``-th of ``n`` shares of ``items`` in the order :func:`shard` gives: whole files
    first, the spread tests last (the card's fault runs take seconds each, and a share killed
    at the phase's time has then finished its files' tests)."""
    by_id = {id(item): item for item in items}
    return [by_id[x] for x in shard(items, n)[i]]


class OutcomeLog:
    """``--outcomes FILE``: a JSON line per test start, and one per phase that decides its
    outcome (a setup that failed or skipped, the call, a teardown that failed)."""

    def __init__(self, path):
        self.path = path

    def write(self, **rec):
        with open(self.path, "a", encoding="utf-8") as fh:
            fh.write(json.dumps(rec, default=str) + "\n")

    def pytest_runtest_logstart(self, nodeid, location):
        self.write(start=nodeid)

    def pytest_runtest_logreport(self, report):
        if not (report.when == "call" or report.failed
                or (report.when == "setup" and report.skipped)):
            return
        outcome = "error" if report.failed and report.when != "call" else report.outcome
        msg = None
        if report.failed:
            msg = str(report.longrepr)[-3000:]
        elif report.skipped and isinstance(report.longrepr, tuple):
            msg = report.longrepr[2]
        self.write(nodeid=report.nodeid, when=report.when, outcome=outcome,
                   seconds=round(report.duration, 3), message=msg,
                   properties=dict(report.user_properties))

    def pytest_collectreport(self, report):
        if report.failed:
            self.write(nodeid=report.nodeid, when="collect", outcome="error",
                       message=str(report.longrepr)[-3000:], properties={})


def pytest_configure(config):
    if config.getoption("outcomes"):
        config.pluginmanager.register(OutcomeLog(config.getoption("outcomes")), "outcome-log")


@pytest.fixture
def rng():
    return random.Random(12345)
