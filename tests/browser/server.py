"""What every browser test shares: the real app started as users start it, and Debian's Chromium.

`serve_app` runs `searchgrade app` (which execs the Streamlit server) on a free loopback port in
its own process group, waits until it answers, and stops the whole group afterwards; the
`browser` fixture (tests/browser/conftest.py) launches Chromium through Playwright with
`chromium()`.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
#: The `searchgrade` command the tests run: this interpreter's.
SEARCHGRADE = (sys.executable, "-m", "searchgrade.cli")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
#: What the app reads to decide where the LLM key goes and whether a login is needed: tests start
#: from none of it, whatever the machine's environment holds.
DEPLOYMENT_ENVIRONMENT = ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SEARCHGRADE_LLM_MODEL",
                          "SEARCHGRADE_LLM_ALLOWED_URLS", "SEARCHGRADE_APP_PASSWORD",
                          "SEARCHGRADE_APP_NO_AUTH", "SEARCHGRADE_COLLECTIONS_ROOT", "SEARCHGRADE_STRATEGIES_FILE")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(url: str, server: subprocess.Popen, log: Path, timeout_s: float = 90) -> None:
    """Block until the app's health check answers; raise with the end of its log if it died or hung."""
    deadline = time.time() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if server.poll() is not None or time.time() > deadline:
            raise RuntimeError(f"the app did not start: {log.read_text()[-2000:]}")
        time.sleep(0.5)


def environment(home: Path, **extra: str) -> dict[str, str]:
    """The process environment for the app or the CLI under test: this tree first on the path (then
    the test process's own PYTHONPATH), the data directory ``home``, none of the machine's
    deployment settings, then ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in DEPLOYMENT_ENVIRONMENT}
    # The tree under test first, then what the test process itself imports from (a worktree's
    # package folder), so the app runs the code the tests import, not another checkout's.
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)
    return dict(env, PYTHONPATH=path, SEARCHGRADE_HOME=str(home), **extra)


@contextmanager
def serve_app(workdir: Path, *args: str, env: dict[str, str],
              program: Sequence[str] = SEARCHGRADE, host: str = "127.0.0.1") -> Iterator[str]:
    """`searchgrade app --port P ARGS` bound to ``host`` (loopback unless a test exposes it: 0.0.0.0),
    run from ``workdir`` (its log: workdir/app.log); ``program`` is the `searchgrade` command
    (another venv's, for the installed wheel).

    Yields the app's URL on loopback once its health check answers; stops the server's process
    group after.
    """
    port = free_port()
    log_path = workdir / "app.log"
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [*program, "app", "--port", str(port), "--host", host, *args],
            cwd=workdir, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_until_up(url, server, log_path)
            yield url
        finally:
            _stop_group(server)


def pick(page: object, label: str, option: str, tries: int = 5) -> None:
    """Pick ``option`` in the selectbox named ``label``: a click while the page still reruns may
    not open the list, so it is clicked again."""
    for _ in range(tries):
        page.get_by_role("combobox", name=label).click()  # type: ignore[attr-defined]
        try:
            page.get_by_role("option", name=option).click(timeout=10_000)  # type: ignore[attr-defined]
            return
        except Exception:  # noqa: BLE001 - the list did not open: the page was rerunning
            page.keyboard.press("Escape")  # type: ignore[attr-defined]
    raise AssertionError(f"could not pick {option!r} in {label!r}")


@contextmanager
def chromium() -> Iterator:
    """Debian's Chromium, headless, driven by Playwright; closed afterwards."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()


def _stop_group(process: subprocess.Popen) -> None:
    try:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(15)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(5)
    except ProcessLookupError:
        process.wait(5)
