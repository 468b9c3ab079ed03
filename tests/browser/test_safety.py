"""Safe to expose, in the real app and a real browser: the password login.

One server for the module, started as users start it (`searchgrade app`, which execs Streamlit),
with a password, the server's OPENAI_API_KEY set, and a 3 s heartbeat timeout.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest


pytestmark = [pytest.mark.browser, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync"]
SECRET = "sk-server-key-never-leaves-0123456789"
PASSWORD = "correct horse battery staple"
HEARTBEAT_TIMEOUT_S = 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _environment(tmp: Path, home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENAI_BASE_URL", "SEARCHGRADE_LLM_MODEL", "SEARCHGRADE_LLM_ALLOWED_URLS",
                        "SEARCHGRADE_APP_NO_AUTH")}
    # HOME elsewhere: no secrets.toml of the machine's user is read.
    return dict(env, PYTHONPATH=str(ROOT), HOME=str(tmp), SEARCHGRADE_HOME=str(home),
                SEARCHGRADE_HEARTBEAT_TIMEOUT_S=str(HEARTBEAT_TIMEOUT_S))


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("safety")
    home = tmp / "home"
    port = _free_port()
    env = dict(_environment(tmp, home), SEARCHGRADE_APP_PASSWORD=PASSWORD, OPENAI_API_KEY=SECRET)
    log = open(tmp / "app.log", "w")
    server = subprocess.Popen([sys.executable, "-m", "engine.cli", "app", "--port", str(port)],
                              cwd=tmp, env=env, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            if server.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"the app did not start: {(tmp / 'app.log').read_text()[-2000:]}")
            time.sleep(0.5)
        yield url, home, tmp
    finally:
        server.terminate()
        try:
            server.wait(15)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


def _open(browser, url: str):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(60_000)
    page.goto(url)
    page.get_by_label("Password", exact=True).wait_for()
    return page


def _log_in(page, password: str = PASSWORD) -> None:
    box = page.get_by_label("Password", exact=True)
    box.fill(password)
    page.get_by_role("button", name="Log in").click()


def _app_visible(page) -> bool:
    return (page.get_by_role("link", name="Results").count() > 0
            or page.get_by_text("Evaluate search quality").count() > 0)


def test_nothing_shows_before_the_login_a_wrong_password_is_refused_the_right_one_opens(served, browser):
    url, _, _ = served
    page = _open(browser, url)
    time.sleep(1)  # whatever the app would draw besides the gate has had time to arrive
    assert not _app_visible(page)
    _log_in(page, "not the password at all")
    page.get_by_text("Wrong password.").first.wait_for()
    assert not _app_visible(page)
    _log_in(page)
    page.get_by_role("button", name="Evaluate search quality").wait_for()
    page.get_by_role("link", name="Results").wait_for()
    page.close()
