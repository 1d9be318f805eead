"""Benchmark harness for nx-gsm: our engines and peer libraries side by side on the same inputs.

Run ``python -m benchmarks --help`` (from the repository root) or read ``benchmarks/README.md``.

Layout:

- :mod:`benchmarks.datasets` -- where the shared datasets live and how to read them;
- :mod:`benchmarks.suites` -- named query suites (Sun & Luo sets, SNAP pattern sets, ``tiny``,
  ``demo``);
- :mod:`benchmarks.tools` -- one adapter per tool (our engines by name, NetworkX VF2, rustworkx,
  igraph LAD / VF2, or ``module:Class`` plug-ins);
- :mod:`benchmarks.worker` -- the worker subprocess each tool runs in (hard per-query timeouts);
- :mod:`benchmarks.runner` -- the run loop, the count cross-check and the JSON record;
- :mod:`benchmarks.report` -- ratio statistics and the Markdown report;
- :mod:`benchmarks.machine` -- machine / version / git information for the record.
"""

SCHEMA = "nx-gsm-bench/1"
