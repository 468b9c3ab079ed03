"""A command whose reader closes the pipe (`searchgrade queries show LOG | head`) stops quietly: no
BrokenPipeError traceback, the exit code a shell gives a command stopped by a closed pipe. The
handling is in the command line's one entry point, so it holds for every command that prints."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from searchgrade.cli import CLOSED_PIPE, main


@pytest.fixture(scope="module")
def home(tmp_path_factory):
    folder = tmp_path_factory.mktemp("pipe")
    log = folder / "searches.csv"
    log.write_text("query,count\n" + "".join(f"query number {i},{10_000 - i}\n" for i in range(5_000)),
                   encoding="utf-8")
    assert main(["queries", "import", str(log), "--data-dir", str(folder / "home")]) == 0
    return folder / "home"


@pytest.mark.parametrize("argv", [["queries", "show", "searches", "-n", "5000"], ["queries", "list"]])
def test_a_closed_pipe_ends_the_command_without_a_traceback(home, argv):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    process = subprocess.Popen([sys.executable, "-m", "searchgrade.cli", *argv, "--data-dir", str(home)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    assert process.stdout is not None and process.stderr is not None
    process.stdout.readline()  # what `head -1` reads, then it goes away
    process.stdout.close()
    stderr = process.stderr.read().decode()
    code = process.wait(timeout=120)
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr and "Exception ignored" not in stderr
    # `queries list` prints a few lines, all buffered before the reader left: it ends normally.
    assert code in (0, CLOSED_PIPE)
    if argv[1] == "show":
        assert code == CLOSED_PIPE
