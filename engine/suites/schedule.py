"""A suite's schedule: a cron expression (croniter) or a fixed interval, always in UTC.

A schedule has **slots**: the times it comes due. ``--cron "0 2 * * *"`` has one slot every day at
02:00 UTC; ``--every 6h`` one every 6 hours from the moment it was set (its anchor). The worker
(engine/suites/worker.py) runs the newest slot that is due and not handled yet, so a worker that
was down runs a missed schedule once, not once per missed slot.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

from searchgrade.core.records import SearchGradeError

KINDS = ("cron", "every")
_EVERY = re.compile(r"^\s*(\d+)\s*([smhd])\s*$")
_UNIT_S = {"s": 1, "m": 60, "h": 3600, "d": 86400}
#: The longest interval: a year (a rarer run is a cron expression's, e.g. "0 2 1 1 *").
MAX_EVERY = timedelta(days=366)


def parse_every(text: str) -> timedelta:
    """ "30s", "15m", "6h", "1d" -> an interval from 1 s to MAX_EVERY.

    Raises:
        SearchGradeError: anything else, one line with the allowed range.
    """
    match = _EVERY.match(text or "")
    digits = match.group(1).lstrip("0") if match else ""
    if not digits:
        raise SearchGradeError(f"--every {text!r} is not a positive interval: give a number and a unit, "
                               "s, m, h or d (e.g. 30s, 6h, 1d)")
    # Many digits are out of range before they are read (int() of thousands of digits raises, and
    # timedelta overflows past 999999999 days).
    seconds = int(digits) * _UNIT_S[match.group(2)] if len(digits) <= 12 else None
    if seconds is None or seconds > MAX_EVERY.total_seconds():
        shown = text.strip() if len(text.strip()) <= 24 else text.strip()[:20] + "..."
        raise SearchGradeError(f"--every {shown!r} is longer than a year: give an interval from 1s to "
                               f"{MAX_EVERY.days}d, or a cron expression for a rarer schedule (e.g. "
                               "\"0 2 1 1 *\": yearly)")
    return timedelta(seconds=seconds)


def check_cron(expression: str) -> str:
    """A cron expression croniter reads (5 fields, UTC).

    Raises:
        SearchGradeError: a malformed one, named.
    """
    from croniter import croniter

    if not expression or not croniter.is_valid(expression) or len(expression.split()) != 5:
        raise SearchGradeError(f"--cron {expression!r} is not a cron expression: give 5 fields, minute hour "
                               "day-of-month month day-of-week, in UTC (e.g. \"0 2 * * *\" for 02:00 UTC daily)")
    return expression.strip()


def check(kind: str, expression: str) -> str:
    if kind == "cron":
        return check_cron(expression)
    if kind == "every":
        parse_every(expression)
        return expression.strip()
    raise SearchGradeError(f"schedule kind {kind!r} is not one of {', '.join(KINDS)}")


def describe(kind: str | None, expression: str | None) -> str:
    if kind == "cron":
        return f"cron {expression!r} (UTC)"
    if kind == "every":
        return f"every {expression} (UTC)"
    return "not scheduled"


def latest_slot(kind: str, expression: str, anchor: datetime, now: datetime) -> datetime | None:
    """The newest slot at or before ``now`` and after ``anchor`` (naive UTC), or None."""
    if kind == "every":
        step = parse_every(expression)
        n = int((now - anchor) / step)
        return anchor + n * step if n >= 1 else None
    from croniter import croniter

    # croniter's get_prev is strictly before its start: start just after now, so now itself counts.
    start = now.replace(microsecond=0) + timedelta(seconds=1)
    prev = croniter(expression, start).get_prev(datetime)
    return prev if prev > anchor else None


def next_slot(kind: str, expression: str, anchor: datetime, after: datetime) -> datetime:
    """The first slot strictly after ``after``."""
    if kind == "every":
        step = parse_every(expression)
        n = max(1, int((after - anchor) / step) + 1)
        return anchor + n * step
    from croniter import croniter

    return croniter(expression, max(after, anchor)).get_next(datetime)


def slots_between(kind: str, expression: str, anchor: datetime, start: datetime, end: datetime,
                  limit: int = 10_000) -> int:
    """How many slots lie strictly after ``start`` and strictly before ``end`` (for a note)."""
    count, t = 0, start
    while count < limit:
        t = next_slot(kind, expression, anchor, t)
        if t >= end:
            break
        count += 1
    return count
