"""Reading logs: layouts, guessed columns, times in several forms, counts, Parquet, the privacy floor."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.store import Store
from searchgrade.engine.traffic.logs import LogOptions, import_log
from searchgrade.engine.traffic.query_sets import SetOptions, create_query_set, set_queries


def test_a_counts_log_is_summed_per_normalised_query(tmp_path):
    path = tmp_path / "counts.tsv"
    path.write_text("search_term\tcount\nMars  Rover\t5\nmars rover\t2\njupiter\t3\n", encoding="utf-8")
    s = import_log(Store(tmp_path / "d"), path)
    assert s.layout == "counts" and s.columns == {"query": "search_term", "count": "count"}
    assert (s.queries, s.searches, s.rows_read) == (2, 10, 3)
    assert "no time column" in s.notes[0]


def test_times_in_iso_with_offsets_and_epoch_seconds_and_ms_are_utc(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("q,ts\na,2024-05-01T12:00:00+02:00\na,1714564800\na,1714564800000\n", encoding="utf-8")
    store = Store(tmp_path / "d")
    s = import_log(store, path)
    assert str(s.first_seen) == "2024-05-01 10:00:00" and str(s.last_seen) == "2024-05-01 12:00:00"


def test_a_parquet_log_with_users_and_the_privacy_floor_on_users(tmp_path):
    path = tmp_path / "log.parquet"
    pq.write_table(pa.table({"query": ["a", "a", "a", "b", "b", "c"], "user_id": ["u1", "u2", "u3", "u1", "u1", "u2"]}),
                   path)
    store = Store(tmp_path / "d")
    s = import_log(store, path, LogOptions(min_users=2))
    assert (s.kept_queries, s.kept_searches, s.dropped_queries) == (1, 3, 2)
    assert "dropped 2 of 3 distinct queries (3 searches, 50.0% of traffic) by fewer than 2 users" in s.floor_line()
    assert [r["text"] for r in store.log_rank_range(s.log_name, 1, 10)] == ["a"]


def test_min_users_without_a_user_column_is_refused(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("query\na\n", encoding="utf-8")
    with pytest.raises(SearchGradeError, match="needs a user or session column"):
        import_log(Store(tmp_path / "d"), path, LogOptions(min_users=3))


def test_a_log_name_is_not_replaced_by_accident(tmp_path):
    path = tmp_path / "log.csv"
    path.write_text("query\na\n", encoding="utf-8")
    store = Store(tmp_path / "d")
    import_log(store, path)
    with pytest.raises(SearchGradeError, match="--replace"):
        import_log(store, path)
    assert import_log(store, path, LogOptions(replace=True)).kept_queries == 1


def test_a_stratified_set_stores_each_querys_count_band_and_weight(tmp_path):
    path = tmp_path / "log.csv"
    rows = [f"query {r}" for r in range(1, 41) for _ in range(max(1, 200 // r))]
    path.write_text("query\n" + "\n".join(rows) + "\n", encoding="utf-8")
    store = Store(tmp_path / "d")
    import_log(store, path)
    summary = create_query_set(store, "log", SetOptions(method="stratified", size=12, seed=1))
    assert summary.set_name == "log-stratified-12-s1" and summary.size == 12
    queries = set_queries(store, summary.set_name)
    assert {q.band for q in queries} == {"head", "torso", "tail"}
    assert all(q.query_id.startswith("q-") and q.searches >= 1 and q.weight >= q.searches for q in queries)
    with pytest.raises(SearchGradeError, match="stored already"):
        create_query_set(store, "log", SetOptions(method="stratified", size=12, seed=1))
