"""When a request is sent again, and after how long: transient errors, Retry-After, backoff.

Timeouts, connection errors, 408, 409, 429 and 5xx are retried with exponential backoff (with
jitter, so that workers do not retry in step), honouring ``Retry-After`` when the server sends it.
"""

from __future__ import annotations

import random
import time
from email.utils import parsedate_to_datetime
from typing import Any

#: Status codes worth retrying after a wait (and every 5xx).
TRANSIENT = {408, 409, 429}


def backoff_seconds(attempt: int, backoff_s: float, max_backoff_s: float, rng: random.Random) -> float:
    """The wait before retry ``attempt + 1``: backoff_s * 2**attempt, at most max_backoff_s, then
    up to 25% longer at random."""
    wait_s = min(max_backoff_s, backoff_s * 2**attempt)
    return wait_s * (1.0 + 0.25 * rng.random())


def retry_after_seconds(headers: Any) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date)."""
    if headers is None:
        return None
    ms = headers.get("retry-after-ms")
    if ms:
        try:
            return max(0.0, float(ms) / 1000.0)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())
