"""The access gate as ASGI middleware, around a stand-in for Streamlit's app: what answers before
login, which websocket messages pass, whose session a connection may resume, when a login ends.

The browser tests (tests/browser/test_exposed.py) show the same against the real server."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import pytest

from searchgrade.server.access.gate import CLIENT_COOKIE, AccessGate, StreamlitWire, cookie
from searchgrade.server.access.sessions import Sessions


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def wire() -> StreamlitWire:
    """Messages as plain bytes: b"rerun_script", b"rerun_script auto", b"clear_cache"; the server's
    b"new_session S1" announces session S1; a plain rerun reads b"rerun_script plain"."""
    def back(data: bytes) -> tuple[str | None, bool]:
        kind, _, auto = data.decode().partition(" ")
        return kind, auto == "auto"

    def session_of(data: bytes) -> str | None:
        kind, _, session = data.decode().partition(" ")
        return session if kind == "new_session" else None

    return StreamlitWire(back, session_of, lambda data: b"rerun_script plain")


class Streamlit:
    """A stand-in for Streamlit's app: HTTP answers 200; the websocket announces a session (the
    one named to resume, else "fresh") and records every message it is given."""

    def __init__(self) -> None:
        self.scopes: list[dict] = []
        self.messages: list[bytes] = []

    async def __call__(self, scope, receive, send):
        self.scopes.append(scope)
        if scope["type"] == "http":
            await send({"type": "http.response.start", "status": 200, "headers": []})
            await send({"type": "http.response.body", "body": b"app"})
            return
        protocols = dict(scope["headers"]).get(b"sec-websocket-protocol", b"").decode().split(", ")
        session = protocols[2] if len(protocols) >= 3 else "fresh"
        await send({"type": "websocket.send", "bytes": f"new_session {session}".encode()})
        while True:
            message = await receive()
            if message["type"] == "websocket.disconnect":
                return
            self.messages.append(message["bytes"])


def headers(client: str | None = None, **more: str) -> list[tuple[bytes, bytes]]:
    found = [(b"cookie", f"{CLIENT_COOKIE}={client}; other=1".encode())] if client else []
    return found + [(k.replace("_", "-").encode(), v.encode()) for k, v in more.items()]


def http(gate, path: str, client: str | None = None, method: str = "GET") -> tuple[int, dict]:
    sent: list[dict] = []

    async def receive():
        return {"type": "http.request", "body": b""}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "path": path, "method": method, "headers": headers(client)}
    asyncio.run(gate(scope, receive, send))
    return sent[0]["status"], dict(sent[0].get("headers") or [])


def websocket(gate, frames: list[bytes], client: str | None = None, resume: str | None = None,
              meanwhile=lambda: None) -> list[dict]:
    """Open the stream, call ``meanwhile``, send ``frames``, disconnect; what the gate sent back to
    the browser."""
    incoming = [{"type": "websocket.connect"}] + [{"type": "websocket.receive", "bytes": f} for f in frames]
    incoming.append({"type": "websocket.disconnect", "code": 1000})
    sent: list[dict] = []

    async def receive():
        if len(incoming) == len(frames) + 1:
            meanwhile()
        return incoming.pop(0)

    async def send(message):
        sent.append(message)

    protocol = "streamlit, xsrf-token" + (f", {resume}" if resume else "")
    scope = {"type": "websocket", "path": "/_stcore/stream", "headers": headers(client, sec_websocket_protocol=protocol)}

    async def run():
        await gate(scope, receive, send)

    incoming.pop(0)
    asyncio.run(run())
    return sent


@dataclass
class Rig:
    gate: AccessGate
    app: Streamlit
    logins: Sessions
    clock: Clock


@pytest.fixture
def rig() -> Rig:
    clock = Clock()
    logins = Sessions(clock, session_s=3600, idle_s=600)
    app = Streamlit()
    return Rig(AccessGate(app, wire=wire(), sessions=logins), app, logins, clock)


@pytest.mark.parametrize("path", ["/_stcore/metrics", "//_stcore/metrics/", "/_stcore/script-health-check",
                                  "/media/abc.png", "/component/x/index.html",
                                  "/_stcore/bidi-components/x.js", "/app/static/f.txt"])
def test_streamlits_own_endpoints_answer_only_a_logged_in_browser(rig, path):
    assert http(rig.gate, path)[0] == 403
    assert http(rig.gate, path, "browser-a")[0] == 403
    rig.logins.login("s1", "browser-a")
    assert http(rig.gate, path, "browser-a")[0] == 200
    assert http(rig.gate, path, "browser-b")[0] == 403


def test_an_upload_goes_only_into_the_uploaders_own_logged_in_session(rig):
    assert http(rig.gate, "/_stcore/upload_file/s1/f1", "browser-a", "PUT")[0] == 403
    rig.logins.login("s1", "browser-a")
    assert http(rig.gate, "/_stcore/upload_file/s1/f1", "browser-a", "PUT")[0] == 200
    assert http(rig.gate, "/_stcore/upload_file/s1/f1", "browser-b", "PUT")[0] == 403  # not its session
    rig.logins.login("s2", "browser-b")
    assert http(rig.gate, "/_stcore/upload_file/s1/f1", "browser-b", "DELETE")[0] == 403


def test_the_agent_api_never_answers_and_the_page_and_health_always_do(rig):
    rig.logins.login("s1", "browser-a")
    assert http(rig.gate, "/_stcore/agent/interact", "browser-a", "POST")[0] == 404
    for path in ("/", "/results", "/_stcore/health", "/_stcore/host-config", "/static/js/main.js"):
        assert http(rig.gate, path)[0] == 200


def test_a_browser_without_the_cookie_is_given_one(rig):
    status, sent = http(rig.gate, "/")
    given = sent[b"set-cookie"].decode()
    assert status == 200 and given.startswith(f"{CLIENT_COOKIE}=") and "HttpOnly" in given and "SameSite=Strict" in given
    assert b"set-cookie" not in http(rig.gate, "/", "browser-a")[1]
    assert cookie({"headers": headers("browser-a")}) == "browser-a"


def test_before_login_only_what_the_login_needs_reaches_the_session(rig):
    websocket(rig.gate, [b"rerun_script", b"clear_cache", b"load_git_info", b"file_urls_request", b"app_heartbeat",
                     b"backend_operation_request"], "browser-a")
    assert rig.app.messages == [b"rerun_script", b"app_heartbeat"]


def test_after_login_every_message_reaches_it_and_the_persons_own_count_as_activity(rig):
    rig.logins.login("fresh", "browser-a")
    rig.clock.now += 500
    websocket(rig.gate, [b"rerun_script auto", b"clear_cache"], "browser-a")
    rig.clock.now += 200  # 700 s since the person last acted: the page's own rerun did not count
    assert rig.logins.state("fresh", "browser-a") == "expired"
    rig.logins.login("fresh", "browser-a")
    rig.clock.now += 500
    websocket(rig.gate, [b"rerun_script"], "browser-a")
    rig.clock.now += 200
    assert rig.logins.state("fresh", "browser-a") == "in"
    assert rig.app.messages == [b"rerun_script auto", b"clear_cache", b"rerun_script"]


def test_a_session_id_is_resumed_only_by_the_browser_whose_live_login_it_is(rig):
    rig.logins.login("s1", "browser-a")
    websocket(rig.gate, [], "browser-b", resume="s1")  # another browser names it: a new session
    websocket(rig.gate, [], None, resume="s1")  # no cookie at all: the same
    websocket(rig.gate, [], "browser-a", resume="s1")  # its own browser: resumed
    rig.logins.logout("s1")
    websocket(rig.gate, [], "browser-a", resume="s1")  # logged out: not even its own browser
    protocols = [dict(s["headers"])[b"sec-websocket-protocol"].decode() for s in rig.app.scopes]
    assert protocols == ["streamlit, xsrf-token", "streamlit, xsrf-token", "streamlit, xsrf-token, s1",
                         "streamlit, xsrf-token"]
    # A connection without the cookie is bound to a name of its own, never to "no browser".
    assert cookie(rig.app.scopes[1]) not in (None, "browser-a")


def test_when_the_login_expires_the_next_run_is_a_plain_run_of_the_page_and_nothing_else_passes(rig):
    rig.logins.login("s1", "browser-a")

    def idle():
        rig.clock.now += 601

    # The person comes back after the idle time and clicks a button: the run they ask for is made a
    # plain run of the page (no widget value: the button does nothing), and what follows is held
    # to the login again.
    websocket(rig.gate, [b"app_heartbeat", b"rerun_script", b"clear_cache", b"rerun_script"], "browser-a",
              resume="s1", meanwhile=idle)
    assert rig.app.messages == [b"app_heartbeat", b"rerun_script plain", b"rerun_script"]
    assert rig.logins.expired_for("browser-a")  # the login page says so
    # Reconnecting with the ended session's id gets a new session: the login page.
    websocket(rig.gate, [], "browser-a", resume="s1")
    assert dict(rig.app.scopes[-1]["headers"])[b"sec-websocket-protocol"] == b"streamlit, xsrf-token"


def test_without_a_login_configured_the_gate_lets_everything_through(rig):
    gate = AccessGate(rig.app, wire=wire(), enabled=False, sessions=rig.logins)
    assert http(gate, "/_stcore/metrics")[0] == 200
    websocket(gate, [b"clear_cache"])
    assert rig.app.messages == [b"clear_cache"]
