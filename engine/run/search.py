"""The search stage of a run: every strategy over every query, through the executor.

- The executor (indexes/executor.py) computes each piece of work once: base candidates shared by
  hybrid and the reranked strategies, queries embedded in batches, cross-encoder scores shared.
- A declared strategy that fails on a query records a failure *for that strategy* (never an empty
  list scored 0). The run completes; ``resume`` searches again only what is missing: the failed
  queries, and anything an interrupted run had not searched yet.
- A fresh run checks each declared strategy's first answers: the first query failing stops the
  run with its error (an unreachable server, a wrong url, a mapping that does not fit), and so
  does a first list of ids none of which is in the collection ("check the id mapping"), unless
  the reply describes its documents and the LLM judge grades them.
- Documents a reply describes (title/text) that the collection does not hold are kept, shown with
  the run and judged by the LLM judge.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from searchgrade.core.records import Document, Query, SearchGradeError, SearchHits
from searchgrade.indexes.base import Failure, QueryBatch
from searchgrade.indexes.executor import Execution

Progress = Callable[[str, int, int], None]
#: execute(strategies, batch, progress, check) -> what Executor(nodes, strategies, k).run(batch,
#: progress, check) gives: the run's runner holds it (engine/run/stage_runner.py), here or on Ray actors.
Execute = Callable[[Sequence[str], QueryBatch, Progress | None, Callable[[Execution], None] | None], Execution]


@dataclass
class SearchResults:
    """What the search stage gives the rest of the run.

    Attributes:
        hits: strategy -> one entry per query (in the run's query order); None where it failed.
        failures: strategy -> query id -> Failure.
        described: doc id -> Document for ids a reply described that the collection lacks.
        described_by: doc id -> the first strategy that described it.
        stats: per-strategy counts for the run's stats ("failed_queries", "not_in_collection").
    """

    hits: dict[str, list[SearchHits | None]] = field(default_factory=dict)
    failures: dict[str, dict[str, Failure]] = field(default_factory=dict)
    described: dict[str, Document] = field(default_factory=dict)
    described_by: dict[str, str] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)


class FirstAnswerCheck:
    """Stops a fresh run early on what would make every later call of a strategy useless."""

    def __init__(self, strategies: Sequence[str], collection_ids: set[str], judges_described: bool) -> None:
        self.pending = set(strategies)
        self.collection_ids = collection_ids
        self.judges_described = judges_described
        self.first_checked: set[str] = set()

    def __call__(self, execution: Execution) -> None:
        for name in list(self.pending):
            hits = execution.hits.get(name, [])
            if name not in self.first_checked and hits:
                self.first_checked.add(name)
                if hits[0] is None:
                    error = next(iter(execution.failures[name].values())).error
                    raise SearchGradeError(f"strategy {name} failed on the first query: {error}")
            answered = next((h for h in hits if h is not None and h.docs), None)
            if answered is None:
                continue
            self.pending.discard(name)
            ids = [d.doc_id for d in answered.docs]
            if any(doc_id in self.collection_ids for doc_id in ids):
                continue
            described = execution.documents.get(name, {})
            if self.judges_described and all(doc_id in described for doc_id in ids):
                continue
            shown = ", ".join(repr(i) for i in ids[:3])
            raise SearchGradeError(
                f"none of the {len(ids)} ids {name} returned for the first query ({shown}, ...) is in "
                f"the collection: check the id mapping (the id JMESPath, or which field holds the "
                "collection's ids)"
            )


def run_search(
    strategies: Sequence[str],
    queries: Sequence[Query],
    *,
    execute: Execute,
    collection_ids: set[str],
    declared: set[str],
    judges_described: bool,
    stored: Mapping[tuple[str, str], SearchHits] | None = None,
    progress: Progress | None = None,
) -> SearchResults:
    """Search every query with every strategy; with ``stored`` results, only what is missing.

    Args:
        strategies: the strategies to report, in order.
        execute: runs the executor, keeping the run's depth of results per query (the run's
            runner gives it: engine/run/stage_runner.py).
        collection_ids: the collection's document ids.
        declared: the strategies a user declared (checked on their first answers on a fresh run).
        judges_described: the LLM judge grades documents a reply describes.
        stored: (strategy, query id) -> results already searched (a resume): kept, not searched.
    """
    ids = [q.query_id for q in queries]
    texts = {q.query_id: q.text for q in queries}
    stored = stored or {}
    missing: dict[tuple[str, ...], list[str]] = {}
    for qid in ids:
        todo = tuple(s for s in strategies if (s, qid) not in stored)
        if todo:
            missing.setdefault(todo, []).append(qid)
    found: dict[str, dict[str, SearchHits | None]] = {s: {} for s in strategies}
    out = SearchResults(failures={s: {} for s in strategies})
    for (strategy, qid), hits in stored.items():
        if strategy in found:
            found[strategy][qid] = hits
    fresh = not stored
    total = sum(len(q) for q in missing.values())
    done = 0
    if progress is not None:
        progress("search", 0, total)
    for todo, qids in missing.items():
        check = (FirstAnswerCheck([s for s in todo if s in declared], collection_ids, judges_described)
                 if fresh else None)

        def report(stage: str, n: int, _total: int, offset: int = done) -> None:
            if progress is not None:
                progress("search", offset + n, total)

        batch = QueryBatch(qids, [texts[q] for q in qids])
        execution = execute(todo, batch, report, check)
        done += len(qids)
        for strategy in todo:
            for qid, hits in zip(qids, execution.hits[strategy], strict=True):
                found[strategy][qid] = hits
            out.failures[strategy].update(execution.failures.get(strategy, {}))
            for doc_id, doc in execution.documents.get(strategy, {}).items():
                if doc_id not in collection_ids and doc_id not in out.described:
                    out.described[doc_id] = doc
                    out.described_by[doc_id] = strategy
    out.hits = {s: [found[s].get(qid) for qid in ids] for s in strategies}
    out.stats = search_stats(out, collection_ids)
    return out


def search_stats(results: SearchResults, collection_ids: set[str]) -> dict[str, Any]:
    """Per strategy: failed queries, and results not in the collection (described or not)."""
    failed = {s: len(f) for s, f in results.failures.items() if f}
    outside: dict[str, dict[str, int]] = {}
    for strategy, hits in results.hits.items():
        n = missing = described = 0
        for h in hits:
            if h is None:
                continue
            for d in h.docs:
                n += 1
                if d.doc_id not in collection_ids:
                    missing += 1
                    described += int(d.doc_id in results.described)
        if missing:
            outside[strategy] = {"results": n, "not_in_collection": missing, "described": described}
    return {"failed_queries": failed, "not_in_collection": outside}
