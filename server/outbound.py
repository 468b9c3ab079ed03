"""What a person types in the app may make the server connect to: the app's face of the outbound
guard (core/outbound.py holds the rules; this adds what only the app knows: whether it is exposed,
and which LLM endpoints are the operator's).

For the pages and for any feature that connects to a target typed in the app (a search backend, the
LLM endpoint, a suite's webhook URL or SMTP host)::

    from searchgrade.server.outbound import browser_policy, check_typed_url

    check_typed_url(url, exposed=app_exposed(), what="webhook url")   # OutboundRefused, one line
    policy = browser_policy(exposed=app_exposed())
    policy.session().post(url, json=payload, timeout=10)     # every connection and redirect checked
    policy.check_secret("HOOK_TOKEN", host, "headers.Authorization")  # an env: secret for that host
    sock = policy.create_connection((smtp_host, 587), timeout=10)     # e.g. in SMTP._get_socket

``exposed`` is the page's ``app_exposed()`` (views/_common.py): on a loopback-only app the person at
the keyboard is the operator, and any address is theirs; secrets and paths are held to the policy on
every app. Code below the pages (engine/) that sends to a typed target later, in a run or a suite,
takes the policy from core/outbound.py (``OutboundPolicy.for_browser`` or ``policy_for``) with the
exposure recorded when the target was typed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from searchgrade.core.outbound import (
    APP,
    ENV_ALLOWED_HOSTS,
    ENV_SECRETS,
    EXPOSED_APP,
    OutboundPolicy,
    OutboundRefused,
)
from searchgrade.engine.llm.key_policy import key_allowed

__all__ = ["ENV_ALLOWED_HOSTS", "ENV_SECRETS", "OutboundPolicy", "OutboundRefused", "TypedEndpoint",
           "browser_policy", "check_judge_endpoints", "check_llm_endpoint", "check_typed_host", "check_typed_url"]


def browser_policy(exposed: bool, environ: Mapping[str, str] | None = None) -> OutboundPolicy:
    """The policy for what is typed in this app (``exposed``: bound beyond loopback)."""
    return OutboundPolicy.for_browser(exposed, environ)


def check_typed_url(url: str, exposed: bool, what: str = "url", environ: Mapping[str, str] | None = None) -> list[str]:
    """A typed http(s) URL, its host checked after DNS resolution; its checked addresses.

    Raises:
        OutboundRefused: one line naming what was typed, why, and what the operator can allow.
    """
    return browser_policy(exposed, environ).check_url(url, what)


def check_typed_host(host: str, port: int, exposed: bool, what: str = "host",
                     environ: Mapping[str, str] | None = None) -> list[str]:
    """A typed host (an SMTP server, say), checked after DNS resolution; its checked addresses.

    Raises:
        OutboundRefused: one line.
    """
    return browser_policy(exposed, environ).check_host(host, port, what)


def check_judge_endpoints(judge_models: Sequence[str], exposed: bool,
                          environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """A panel's judges typed in the browser: each ``NAME@URL`` endpoint held to the LLM endpoint's
    policy (``check_llm_endpoint``); judge name -> where its endpoint was typed ("" for the
    operator's), for the run's settings (``RunConfig.judges_declared_in``).

    Raises:
        OutboundRefused: one line; SearchGradeError: a list that names no judge rightly.
    """
    from searchgrade.engine.judges.spec import parse_judge_models

    return {spec.name: check_llm_endpoint(spec.base_url, exposed, environ).declared_in
            for spec in (parse_judge_models(list(judge_models)) if judge_models else ()) if spec.base_url}


@dataclass(frozen=True)
class TypedEndpoint:
    """An LLM endpoint typed on a page, checked, with where it was typed: ``declared_in`` goes into
    the run's ``LLMSettings`` ("" for one of the operator's, else "app" / "exposed app"), so that
    every connection to it, in this run and in whatever continues it, goes through the policy."""

    base_url: str | None
    declared_in: str = ""


def check_llm_endpoint(base_url: str | None, exposed: bool,
                       environ: Mapping[str, str] | None = None) -> TypedEndpoint:
    """An LLM endpoint typed in the app (the Evaluate page's, the Resume form's): the operator's
    (``$OPENAI_BASE_URL``, the hosted API, the URLs in ``$SEARCHGRADE_LLM_ALLOWED_URLS``) pass as
    theirs; any other typed URL goes through the guard and is marked typed (it also gets no key,
    engine/llm/key_policy.py, and follows no redirect, engine/llm/client.py).

    Raises:
        OutboundRefused: one line.
    """
    base_url = (base_url or "").strip() or None
    if not base_url or key_allowed(base_url, environ):
        return TypedEndpoint(base_url)
    check_typed_url(base_url, exposed, "LLM endpoint base URL", environ)
    return TypedEndpoint(base_url, EXPOSED_APP if exposed else APP)
