"""A variant as the executor runs it: over whole documents, as the built-ins, or over chunks.

Over chunks, a query's chunk ranking is cut to the document ranking the variant's ``aggregate``
makes of it (indexes/chunking/aggregate.py): chunks are retrieved until ``depth`` distinct
documents are ranked (the first search asks for about twice the chunks ``depth`` documents hold,
each further one for twice as many, until the index has no more), so a document-level list of the
run's depth comes back and document-level judgments and metrics apply as they are. Each listed
document carries the chunk it matched by (``Answer.passages``), which the drill-down shows.

Latency: a query's share of the batch that embedded it (shared with every node of the same model,
at what it cost then) plus its own searches and the aggregation.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from searchgrade.core.records import ScoredDoc
from searchgrade.indexes.chunking.aggregate import Aggregate, Ranked, aggregate, parse_aggregate
from searchgrade.indexes.chunking.spec import parse_chunking
from searchgrade.indexes.declared.declaration import StrategySpec
from searchgrade.indexes.variants.common import variant_settings
from searchgrade.indexes.variants.components import Component, ann_component, fulltext_component

#: The first search asks for this many times the chunks ``depth`` documents hold on average.
FIRST_FACTOR = 2


def variant_node(spec: StrategySpec, ctx: Any, kind: str, keys: tuple[str, ...]) -> Any:
    """The node of a declared variant (``kind`` "ann" or "fulltext"), its index built or shared.

    Raises:
        ModelUnavailableError: its model cannot be loaded here (the reason and the fix): the build
            skips the strategy.
    """
    from searchgrade.indexes.base import BuiltIndexes

    options = spec.options
    settings = variant_settings(ctx.settings, options, keys, spec.where)
    chunking = parse_chunking(options.get("chunking"), f"{spec.where}: chunking")
    make = ann_component if kind == "ann" else fulltext_component
    # A model that cannot load raises ModelUnavailableError: the build skips the strategy with it.
    component = make(ctx, settings, chunking, BuiltIndexes())
    ctx.own_costs[spec.name] = component.cost
    if kind == "ann":
        ctx.built.variant_ann[spec.name] = component.searcher
    if chunking is not None:
        return ChunkedNode(spec.name, component, parse_aggregate(options["aggregate"]), ctx.settings.batch_size)
    if kind == "ann":
        from searchgrade.indexes.builtin.ann import AnnNode

        return AnnNode(component.searcher, ctx.settings.batch_size, name=spec.name)
    from searchgrade.indexes.builtin.fulltext import FulltextNode

    return FulltextNode(component.searcher, name=spec.name)


class ChunkedNode:
    """Retrieval over a component's chunks, reported as the aggregated document ranking."""

    inputs: tuple[str, ...] = ()

    def __init__(self, name: str, component: Component, how: Aggregate, batch_size: int = 32) -> None:
        self.name = name
        self.component = component
        self.chunks = component.chunks
        self.how = how
        self.batch_size = batch_size

    def input_depth(self, depth: int) -> int:
        return depth

    def ranking(self, search: Callable[[int], tuple[Sequence[int], Sequence[float]]], depth: int) -> list[Ranked]:
        """The top ``depth`` documents: chunks searched, ever deeper, until that many are ranked.

        Args:
            search: k -> (chunk rows, scores) of the top k chunks, best first.
        """
        chunks, total = self.chunks, len(self.chunks)
        k = min(total, max(depth, math.ceil(depth * chunks.chunks_per_doc * FIRST_FACTOR)))
        while True:
            rows, scores = search(k)
            ranked = aggregate(rows, scores, chunks.doc_of, chunks.position, self.how)
            # Done: enough documents, every chunk searched, or the index gave fewer than asked (no more).
            if len(ranked) >= depth or k >= total or len(rows) < k:
                return ranked[:depth]
            k = min(total, k * 2)

    def answer(self, batch: Any, depth: int, inputs: Mapping[str, Any]) -> list[Any]:  # noqa: ARG002 - the node contract's signature
        from searchgrade.indexes.base import Answer

        searcher, texts = self.component.searcher, list(batch.texts)
        if self.component.kind == "ann":
            from searchgrade.indexes.declared.declaration import query_vectors

            vectors, shares = query_vectors(searcher.model, texts, self.batch_size)
            searches = [self._ann_search(np.asarray(v, dtype=np.float32)) for v in vectors]
        else:
            from searchgrade.indexes.builtin.tokenizer import tokenize

            shares = [0.0] * len(texts)
            searches = [self._bm25_search(tokenize(text)) for text in texts]
        out = []
        for search, share in zip(searches, shares, strict=True):
            start = time.perf_counter()
            ranked = self.ranking(search, depth)
            doc_ids = self.chunks.doc_ids
            docs = [ScoredDoc(doc_ids[r.doc], r.score, rank) for rank, r in enumerate(ranked, start=1)]
            passages = {doc_ids[r.doc]: self.chunks.passage(r.chunk) for r in ranked}
            out.append(Answer(docs, share + time.perf_counter() - start, None, passages))
        return out

    def _ann_search(self, vector: np.ndarray) -> Callable[[int], tuple[Sequence[int], Sequence[float]]]:
        index = self.component.searcher.index

        def search(k: int) -> tuple[Sequence[int], Sequence[float]]:
            scores, rows = index.search(vector[None, :], k)
            kept = rows[0] >= 0
            return rows[0][kept].tolist(), scores[0][kept].tolist()

        return search

    def _bm25_search(self, tokens: list[str]) -> Callable[[int], tuple[Sequence[int], Sequence[float]]]:
        searcher = self.component.searcher

        def search(k: int) -> tuple[Sequence[int], Sequence[float]]:
            rows, scores = searcher.index.top(tokens, k, searcher.k1, searcher.b)
            return list(rows), list(scores)

        return search
