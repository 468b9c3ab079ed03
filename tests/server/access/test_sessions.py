"""The logins of the app process: bound to their browser, ended by logout, idleness or age."""

from __future__ import annotations

from searchgrade.server.access.sessions import EXPIRED, IN, OUT, Sessions


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def sessions(clock: Clock) -> Sessions:
    return Sessions(clock, session_s=3600, idle_s=600)


def test_a_login_is_its_sessions_and_its_browsers_only():
    logins = sessions(Clock())
    logins.login("s1", "browser-a")
    assert logins.state("s1", "browser-a") == IN and logins.any_logged_in("browser-a")
    assert logins.state("s1", "browser-b") == OUT  # the same id from another browser
    assert logins.state("s1", None) == OUT
    assert logins.state("s2", "browser-a") == OUT  # another tab of the same browser logs in itself
    assert not logins.any_logged_in("browser-b") and not logins.any_logged_in(None)
    logins.logout("s1")
    assert logins.state("s1", "browser-a") == OUT and not logins.any_logged_in("browser-a")


def test_a_login_ends_after_the_idle_time_unless_the_person_acts():
    clock = Clock()
    logins = sessions(clock)
    logins.login("s1", "a")
    for _ in range(5):
        clock.now += 500
        logins.touch("s1")
    assert logins.state("s1", "a") == IN  # 2500 s in, never 600 s without activity
    clock.now += 601
    assert logins.state("s1", "a") == EXPIRED
    assert logins.state("s1", "a") == OUT  # said once, then forgotten
    logins.touch("s1")
    assert logins.state("s1", "a") == OUT  # activity does not bring an ended login back
    assert logins.expired_for("a") and not logins.expired_for("a")  # the login page says it once


def test_a_login_ends_after_the_session_length_however_active():
    clock = Clock()
    logins = sessions(clock)
    logins.login("s1", "a")
    while clock.now <= 1000 + 3600:
        clock.now += 300
        logins.touch("s1")
    assert logins.state("s1", "a") == EXPIRED


def test_ended_logins_do_not_pile_up():
    clock = Clock()
    logins = sessions(clock)
    for i in range(100):
        logins.login(f"s{i}", f"b{i}")
    clock.now += 601
    logins.login("last", "b")
    assert list(logins._logins) == ["last"]
