"""Every alert channel of a suite, each retried, each outcome recorded; never raises.

A channel that fails (a webhook that answers 500, an SMTP server that does not answer) is tried
``ATTEMPTS`` times with a short backoff, then recorded failed with its error (shown by
`searchgrade suite show` and on the Suites page). A failure no retry mends (the settings are
incomplete, a certificate is untrusted, a login is refused: a SearchGradeError, ChannelRefused
included) is recorded at once: retrying a refused password would only risk locking the account.
Nothing here fails the run that raised the alert.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.alerts.channels import mask, send_email, send_webhook

ATTEMPTS = 3
BACKOFF_S = 0.5


@dataclass(frozen=True)
class Delivery:
    channel: str
    #: The target as it may be shown (engine/alerts/channels.py ``mask``).
    target: str
    ok: bool
    attempts: int
    error: str | None = None


def _attempt(send: Callable[[], None], sleep: Callable[[float], None]) -> tuple[int, str | None]:
    error = None
    for attempt in range(1, ATTEMPTS + 1):
        try:
            send()
            return attempt, None
        except Exception as exc:  # noqa: BLE001 - a channel never fails the run: every error is recorded instead
            error = (str(exc).splitlines() or [type(exc).__name__])[0][:300]
            if isinstance(exc, SearchGradeError):
                return attempt, error
            if attempt < ATTEMPTS:
                sleep(BACKOFF_S * attempt)
    return ATTEMPTS, error


def deliver(store: Any, suite: Any, *, kind: str, subject: str, text: str, entry_id: str | None = None,
            sleep: Callable[[float], None] = time.sleep) -> list[Delivery]:
    """Send ``text`` to each channel of ``suite`` (a SuiteRecord) and record each outcome.

    Args:
        kind: "regression", "could not evaluate", "recovered" or "test".
    """
    out = []
    channels: list[tuple[str, str, Callable[[], None]]] = []
    if suite.webhook:
        channels.append(("webhook", suite.webhook,
                         lambda: send_webhook(suite.webhook, text, declared_in=suite.alerts_declared_in)))
    if suite.email:
        channels.append(("email", suite.email, lambda: send_email(suite.email, subject, text)))
    for channel, target, send in channels:
        attempts, error = _attempt(send, sleep)
        delivery = Delivery(channel, mask(target), error is None, attempts, error)
        try:
            store.record_alert(suite_name=suite.name, entry_id=entry_id, kind=kind, channel=channel,
                               target=delivery.target, status="sent" if delivery.ok else "failed",
                               attempts=attempts, error=error, text=text)
        except Exception:  # noqa: BLE001, S110 - the record is best effort: the alert itself was the point
            pass
        out.append(delivery)
    return out
