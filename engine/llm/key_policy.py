"""Where the API key may go: only to endpoints the operator chose, and nowhere else.

Those are the configured endpoint ($OPENAI_BASE_URL, or the hosted API when it is unset), the URLs
in $SEARCHGRADE_LLM_ALLOWED_URLS, and, for the length of one command, a URL the operator typed on
the command line (:func:`operator_urls`). A URL typed in the browser is none of these: it gets no
key, so whoever can open the app cannot collect the server's key by pointing it at their own
listener. Nor does it get the other credentials the openai package sends on its own
(:func:`strip_credentials`), and no key reaches an error message (:func:`scrub`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any
from urllib.parse import urlsplit

from searchgrade.engine.llm.env import (
    ENV_ALLOWED_URLS,
    ENV_API_KEY,
    ENV_BASE_URL,
    HOSTED_URL,
    env_allowed_urls,
    env_api_key,
    env_base_url,
    env_custom_header_names,
)

#: Base URLs the operator gave on the command line, trusted for the command's duration.
_OPERATOR_URLS: ContextVar[frozenset[str]] = ContextVar("searchgrade_operator_urls", default=frozenset())

#: Request headers that carry credentials, never sent to an endpoint the operator did not choose.
_CREDENTIAL_HEADERS = {"authorization", "proxy-authorization", "api-key", "x-api-key",
                       "openai-organization", "openai-project", "cookie"}

_KEYISH = re.compile(r"\b(sk|pk|key|api)[-_][A-Za-z0-9_\-*.]{6,}", re.IGNORECASE)


def normalise_url(url: str | None) -> str:
    """A base URL in one spelling, for comparing endpoints: lowercase scheme and host, the
    default port dropped, no credentials, no query, no trailing slash. None (or "") is the hosted API.
    """
    url = (url or "").strip() or HOSTED_URL
    parts = urlsplit(url if "://" in url else f"http://{url}")
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    if port is not None and port != {"http": 80, "https": 443}.get(scheme):
        host += f":{port}"
    return f"{scheme}://{host}{parts.path.rstrip('/')}"


def allowed_key_urls(environ: Mapping[str, str] | None = None) -> set[str]:
    """The endpoints the key may go to (normalised): the configured one, the allow-list, and the
    command line's for the current command."""
    urls = {normalise_url(env_base_url(environ))}
    urls |= {normalise_url(u) for u in env_allowed_urls(environ)}
    return urls | _OPERATOR_URLS.get()


def key_allowed(base_url: str | None, environ: Mapping[str, str] | None = None) -> bool:
    """Whether the key may be sent to ``base_url`` (None: the configured endpoint)."""
    if not base_url:
        return True
    return normalise_url(base_url) in allowed_key_urls(environ)


def api_key_for(base_url: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """The key to send to ``base_url``: $OPENAI_API_KEY when the endpoint may have it, else None."""
    return env_api_key(environ) if key_allowed(base_url, environ) else None


def key_withheld_note(base_url: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """Why ``base_url`` gets no key although one is set (None when it gets it, or none is set)."""
    if not env_api_key(environ) or key_allowed(base_url, environ):
        return None
    return (f"no API key is sent to this endpoint: {ENV_API_KEY} goes only to {ENV_BASE_URL} (or the "
            f"hosted API when it is unset) and to the URLs in {ENV_ALLOWED_URLS}; the operator adds "
            f"an endpoint there to give it the key")


@contextmanager
def operator_urls(urls: Iterable[str | None]) -> Iterator[None]:
    """Trust base URLs the operator typed (``--base-url``) with the key, inside this block only."""
    token = _OPERATOR_URLS.set(_OPERATOR_URLS.get() | {normalise_url(u) for u in urls if u})
    try:
        yield
    finally:
        _OPERATOR_URLS.reset(token)


def strip_credentials(request: Any) -> None:
    """An httpx request hook: drop credential headers, and those $OPENAI_CUSTOM_HEADERS adds."""
    custom = env_custom_header_names()
    for name in list(request.headers):
        if name.lower() in _CREDENTIAL_HEADERS or name.lower() in custom:
            del request.headers[name]


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with each secret, and anything that looks like a key, replaced by ***."""
    for secret in secrets:
        text = text.replace(secret, "***")
    return _KEYISH.sub("***", text)
