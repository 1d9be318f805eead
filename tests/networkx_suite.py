"""Run NetworkX's own isomorphism tests against the gsm backend and report what gsm served.

    python tests/networkx_suite.py [extra pytest args]

Equivalent to ``NETWORKX_TEST_BACKEND=gsm NETWORKX_FALLBACK_TO_NX=True pytest --pyargs
networkx.algorithms.isomorphism``, plus a count of the tests in which at least one call was served
by gsm itself (not by the fallback to NetworkX). Exits with pytest's status.
"""

import os
import sys

os.environ["NETWORKX_TEST_BACKEND"] = "gsm"
os.environ["NETWORKX_FALLBACK_TO_NX"] = "True"

import pytest  # noqa: E402


class _CountGsm:
    def __init__(self):
        self.tests_on_gsm = 0
        self.calls = 0

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item):
        from nx_gsm.interface import CALLS

        before = sum(CALLS.values())
        try:
            return (yield)
        finally:
            served = sum(CALLS.values()) - before
            if served:
                self.tests_on_gsm += 1
                self.calls += served


def main(argv):
    plugin = _CountGsm()
    rc = pytest.main(["--pyargs", "networkx.algorithms.isomorphism", "-q", "-p",
                      "no:cacheprovider", *argv], plugins=[plugin])
    import networkx as nx

    print(f"networkx {nx.__version__}: {plugin.tests_on_gsm} tests ran gsm code "
          f"({plugin.calls} dispatched calls served by gsm); exit status {int(rc)}")
    return int(rc)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
