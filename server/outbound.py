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

from searchgrade.core.outbound import ENV_ALLOWED_HOSTS, ENV_SECRETS, OutboundPolicy, OutboundRefused
from searchgrade.engine.llm.key_policy import key_allowed

__all__ = ["ENV_ALLOWED_HOSTS", "ENV_SECRETS", "OutboundPolicy", "OutboundRefused", "browser_policy",
           "check_llm_endpoint", "check_typed_host", "check_typed_url"]


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


def check_judge_endpoints(judge_models: Sequence[str], exposed: bool, environ: Mapping[str, str] | None = None) -> None:
    """A panel's judges typed in the browser: each ``NAME@URL`` endpoint held to the LLM endpoint's
    policy (``check_llm_endpoint``).

    Raises:
        OutboundRefused: one line; SearchGradeError: a list that names no judge rightly.
    """
    from searchgrade.engine.judges.spec import parse_judge_models

    for spec in parse_judge_models(list(judge_models)) if judge_models else ():
        if spec.base_url:
            check_llm_endpoint(spec.base_url, exposed, environ)


def check_llm_endpoint(base_url: str | None, exposed: bool, environ: Mapping[str, str] | None = None) -> None:
    """The Evaluate page's LLM endpoint: the operator's (``$OPENAI_BASE_URL``, the hosted API, the
    URLs in ``$SEARCHGRADE_LLM_ALLOWED_URLS``) pass; any other typed URL goes through the guard (and
    gets no key, engine/llm/key_policy.py, and follows no redirect, engine/llm/client.py).

    Raises:
        OutboundRefused: one line.
    """
    if not base_url or key_allowed(base_url, environ):
        return
    check_typed_url(base_url, exposed, "LLM endpoint base URL", environ)
