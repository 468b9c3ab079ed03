"""The streamable HTTP transport: loopback by default; anywhere else only with a bearer token.

Bound to loopback (127.0.0.1, ::1, localhost) the server is the tool of the person who started
it, as the app is (server/deploy.py). Bound beyond it, every request needs
``Authorization: Bearer <token>`` with the token from SEARCHGRADE_MCP_TOKEN in the server's
environment, and without that variable the server refuses to start. When the variable is set,
the token is required on loopback too. The token is compared in constant time and never logged
or returned.
"""

from __future__ import annotations

import hmac
import os
from collections.abc import Mapping
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.server.deploy import is_loopback
from searchgrade.server.mcp.settings import ENV_TOKEN

#: Where the MCP endpoint is served.
PATH = "/mcp"
#: A token shorter than this is refused (a guessable token protects nothing).
MIN_TOKEN_CHARS = 16


def required_token(host: str, environ: Mapping[str, str] | None = None) -> str | None:
    """The bearer token requests must carry (None: none needed, loopback without the variable).

    Raises:
        SearchGradeError: Bound beyond loopback without SEARCHGRADE_MCP_TOKEN, or a short token.
    """
    token = (os.environ if environ is None else environ).get(ENV_TOKEN, "").strip()
    if not token:
        if not is_loopback(host):
            raise SearchGradeError(f"--host {host} is reachable from other machines: set {ENV_TOKEN} to a long "
                                   "random token in the server's environment (clients send it as a bearer "
                                   "token), or bind to 127.0.0.1")
        return None
    if len(token) < MIN_TOKEN_CHARS:
        raise SearchGradeError(f"{ENV_TOKEN} is {len(token)} characters: use at least {MIN_TOKEN_CHARS} random "
                               "characters (e.g. `python -c 'import secrets; print(secrets.token_urlsafe(32))'`)")
    return token


class BearerToken:
    """ASGI middleware: an HTTP request without the bearer token gets 401 and goes no further."""

    def __init__(self, app: Any, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") == "http":
            given = dict(scope.get("headers") or []).get(b"authorization", b"")
            if not hmac.compare_digest(given, self.expected):
                await send({"type": "http.response.start", "status": 401,
                            "headers": [(b"content-type", b"application/json"),
                                        (b"www-authenticate", b'Bearer realm="searchgrade"')]})
                await send({"type": "http.response.body",
                            "body": b'{"error":"unauthorized: send Authorization: Bearer <SEARCHGRADE_MCP_TOKEN>"}'})
                return
        await self.app(scope, receive, send)


def serve(server: Any, host: str, port: int, token: str | None) -> None:
    """Serve ``server`` over streamable HTTP at http://HOST:PORT/mcp until interrupted."""
    import uvicorn

    app: Any = server.streamable_http_app(streamable_http_path=PATH, host=host)
    if token is not None:
        app = BearerToken(app, token)
    uvicorn.run(app, host=host, port=port, log_level="warning")
