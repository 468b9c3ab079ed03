"""The access gate as ASGI middleware, around a stand-in for Streamlit's app: what answers before
login, which websocket messages pass, whose session a connection may resume, when a login ends.

The browser tests (tests/browser/test_exposed.py) show the same against the real server."""

from __future__ import annotations

import asyncio

import pytest

from searchgrade.server.access.gate import CLIENT_COOKIE, EXPIRED_CLOSE, AccessGate, StreamlitWire, cookie
from searchgrade.server.access.sessions import Sessions


class Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now


def wire(ended: list[str]) -> StreamlitWire:
    """Messages as plain bytes: b"rerun_script", b"rerun_script auto", b"clear_cache"; the server's
    b"new_session S1" announces session S1."""
    def back(data: bytes) -> tuple[str | None, bool]:
        kind, _, auto = data.decode().partition(" ")
        return kind, auto == "auto"

    def session_of(data: bytes) -> str | None:
        kind, _, session = data.decode().partition(" ")
        return session if kind == "new_session" else None

    return StreamlitWire(back, session_of, ended.append)


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


@pytest.fixture
def setup():
    clock = Clock()
    logins = Sessions(clock, session_s=3600, idle_s=600)
    ended: list[str] = []
    app = Streamlit()
    return AccessGate(app, wire=wire(ended)), app, logins, clock, ended


def gate_of(setup) -> AccessGate:
    gate, app, logins, _, _ = setup
    gate.sessions = logins
    return gate


@pytest.mark.parametrize("path", ["/_stcore/metrics", "/media/abc.png", "/component/x/index.html",
                                  "/_stcore/bidi-components/x.js", "/app/static/f.txt"])
def test_streamlits_own_endpoints_answer_only_a_logged_in_browser(setup, path):
    gate = gate_of(setup)
    _, _, logins, _, _ = setup
    assert http(gate, path)[0] == 403
    assert http(gate, path, "browser-a")[0] == 403
    logins.login("s1", "browser-a")
    assert http(gate, path, "browser-a")[0] == 200
    assert http(gate, path, "browser-b")[0] == 403


def test_an_upload_goes_only_into_the_uploaders_own_logged_in_session(setup):
    gate = gate_of(setup)
    _, _, logins, _, _ = setup
    assert http(gate, "/_stcore/upload_file/s1/f1", "browser-a", "PUT")[0] == 403
    logins.login("s1", "browser-a")
    assert http(gate, "/_stcore/upload_file/s1/f1", "browser-a", "PUT")[0] == 200
    assert http(gate, "/_stcore/upload_file/s1/f1", "browser-b", "PUT")[0] == 403  # not its session
    logins.login("s2", "browser-b")
    assert http(gate, "/_stcore/upload_file/s1/f1", "browser-b", "DELETE")[0] == 403


def test_the_agent_api_never_answers_and_the_page_and_health_always_do(setup):
    gate = gate_of(setup)
    _, _, logins, _, _ = setup
    logins.login("s1", "browser-a")
    assert http(gate, "/_stcore/agent/interact", "browser-a", "POST")[0] == 404
    for path in ("/", "/results", "/_stcore/health", "/_stcore/host-config", "/static/js/main.js"):
        assert http(gate, path)[0] == 200


def test_a_browser_without_the_cookie_is_given_one(setup):
    gate = gate_of(setup)
    status, sent = http(gate, "/")
    given = sent[b"set-cookie"].decode()
    assert status == 200 and given.startswith(f"{CLIENT_COOKIE}=") and "HttpOnly" in given and "SameSite=Strict" in given
    assert b"set-cookie" not in http(gate, "/", "browser-a")[1]
    assert cookie({"headers": headers("browser-a")}) == "browser-a"


def test_before_login_only_what_the_login_needs_reaches_the_session(setup):
    gate = gate_of(setup)
    _, app, _, _, _ = setup
    websocket(gate, [b"rerun_script", b"clear_cache", b"load_git_info", b"file_urls_request", b"app_heartbeat",
                     b"backend_operation_request"], "browser-a")
    assert app.messages == [b"rerun_script", b"app_heartbeat"]


def test_after_login_every_message_reaches_it_and_the_persons_own_count_as_activity(setup):
    gate = gate_of(setup)
    _, app, logins, clock, _ = setup
    logins.login("fresh", "browser-a")
    clock.now += 500
    websocket(gate, [b"rerun_script auto", b"clear_cache"], "browser-a")
    clock.now += 200  # 700 s since the person last acted: the page's own rerun did not count
    assert logins.state("fresh", "browser-a") == "expired"
    logins.login("fresh", "browser-a")
    clock.now += 500
    websocket(gate, [b"rerun_script"], "browser-a")
    clock.now += 200
    assert logins.state("fresh", "browser-a") == "in"
    assert app.messages == [b"rerun_script auto", b"clear_cache", b"rerun_script"]


def test_a_session_id_is_resumed_only_by_the_browser_whose_live_login_it_is(setup):
    gate = gate_of(setup)
    _, app, logins, _, _ = setup
    logins.login("s1", "browser-a")
    websocket(gate, [], "browser-b", resume="s1")  # another browser names it: a new session
    websocket(gate, [], None, resume="s1")  # no cookie at all: the same
    websocket(gate, [], "browser-a", resume="s1")  # its own browser: resumed
    logins.logout("s1")
    websocket(gate, [], "browser-a", resume="s1")  # logged out: not even its own browser
    protocols = [dict(s["headers"])[b"sec-websocket-protocol"].decode() for s in app.scopes]
    assert protocols == ["streamlit, xsrf-token", "streamlit, xsrf-token", "streamlit, xsrf-token, s1",
                         "streamlit, xsrf-token"]
    # A connection without the cookie is bound to a name of its own, never to "no browser".
    assert cookie(app.scopes[1]) not in (None, "browser-a")


def test_when_the_login_expires_the_connection_is_closed_and_the_session_ended(setup):
    gate = gate_of(setup)
    _, app, logins, clock, ended = setup
    logins.login("s1", "browser-a")

    def idle():
        clock.now += 601

    sent = websocket(gate, [b"rerun_script", b"clear_cache"], "browser-a", resume="s1", meanwhile=idle)
    assert {"type": "websocket.close", "code": EXPIRED_CLOSE} in sent
    assert ended == ["s1"] and app.messages == []
    assert logins.expired_for("browser-a")  # the next login page says so
    # Reconnecting with the ended session's id gets a new session: the login page.
    websocket(gate, [], "browser-a", resume="s1")
    assert dict(app.scopes[-1]["headers"])[b"sec-websocket-protocol"] == b"streamlit, xsrf-token"


def test_without_a_login_configured_the_gate_lets_everything_through(setup):
    _, app, logins, _, ended = setup
    gate = AccessGate(app, wire=wire(ended), enabled=False, sessions=logins)
    assert http(gate, "/_stcore/metrics")[0] == 200
    websocket(gate, [b"clear_cache"])
    assert app.messages == [b"clear_cache"]
