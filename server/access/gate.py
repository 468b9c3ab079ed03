"""The access gate: an ASGI middleware in front of Streamlit's server, so that nothing but the login
answers before login, and a session ends when it ends.

Streamlit serves more than the app's pages, and has no setting to put those behind the app's own
login: its metrics (sessions and caches), file uploads into a session, media files, components and
the agent API; and its websocket takes messages such as ``clear_cache`` (every cache of the
process) from any session, and lets a new connection take over a disconnected session by naming
its id. The gate, started by ``searchgrade app`` (views/_serve.py) in front of Streamlit's own
middleware, holds them to the logins of server/access/sessions.py:

- **Every browser gets a cookie** (``searchgrade_client``, HttpOnly, SameSite=Strict), which names it
  to the gate and to the login page; a login is bound to the browser it was made in.
- **HTTP.** Metrics, media, components and static files answer only a browser with a live login;
  an upload only into the uploader's own logged-in session; the agent API never (this app does
  not serve it). The page, its assets, the health check and the login's own routes answer anyone.
- **The websocket.** A session id named to resume a session is kept only for the browser whose
  live login it is; otherwise it is dropped and the connection gets a new session (the login).
  Until the session has logged in, only the messages the login needs pass (run the page, stop,
  heartbeat): ``clear_cache`` and the rest do nothing. A person's own messages count as activity
  (a page refreshing itself does not). When the login has expired, the next run the browser asks
  for is made a plain run of the page, without the widgets' values or a fragment of its own: no
  button or callback of the ended login acts, and the app's login page draws (and clears the
  session's state).

Streamlit's wire format is read through ``StreamlitWire`` (views/_serve.py gives Streamlit's own
parsers): this module knows ASGI and paths, not Streamlit's protobufs.
"""

from __future__ import annotations

import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from dataclasses import dataclass
from http.cookies import CookieError, SimpleCookie
from typing import Any

from searchgrade.server.access.sessions import EXPIRED, IN, SESSIONS, Sessions

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: The cookie that names a browser to the gate and the login page.
CLIENT_COOKIE = "searchgrade_client"
#: Websocket messages a session may send before it has logged in: what drawing the login takes.
BEFORE_LOGIN = frozenset({"rerun_script", "app_heartbeat", "stop_script"})

#: Paths (after the base path) that answer only a browser with a live login; an upload only into
#: the uploader's own session.
LOGGED_IN_PREFIXES = ("_stcore/metrics", "_stcore/script-health-check", "media/", "component/",
                      "_stcore/bidi-components/", "app/static/")
UPLOAD_PREFIX = "_stcore/upload_file/"
#: Paths that never answer: the agent API drives the app without a browser, and without the login.
NEVER_PREFIXES = ("_stcore/agent/",)


@dataclass(frozen=True)
class StreamlitWire:
    """How the gate reads Streamlit's websocket messages (views/_serve.py gives Streamlit's parsers).

    Attributes:
        back_message: a browser's message -> (its type, whether the page sent it by itself: a
            fragment's run_every); (None, False) when it does not parse.
        session_of: a server's message -> the session id it announces (a new session's), or None.
        plain_rerun: a browser's ``rerun_script`` -> the same page run whole, without the widgets'
            values (no button, callback or fragment acts).
    """

    back_message: Callable[[bytes], tuple[str | None, bool]]
    session_of: Callable[[bytes], str | None]
    plain_rerun: Callable[[bytes], bytes]


def cookie(scope: Scope, name: str = CLIENT_COOKIE) -> str | None:
    """A cookie of the request, or None."""
    for key, value in scope.get("headers") or ():
        if key == b"cookie":
            try:
                jar = SimpleCookie(value.decode("latin-1"))
            except CookieError:
                continue
            if name in jar and jar[name].value:
                return jar[name].value
    return None


def route(path: str, base: str = "") -> str:
    """The path below the app's base path (``server.baseUrlPath``), without its leading slash."""
    path = path.lstrip("/")
    base = base.strip("/")
    if base and (path == base or path.startswith(base + "/")):
        path = path[len(base):].lstrip("/")
    return path


def _subprotocols(scope: Scope) -> list[str] | None:
    for key, value in scope.get("headers") or ():
        if key == b"sec-websocket-protocol":
            return [part.strip() for part in value.decode("latin-1").split(",")]
    return None


def _with_header(scope: Scope, name: bytes, value: bytes | None) -> Scope:
    """A copy of ``scope`` with header ``name`` replaced by ``value`` (None: removed)."""
    headers = [(k, v) for k, v in scope.get("headers") or () if k != name]
    if value is not None:
        headers.append((name, value))
    return {**scope, "headers": headers}


class AccessGate:
    """The ASGI middleware (module docstring). ``enabled`` False passes everything through: an app
    with no login (loopback, or --no-auth) has nobody to keep out."""

    def __init__(self, app: ASGIApp, *, wire: StreamlitWire, enabled: bool = True, base: str = "",
                 sessions: Sessions = SESSIONS) -> None:
        self.app = app
        self.wire = wire
        self.enabled = enabled
        self.base = base
        self.sessions = sessions

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not self.enabled or scope["type"] not in ("http", "websocket"):
            await self.app(scope, receive, send)
        elif scope["type"] == "http":
            await self._http(scope, receive, send)
        else:
            await self._websocket(scope, receive, send)

    # -- HTTP -----------------------------------------------------------------------------------

    async def _http(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = route(scope.get("path", ""), self.base)
        client = cookie(scope)
        if path.startswith(NEVER_PREFIXES):
            await _refuse(send, 404, "not served by this app")
            return
        if path.startswith(UPLOAD_PREFIX) and scope.get("method") != "OPTIONS":
            session = path[len(UPLOAD_PREFIX):].split("/", 1)[0]
            if not self.sessions.logged_in(session, client):
                await _refuse(send, 403, "log in first")
                return
        elif path.startswith(LOGGED_IN_PREFIXES) and not self.sessions.any_logged_in(client):
            await _refuse(send, 403, "log in first")
            return
        if client is not None:
            await self.app(scope, receive, send)
            return
        fresh = secrets.token_urlsafe(24)

        async def send_with_cookie(message: Message) -> None:
            if message["type"] == "http.response.start":
                base = "/" + self.base.strip("/") if self.base.strip("/") else "/"
                value = f"{CLIENT_COOKIE}={fresh}; Path={base}; HttpOnly; SameSite=Strict"
                message = {**message, "headers": [*message.get("headers", []), (b"set-cookie", value.encode())]}
            await send(message)

        await self.app(scope, receive, send_with_cookie)

    # -- the websocket --------------------------------------------------------------------------

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        # Every websocket is held to the gate (Streamlit has one, /_stcore/stream: no other path
        # needs to pass, however spelled).
        client = cookie(scope)
        if client is None:
            # A browser that sent no cookie: a name for this connection only, so that its session
            # is bound to something nobody else can present (a reconnect then starts afresh).
            client = secrets.token_urlsafe(24)
            scope = _with_header(scope, b"cookie", f"{CLIENT_COOKIE}={client}".encode())
        session: list[str | None] = [None]
        ended = [False]  # the login expired under this connection: its next run is a plain one
        protocols = _subprotocols(scope)
        if protocols is not None and len(protocols) >= 3 and protocols[2]:
            if self.sessions.state(protocols[2], client) == IN:
                session[0] = protocols[2]
            else:
                # Not this browser's live login: the connection gets a new session (the login page).
                scope = _with_header(scope, b"sec-websocket-protocol", ", ".join(protocols[:2]).encode())

        async def guarded_receive() -> Message:
            while True:
                message = await receive()
                data = message.get("bytes") if message["type"] == "websocket.receive" else None
                if data is None:
                    return message
                kind, by_itself = self.wire.back_message(data)
                state = self.sessions.state(session[0], client)
                if state == IN:
                    if kind == "rerun_script" and not by_itself:
                        self.sessions.touch(session[0])  # type: ignore[arg-type]
                    return message
                ended[0] = ended[0] or state == EXPIRED
                if kind == "rerun_script" and ended[0]:
                    ended[0] = False
                    return {**message, "bytes": self.wire.plain_rerun(data)}
                if kind is None or kind in BEFORE_LOGIN:
                    return message  # what the login page needs (and what Streamlit refuses itself)

        async def learning_send(message: Message) -> None:
            if session[0] is None and message["type"] == "websocket.send" and message.get("bytes"):
                session[0] = self.wire.session_of(message["bytes"]) or session[0]
            await send(message)

        await self.app(scope, guarded_receive, learning_send)


async def _refuse(send: Send, status: int, text: str) -> None:
    body = text.encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                            (b"content-length", str(len(body)).encode()), (b"cache-control", b"no-store")]})
    await send({"type": "http.response.body", "body": body})


def middleware(wire: StreamlitWire, *, enabled: bool, base: str = "") -> list[Any]:
    """The gate as Starlette middleware, for ``st.App(..., middleware=...)`` (it runs before
    Streamlit's own)."""
    from starlette.middleware import Middleware

    return [Middleware(AccessGate, wire=wire, enabled=enabled, base=base)]
