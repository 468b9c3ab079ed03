"""The Query drill-down screen: one query, each strategy's ranked results with one grade column and
where it came from, the known relevant documents with each strategy's rank or "not retrieved", and
each result's text cut around the query's words, marked (``marked``: plain segments the page escapes)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.export import ranked_results
from searchgrade.engine.metrics.dcg import dcg, ideal_dcg
from searchgrade.engine.run.strategies import label, strategy_order
from searchgrade.engine.store import Store
from searchgrade.viewmodels.common import one_session


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
    #: The strategies this query fails on (its top result not relevant), each with the failure's
    #: kind and cause as titles and the evidence in words (viewmodels/failures.py).
    failures: list[dict[str, str]] = field(default_factory=list)
    #: strategy -> its DCG@k on this query beside the query's ideal DCG@k, in words (k: the run's)
    dcg_words: dict[str, str] = field(default_factory=dict)
    #: a chunked strategy -> doc_id -> the chunk it matched the document by (chunk, start_char, end_char)
    passages: dict[str, dict[str, dict[str, int]]] = field(default_factory=dict)

    def matched_chunk(self, strategy: str, doc_id: str) -> tuple[str, str] | None:
        """(what it is in words, its text) of the chunk ``strategy`` matched ``doc_id`` by; None for
        a strategy over whole documents."""
        found = self.passages.get(strategy, {}).get(doc_id)
        if found is None:
            return None
        text = self.documents.get(doc_id, {}).get("text", "")
        return (f"matched chunk {found['chunk'] + 1}, characters {found['start_char']}-{found['end_char']}",
                text[found["start_char"]:found["end_char"]])


def _dcg_words(grades: list[int | None], pool: list[int], k: int) -> str:
    """ "DCG@10 2.131 of the query's ideal 3.262 (NDCG@10 0.653)": a DCG read against its ideal."""
    value, ideal = dcg(grades, pool, k, 1), ideal_dcg(pool, k)
    if ideal <= 0:
        return f"DCG@{k} {value:.3f}; no relevant document is known for this query (ideal DCG@{k} 0)"
    return f"DCG@{k} {value:.3f} of the query's ideal {ideal:.3f} (NDCG@{k} {value / ideal:.3f})"


def _frame(rows: list[dict[str, Any]], integers: list[str]) -> pd.DataFrame:
    """Rows as a frame, the ``integers`` columns as nullable integers (a missing grade or rank
    stays missing, not NaN), built column by column."""
    return pd.DataFrame({name: pd.array([r[name] for r in rows], dtype="Int64") if name in integers
                         else [r[name] for r in rows] for name in rows[0]})


def _retrieved_by(found: int, strategies: int) -> str:
    return f"{found} of {strategies} strategies" if found else "none"


def _rank_words(rank: int | None) -> str:
    return f"rank {rank}" if rank else "not retrieved"


#: Words too common to mark in a result's text.
_STOPWORDS = frozenset("a an and are as at be by do does for from how i in is it of on or the to was what when "
                       "where which who why with".split())
_WORD = re.compile(r"\w+", re.UNICODE)


def query_terms(query: str) -> list[str]:
    """The query's words worth marking in a result (lower-case, no stop words, each once)."""
    return list(dict.fromkeys(w for w in (m.lower() for m in _WORD.findall(query)) if w not in _STOPWORDS))


def marked(text: str, query: str, width: int = 320) -> list[tuple[str, bool]]:
    """A window of ``text`` around the query's first term, as (segment, is a query term) pairs; the
    whole start of the text when no term occurs. Segments are plain text: the page escapes them."""
    terms = query_terms(query)
    pattern = re.compile(r"\b(" + "|".join(re.escape(t) for t in terms) + r")\b", re.IGNORECASE) if terms else None
    first = pattern.search(text) if pattern else None
    start = max(0, first.start() - width // 4) if first else 0
    if start:
        space = text.find(" ", start)
        start = space + 1 if 0 <= space < (first.start() if first else start + 20) else start
    window = text[start:start + width]
    segments: list[tuple[str, bool]] = [("…", False)] if start else []
    at = 0
    for found in (pattern.finditer(window) if pattern else ()):
        if found.start() > at:
            segments.append((window[at:found.start()], False))
        segments.append((found.group(0), True))
        at = found.end()
    if at < len(window):
        segments.append((window[at:], False))
    if start + width < len(text):
        segments.append(("…", False))
    return segments


@one_session
def query_choices(store: Store, run_id: str) -> pd.DataFrame:
    """The run's queries: query_id, text, query_type."""
    return store.query_table(run_id)[["query_id", "text", "query_type"]]


@one_session
def query_detail(store: Store, run_id: str, query_id: str) -> QueryDetail:
    run = store.get_run(run_id)
    query = store.query(run.run_id, query_id)
    if query is None:
        raise SearchGradeError(f"query {query_id!r} is not in run {run.run_id}; pick one from the list")
    # The scores exported and sent over MCP: strictly decreasing, the stored rank order (engine/export.py).
    results = ranked_results(store, run.run_id, query_id=query_id)
    grades = store.grades(run.run_id, query_id)
    relevant = [g for g in grades if g["grade"] is not None and g["grade"] >= run.threshold]
    pool = [g["grade"] for g in grades if g["grade"] is not None]
    doc_ids = {r["doc_id"] for r in results} | {g["doc_id"] for g in relevant}
    if query["source_doc_id"]:
        doc_ids.add(query["source_doc_id"])
    docs = store.documents(run.run_id, sorted(doc_ids))
    by_strategy: dict[str, list[dict[str, Any]]] = {}
    for r in results:
        if r["source"] is None:
            judgment, reason = "unjudged (counts as 0)", ""
        elif r["grade"] is None:
            # A failed judgment is no grade: it says so, with the judge's failure.
            judgment, reason = "judge failed", r["reason"] or "judge failure"
        else:
            judgment = "human label" if r["source"] == "human" else "LLM judge"
            reason = r["reason"] or ""
        by_strategy.setdefault(r["strategy"], []).append({
            "Rank": r["rank"], "Doc id": r["doc_id"], "Title": docs.get(r["doc_id"], {}).get("title", ""),
            "Grade": r["grade"], "Grade from": judgment, "Judge's reason": reason, "Score": r["score"],
        })
    passages: dict[str, dict[str, dict[str, int]]] = {}
    for (strategy, doc_id), span in store.passages(run.run_id, query_id).items():
        passages.setdefault(strategy, {})[doc_id] = span
    for strategy, rows in by_strategy.items():
        if strategy in passages:  # a chunked strategy: which chunk each document was matched by
            for row in rows:
                span = passages[strategy].get(row["Doc id"])
                row["Matched chunk"] = span["chunk"] + 1 if span is not None else None
    found = {(r["doc_id"], r["strategy"]): r["rank"] for r in results}
    strategies = strategy_order(list(by_strategy))
    relevant_rows = [
        {"Doc id": g["doc_id"], "Title": docs.get(g["doc_id"], {}).get("title", ""), "Grade": g["grade"],
         "Retrieved by": _retrieved_by(sum(1 for s in strategies if found.get((g["doc_id"], s))), len(strategies)),
         **{label(s): _rank_words(found.get((g["doc_id"], s))) for s in strategies}}
        for g in sorted(relevant, key=lambda g: (-g["grade"], g["doc_id"]))
    ]
    return QueryDetail(
        query_id=query_id, text=query["text"], query_type=query["query_type"],
        source=docs.get(query["source_doc_id"]) if query["source_doc_id"] else None,
        results={s: _frame(by_strategy[s], ["Grade", "Matched chunk"]) for s in strategies},
        relevant=_frame(relevant_rows, []) if relevant_rows else pd.DataFrame(),
        documents=docs,
        source_ranks={s: found.get((query["source_doc_id"], s)) for s in strategies}
        if query["source_doc_id"] else {},
        failures=_failures(store, run.run_id, query_id),
        passages=passages,
        dcg_words={s: _dcg_words([r["Grade"] for r in by_strategy[s]], pool, run.k) for s in strategies},
    )


def _failures(store: Store, run_id: str, query_id: str) -> list[dict[str, str]]:
    """The strategies ``query_id`` fails on: Strategy, Kind, Cause, Evidence (the failed-queries
    table of every strategy, kept for a complete run)."""
    from searchgrade.viewmodels.failures import ALL, failure_table

    table = failure_table(store, run_id, ALL)
    if table.empty:
        return []
    mine = table[table["Query id"] == query_id]
    return mine[["Strategy", "Kind", "Cause", "Evidence"]].to_dict("records")
