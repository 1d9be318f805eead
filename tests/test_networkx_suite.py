"""NetworkX's own isomorphism test-suite, run against the gsm backend (0 failures required)."""

import re
import subprocess
import sys
from pathlib import Path

import networkx as nx


def test_networkx_isomorphism_suite_on_gsm():
    script = Path(__file__).with_name("networkx_suite.py")
    proc = subprocess.run([sys.executable, str(script), "-x"], capture_output=True, text=True,
                          timeout=1800)
    tail = proc.stdout[-3000:] + proc.stderr[-2000:]
    assert proc.returncode == 0, tail
    m = re.search(r"(\d+) tests ran gsm code", proc.stdout)
    assert m, tail
    # every vf2pp/is_isomorphic test should reach gsm; a drop means dispatch silently broke
    minimum = 400 if tuple(map(int, nx.__version__.split(".")[:2])) >= (3, 7) else 70
    assert int(m.group(1)) >= minimum, tail
    print(proc.stdout.splitlines()[-1])
