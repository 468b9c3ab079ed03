"""The contract every strategy meets: the searcher interface, the executor's node and what it
answers, one way to answer queries one at a time (timed, retried, in parallel), and the result of
a build.

A *node* (``Node``) is one strategy as the executor (indexes/executor.py) runs it: it answers a
``QueryBatch`` with one ``Outcome`` per query, an ``Answer`` (the ranked list and the seconds of
the node's own work) or a ``Failure`` (one line). ``answer_each`` is how a node that searches one
query at a time (a built-in, a declared backend) turns its search into outcomes: each query timed
on its own, a backend's error explained in one line and retried where that can help, queries in
flight up to a concurrency.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol, TypeVar, overload, runtime_checkable

import numpy as np

from searchgrade.core.checks import check_k
from searchgrade.core.records import Document, Passage, ScoredDoc, SearchHits

#: progress(stage, done, total), e.g. progress("embed", 64, 5183).
ProgressFn = Callable[[str, int, int], None]


# -- the executor's node ----------------------------------------------------------------------------

class Answer(NamedTuple):
    """One query's ranked list from one node, and the seconds of the node's own work for it."""

    docs: list[ScoredDoc]
    seconds: float
    #: Documents the reply described (id -> title/text), for ids that may not be in the collection.
    documents: Mapping[str, Document] | None = None
    #: For a node that retrieves chunks: each listed document's matched chunk (indexes/variants/nodes.py).
    passages: Mapping[str, Passage] | None = None


class Failure(NamedTuple):
    """A query a node could not answer: one line saying why, and how many attempts were made."""

    error: str
    attempts: int = 1


Outcome = Answer | Failure


@dataclass(frozen=True)
class QueryBatch:
    """Queries to answer: ids and texts in the same order."""

    ids: Sequence[str]
    texts: Sequence[str]

    def __post_init__(self) -> None:
        if len(self.ids) != len(self.texts):
            raise ValueError(f"{len(self.ids)} query ids but {len(self.texts)} texts")

    def __len__(self) -> int:
        return len(self.ids)

    def slice(self, start: int, stop: int) -> QueryBatch:
        return QueryBatch(self.ids[start:stop], self.texts[start:stop])


@runtime_checkable
class Node(Protocol):
    """One strategy as the executor runs it."""

    name: str
    #: Nodes whose answers this one consumes (empty for a retrieval strategy).
    inputs: tuple[str, ...]

    def input_depth(self, depth: int) -> int:
        """How many results each input must give for this node to return ``depth``."""
        ...

    def answer(self, batch: QueryBatch, depth: int,
               inputs: Mapping[str, Sequence[Outcome]]) -> list[Outcome]:
        """One outcome per query of ``batch``, in order: the top ``depth`` or a failure.

        ``inputs`` holds, per input node, its outcomes for the same queries.
        """
        ...


# -- answering one query at a time ------------------------------------------------------------------

class Found(NamedTuple):
    """What one search found for one query: its ranked list, and the documents its reply described."""

    docs: list[ScoredDoc]
    documents: Mapping[str, Document] | None = None


class FailedAttempt(NamedTuple):
    """What a backend makes of an attempt that raised: one line (no "after N attempts": that is
    added), whether another attempt may succeed, the seconds to wait before it, and whether the
    attempt reached no server at all (``refused``: the connection was refused, or no address
    answered; ``Refusals`` counts those in a row)."""

    error: str
    retry: bool = False
    wait_s: float = 0.0
    refused: bool = False


#: Connections an endpoint refuses in a row after which it counts as down (``Refusals``).
REFUSALS_TO_STOP = 3


class Refusals:
    """Connections an endpoint refused in a row, over every query a node answers (across its
    chunks and threads). After ``limit`` of them the endpoint counts as down: the node's later
    queries fail at once, not asked, instead of each spending its retries and their waits on a
    server that is not there. Any other outcome (an answer, an HTTP error, a timeout) starts the
    count again."""

    def __init__(self, limit: int = REFUSALS_TO_STOP) -> None:
        self.limit = limit
        self.count = 0
        #: The line every query not asked fails with, once the endpoint counts as down.
        self.down: str | None = None
        self._lock = threading.Lock()

    def reached(self) -> None:
        with self._lock:
            self.count = 0

    def refused(self, error: str) -> str | None:
        """Count one refusal (``error``: its line); the line to fail with once the endpoint is down."""
        with self._lock:
            self.count += 1
            if self.count >= self.limit and self.down is None:
                self.down = f"not asked: {self.limit} connections in a row were refused ({error})"
            return self.down


#: explain(exception, attempt number) -> FailedAttempt; None for an exception that is not the
#: backend's failure (a bug of ours), which is raised.
Explain = Callable[[Exception, int], "FailedAttempt | None"]

Q = TypeVar("Q")


@overload
def answer_each(queries: Sequence[Q], search: Callable[[Q], Found], *, batch_size: None = None,
                retries: int = 0, concurrency: int = 1, explain: Explain | None = None,
                shares: Sequence[float] | None = None, thread_name: str = "searchgrade",
                refusals: Refusals | None = None) -> list[Outcome]: ...


@overload
def answer_each(queries: Sequence[Q], search: Callable[[list[Q]], Sequence[Found]], *, batch_size: int,
                retries: int = 0, concurrency: int = 1, explain: Explain | None = None,
                shares: Sequence[float] | None = None, thread_name: str = "searchgrade",
                refusals: Refusals | None = None) -> list[Outcome]: ...


def answer_each(queries: Sequence[Q], search: Callable[[Any], Any], *, batch_size: int | None = None,
                retries: int = 0, concurrency: int = 1, explain: Explain | None = None,
                shares: Sequence[float] | None = None, thread_name: str = "searchgrade",
                refusals: Refusals | None = None) -> list[Outcome]:
    """One outcome per query, in order: ``search`` called on each query, each call timed on its own.

    A query's seconds are its successful attempt (a wait between attempts is not counted) plus its
    ``shares`` entry (its share of work done for the whole batch before, e.g. embedding it).

    Args:
        queries: what ``search`` takes, one per query (a text, or a text and its vector).
        search: one query -> Found. With ``batch_size``, a list of up to ``batch_size`` queries ->
            one Found per query, in order (a Python plugin's ``search(queries, k)``): the call's
            seconds are shared evenly, and an error fails every query of the call.
        retries: attempts after the first for a query whose error ``explain`` says may pass.
        concurrency: queries (or calls) in flight at once, on threads named ``thread_name``.
        explain: turns a backend's exception into a Failure's line; without it every exception
            is raised (a built-in strategy has no backend to fail).
        shares: seconds added to each query's answer, one per query.
        refusals: the node's count of refused connections in a row (``Refusals``): once its
            endpoint counts as down, the queries left fail without being asked.
    """
    n = len(queries)
    if shares is not None and len(shares) != n:
        raise ValueError(f"{len(shares)} shares for {n} queries")
    size = batch_size or 1
    groups = [range(start, min(n, start + size)) for start in range(0, n, size)]

    def answer_group(group: range) -> list[Outcome]:
        attempt = 0
        while True:
            if refusals is not None and refusals.down is not None:
                return [Failure(refusals.down, attempt) for _ in group]
            attempt += 1
            start = time.perf_counter()
            try:
                if batch_size is None:
                    found = [search(queries[group[0]])]
                else:
                    found = list(search([queries[i] for i in group]))
            except Exception as exc:
                failed = explain(exc, attempt) if explain is not None else None
                if failed is None:
                    raise
                if refusals is not None:
                    if not failed.refused:
                        refusals.reached()
                    elif refusals.refused(failed.error) is not None:
                        return [Failure(f"{failed.error} ({refusals.limit} connections refused in a row: "
                                        "the server counts as down)", attempt) for _ in group]
                if failed.retry and attempt <= retries:
                    if failed.wait_s > 0:
                        time.sleep(failed.wait_s)
                    continue
                suffix = f" (after {attempt} attempts)" if attempt > 1 else ""
                return [Failure(f"{failed.error}{suffix}", attempt) for _ in group]
            if refusals is not None:
                refusals.reached()
            seconds = (time.perf_counter() - start) / len(group)
            return [Answer(f.docs, seconds + (shares[i] if shares is not None else 0.0), f.documents)
                    for i, f in zip(group, found, strict=True)]

    if concurrency <= 1 or len(groups) <= 1:
        answered = [answer_group(g) for g in groups]
    else:
        with ThreadPoolExecutor(max_workers=min(concurrency, len(groups)), thread_name_prefix=thread_name) as pool:
            answered = list(pool.map(answer_group, groups))
    return [outcome for group in answered for outcome in group]


def search_each(search_one: Callable[[str, int], list[ScoredDoc]], queries: Sequence[str],
                k: int) -> list[SearchHits]:
    """The ``Searcher`` interface from a function of one query: each query timed on its own (as a
    user would see it)."""
    check_k(k)
    if isinstance(queries, str):
        raise TypeError("queries must be a sequence of strings, not one string")
    outcomes = answer_each(queries, lambda query: Found(search_one(query, k)))
    return [SearchHits(a.docs, a.seconds) for a in outcomes if isinstance(a, Answer)]  # no explain: no Failure


# -- searchers and builds ---------------------------------------------------------------------------

@runtime_checkable
class Searcher(Protocol):
    """One retrieval strategy, ready to answer queries."""

    name: str  # strategy id (indexes.registry)

    def search(self, queries: Sequence[str], k: int) -> list[SearchHits]:
        """Top k for each query, in query order, each with its own latency."""
        ...


@runtime_checkable
class CandidateSource(Protocol):
    """A searcher that can also answer one query untimed (what hybrid and rerank build on)."""

    name: str

    def search_one(self, query: str, k: int) -> list[ScoredDoc]: ...


@dataclass
class BuiltIndexes:
    """What build_searchers made.

    Attributes:
        searchers: strategy id -> ready searcher, in the order of the strategies requested.
        nodes: what the executor (indexes/executor.py) runs: every strategy once per query, shared.
        skipped: strategy id -> one-line reason with the fix (e.g. the reranker cannot be loaded).
        timings: stage -> seconds ("embedder_load", "embed", "ann_build", "bm25_build",
            "reranker_load").
        stats: counts and rates, e.g. embedded, cache_hits, embed_docs_per_s, ann_reused.
        artifacts: artifact name -> directory it lives in.
        ann: the ANN searcher (indexes.builtin.ann.AnnSearcher) when a requested strategy uses it, for
            measuring what its index loses against exact search.
    """

    searchers: dict[str, Searcher] = field(default_factory=dict)
    #: node name -> executor node: the requested strategies and their inputs.
    nodes: dict[str, Node] = field(default_factory=dict)
    #: The indexes.build.BuildContext the nodes came from (its shared components; untyped here:
    #: build.py imports this module).
    context: Any = None
    skipped: dict[str, str] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    artifacts: dict[str, str] = field(default_factory=dict)
    ann: Any = None
    #: strategy -> its index's cost figures (indexes/variants/costs.py ``strategy_costs``).
    costs: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: variant strategy -> the ANN searcher of its own index (over documents or chunks), for
    #: measuring what an approximate one loses (``measure_variant_recall``).
    variant_ann: dict[str, Any] = field(default_factory=dict)


@contextmanager
def timed(timings: dict[str, float], stage: str) -> Iterator[None]:
    """Add the seconds spent in the block to ``timings[stage]``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        timings[stage] = timings.get(stage, 0.0) + time.perf_counter() - start



def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Row indices of the k highest scores, best first; equal scores in index order.

    Uses argpartition, so the cost is O(n + k log k) rather than a full sort.
    """
    n = len(scores)
    if k < n:
        candidates = np.argpartition(-scores, k - 1)[:k]
        # A score equal to the k-th may sit outside the partition; include all of them
        # so the tie-break by index is exact.
        kth = scores[candidates].min()
        candidates = np.union1d(candidates, np.flatnonzero(scores >= kth))
    else:
        candidates = np.arange(n)
    order = np.lexsort((candidates, -scores[candidates]))
    return candidates[order][:k]


def ranked(doc_ids: Sequence[str], rows: Sequence[int], scores: Sequence[float]) -> list[ScoredDoc]:
    """ScoredDocs with ranks 1..n for rows already in rank order."""
    return [
        ScoredDoc(doc_ids[int(row)], float(score), rank)
        for rank, (row, score) in enumerate(zip(rows, scores, strict=True), start=1)
    ]
