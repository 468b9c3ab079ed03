"""A reranker asked per query (a rerank service, an LLM) as an executor node: ``X_NAME``.

A ``QueryReranker`` gets one query and the texts of its candidates and returns one score per
text, or raises ``RerankFailed`` with one line (an HTTP error after its retries, a reply that is
malformed, that holds fewer items than were sent or an index out of range). Such a query is a
*failure* of the reranked strategy (indexes/base.py ``Failure``), recorded and searched again
by ``resume``: it never falls back to the base order, and the base strategy is not touched.

Scores are shared (``QueryScores``): a (query, document) pair two strategies retrieved is scored
once per reranker, the query's missing candidates in one call (split by the reranker into the
service's batches), queries of a chunk in parallel up to the reranker's ``concurrency``. Each pair
remembers what it cost (its call's seconds over its texts), so a reranked strategy's latency per
query is what reranking its candidates costs, plus its base's (the executor adds the base's).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, runtime_checkable

import numpy as np

from searchgrade.indexes.base import Answer, Failure, Outcome, QueryBatch
from searchgrade.indexes.rerank.cross_encoder import below_scored, rerank_order, with_texts


class RerankFailed(Exception):  # noqa: N818 - a query's outcome, recorded as its failure
    """A query the reranker could not score: one line saying why (after any retries)."""


@runtime_checkable
class QueryReranker(Protocol):
    """Scores of one query's candidate texts, higher is better, one per text in order."""

    #: The declared reranker's name.
    name: str
    #: Queries scored at the same time.
    concurrency: int

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]: ...


class QueryScores:
    """One reranker's scores of (query id, doc id) pairs, each pair scored once, with its cost."""

    def __init__(self, reranker: QueryReranker) -> None:
        self.reranker = reranker
        self.scores: dict[tuple[str, str], tuple[float, float]] = {}
        self.scored = 0
        self.reused = 0
        self.calls = 0
        self._lock = threading.Lock()

    def _key(self, scope: str, qid: str, doc_id: str) -> tuple[str, str, str]:
        # A listwise reranker's scores depend on the whole list: each base's lists are its own.
        return ("" if getattr(self.reranker, "pointwise", True) else scope, qid, doc_id)

    def ensure(self, work: Sequence[tuple[str, str, Sequence[tuple[str, str]]]], scope: str = "") -> dict[str, str]:
        """Score every (doc id, content) of each (query id, query, candidates) not scored yet.

        ``scope`` (the base strategy) keeps apart the lists of a reranker that is not pointwise.

        Returns:
            query id -> the one-line error of the queries that failed.
        """
        todo = []
        for qid, query, candidates in work:
            missing = list({d: c for d, c in candidates if self._key(scope, qid, d) not in self.scores}.items())
            self.reused += len(candidates) - len(missing)
            if missing:
                todo.append((qid, query, missing))
        errors: dict[str, str] = {}

        def one(item: tuple[str, str, list[tuple[str, str]]]) -> None:
            qid, query, missing = item
            start = time.perf_counter()
            try:
                values = self.reranker.rerank(query, [c for _, c in missing])
            except RerankFailed as exc:
                errors[qid] = f"reranker {self.reranker.name}: {exc}"
                return
            cost = (time.perf_counter() - start) / len(missing)
            if len(values) != len(missing):  # a reranker's own check missed it: still a failure
                errors[qid] = (f"reranker {self.reranker.name} returned {len(values)} scores for "
                               f"{len(missing)} documents")
                return
            with self._lock:
                self.calls += 1
                for (doc_id, _), value in zip(missing, values, strict=True):
                    self.scores[self._key(scope, qid, doc_id)] = (float(value), cost)
                self.scored += len(missing)

        workers = max(1, min(int(self.reranker.concurrency), len(todo)))
        if workers == 1:
            for item in todo:
                one(item)
        else:
            with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"rerank-{self.reranker.name}") as pool:
                list(pool.map(one, todo))
        return errors

    def get(self, query_id: str, doc_ids: Sequence[str], scope: str = "") -> tuple[np.ndarray, float]:
        values = [self.scores[self._key(scope, query_id, d)] for d in doc_ids]
        return np.array([v for v, _ in values], dtype=np.float64), float(sum(c for _, c in values))


class ServiceRerankNode:
    """``X_NAME``: the top ``max(depth, k)`` of X rescored by a declared reranker.

    Candidates whose text is unknown (an external id whose reply carried no text) cannot be
    scored: they keep their base order below every scored candidate.
    """

    def __init__(self, name: str, base: str, shared: QueryScores, depth: int,
                 contents: Mapping[str, str] | None = None) -> None:
        self.name = name
        self.base = base
        self.inputs = (base,)
        self.shared = shared
        self.depth = depth
        self.contents = contents or {}

    def input_depth(self, depth: int) -> int:
        return max(self.depth, depth)

    def answer(self, batch: QueryBatch, depth: int, inputs: Mapping[str, Sequence[Outcome]]) -> list[Outcome]:
        wanted = max(self.depth, depth)
        lists, work = [], []
        for qid, text, outcome in zip(batch.ids, batch.texts, inputs[self.base], strict=True):
            candidates, unscored, texts = with_texts(outcome.docs[:wanted], self.contents, outcome.documents or {})
            lists.append((candidates, unscored, outcome.documents))
            work.append((qid, text, [(d.doc_id, t) for d, t in zip(candidates, texts, strict=True)]))
        errors = self.shared.ensure(work, self.base)
        out: list[Outcome] = []
        for qid, (candidates, unscored, described) in zip(batch.ids, lists, strict=True):
            if qid in errors:
                out.append(Failure(errors[qid]))
                continue
            start = time.perf_counter()
            scores, cost = self.shared.get(qid, [d.doc_id for d in candidates], self.base)
            docs = below_scored(rerank_order(candidates, scores, depth), unscored, depth)
            out.append(Answer(docs, cost + time.perf_counter() - start, described))
        return out
