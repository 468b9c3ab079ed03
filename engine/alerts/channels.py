"""Sending one alert: to a webhook (POST JSON ``{"text": ...}``) or by email (SMTP).

Email settings come from the environment only: ``SEARCHGRADE_SMTP_HOST`` (required), ``_PORT``
(default 587), ``_USER`` and ``_FROM`` (default ``searchgrade@<host name>``); the password only
from ``SEARCHGRADE_SMTP_PASSWORD``, never stored, logged or shown. The connection is upgraded with
STARTTLS whenever the server offers it (a server on loopback that offers none is used in plain,
as the tests do); a login is made when ``_USER`` is set.

A webhook configured in the app goes through the outbound guard (core/outbound.py ``policy_for``
with where it was typed): its connections, and each redirect's, go only to checked addresses.
"""

from __future__ import annotations

import os
import smtplib
import socket
import ssl
from collections.abc import Mapping
from email.message import EmailMessage
from urllib.parse import urlsplit

from searchgrade.core.outbound import policy_for
from searchgrade.core.records import SearchGradeError

ENV_SMTP_HOST = "SEARCHGRADE_SMTP_HOST"
ENV_SMTP_PORT = "SEARCHGRADE_SMTP_PORT"
ENV_SMTP_USER = "SEARCHGRADE_SMTP_USER"
ENV_SMTP_FROM = "SEARCHGRADE_SMTP_FROM"
ENV_SMTP_PASSWORD = "SEARCHGRADE_SMTP_PASSWORD"
DEFAULT_SMTP_PORT = 587
TIMEOUT_S = 10.0


def check_webhook_url(url: str) -> str:
    """An http(s) URL with a host, or one line naming the fix."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise SearchGradeError(f"webhook URL {url!r} is not an http(s) URL; give the incoming webhook's full "
                               "address, e.g. https://hooks.slack.com/services/...")
    return url.strip()


def check_email_address(address: str) -> str:
    text = address.strip()
    local, _, domain = text.partition("@")
    if not local or not domain or " " in text:
        raise SearchGradeError(f"email address {address!r} is not an email address; give one like team@example.com")
    return text


def mask(target: str) -> str:
    """A target as it may be shown: a webhook's scheme and host only (its path may hold a token),
    an address's first letter and domain."""
    if "@" in target and "://" not in target:
        local, _, domain = target.partition("@")
        return f"{local[:1]}…@{domain}"
    parts = urlsplit(target)
    return f"{parts.scheme}://{parts.hostname}{f':{parts.port}' if parts.port else ''}/…"


def send_webhook(url: str, text: str, *, declared_in: str | None = None) -> None:
    """POST ``{"text": text}`` to the URL; raises on a connection error or a status >= 300."""
    import requests

    policy = policy_for(declared_in or "")
    session = policy.session() if policy is not None else requests.Session()
    if policy is None:
        session.trust_env = False  # the operator's URL: no proxy or .netrc read from the environment
    with session:
        reply = session.post(url, json={"text": text}, timeout=TIMEOUT_S, allow_redirects=False)
    if reply.status_code >= 300:
        raise OSError(f"the webhook answered HTTP {reply.status_code}")


def smtp_settings(environ: Mapping[str, str] | None = None) -> dict[str, object]:
    """The SMTP settings from the environment (module docstring).

    Raises:
        SearchGradeError: no host, a port that is not a number, a user without a password.
    """
    env = os.environ if environ is None else environ
    host = env.get(ENV_SMTP_HOST, "").strip()
    if not host:
        raise SearchGradeError(f"email alerts need an SMTP server: set {ENV_SMTP_HOST} (and {ENV_SMTP_PORT}, "
                               f"{ENV_SMTP_USER}, {ENV_SMTP_FROM}; the password in {ENV_SMTP_PASSWORD})")
    raw_port = env.get(ENV_SMTP_PORT, "").strip() or str(DEFAULT_SMTP_PORT)
    if not raw_port.isdigit() or not 0 < int(raw_port) < 65536:
        raise SearchGradeError(f"{ENV_SMTP_PORT}={raw_port!r} is not a TCP port; set it to e.g. 587")
    user = env.get(ENV_SMTP_USER, "").strip() or None
    password = env.get(ENV_SMTP_PASSWORD) or None
    if user and not password:
        raise SearchGradeError(f"{ENV_SMTP_USER} is set but {ENV_SMTP_PASSWORD} is not: set the password there "
                               "(it is read only from the environment)")
    sender = env.get(ENV_SMTP_FROM, "").strip() or f"searchgrade@{socket.gethostname()}"
    return {"host": host, "port": int(raw_port), "user": user, "password": password, "sender": sender}


def check_smtp_server(environ: Mapping[str, str] | None = None) -> None:
    """The SMTP server of the environment answers (a greeting and EHLO), or one line naming it.

    Raises:
        SearchGradeError: the settings are incomplete, or the server does not answer.
    """
    settings = smtp_settings(environ)
    try:
        with smtplib.SMTP(str(settings["host"]), int(settings["port"]), timeout=TIMEOUT_S) as smtp:
            smtp.ehlo()
    except (OSError, smtplib.SMTPException) as exc:
        raise SearchGradeError(f"the SMTP server {settings['host']}:{settings['port']} does not answer "
                               f"({exc}); check {ENV_SMTP_HOST} and {ENV_SMTP_PORT}") from None


def send_email(address: str, subject: str, text: str, environ: Mapping[str, str] | None = None) -> None:
    """Send one message over SMTP (STARTTLS when offered); raises on any failure."""
    settings = smtp_settings(environ)
    message = EmailMessage()
    message["From"] = str(settings["sender"])
    message["To"] = address
    message["Subject"] = subject
    message.set_content(text)
    try:
        with smtplib.SMTP(str(settings["host"]), int(settings["port"]), timeout=TIMEOUT_S) as smtp:
            smtp.ehlo()
            if smtp.has_extn("starttls"):
                smtp.starttls(context=ssl.create_default_context())
                smtp.ehlo()
            if settings["user"]:
                smtp.login(str(settings["user"]), str(settings["password"]))
            smtp.send_message(message)
    except (OSError, smtplib.SMTPException) as exc:
        raise OSError(f"SMTP server {settings['host']}:{settings['port']}: {exc}") from None
