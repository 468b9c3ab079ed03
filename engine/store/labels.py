"""Human labels (people's ratings, imported qrels), review queues, and per-query lexical overlap.

Labels belong to a collection (by name), not to a run: every later run on the collection reuses
them. Every rating is kept (several raters, a rater changing their mind); engine/labels/ratings.py
decides which apply to a run's pairs and how several raters' grades combine.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import duckdb

from searchgrade.engine.store.connection import StoreConnection, and_equal, insert_frame, now_utc

LABEL_COLUMNS = ["label_id", "collection_name", "query_id", "query_text", "doc_id", "content_hash",
                 "grade", "rater", "note", "origin", "run_id", "created_at"]


class LabelsMixin(StoreConnection):
    """Labels, review queues and query overlap."""

    # -- labels

    def add_labels(self, rows: Iterable[dict[str, Any]]) -> int:
        """Store ratings (dicts with LABEL_COLUMNS; created_at defaults to now) in one transaction."""
        now = now_utc()
        tuples = [tuple(r.get(c) if c != "created_at" else (r.get(c) or now) for c in LABEL_COLUMNS)
                  for r in rows]
        with self.transaction() as con:
            insert_frame(con, "labels", tuples, LABEL_COLUMNS)
        return len(tuples)

    def labels(self, collection_name: str, *, doc_ids: Sequence[str] | None = None,
               rater: str | None = None) -> list[dict[str, Any]]:
        """A collection's ratings, oldest first (optionally of some documents, or of one rater)."""
        sql = f"SELECT {', '.join(LABEL_COLUMNS)} FROM labels WHERE collection_name = ?"  # noqa: S608 - constant names, values bound
        params: list[Any] = [collection_name]
        if doc_ids is not None:
            sql += " AND list_contains(?, doc_id)"
            params.append(list(doc_ids))
        sql = and_equal(sql, params, {"rater": rater})
        return self._dicts(sql + " ORDER BY created_at, label_id", params)

    def label_counts(self) -> list[dict[str, Any]]:
        """Per collection: ratings, rated pairs and raters."""
        return self._dicts(
            "SELECT collection_name, count(*) AS ratings, count(DISTINCT (query_id, doc_id)) AS pairs, "
            "count(DISTINCT rater) AS raters, max(created_at) AS latest FROM labels "
            "GROUP BY collection_name ORDER BY collection_name", [])

    def latest_label_time(self, collection_name: str):
        with self.connect() as con:
            return con.execute("SELECT max(created_at) FROM labels WHERE collection_name = ?",
                               [collection_name]).fetchone()[0]

    # -- review queues

    def create_review_queue(self, queue: dict[str, Any], items: Sequence[tuple[str, str, str]]) -> None:
        """A queue (queue_id, run_id, mode, size, k, seed, created_by) and its items
        (query_id, doc_id, stratum) in order, in one transaction."""
        with self.transaction() as con:
            con.execute(
                "INSERT INTO review_queues (queue_id, run_id, mode, size, k, seed, created_at, created_by) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [queue["queue_id"], queue["run_id"], queue["mode"], queue["size"], queue["k"],
                 queue["seed"], now_utc(), queue.get("created_by")])
            insert_frame(con, "review_items",
                         [(queue["queue_id"], i, q, d, s) for i, (q, d, s) in enumerate(items)],
                         ["queue_id", "position", "query_id", "doc_id", "stratum"])

    def review_queues(self, run_id: str) -> list[dict[str, Any]]:
        """A run's review queues, newest first, with their item counts."""
        return self._dicts(
            "SELECT q.queue_id, q.run_id, q.mode, q.size, q.k, q.seed, q.created_at, q.created_by, "
            "count(i.position) AS items FROM review_queues q LEFT JOIN review_items i USING (queue_id) "
            "WHERE q.run_id = ? GROUP BY ALL ORDER BY q.created_at DESC, q.queue_id", [run_id])

    def review_queue(self, queue_id: str) -> dict[str, Any] | None:
        rows = self._dicts("SELECT queue_id, run_id, mode, size, k, seed, created_at, created_by "
                           "FROM review_queues WHERE queue_id = ?", [queue_id])
        return rows[0] if rows else None

    def review_items(self, queue_id: str) -> list[dict[str, Any]]:
        return self._dicts("SELECT position, query_id, doc_id, stratum FROM review_items "
                           "WHERE queue_id = ? ORDER BY position", [queue_id])

    def skip_review_item(self, queue_id: str, position: int, rater: str) -> None:
        with self.connect() as con:
            con.execute("INSERT INTO review_skips VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                        [queue_id, position, rater, now_utc()])

    def review_skips(self, queue_id: str, rater: str) -> set[int]:
        rows = self._dicts("SELECT position FROM review_skips WHERE queue_id = ? AND rater = ?",
                           [queue_id, rater])
        return {r["position"] for r in rows}

    # -- per-query lexical overlap with the source document

    def write_query_overlap(self, con: duckdb.DuckDBPyConnection, run_id: str,
                            rows: Iterable[tuple[str, float, int]]) -> None:
        """Rows of (query_id, term_overlap, longest_span)."""
        insert_frame(con, "query_overlap", [(run_id, *r) for r in rows],
                     ["run_id", "query_id", "term_overlap", "longest_span"])

    def query_overlap(self, run_id: str) -> list[dict[str, Any]]:
        return self._dicts("SELECT query_id, term_overlap, longest_span FROM query_overlap "
                           "WHERE run_id = ? ORDER BY query_id", [run_id])

    def latest_llm_grades(self, collection_name: str) -> list[dict[str, Any]]:
        """The judge's grade per (query id, document) over a collection's complete runs, the newest
        run's where several graded the pair, with the query text, model and prompt version."""
        return self._dicts(
            "SELECT g.query_id, q.text, g.doc_id, g.llm_grade, g.model, g.prompt_version, g.run_id "
            "FROM grades g JOIN runs r ON r.run_id = g.run_id "
            "JOIN queries q ON q.run_id = g.run_id AND q.query_id = g.query_id "
            "WHERE r.collection_name = ? AND r.status = 'complete' AND g.llm_grade IS NOT NULL "
            "QUALIFY row_number() OVER (PARTITION BY g.query_id, g.doc_id "
            "  ORDER BY r.created_at DESC, r.run_id DESC) = 1 ORDER BY g.query_id, g.doc_id",
            [collection_name])
