"""The Query drill-down screen: one query, each strategy's ranked results with grades and reasons."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.run.strategies import label, strategy_order
from searchgrade.engine.store import Store


@dataclass
class QueryDetail:
    query_id: str
    text: str
    query_type: str
    source: dict[str, str] | None
    #: strategy -> rank, doc_id, title, grade, reason, score
    results: dict[str, pd.DataFrame]
    #: the query's known relevant documents and which strategies found them (rank)
    relevant: pd.DataFrame
    documents: dict[str, dict[str, str]]
    #: strategy -> rank of the source document in its results (None: not retrieved)
    source_ranks: dict[str, int | None] = field(default_factory=dict)


def query_choices(store: Store, run_id: str) -> pd.DataFrame:
    """The run's queries: query_id, text, query_type."""
    return pd.DataFrame(store.queries(run_id), columns=["query_id", "text", "query_type", "source_doc_id"])


def query_detail(store: Store, run_id: str, query_id: str) -> QueryDetail:
    run = store.get_run(run_id)
    queries = {q["query_id"]: q for q in store.queries(run.run_id)}
    if query_id not in queries:
        raise SearchGradeError(f"query {query_id!r} is not in run {run.run_id}; pick one from the list")
    query = queries[query_id]
    results = store.results_with_grades(run.run_id, query_id=query_id)
    grades = store.grades(run.run_id, query_id)
    relevant = [g for g in grades if g["grade"] is not None and g["grade"] >= run.threshold]
    doc_ids = {r["doc_id"] for r in results} | {g["doc_id"] for g in relevant}
    if query["source_doc_id"]:
        doc_ids.add(query["source_doc_id"])
    docs = store.documents(run.run_id, sorted(doc_ids))
    by_strategy: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        if r["source"] is None:
            judgment, reason = "none", "unjudged (counts as 0)"
        elif r["grade"] is None:
            # A failed judgment is no grade: it says so, with the judge's failure.
            judgment, reason = "judge failed", r["reason"] or "judge failure"
        else:
            judgment = "human" if r["source"] == "human" else "LLM"
            reason = r["reason"] or ""
        by_strategy.setdefault(r["strategy"], []).append({
            "Rank": r["rank"], "Doc id": r["doc_id"], "Title": docs.get(r["doc_id"], {}).get("title", ""),
            "Grade": r["grade"], "Judgment": judgment, "Judge's reason": reason, "Score": r["score"],
        })
    found = {(r["doc_id"], r["strategy"]): r["rank"] for r in results}
    strategies = strategy_order(list(by_strategy))
    relevant_rows = [
        {"Doc id": g["doc_id"], "Title": docs.get(g["doc_id"], {}).get("title", ""), "Grade": g["grade"],
         **{label(s): found.get((g["doc_id"], s)) for s in strategies}}
        for g in sorted(relevant, key=lambda g: (-g["grade"], g["doc_id"]))
    ]
    return QueryDetail(
        query_id=query_id, text=query["text"], query_type=query["query_type"],
        source=docs.get(query["source_doc_id"]) if query["source_doc_id"] else None,
        results={s: pd.DataFrame(by_strategy[s]).astype({"Grade": "Int64"}) for s in strategies},
        relevant=pd.DataFrame(relevant_rows).astype(
            {label(s): "Int64" for s in strategies} if relevant_rows else {}),
        documents=docs,
        source_ranks={s: found.get((query["source_doc_id"], s)) for s in strategies}
        if query["source_doc_id"] else {},
    )
