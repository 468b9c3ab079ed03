"""The LLM settings the server's environment gives: the model, the endpoint and the key.

Read here and nowhere else. The key is only ever looked up to pass to the client or to say
whether it is set; it is never stored, logged or shown.

Where the key goes: only to endpoints the operator chose. Those are the configured endpoint
($OPENAI_BASE_URL, or the hosted API when it is unset), the URLs in $SEARCHGRADE_LLM_ALLOWED_URLS,
and, for the length of one command, a URL the operator typed on the command line
(:func:`operator_urls`). A URL typed in the browser is none of these: it gets no key, so whoever
can open the app cannot collect the server's key by pointing it at their own listener.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any
from urllib.parse import urlsplit

from searchgrade.core.records import SearchGradeError

#: The model, when neither --model nor the form names one.
ENV_MODEL = "SEARCHGRADE_LLM_MODEL"
#: An OpenAI-compatible endpoint (a local server); unset means the hosted OpenAI API.
ENV_BASE_URL = "OPENAI_BASE_URL"
#: The key of the hosted API (a local server needs none).
ENV_API_KEY = "OPENAI_API_KEY"
#: More endpoints that may receive the key: comma-separated base URLs.
ENV_ALLOWED_URLS = "SEARCHGRADE_LLM_ALLOWED_URLS"
#: The endpoint the openai package uses when no base URL is given.
HOSTED_URL = "https://api.openai.com/v1"

#: Base URLs the operator gave on the command line, trusted for the command's duration.
_OPERATOR_URLS: ContextVar[frozenset[str]] = ContextVar("searchgrade_operator_urls", default=frozenset())


def _env(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def env_model(environ: Mapping[str, str] | None = None) -> str | None:
    return _env(environ).get(ENV_MODEL) or None


def env_base_url(environ: Mapping[str, str] | None = None) -> str | None:
    return _env(environ).get(ENV_BASE_URL) or None


def env_api_key(environ: Mapping[str, str] | None = None) -> str | None:
    return _env(environ).get(ENV_API_KEY) or None


def llm_defaults(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The LLM form's pre-filled values: model and base URL from the server's environment."""
    env = _env(environ)
    return {"model": env.get(ENV_MODEL, ""), "base_url": env.get(ENV_BASE_URL, "")}


def require_model(model: str | None, environ: Mapping[str, str] | None = None) -> str:
    """``model``, else $SEARCHGRADE_LLM_MODEL; neither is an error that says how to give one."""
    model = model or env_model(environ)
    if not model:
        raise SearchGradeError(f"no LLM model given; pass --model NAME or set {ENV_MODEL}")
    return model


def require_endpoint(base_url: str | None, environ: Mapping[str, str] | None = None) -> str | None:
    """``base_url``, else $OPENAI_BASE_URL; None (the hosted API) only when $OPENAI_API_KEY is set."""
    base_url = base_url or env_base_url(environ)
    if base_url is None and not env_api_key(environ):
        raise SearchGradeError(f"no LLM endpoint; pass --base-url URL (a local OpenAI-compatible "
                               f"server) or set {ENV_BASE_URL}, or set {ENV_API_KEY} for the hosted API")
    return base_url


def settings_from_env(environ: Mapping[str, str] | None = None) -> Any:
    """LLMSettings with the model from $SEARCHGRADE_LLM_MODEL (the endpoint comes from $OPENAI_BASE_URL)."""
    from searchgrade.engine.llm.client import LLMSettings

    return LLMSettings(model=require_model(None, environ))


def endpoint_status(model: str | None, base_url: str | None,
                    environ: Mapping[str, str] | None = None) -> tuple[bool, str]:
    """Whether the LLM can run: a model name, and an endpoint (a base URL typed or in
    $OPENAI_BASE_URL, or $OPENAI_API_KEY for the hosted API). None means: from the environment.

    Returns (ready, why): why is the reason it cannot, or what it will use.
    """
    defaults = llm_defaults(environ)
    model = (defaults["model"] if model is None else model).strip()
    base_url = (defaults["base_url"] if base_url is None else base_url).strip()
    if not model:
        return False, f"no LLM model: type one under LLM endpoint, or set {ENV_MODEL} and restart the app"
    if base_url:
        return True, f"model {model} at {base_url}"
    if env_api_key(environ):
        return True, f"model {model} on the hosted OpenAI API ({ENV_API_KEY} is set)"
    return False, (f"no LLM endpoint: type a base URL under LLM endpoint (a local OpenAI-compatible "
                   f"server), or set {ENV_BASE_URL} or {ENV_API_KEY} and restart the app")


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
    env = _env(environ)
    urls = {normalise_url(env_base_url(environ))}
    urls |= {normalise_url(u) for u in env.get(ENV_ALLOWED_URLS, "").split(",") if u.strip()}
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
