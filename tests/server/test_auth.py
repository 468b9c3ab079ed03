from __future__ import annotations

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.server import auth


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_password_compare_is_exact():
    assert auth.password_matches("correct horse battery", "correct horse battery")
    assert not auth.password_matches("correct horse batter", "correct horse battery")
    assert not auth.password_matches("", "correct horse battery")


def test_a_short_password_is_refused_with_the_fix():
    with pytest.raises(SearchGradeError, match="has 5 characters; use at least 12"):
        auth.check_password_strength("short")
    auth.check_password_strength("x" * 12)


def test_each_address_gets_five_guesses_per_window_then_waits():
    clock = Clock()
    limiter = auth.LoginLimiter(per_client=5, overall=100, window_s=300, clock=clock)
    for _ in range(5):
        assert limiter.wait_s("10.0.0.1") == 0
        limiter.failed("10.0.0.1")
        clock.now += 1
    assert limiter.wait_s("10.0.0.1") == pytest.approx(300 - 5)
    assert limiter.wait_s("10.0.0.2") == 0  # another address is not held back
    clock.now += 296
    assert limiter.wait_s("10.0.0.1") == 0  # the oldest guess left the window


def test_many_addresses_together_are_limited_too():
    clock = Clock()
    limiter = auth.LoginLimiter(per_client=5, overall=12, window_s=60, clock=clock)
    for i in range(12):
        limiter.failed(f"10.0.0.{i}")
    assert limiter.wait_s("10.9.9.9") == pytest.approx(60)


@pytest.mark.parametrize(("read", "name", "default"), [
    (auth.session_seconds, "SEARCHGRADE_APP_SESSION_MINUTES", 480), (auth.idle_seconds, "SEARCHGRADE_APP_IDLE_MINUTES", 30)])
def test_session_length_and_idle_time_from_the_environment(read, name, default):
    assert read({}) == default * 60
    assert read({name: "15"}) == 900
    for bad in ("-1", "0", "soon", "1e9", "nan"):
        with pytest.raises(SearchGradeError, match=f"^{name}='{bad}' is not a number of minutes from 0 to 10080"):
            read({name: bad})


COMPLETE = """
[auth]
redirect_uri = "https://sg.example.org/oauth2callback"
cookie_secret = "a-long-random-secret"
client_id = "id"
client_secret = "secret"
server_metadata_url = "https://idp.example.org/.well-known/openid-configuration"
"""


def test_oidc_is_ready_only_with_every_setting_and_authlib(tmp_path):
    secrets = tmp_path / "secrets.toml"
    assert not auth.oidc_status([secrets]).present  # no file: no OIDC
    secrets.write_text(COMPLETE)
    assert auth.oidc_status([secrets], authlib_installed=lambda: True).ready
    missing = auth.oidc_status([secrets], authlib_installed=lambda: False)
    assert missing.present and "Authlib" in missing.problem
    secrets.write_text(COMPLETE.replace('client_secret = "secret"\n', ""))
    status = auth.oidc_status([secrets], authlib_installed=lambda: True)
    assert not status.ready and "client_id / client_secret / server_metadata_url" in status.problem
    assert "a-long-random-secret" not in status.problem


def test_a_named_provider_table_counts(tmp_path):
    secrets = tmp_path / "secrets.toml"
    secrets.write_text('[auth]\nredirect_uri = "https://x/oauth2callback"\ncookie_secret = "c"\n'
                       '[auth.google]\nclient_id = "i"\nclient_secret = "s"\n'
                       'server_metadata_url = "https://accounts.google.com/.well-known/openid-configuration"\n')
    assert auth.oidc_status([secrets], authlib_installed=lambda: True).ready


def test_password_wins_over_oidc_and_nothing_means_no_login():
    ready = auth.OIDCStatus(True)
    assert auth.login_method({"SEARCHGRADE_APP_PASSWORD": "p" * 12}, ready) == "password"
    assert auth.login_method({}, ready) == "oidc"
    assert auth.login_method({}, auth.OIDCStatus(False)) is None
