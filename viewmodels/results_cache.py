"""A run's Results reads, computed once and kept while the run is complete.

Most of a cold Results page is SQL over the run's long tables: the position curve, why queries
fail, latency and relevant documents never retrieved join every stored result with its grade
(tens of thousands of rows per 1,000 queries); best and worst queries and the per-query-type means
group every per-query metric. A complete run's results, grades and metrics never change (a
re-score makes a new run; a resume or a re-grade reopens the run and clears what was kept: see
``ResultsMixin.GRADED_TABLES`` and ``write_search``), so each answer is kept in the store
(``kept_reads``, JSON, which round-trips floats exactly) the first time it is computed: when the
run completes (its first Results page, ``keep_first_view``) or on a page's first read of it. A run
that is not complete is always read afresh.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from searchgrade.engine.store import RunRecord, Store
from searchgrade.viewmodels.significance import PROCEDURE

#: Parts read together, in one query, by the first read of any (small: tens of rows each).
SMALL = ("position_means", "failure_summary", "latency_summary", "unretrieved_relevant", "query_extremes",
         "metric_by_query_type", "reranker_rows")
#: Parts read one key at a time: a failed-queries table is a row per failed query (megabytes at
#: 10,000 queries), its groups a point per query, and a page shows one strategy's.
LARGE = ("failure_table", "failure_groups", "query_map")


class RunReads:
    """One run's kept reads, for the views of one page: read from ``kept_reads`` in one query,
    computed where missing, and the new ones written back by ``save``.

    Each method returns what the store read of the same name returns.
    """

    def __init__(self, store: Store, run: RunRecord):
        self.store, self.run = store, run
        self.complete = run.status == "complete"
        self._kept: dict[tuple[str, str], str] | None = None
        self._new: dict[tuple[str, str], str] = {}

    def _text(self, part: str, key: str) -> str | None:
        if part in LARGE:
            return self.store.kept_read(self.run.run_id, part, key)
        if self._kept is None:
            self._kept = self.store.kept_reads(self.run.run_id, SMALL)
        return self._kept.get((part, key))

    def _get(self, part: str, key: str, compute: Callable[[], Any]) -> Any:
        if not self.complete:
            return compute()
        if (part, key) in self._new:
            return json.loads(self._new[(part, key)])
        text = self._text(part, key)
        if text is not None:
            return json.loads(text)
        value = compute()
        self._new[(part, key)] = json.dumps(value)
        return value

    def save(self) -> None:
        """Keep the reads computed since the last save (a complete run only)."""
        self.store.keep_reads(self.run.run_id, self._new, finished_at=self.run.finished_at)
        self._new = {}

    def position_means(self, k: int) -> list[dict[str, Any]]:
        # Kept at the run's depth: a rank's mean does not depend on the cut-off, only which ranks show.
        rows = self._get("position_means", "", lambda: self.store.position_means(self.run.run_id, self.run.depth))
        return [r for r in rows if r["rank"] <= k]

    def latency_summary(self) -> list[dict[str, Any]]:
        return self._get("latency_summary", "", lambda: self.store.latency_summary(self.run.run_id))

    def unretrieved_relevant(self, k: int | None = None) -> dict[str, Any]:
        """Relevant documents no strategy retrieved in its top k (k None or at the run's depth: at
        any stored rank, the store's read): relevant, never_retrieved, queries_affected."""
        if k is None or k >= self.run.depth:
            return self._get("unretrieved_relevant", "",
                             lambda: self.store.unretrieved_relevant(self.run.run_id, self.run.threshold))
        return self._get("unretrieved_relevant", f"@{k}", lambda: self._unretrieved_at(k))

    def _unretrieved_at(self, k: int) -> dict[str, Any]:
        retrieved = {(q, d) for lists in self.store.top_lists(self.run.run_id, k).values()
                     for q, ids in lists.items() for d in ids}
        queries = set(self.store.query_table(self.run.run_id)["query_id"])
        relevant = [(g["query_id"], g["doc_id"]) for g in self.store.grades(self.run.run_id)
                    if g["query_id"] in queries and g["grade"] is not None and g["grade"] >= self.run.threshold]
        missed = [pair for pair in relevant if pair not in retrieved]
        return {"relevant": len(relevant), "never_retrieved": len(missed),
                "queries_affected": len({q for q, _ in missed})}

    def query_extremes(self, metric: str, k: int, n: int) -> list[dict[str, Any]]:
        return self._get("query_extremes", f"{metric}@{k}/{n}",
                         lambda: self.store.query_extremes(self.run.run_id, metric, k, n))

    def metric_by_query_type(self, metric: str, k: int) -> list[dict[str, Any]]:
        return self._get("metric_by_query_type", f"{metric}@{k}",
                         lambda: self.store.metric_by_query_type(self.run.run_id, metric, k))

    def reranker_rows(self, metric: str, k: int, compute: Callable[[], list[dict[str, Any]]]) -> list[dict[str, Any]]:
        """The baseline-vs-reranker table's rows at metric@k (``significance.reranker_rows``), kept
        under the statistical procedure that computed them: another's are never served."""
        # "/twins": rows kept before a declared reranker's row was named by its twin are read afresh.
        return self._get("reranker_rows", f"{metric}@{k}/{PROCEDURE}/twins", compute)

    def failure_summary(self, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """Why queries fail, counted per strategy (``failures.failure_summary``)."""
        return self._get("failure_summary", "", compute)

    def failure_table(self, strategy: str, compute: Callable[[], dict[str, list]]) -> dict[str, list]:
        """The failed-queries table of a strategy, as column name -> values
        (``failures.failure_table``)."""
        return self._get("failure_table", strategy, compute)

    def failure_groups(self, strategy: str, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The failed queries of a strategy in groups (``failures.failure_groups``)."""
        return self._get("failure_groups", strategy, compute)

    def query_map(self, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """The run's queries on a 2-D map (``failures.query_map``)."""
        return self._get("query_map", "", compute)
