"""The search stage of a run: every strategy over every query, through the executor.

- The executor (indexes/executor.py) computes each piece of work once: base candidates shared by
  hybrid and the reranked strategies, queries embedded in batches, cross-encoder scores shared.
- Strategies fail alone. A strategy that fails on a query records a failure *for that strategy*
  (never an empty list scored 0): unreachable past its retries, a reply the mapping cannot read, a
  server that refused a few connections in a row (its later queries are then not asked:
  indexes/base.py ``Refusals``). Every other strategy completes, and so does the run; ``resume``
  searches again only what is missing: the failed queries, and anything an interrupted run had
  not searched yet.
- Each declared strategy's first answer is checked (``FirstAnswerCheck``): a first list of ids
  none of which is in the collection fails that strategy as a whole ("check the id mapping"),
  and it is not asked again, unless the reply describes its documents and the LLM judge grades
  them. With ``strict`` (``evaluate --strict``), the first strategy failure fails the run instead.
- Documents a reply describes (title/text) that the collection does not hold are kept, shown with
  the run and judged by the LLM judge.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from searchgrade.core.records import Document, Query, SearchGradeError, SearchHits
from searchgrade.indexes.base import Failure, QueryBatch
from searchgrade.indexes.executor import Check, Execution

Progress = Callable[[str, int, int], None]
#: execute(strategies, batch, progress, check) -> what Executor(nodes, strategies, k).run(batch,
#: progress, check) gives: the run's runner holds it (engine/run/stage_runner.py), here or on Ray actors.
Execute = Callable[[Sequence[str], QueryBatch, Progress | None, Check | None], Execution]


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
    """After each chunk: the declared strategies whose first answer shows every later call useless
    (ids none of which is in the collection), to stop; with ``strict``, any strategy's first
    failure stops the run instead (``evaluate --strict``: all or nothing)."""

    def __init__(self, strategies: Sequence[str], collection_ids: set[str], judges_described: bool,
                 strict: bool = False) -> None:
        self.pending = set(strategies)
        self.collection_ids = collection_ids
        self.judges_described = judges_described
        self.strict = strict

    def __call__(self, execution: Execution) -> dict[str, str]:
        if self.strict:
            for name, failed in execution.failures.items():
                if failed:
                    qid, failure = next(iter(failed.items()))
                    raise SearchGradeError(f"strategy {name} failed on query {qid}: {failure.error} (--strict: "
                                           "the first strategy failure fails the run)")
        stop: dict[str, str] = {}
        for name in list(self.pending):
            answered = next((h for h in execution.hits.get(name, []) if h is not None and h.docs), None)
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
            stop[name] = (f"none of the {len(ids)} ids {name} returned for the first query ({shown}, ...) is in "
                          "the collection: check the id mapping (the id JMESPath, or which field holds the "
                          "collection's ids)")
        if self.strict and stop:
            name, why = next(iter(stop.items()))
            raise SearchGradeError(f"strategy {name} failed: {why} (--strict: the first strategy failure fails "
                                   "the run)")
        return stop


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
    strict: bool = False,
) -> SearchResults:
    """Search every query with every strategy; with ``stored`` results, only what is missing.

    Args:
        strategies: the strategies to report, in order.
        execute: runs the executor, keeping the run's depth of results per query (the run's
            runner gives it: engine/run/stage_runner.py).
        collection_ids: the collection's document ids.
        declared: the strategies a user declared (checked on their first answers).
        judges_described: the LLM judge grades documents a reply describes.
        stored: (strategy, query id) -> results already searched (a resume): kept, not searched.
        strict: the first strategy failure fails the run (raises) instead of failing the strategy.
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
    total = sum(len(q) for q in missing.values())
    done = 0
    if progress is not None:
        progress("search", 0, total)
    for todo, qids in missing.items():
        check = FirstAnswerCheck([s for s in todo if s in declared], collection_ids, judges_described, strict)

        def report(stage: str, n: int, _total: int, offset: int = done) -> None:
            if progress is not None:
                progress("search", offset + n, total)

        batch = QueryBatch(qids, [texts[q] for q in qids])
        execution = execute(todo, batch, report, check)
        done += len(qids)
        _fail_stopped(execution, qids)
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
    if ids and strategies and all(h is None for hits in out.hits.values() for h in hits):
        # Nothing to grade or show: the run fails (resumable) with each strategy's reason.
        reasons = "; ".join(f"{s}: {next(iter(out.failures[s].values())).error}" for s in strategies
                            if out.failures[s])
        raise SearchGradeError(f"every strategy failed on every query ({reasons})")
    return out


def _fail_stopped(execution: Execution, qids: Sequence[str]) -> None:
    """A strategy stopped after its first answers failed as a whole: the queries it answered before
    (ids the collection lacks) fail too, with the same reason; it was not asked the others."""
    for name, why in execution.stopped.items():
        if name not in execution.hits:
            continue
        failed = execution.failures.setdefault(name, {})
        for i, (qid, hits) in enumerate(zip(qids, execution.hits[name], strict=True)):
            if hits is not None:
                failed[qid] = Failure(why, 1)
                execution.hits[name][i] = None
        execution.documents.pop(name, None)


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
