"""What every declared strategy's executor node shares: the node skeleton and its ``answer``.

A declared backend (HTTP, Postgres, LanceDB, Milvus) searches one query at a time and says what
its errors mean; everything else is the same for all of them and written here once: a retrieval
node (no inputs, asked for the depth it reports), the chunk's queries embedded in one batch when
the backend searches by vector (each query charged its share), and ``answer_each``
(indexes/base.py) for the timing, the retries, the queries in flight and a server that refuses
every connection (after a few in a row, the rest are not asked).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from searchgrade.indexes.base import FailedAttempt, Found, Outcome, QueryBatch, Refusals, answer_each
from searchgrade.indexes.declared.declaration import StrategySpec, query_vectors


class DeclaredNode:
    """A declared strategy as an executor node; a backend implements ``search_one`` and ``explain``.

    Attributes:
        retries: attempts after the first for a query whose error ``explain`` says may pass.
        concurrency: queries in flight at once.
    """

    inputs: tuple[str, ...] = ()
    retries: int = 0
    concurrency: int = 1

    def __init__(self, spec: StrategySpec, embedder: Any | None = None, batch_size: int = 32) -> None:
        self.name = spec.name
        self.where = spec.where
        #: Embeds the queries (None: the backend searches by text only).
        self.embedder = embedder
        self.batch_size = batch_size
        #: Connections the backend refused in a row: once it counts as down, no query is asked.
        self.refusals = Refusals()

    def input_depth(self, depth: int) -> int:
        return depth

    def search_one(self, text: str, vector: Any, depth: int) -> Found:
        """One attempt at one query's top ``depth`` (``vector`` None without an embedder).

        Raises:
            Exception: whatever the backend raises; ``explain`` says what it means.
        """
        raise NotImplementedError

    def explain(self, exc: Exception, attempt: int) -> FailedAttempt | None:
        """One line for a query's error and whether another attempt may help; None: not the
        backend's failure (raised)."""
        raise NotImplementedError

    def answer(self, batch: QueryBatch, depth: int,
               inputs: Mapping[str, Sequence[Outcome]]) -> list[Outcome]:  # noqa: ARG002 - the node contract's signature
        texts = list(batch.texts)
        vectors: Sequence[Any] = [None] * len(texts)
        shares: Sequence[float] | None = None
        if self.embedder is not None:
            vectors, shares = query_vectors(self.embedder, texts, self.batch_size)
        return answer_each(list(zip(texts, vectors, strict=True)),
                           lambda query: self.search_one(query[0], query[1], depth),
                           retries=self.retries, concurrency=self.concurrency, explain=self.explain,
                           shares=shares, thread_name=f"searchgrade-{self.name}", refusals=self.refusals)
