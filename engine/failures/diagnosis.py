"""A stored run's failed queries: each with its kind, its cause and the evidence in words, the
counts per strategy, and the strategies that failed to answer (a backend error).

Everything is read from what the run stored (engine/store/failures.py): its results and grades,
and the exact search of the failed queries that the run made (engine/failures/exact.py).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pandas as pd

from searchgrade.engine.failures.causes import CAUSES, KINDS, assign_causes
from searchgrade.engine.run.config import JUDGE_THRESHOLD
from searchgrade.engine.run.strategies import label, strategy_order

if TYPE_CHECKING:
    from searchgrade.engine.store import RunRecord, Store

#: The columns of ``Diagnosis.rows``.
ROW_COLUMNS = ["strategy", "query_id", "text", "query_type", "words", "kind", "cause", "detail", "top_doc",
               "best_rank", "best_doc", "first_by", "lost_rank", "lost_doc"]


@dataclass(frozen=True)
class StrategyFailure:
    """A strategy that could not answer some queries (a backend error: unreachable, a reply that
    could not be read, ids the collection lacks): the reason most of them share, and how many."""

    strategy: str
    reason: str
    queries_failed: int
    queries: int

    def to_json(self) -> dict[str, Any]:
        """As `show --format json`'s ``strategy_failures`` rows."""
        return {"strategy": self.strategy, "reason": self.reason, "queries_failed": self.queries_failed}

    @property
    def text(self) -> str:
        """ "my-http failed on 300 of 300 queries: ..."."""
        return (f"{label(self.strategy)} failed on {self.queries_failed:,} of {self.queries:,} "
                f"quer{'y' if self.queries == 1 else 'ies'}: {self.reason}")


@dataclass
class Diagnosis:
    """Why a run's queries fail.

    Attributes:
        rows: one row per failed (strategy, query), columns ``ROW_COLUMNS``: its kind and cause
            (keys of ``KINDS`` and ``CAUSES``), the evidence in words (``detail``) and as values.
        answered: per strategy with results, in display order: the queries with a top 1
            (``n``), and those whose top-1 judgment failed (``judge_failed``: not failed queries,
            nobody knows their grade).
        strategy_failures: the strategies that could not answer some queries, in display order.
        index: the approximate ANN index whose misses were measured ("ivf", "hnsw"), or None.
    """

    run_id: str
    threshold: int
    depth: int
    rows: pd.DataFrame
    answered: dict[str, dict[str, int]] = field(default_factory=dict)
    strategy_failures: list[StrategyFailure] = field(default_factory=list)
    index: str | None = None

    @property
    def strategies(self) -> list[str]:
        return list(self.answered)

    def of(self, strategy: str | None) -> pd.DataFrame:
        """The failed rows of one strategy (all of them for None)."""
        return self.rows if strategy is None else self.rows[self.rows["strategy"] == strategy]

    def failed(self, strategy: str) -> int:
        return int((self.rows["strategy"] == strategy).sum())

    def most_failed(self) -> str | None:
        """The strategy with the most failed queries (the first in display order on a tie), None
        when no strategy has results."""
        if not self.answered:
            return None
        return max(self.answered, key=lambda s: (self.failed(s), -self.strategies.index(s)))

    def counts(self) -> list[dict[str, Any]]:
        """`show --format json`'s ``failures``: per strategy, each kind (kind "top1") and each cause
        (kind "cause") with its count and query ids, zero counts included. Each kind's counts and
        each cause's sum to the strategy's failed queries."""
        out = []
        for strategy in self.strategies:
            mine = self.of(strategy)
            for kind, column, categories in (("top1", "kind", KINDS), ("cause", "cause", CAUSES)):
                for category in categories:
                    ids = mine.loc[mine[column] == category, "query_id"].tolist()
                    out.append({"strategy": strategy, "kind": kind, "category": category, "count": len(ids),
                                "query_ids": ids})
        return out

    def table(self) -> pd.DataFrame:
        """One row per strategy: queries answered, failed, each kind and each cause, counts."""
        rows = []
        for strategy, answered in self.answered.items():
            mine = self.of(strategy)
            row: dict[str, Any] = {"strategy": strategy, "queries": answered["n"], "failed": len(mine)}
            row.update({k: int((mine["kind"] == k).sum()) for k in KINDS})
            row.update({c: int((mine["cause"] == c).sum()) for c in CAUSES})
            row["judge_failed"] = answered["judge_failed"]
            rows.append(row)
        return pd.DataFrame(rows, columns=["strategy", "queries", "failed", *KINDS, *CAUSES, "judge_failed"])


def diagnose_run(store: Store, run: RunRecord) -> Diagnosis:
    """Every failed (strategy, query) of a stored run with its kind and cause (engine/failures/causes.py)."""
    evidence = store.failure_evidence(run.run_id, run.threshold)
    exact = run.stats.get("exact_search") if isinstance(run.stats, dict) else None
    exact = exact if isinstance(exact, dict) else {}
    index_users = set(exact.get("strategies") or [])
    evidence["uses_index"] = evidence["strategy"].isin(index_users)
    evidence["cause"] = assign_causes(evidence, (run.threshold, JUDGE_THRESHOLD))
    evidence["words"] = evidence["text"].map(lambda t: len(str(t).split()))
    index = exact.get("index") if exact.get("queries") else None
    evidence["detail"] = [_detail(r, run.depth, index) for r in evidence.to_dict("records")]
    counts = {r["strategy"]: r for r in store.top1_counts(run.run_id, run.threshold)}
    answered = {s: {"n": int(counts[s]["n"]), "judge_failed": int(counts[s]["judge_failed"])}
                for s in strategy_order(counts)}
    order = {s: i for i, s in enumerate(answered)}
    rows = evidence.assign(_order=evidence["strategy"].map(order)).sort_values(
        ["_order", "query_id"], kind="stable").drop(columns="_order").reset_index(drop=True)
    return Diagnosis(run.run_id, run.threshold, run.depth, rows[ROW_COLUMNS], answered,
                     strategy_failures(store, run), index)


def strategy_failures(store: Store, run: RunRecord) -> list[StrategyFailure]:
    """The strategies that could not answer some of the run's queries, with the reason most of
    their failed queries give (the first failed query's on a tie)."""
    by_strategy: dict[str, list[dict[str, Any]]] = {}
    for row in store.failed_queries(run.run_id):
        by_strategy.setdefault(row["strategy"], []).append(row)
    queries = store.query_count(run.run_id)
    out = []
    for strategy in strategy_order(by_strategy):
        rows = by_strategy[strategy]
        errors = Counter(r["error"] for r in rows)
        first = {}
        for r in rows:
            first.setdefault(r["error"], r["query_id"])
        reason = min(errors, key=lambda e: (-errors[e], first[e]))
        out.append(StrategyFailure(strategy, reason, len(rows), queries))
    return out


def _detail(row: dict[str, Any], depth: int, index: str | None) -> str:
    """The evidence of a row's cause, in words."""
    cause = row["cause"]
    if cause == "no_relevant_known":
        return f"no document is known to be relevant to this query ({row['judged_known']} judged)"
    if cause == "lost_by_index":
        return (f"exact search of the same vectors ranks {row['lost_doc']} (relevant) "
                f"{int(row['lost_rank'])}; the {index or 'approximate'} index misses it")
    if cause == "ranked_too_low":
        return f"its best relevant document, {row['best_doc']}, is at rank {int(row['best_rank'])}"
    if cause == "one_strategy_only":
        who = ", ".join(label(s) for s in row["first_by"])
        return (f"{who} rank{'s' if len(row['first_by']) == 1 else ''} a relevant document first "
                f"({row['query_type']} query, {row['words']} word{'s' if row['words'] != 1 else ''})")
    if cause == "judge_disagrees":
        return f"people grade the top result {int(row['grade'])}, the judge {int(row['llm_grade'])}"
    if cause == "not_retrieved":
        n = row["relevant_known"]
        return (f"{n} relevant document{'s' if n != 1 else ''} known, none in any strategy's top {depth}")
    if row["any_rank"] is not None and not pd.isna(row["any_rank"]):
        return (f"none of the causes holds (another strategy has a relevant document at rank "
                f"{int(row['any_rank'])})")
    return "none of the causes holds"
