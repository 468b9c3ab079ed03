"""The login gate of the real app (app.py), before any page: who sees what."""

from __future__ import annotations

import time

import pytest
from streamlit import config
from streamlit.testing.v1 import AppTest

from searchgrade.server import auth
from tests.pages.conftest import APP, APPTEST_TIMEOUT_S

PASSWORD = "correct horse battery staple"


@pytest.fixture(autouse=True)
def fresh_limiter(monkeypatch, home):
    monkeypatch.setattr(auth, "LIMITER", auth.LoginLimiter())


def _app(address: str | None = "127.0.0.1") -> AppTest:
    config.set_option("server.address", address)
    at = AppTest.from_file(APP, default_timeout=APPTEST_TIMEOUT_S)
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    return at


def _shows_only_the_gate(at: AppTest) -> None:
    assert [t.value for t in at.title] == ["searchgrade"]
    assert not at.dataframe and not at.selectbox and not at.radio and not at.sidebar.button


def _log_in(at: AppTest, password: str) -> AppTest:
    at.text_input(key="auth_password").input(password)
    at.button[0].click().run()
    return at


def test_on_loopback_with_no_login_configured_the_app_opens():
    at = _app()
    assert at.title[0].value == "Evaluate search quality"


@pytest.mark.parametrize("address", ["0.0.0.0", None])
def test_an_exposed_app_without_a_login_shows_only_one_line_for_its_operator(address):
    at = _app(address)
    _shows_only_the_gate(at)
    [error] = at.error
    assert "reachable from other machines" in error.value.replace("\\", "")
    assert "SEARCHGRADE\\_APP\\_PASSWORD" in error.value  # escaped: shown as typed


def test_an_exposed_app_opens_without_a_login_only_when_the_operator_said_so(monkeypatch):
    monkeypatch.setenv("SEARCHGRADE_APP_NO_AUTH", "1")
    assert _app("0.0.0.0").title[0].value == "Evaluate search quality"


def test_with_a_password_nothing_shows_before_the_login_and_a_wrong_one_is_refused(monkeypatch):
    monkeypatch.setenv("SEARCHGRADE_APP_PASSWORD", PASSWORD)
    at = _app("0.0.0.0")
    _shows_only_the_gate(at)
    _log_in(at, "wrong password here")
    _shows_only_the_gate(at)
    assert at.error[0].value == "Wrong password."
    _log_in(at, PASSWORD)
    assert at.title[0].value == "Evaluate search quality"
    assert [b.label for b in at.sidebar.button] == ["Log out"]
    at.sidebar.button[0].click().run()
    _shows_only_the_gate(at)


def test_logins_are_rate_limited_even_for_the_right_password(monkeypatch):
    monkeypatch.setenv("SEARCHGRADE_APP_PASSWORD", PASSWORD)
    at = _app("0.0.0.0")
    for _ in range(5):
        _log_in(at, "guess")
        assert at.error[0].value == "Wrong password."
    _log_in(at, PASSWORD)
    _shows_only_the_gate(at)
    assert at.error[0].value.startswith("Too many failed logins: try again in ")


def test_a_login_expires(monkeypatch):
    monkeypatch.setenv("SEARCHGRADE_APP_PASSWORD", PASSWORD)
    monkeypatch.setenv("SEARCHGRADE_APP_SESSION_MINUTES", "0.02")  # 1.2 s
    at = _log_in(_app("0.0.0.0"), PASSWORD)
    assert at.title[0].value == "Evaluate search quality"
    time.sleep(1.5)
    at.run()
    _shows_only_the_gate(at)
    assert "session has expired" in at.info[0].value


def test_with_st_login_configured_only_the_login_button_shows():
    config.set_option("server.address", "0.0.0.0")
    at = AppTest.from_file(APP, default_timeout=APPTEST_TIMEOUT_S)
    at.secrets["auth"] = {
        "redirect_uri": "http://127.0.0.1:8501/oauth2callback", "cookie_secret": "s" * 32,
        "client_id": "id", "client_secret": "secret",
        "server_metadata_url": "http://127.0.0.1:9/.well-known/openid-configuration",
    }
    at.run()
    assert not at.exception, [e.message for e in at.exception]
    _shows_only_the_gate(at)
    assert [b.label for b in at.button] == ["Log in"]


def test_log_out_ends_the_login_and_clears_the_sessions_state(monkeypatch):
    monkeypatch.setenv("SEARCHGRADE_APP_PASSWORD", PASSWORD)
    at = _log_in(_app("0.0.0.0"), PASSWORD)
    at.text_input(key="evaluate_name").input("kept until logout").run()
    assert at.session_state["evaluate_name"] == "kept until logout"
    at.sidebar.button[0].click().run()
    _shows_only_the_gate(at)
    assert "evaluate_name" not in at.session_state and "evaluate_job_id" not in at.session_state
    _log_in(at, PASSWORD)
    assert at.text_input(key="evaluate_name").value == ""


def test_a_login_ends_after_the_idle_time(monkeypatch):
    monkeypatch.setenv("SEARCHGRADE_APP_PASSWORD", PASSWORD)
    monkeypatch.setenv("SEARCHGRADE_APP_IDLE_MINUTES", "0.02")  # 1.2 s without the person acting
    at = _log_in(_app("0.0.0.0"), PASSWORD)
    assert at.title[0].value == "Evaluate search quality"
    time.sleep(1.5)
    at.run()
    _shows_only_the_gate(at)
    assert "session has expired" in at.info[0].value
