"""Schedules: intervals and cron expressions (croniter), in UTC; slots, the newest due slot, missed slots."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.suites.schedule import check, latest_slot, next_slot, parse_every, slots_between

ANCHOR = datetime(2026, 1, 1, 0, 0, 0)


@pytest.mark.parametrize("text, seconds", [("30s", 30), ("15m", 900), ("6h", 21600), ("1d", 86400)])
def test_every_reads_a_number_and_a_unit(text, seconds):
    assert parse_every(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("kind, expression", [("every", "0s"), ("every", "6 hours"), ("cron", "0 2 * *"),
                                              ("cron", "61 * * * *"), ("cron", "0 2 * * * *"), ("hourly", "1")])
def test_a_malformed_schedule_is_refused(kind, expression):
    with pytest.raises(SearchGradeError):
        check(kind, expression)


def test_an_interval_is_at_most_a_year_and_a_longer_one_names_the_range():
    assert parse_every("366d") == timedelta(days=366)
    assert parse_every("0001s") == timedelta(seconds=1)
    for text in ("367d", "8785h", "99999999999d", "9" * 5000 + "s"):
        with pytest.raises(SearchGradeError, match="from 1s to 366d"):
            parse_every(text)


def test_an_interval_has_its_slots_from_its_anchor():
    assert latest_slot("every", "10s", ANCHOR, ANCHOR + timedelta(seconds=9)) is None
    assert latest_slot("every", "10s", ANCHOR, ANCHOR + timedelta(seconds=25)) == ANCHOR + timedelta(seconds=20)
    assert next_slot("every", "10s", ANCHOR, ANCHOR + timedelta(seconds=20)) == ANCHOR + timedelta(seconds=30)


def test_a_cron_slot_counts_at_its_own_second_and_not_before_the_anchor():
    at_two = datetime(2026, 1, 3, 2, 0, 0)
    assert latest_slot("cron", "0 2 * * *", ANCHOR, at_two) == at_two
    assert latest_slot("cron", "0 2 * * *", ANCHOR, at_two - timedelta(seconds=1)) == datetime(2026, 1, 2, 2)
    assert latest_slot("cron", "0 2 * * *", datetime(2026, 1, 3, 1), datetime(2026, 1, 3, 1, 30)) is None
    assert next_slot("cron", "0 2 * * *", ANCHOR, at_two) == datetime(2026, 1, 4, 2)


def test_slots_between_counts_what_a_stopped_worker_missed():
    # Slots at 02:00 on Jan 1..5; after Jan 1's and before Jan 5's: Jan 2, 3, 4.
    assert slots_between("cron", "0 2 * * *", ANCHOR, datetime(2026, 1, 1, 2), datetime(2026, 1, 5, 2)) == 3
    assert slots_between("every", "1h", ANCHOR, ANCHOR, ANCHOR + timedelta(hours=1)) == 0
