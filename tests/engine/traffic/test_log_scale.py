"""The bench's 10-million-row check, small: a Zipf log imported in a fresh process with bounded
memory, its counts equal to the file's (bench/bench_querylog.py; the full figure in bench/RESULTS.md)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.conftest import REPO

pytestmark = pytest.mark.slow


def test_a_zipf_log_imports_in_bounded_memory_with_exact_counts(tmp_path):
    out = subprocess.run([sys.executable, str(REPO / "bench" / "bench_querylog.py"), "--rows", "300000",
                          "--keep", str(tmp_path)], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    peak = float(re.search(r"peak RSS ([\d,]+) MB", out.stdout).group(1).replace(",", ""))
    assert peak < 1024
    assert "check: stored searches 300,000 (rows 300,000)" in out.stdout and ": OK" in out.stdout
