"""A chunking setting is checked once, each problem one line naming the key and the fix."""

from __future__ import annotations

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.chunking.aggregate import Aggregate, parse_aggregate
from searchgrade.indexes.chunking.spec import Chunking, parse_chunking


def test_a_table_becomes_a_checked_chunking_and_none_means_whole_documents():
    assert parse_chunking({"method": "tokens", "size": 128, "overlap": 16}) == Chunking("tokens", 128, 16)
    assert parse_chunking({"size": 3}) == Chunking("tokens", 3, 0)
    assert parse_chunking(None) is None


@pytest.mark.parametrize(("table", "words"), [
    ({"method": "tokens", "size": 128, "overlap": 128}, "overlap of 128 must be at least 0 and less than size"),
    ({"method": "tokens", "size": 64, "overlap": 100}, "less than size (64 tokens)"),
    ({"method": "paragraphs", "size": 3}, "method 'paragraphs' is not known: use one of tokens, sentences, markdown"),
    ({"method": "tokens", "size": 0}, "size must be at least 1"),
    ({"method": "tokens", "size": 12.5}, "size must be a whole number of tokens"),
    ({"method": "tokens"}, "missing key 'size'"),
    ({"method": "tokens", "size": 8, "stride": 4}, "unknown key 'stride'"),
    ("tokens", "must be a table"),
])
def test_a_bad_chunking_is_one_line_naming_the_problem(table, words):
    with pytest.raises(SearchGradeError) as caught:
        parse_chunking(table, "[strategy.x]: chunking")
    message = str(caught.value)
    assert words in message and "\n" not in message and message.startswith("[strategy.x]: chunking")


def test_the_fingerprint_changes_with_every_setting_and_the_tokenizer():
    base = Chunking("tokens", 128, 16)
    prints = {base.fingerprint("t1"), base.fingerprint("t2"), Chunking("tokens", 128, 8).fingerprint("t1"),
              Chunking("tokens", 64, 16).fingerprint("t1"), Chunking("markdown", 128, 16).fingerprint("t1")}
    assert len(prints) == 5
    assert base.fingerprint("t1") == Chunking("tokens", 128, 16).fingerprint("t1")


@pytest.mark.parametrize(("value", "expected"), [
    ("max", Aggregate("max")), ("first", Aggregate("first")), ("sum_top2", Aggregate("sum_top", 2)),
    ("sum_top10", Aggregate("sum_top", 10)),
])
def test_aggregates_parse(value, expected):
    assert parse_aggregate(value) == expected and str(parse_aggregate(value)) == value


@pytest.mark.parametrize("value", ["mean", "sum_top0", "sum_top", "MAX"])
def test_an_unknown_aggregate_names_the_accepted_ones(value):
    with pytest.raises(SearchGradeError, match="use one of max, sum_top2, first"):
        parse_aggregate(value)
