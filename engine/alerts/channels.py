"""Sending one alert: to a webhook (POST JSON ``{"text": ...}``) or by email (SMTP).

Email settings come from the environment only: ``SEARCHGRADE_SMTP_HOST`` (required), ``_PORT``
(default 587), ``_USER``, ``_FROM`` (default ``searchgrade@<host name>``) and ``_CA_FILE``; the
password only from ``SEARCHGRADE_SMTP_PASSWORD``, never stored, logged or shown.

TLS: the connection is upgraded with STARTTLS whenever the server offers it, and the server's
certificate is verified (its chain against the system's CAs, plus the PEM file in
``SEARCHGRADE_SMTP_CA_FILE`` for a private CA; its name against ``SEARCHGRADE_SMTP_HOST``). There is
no switch to turn verification off: an untrusted certificate is refused with the line naming
``_CA_FILE``. A server that offers no STARTTLS is used in plain (a relay on loopback, as the tests
do) only when no login is to be made: with ``_USER`` set it is refused, so the password never
crosses in clear. A refusal (untrusted certificate, no STARTTLS for a login, a login refused) is
``ChannelRefused``: trying again cannot mend it, so deliver.py does not retry it.

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
ENV_SMTP_CA_FILE = "SEARCHGRADE_SMTP_CA_FILE"
DEFAULT_SMTP_PORT = 587
SMTPS_PORT = 465
TIMEOUT_S = 10.0
#: OpenSSL's X509_V_ERR_HOSTNAME_MISMATCH and X509_V_ERR_IP_ADDRESS_MISMATCH: the chain is trusted,
#: the name is not the certificate's.
CERT_NAME_MISMATCH = (62, 64)


class ChannelRefused(SearchGradeError):  # noqa: N818 - a refusal by the channel, not our error
    """A channel that refused, or was refused, in a way no retry mends (module docstring)."""


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
        SearchGradeError: no host, a port that is not a number (or 465, implicit TLS), a user without
            a password, a CA file that is not a file.
    """
    env = os.environ if environ is None else environ
    host = env.get(ENV_SMTP_HOST, "").strip()
    if not host:
        raise SearchGradeError(f"email alerts need an SMTP server: set {ENV_SMTP_HOST} (and {ENV_SMTP_PORT}, "
                               f"{ENV_SMTP_USER}, {ENV_SMTP_FROM}; the password in {ENV_SMTP_PASSWORD})")
    raw_port = env.get(ENV_SMTP_PORT, "").strip() or str(DEFAULT_SMTP_PORT)
    if not raw_port.isdigit() or not 0 < int(raw_port) < 65536:
        raise SearchGradeError(f"{ENV_SMTP_PORT}={raw_port!r} is not a TCP port; set it to e.g. 587")
    if int(raw_port) == SMTPS_PORT:  # would wait for a greeting the server sends only after a TLS handshake
        raise SearchGradeError(f"{ENV_SMTP_PORT}=465 is implicit TLS (SMTPS), which searchgrade does not speak; "
                               "set the server's STARTTLS port, usually 587")
    user = env.get(ENV_SMTP_USER, "").strip() or None
    password = env.get(ENV_SMTP_PASSWORD) or None
    if user and not password:
        raise SearchGradeError(f"{ENV_SMTP_USER} is set but {ENV_SMTP_PASSWORD} is not: set the password there "
                               "(it is read only from the environment)")
    sender = env.get(ENV_SMTP_FROM, "").strip() or f"searchgrade@{socket.gethostname()}"
    ca_file = env.get(ENV_SMTP_CA_FILE, "").strip() or None
    if ca_file and not os.path.isfile(ca_file):
        raise SearchGradeError(f"{ENV_SMTP_CA_FILE}={ca_file!r} is not a file; give the PEM file of the CA that "
                               "signed the SMTP server's certificate")
    return {"host": host, "port": int(raw_port), "user": user, "password": password, "sender": sender,
            "ca_file": ca_file}


def tls_context(settings: Mapping[str, object]) -> ssl.SSLContext:
    """A client context that verifies the server: the system's CAs, plus ``_CA_FILE`` when set.

    Raises:
        SearchGradeError: the CA file holds no certificate Python can read.
    """
    context = ssl.create_default_context()
    if settings.get("ca_file"):
        try:
            context.load_verify_locations(cafile=str(settings["ca_file"]))
        except ssl.SSLError as exc:
            raise SearchGradeError(f"{ENV_SMTP_CA_FILE}={settings['ca_file']!r} holds no CA certificate "
                                   f"({exc.reason or exc}); give a PEM file (-----BEGIN CERTIFICATE-----)") from None
    return context


def _session(settings: Mapping[str, object]) -> smtplib.SMTP:
    """A connected SMTP session: greeted, upgraded with STARTTLS when offered, logged in when a user is
    set (module docstring). Raises ChannelRefused, or OSError/SMTPException for a server that fails."""
    host, port, user = str(settings["host"]), int(settings["port"]), settings["user"]
    where = f"the SMTP server {host}:{port}"
    smtp = smtplib.SMTP(host, port, timeout=TIMEOUT_S)
    try:
        smtp.ehlo()
        if smtp.has_extn("starttls"):
            try:
                smtp.starttls(context=tls_context(settings))
            except ssl.SSLCertVerificationError as exc:
                if exc.verify_code in CERT_NAME_MISMATCH:
                    raise ChannelRefused(f"{where}'s certificate is not issued to {host!r} ({exc.verify_message}); "
                                         f"set {ENV_SMTP_HOST} to a name the certificate names") from None
                raise ChannelRefused(f"{where}'s certificate is not trusted ({exc.verify_message}); set "
                                     f"{ENV_SMTP_CA_FILE} to the PEM file of the CA that signed it (verification "
                                     "cannot be turned off)") from None
            smtp.ehlo()
        elif user:
            raise ChannelRefused(f"{where} offers no STARTTLS, so the login of {ENV_SMTP_USER} was not made (its "
                                 "password is never sent in clear); enable STARTTLS on the server, or unset "
                                 f"{ENV_SMTP_USER} and {ENV_SMTP_PASSWORD} for a relay that needs no login")
        if user:
            try:
                smtp.login(str(user), str(settings["password"]))
            except smtplib.SMTPAuthenticationError as exc:
                answer = exc.smtp_error.decode("utf-8", "replace") if isinstance(exc.smtp_error, bytes) \
                    else str(exc.smtp_error)
                raise ChannelRefused(f"{where} refused the login of {user!r} ({exc.smtp_code} {answer}); check "
                                     f"{ENV_SMTP_USER} and {ENV_SMTP_PASSWORD}") from None
            except smtplib.SMTPResponseException:
                raise
            except smtplib.SMTPException:  # no AUTH at all, or none of PLAIN, LOGIN, CRAM-MD5 offered
                offered = smtp.esmtp_features.get("auth", "").strip() or "none"
                raise ChannelRefused(f"{where} offers no login searchgrade can make (PLAIN, LOGIN or CRAM-MD5; it "
                                     f"offers: {offered}); unset {ENV_SMTP_USER} and {ENV_SMTP_PASSWORD} if it "
                                     "relays without a login") from None
    except BaseException:
        smtp.close()
        raise
    return smtp


def check_smtp_server(environ: Mapping[str, str] | None = None) -> None:
    """The SMTP server of the environment answers, its certificate is trusted and the login (if any)
    is accepted, as a send would need them, or one line naming the problem.

    Raises:
        SearchGradeError: the settings are incomplete, the server does not answer, or it is refused
            (ChannelRefused: an untrusted certificate, no STARTTLS for a login, a refused login).
    """
    settings = smtp_settings(environ)
    try:
        _session(settings).quit()
    except (OSError, smtplib.SMTPException) as exc:
        raise SearchGradeError(f"the SMTP server {settings['host']}:{settings['port']} does not answer "
                               f"({exc}); check {ENV_SMTP_HOST} and {ENV_SMTP_PORT}") from None


def send_email(address: str, subject: str, text: str, environ: Mapping[str, str] | None = None) -> None:
    """Send one message over SMTP (module docstring: STARTTLS, verification, login); raises on any
    failure, ChannelRefused for one that no retry mends."""
    settings = smtp_settings(environ)
    message = EmailMessage()
    message["From"] = str(settings["sender"])
    message["To"] = address
    message["Subject"] = subject
    message.set_content(text)
    try:
        with _session(settings) as smtp:
            smtp.send_message(message)
    except (OSError, smtplib.SMTPException) as exc:
        raise OSError(f"SMTP server {settings['host']}:{settings['port']}: {exc}") from None
