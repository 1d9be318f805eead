"""Every docstring example in the public modules runs and is right."""

import doctest
import importlib

import pytest

MODULES = ["nx_gsm.api", "nx_gsm.results", "nx_gsm.graph", "nx_gsm.matcher",
           "nx_gsm.interop.networkx", "nx_gsm.interop.frames", "nx_gsm.interop.files",
           "nx_gsm.incremental.matcher", "nx_gsm.plan.cost"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
    assert result.attempted > 0, f"{name} has no examples"
