"""`searchgrade app`: refuses to expose the app without a login, and is the Streamlit server itself."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SEARCHGRADE = [sys.executable, "-m", "searchgrade.cli"]


def _env(tmp_path, **extra) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("SEARCHGRADE_APP_PASSWORD", "SEARCHGRADE_APP_NO_AUTH")}
    # HOME elsewhere: no secrets.toml of the machine's user is read.
    return dict(env, PYTHONPATH=str(ROOT), HOME=str(tmp_path), SEARCHGRADE_HOME=str(tmp_path / "home"),
                **extra)


def _refused(tmp_path, *args, **env) -> str:
    proc = subprocess.run([*SEARCHGRADE, "app", *args], capture_output=True, text=True, timeout=120,
                          env=_env(tmp_path, **env), cwd=tmp_path)
    assert proc.returncode != 0
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    return lines[0]


def test_binding_every_interface_without_a_login_exits_with_one_line(tmp_path):
    line = _refused(tmp_path, "--host", "0.0.0.0")
    assert "reachable from other machines (0.0.0.0)" in line
    assert "SEARCHGRADE_APP_PASSWORD" in line and "--no-auth" in line and "[auth]" in line


def test_a_short_password_is_refused_before_anything_starts(tmp_path):
    line = _refused(tmp_path, "--host", "0.0.0.0", SEARCHGRADE_APP_PASSWORD="hunter2")
    assert "has 7 characters; use at least 12" in line and "hunter2" not in line


def test_half_configured_oidc_is_refused_with_what_is_missing(tmp_path):
    (tmp_path / ".streamlit").mkdir()
    (tmp_path / ".streamlit" / "secrets.toml").write_text(
        '[auth]\nredirect_uri = "http://localhost:8501/oauth2callback"\ncookie_secret = "xyz"\n')
    line = _refused(tmp_path, "--host", "0.0.0.0")
    assert "st.login is configured but cannot work" in line and "client_id" in line and "xyz" not in line


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"searchgrade app exited: {proc.stderr.read()}")
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise AssertionError("the app did not answer")


@pytest.mark.slow
def test_the_app_command_is_the_server_so_kill_stops_it(tmp_path):
    port = _free_port()
    proc = subprocess.Popen([*SEARCHGRADE, "app", "--port", str(port), "--host", "0.0.0.0", "--no-auth"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                            env=_env(tmp_path), cwd=tmp_path)
    try:
        _wait_healthy(f"http://127.0.0.1:{port}", proc)
        # The process started is the Streamlit server itself (exec), not a parent of it.
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes().split(b"\0")
        assert b"streamlit" in cmdline and b"run" in cmdline
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    with socket.socket() as s:
        assert s.connect_ex(("127.0.0.1", port)) != 0, "something still serves the port"
    assert "no login, as asked with --no-auth" in proc.stderr.read()


def test_the_server_runs_no_full_garbage_collection_after_each_script_run():
    """Streamlit's default gc.collect(2) after every script run holds the GIL for long once torch is
    loaded; the Evaluate and Results pages rerun every second or two while a run is shown, and the run
    in the background crawled (a tiny collection's index stage past 190 s with the page open, 33 s
    without). Both ways of starting the app turn it off."""
    import tomllib

    from searchgrade.cli import build_parser
    from searchgrade.cli.app import streamlit_command

    command = streamlit_command(build_parser().parse_args(["app"]))
    assert command[command.index("--runner.postScriptGC") + 1] == "false"
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["postScriptGC"] is False


def test_the_deploy_button_is_hidden_both_ways_of_starting_the_app():
    """Issue 22: no Deploy button. A checkout's .streamlit/config.toml says so; an installed wheel
    has no config beside its app.py, so `searchgrade app` says it on the command line too."""
    import tomllib

    from searchgrade.cli import build_parser
    from searchgrade.cli.app import streamlit_command

    command = streamlit_command(build_parser().parse_args(["app"]))
    assert command[command.index("--client.toolbarMode") + 1] == "minimal"
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["client"]["toolbarMode"] == "minimal"


def test_the_server_is_the_app_behind_the_access_gate_with_no_agent_api_and_no_tracebacks_when_exposed():
    from searchgrade.cli import build_parser
    from searchgrade.cli.app import APP, SERVE, streamlit_command

    loopback = streamlit_command(build_parser().parse_args(["app"]))
    exposed = streamlit_command(build_parser().parse_args(["app", "--host", "0.0.0.0"]))
    assert loopback[4] == str(SERVE) and SERVE.name == "_serve.py" and "st.App" in SERVE.read_text()
    # st.login's secrets are read where they are for app.py (the entry's own folder is views/).
    assert loopback[loopback.index(str(APP.parent / ".streamlit" / "secrets.toml")) - 1] == "--secrets.files"
    for command in (loopback, exposed):
        assert command[command.index("--server.enableAgentApi") + 1] == "false"
    assert loopback[loopback.index("--client.showErrorDetails") + 1] == "full"
    assert exposed[exposed.index("--client.showErrorDetails") + 1] == "type"
