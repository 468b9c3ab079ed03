"""The LLM settings the server's environment gives: the model, the endpoint and the key.

Read here and nowhere else. The key is only ever looked up to pass to the client or to say
whether it is set; it is never stored, logged or shown. Which endpoints may receive it is the key
policy's business (engine/llm/key_policy.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from searchgrade.core.records import SearchGradeError

#: The model, when neither --model nor the form names one.
ENV_MODEL = "SEARCHGRADE_LLM_MODEL"
#: An OpenAI-compatible endpoint (a local server); unset means the hosted OpenAI API.
ENV_BASE_URL = "OPENAI_BASE_URL"
#: The key of the hosted API (a local server needs none).
ENV_API_KEY = "OPENAI_API_KEY"
#: More endpoints that may receive the key: comma-separated base URLs.
ENV_ALLOWED_URLS = "SEARCHGRADE_LLM_ALLOWED_URLS"
#: Extra request headers the openai package adds, one "Name: value" a line.
ENV_CUSTOM_HEADERS = "OPENAI_CUSTOM_HEADERS"
#: The endpoint the openai package uses when no base URL is given.
HOSTED_URL = "https://api.openai.com/v1"


def _env(environ: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if environ is None else environ


def env_model(environ: Mapping[str, str] | None = None) -> str | None:
    return _env(environ).get(ENV_MODEL) or None


def env_base_url(environ: Mapping[str, str] | None = None) -> str | None:
    return _env(environ).get(ENV_BASE_URL) or None


def env_api_key(environ: Mapping[str, str] | None = None) -> str | None:
    return _env(environ).get(ENV_API_KEY) or None


def env_allowed_urls(environ: Mapping[str, str] | None = None) -> list[str]:
    """The base URLs listed in $SEARCHGRADE_LLM_ALLOWED_URLS, as written."""
    return [u for u in _env(environ).get(ENV_ALLOWED_URLS, "").split(",") if u.strip()]


def env_custom_header_names(environ: Mapping[str, str] | None = None) -> set[str]:
    """The names (lowercase) of the headers $OPENAI_CUSTOM_HEADERS adds."""
    return {line.split(":", 1)[0].strip().lower()
            for line in _env(environ).get(ENV_CUSTOM_HEADERS, "").splitlines() if ":" in line}


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
