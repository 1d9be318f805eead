"""The GPU check's tests phase (``gpu/check.py``), on the CPU: card test files run as parallel
pytest processes, GAMMA's random blocks dealt over several, counts read from each junit file, and
a process past the phase's time killed and reported instead of counted."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from gpu import check  # noqa: E402


def test_jobs_cover_every_card_file_and_every_gamma_block():
    jobs = check._test_jobs(gamma_cases=40, gamma_jobs=6)
    names = [n for n, _, _ in jobs]
    files = {Path(t[0]).stem for _, t, _ in jobs}
    assert {"test_gmatch", "test_gsi", "test_geneva", "test_faults", "test_partitioned",
            "test_gpu_formats", "test_gamma"} <= files
    blocks = [t for n, ts, _ in jobs if n.startswith("test_gamma_random_") for t in ts]
    assert sorted(int(b.rsplit("[", 1)[1][:-1]) for b in blocks) == list(range(20))
    assert len([n for n in names if n.startswith("test_gamma_random_")]) == 6
    assert all(env.get("GAMMA_CASES") == "40" for n, _, env in jobs if "gamma" in n)
    assert not any(n.startswith("test_gamma_random_")
                   for n, _, _ in check._test_jobs(gamma_cases=0, gamma_jobs=6))
    # more processes than 20 blocks: the cases are cut into as many blocks, which pytest collects
    many = [(ts, env) for n, ts, env in check._test_jobs(gamma_cases=40, gamma_jobs=50)
            if n.startswith("test_gamma_random_")]
    assert len(many) == 50 and all(env["GAMMA_BLOCKS"] == "50" for _, env in many)
    out = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                          "-p", "no:cacheprovider", *[t for ts, _ in many for t in ts]],
                         cwd=ROOT, capture_output=True, text=True,
                         env=dict(os.environ, GAMMA_BLOCKS="50"))
    assert "50 tests collected" in out.stdout, out.stdout[-2000:]


def test_counts_from_each_process_and_a_killed_one_not_counted(tmp_path):
    (tmp_path / "test_ok.py").write_text("def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    (tmp_path / "test_bad.py").write_text("def test_c():\n    assert 1 == 2\n")
    (tmp_path / "test_slow.py").write_text("import time\n\ndef test_d():\n    time.sleep(60)\n")
    jobs = [(n, [str(tmp_path / f"{n}.py")], {}) for n in ("test_ok", "test_bad", "test_slow")]
    rec = {}
    check.phase_tests(rec, 10.0, tmp_path, jobs=jobs)
    t = rec["tests"]
    assert (t["passed"], t["failed"]) == (2, 1) and t["timed_out"] == ["test_slow"]
    assert t["jobs"]["test_slow"]["rc"] == "timeout" and t["rc"] == 1
    # junit's class name carries the file's path from pytest's rootdir, which varies
    assert len(t["failures"]) == 1 and t["failures"][0].endswith("test_bad::test_c")
