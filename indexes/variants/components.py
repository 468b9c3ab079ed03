"""The indexes variants search, each made once per build and shared by every strategy that uses it.

A component is an ANN or BM25 index over the collection's documents, or over their chunks, for one
setting of what shapes it (the model and backend, the index type, the chunking). Two strategies
with the same settings share one component (the built-in ``ann`` and a variant that changes
nothing but the aggregate, say), two variants of one chunking share the chunks, and every embedding
goes through the embedding cache (indexes/embeddings/encoder.py), so a text embedded by one model
is never embedded by it again, in this run or a later one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.base import BuiltIndexes, timed
from searchgrade.indexes.chunking.chunks import ChunkSet, load_or_cut
from searchgrade.indexes.chunking.spec import Chunking
from searchgrade.indexes.chunking.splitter import model_tokenizer, tokenizer_identity
from searchgrade.indexes.settings import IndexSettings
from searchgrade.indexes.variants.costs import IndexCost, folder_bytes


class ModelUnavailableError(SearchGradeError):
    """The embedding model of an index cannot be loaded here (the message has the fix): a variant
    using it is skipped, the rest of the run goes on."""


@dataclass(frozen=True)
class Component:
    """One index: its searcher (indexes/builtin/ann.py or fulltext.py), its chunks (None: whole
    documents) and what making it cost."""

    kind: str
    searcher: Any
    chunks: ChunkSet | None
    cost: IndexCost
    #: Where its stats and timings were recorded (the build's own, or the variant's).
    record: BuiltIndexes


def _chunks(ctx: Any, chunking: Chunking, tokenizer: Any) -> tuple[ChunkSet, bool]:
    # Sentences need no tokenizer: every variant of that setting shares one chunking.
    tokenizer = None if chunking.unit == "sentences" else tokenizer
    key = ("chunks", chunking, tokenizer_identity(tokenizer))
    return ctx.shared(key, lambda: load_or_cut(ctx.collection.documents, chunking, tokenizer, ctx.data_dir,
                                               ctx.fingerprint, ctx.progress))


def ann_component(ctx: Any, settings: IndexSettings, chunking: Chunking | None, record: BuiltIndexes) -> Component:
    """The ANN index of ``settings`` over documents (``chunking`` None) or chunks, built once.

    Raises:
        SearchGradeError: the model cannot be loaded (the caller skips the strategy with it).
    """
    key = ("ann", settings.fingerprint("ann"), chunking)
    return ctx.shared(key, lambda: _make_ann(ctx, settings, chunking, record))


def _make_ann(ctx: Any, settings: IndexSettings, chunking: Chunking | None, record: BuiltIndexes) -> Component:
    from searchgrade.indexes import build  # its load_embedder: the one place a build loads a model

    with timed(record.timings, "embedder_load"):
        try:
            model = build.load_embedder(settings.embedding_model, settings.embedding_backend, settings.device,
                                        ctx.data_dir)
        except SearchGradeError as exc:
            raise ModelUnavailableError(str(exc)) from None
    start = time.perf_counter()
    if chunking is None:
        chunks, items, texts, fingerprint = None, ctx.doc_ids, ctx.texts, ctx.fingerprint
        bundled = build.bundled_shard(ctx.collection, settings.embedding_model, settings.embedding_backend)
    else:
        chunks, _ = _chunks(ctx, chunking, model_tokenizer(model))
        items, texts, fingerprint, bundled = chunks.item_ids(), chunks.texts(ctx.collection.documents), \
            chunks.fingerprint, None
    searcher = build.build_ann(settings, ctx.data_dir, fingerprint, items, texts, ctx.progress, record, bundled, model)
    folders = [record.artifacts["ann"]] + ([chunks.folder] if chunks is not None else [])
    cost = IndexCost(record.artifacts["ann"], time.perf_counter() - start, int(record.stats.get("embedded") or 0),
                     int(record.stats.get("cache_hits") or 0), float(record.stats.get("encode_s") or 0.0), len(items),
                     len(ctx.doc_ids), folder_bytes(folders), bool(record.stats.get("ann_reused")))
    return Component("ann", searcher, chunks, cost, record)


def fulltext_component(ctx: Any, settings: IndexSettings, chunking: Chunking | None,
                       record: BuiltIndexes) -> Component:
    """The BM25 index over documents or chunks (cut counting BM25's own words), with the searcher of
    ``settings``' k1 and b, built once."""
    key = ("fulltext", settings.fingerprint("bm25"), settings.bm25_k1, settings.bm25_b, chunking)
    return ctx.shared(key, lambda: _make_fulltext(ctx, settings, chunking, record))


def _make_fulltext(ctx: Any, settings: IndexSettings, chunking: Chunking | None, record: BuiltIndexes) -> Component:
    from searchgrade.indexes.build import build_fulltext

    start = time.perf_counter()
    if chunking is None:
        chunks, items, texts, fingerprint = None, ctx.doc_ids, ctx.texts, ctx.fingerprint
    else:
        chunks, _ = _chunks(ctx, chunking, None)
        items, texts, fingerprint = chunks.item_ids(), chunks.texts(ctx.collection.documents), chunks.fingerprint
    searcher = build_fulltext(settings, ctx.data_dir, fingerprint, items, texts, ctx.progress, record)
    folders = [record.artifacts["bm25"]] + ([chunks.folder] if chunks is not None else [])
    cost = IndexCost(record.artifacts["bm25"], time.perf_counter() - start, 0, 0, 0.0, len(items), len(ctx.doc_ids),
                     folder_bytes(folders), bool(record.stats.get("bm25_reused")))
    return Component("fulltext", searcher, chunks, cost, record)

