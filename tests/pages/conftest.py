from __future__ import annotations

import json
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from searchgrade.engine.store import Store
from tests.pages.synthetic import tiny_spec, write_run

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
#: What the app reads to offer the LLM mode; tests start without any of it.
LLM_ENVIRONMENT = ("SEARCHGRADE_LLM_MODEL", "OPENAI_BASE_URL", "OPENAI_API_KEY")
#: How long one script run of a page under test may take. A page runs in 1-2 s here; CI once had
#: a run stall past 60 s that no rerun reproduced, so the bound is wide and a run still slower
#: than pytest's faulthandler_timeout dumps every thread's stack (pyproject.toml) to show where.
APPTEST_TIMEOUT_S = 180


@pytest.fixture(autouse=True)
def loopback_app(monkeypatch):
    """The app as `searchgrade app` starts it by default: on 127.0.0.1, with no login configured
    (and no login of another test: every AppTest session has the same id)."""
    from streamlit import config

    from searchgrade.server.access.sessions import SESSIONS

    SESSIONS.clear()
    before = config.get_option("server.address")
    config.set_option("server.address", "127.0.0.1")
    for name in ("SEARCHGRADE_APP_PASSWORD", "SEARCHGRADE_APP_NO_AUTH"):
        monkeypatch.delenv(name, raising=False)
    yield
    config.set_option("server.address", before)


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    """A fresh data directory the app under test uses (SEARCHGRADE_HOME), no LLM configured, and the
    app on loopback as `searchgrade app` binds it by default (no address would mean exposed)."""
    monkeypatch.setenv("SEARCHGRADE_HOME", str(tmp_path))
    monkeypatch.delenv("SEARCHGRADE_COLLECTIONS_ROOT", raising=False)
    for name in LLM_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    with bound_to("127.0.0.1"):
        yield tmp_path


@contextmanager
def bound_to(address: str | None):
    """The app under test as if bound to ``address`` (Streamlit's server.address), then restored."""
    from streamlit import config

    before = config.get_option("server.address")
    config.set_option("server.address", address)
    try:
        yield
    finally:
        config.set_option("server.address", before)


@pytest.fixture
def store(home) -> Store:
    return Store(home)


@pytest.fixture
def tiny_run(store) -> str:
    return write_run(store, tiny_spec())


def open_page(page: str, *, state: dict | None = None, timeout: float = APPTEST_TIMEOUT_S):
    """The real app (app.py and its st.navigation), switched to one page and run."""
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=timeout)
    for key, value in (state or {}).items():
        at.session_state[key] = value
    at.run()
    at.switch_page(page)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def plotly_specs(at) -> list[dict]:
    return [json.loads(chart.proto.spec) for chart in at.get("plotly_chart")]


def chart(at, name: str) -> dict:
    """The Plotly figure whose layout.meta.chart is `name`."""
    for spec in plotly_specs(at):
        if spec["layout"].get("meta", {}).get("chart") == name:
            return spec
    raise AssertionError(f"no chart {name!r} on the page")


@pytest.fixture
def clean_jobs():
    """After the test: wait for its background job to end, then forget finished jobs."""
    from searchgrade.server import jobs

    yield
    deadline = time.time() + 10
    while jobs.active_job() is not None and time.time() < deadline:
        time.sleep(0.05)
    jobs._reset_for_tests()
