"""The indexes strategies search (the built-ins' and the variants'), each made once per build and
shared by every strategy that uses it; ``build_ann`` and ``build_fulltext`` make or reload one.

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
from pathlib import Path
from typing import Any

from searchgrade.core.records import Collection, SearchGradeError
from searchgrade.indexes.base import BuiltIndexes, ProgressFn, timed
from searchgrade.indexes.builtin import ann, fulltext
from searchgrade.indexes.chunking.chunks import ChunkSet, load_or_cut
from searchgrade.indexes.chunking.spec import Chunking
from searchgrade.indexes.chunking.splitter import model_tokenizer, tokenizer_identity
from searchgrade.indexes.embeddings.backends import cache_tag
from searchgrade.indexes.embeddings.encoder import (
    EmbeddingCache,
    cache_dir_for,
    embedder_device,
    encode_cached,
    load_embedder,
    model_slug,
)
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
    with timed(record.timings, "embedder_load"):
        try:
            model = load_embedder(settings.embedding_model, settings.embedding_backend, settings.device,
                                  ctx.data_dir)
        except SearchGradeError as exc:
            raise ModelUnavailableError(str(exc)) from None
    start = time.perf_counter()
    if chunking is None:
        chunks, items, texts, fingerprint = None, ctx.doc_ids, ctx.texts, ctx.fingerprint
        bundled = bundled_shard(ctx.collection, settings.embedding_model, settings.embedding_backend)
    else:
        # Sentences are counted without a tokenizer: a model without a fast tokenizer can cut by them.
        chunks, _ = _chunks(ctx, chunking, None if chunking.unit == "sentences" else model_tokenizer(model))
        items, texts, fingerprint, bundled = chunks.item_ids(), chunks.texts(ctx.collection.documents), \
            chunks.fingerprint, None
    searcher = build_ann(settings, ctx.data_dir, fingerprint, items, texts, ctx.progress, record, bundled, model)
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


def bundled_shard(collection: Collection, model_name: str, backend: str = "torch") -> Path | None:
    """Vectors a collection folder ships for a model and backend: ``embeddings/<model slug>.npz``
    beside its corpus (torch's vectors; another backend's file name carries its cache tag).

    An ordinary embedding-cache shard (see indexes/embeddings/encoder.py); texts it does not cover are
    embedded as usual, so a stale shard costs time, never correctness.
    """
    folder = Path(collection.path)
    if not folder.is_dir():
        return None
    return folder / "embeddings" / f"{model_slug(model_name)}{cache_tag(backend)}.npz"


def build_ann(settings: IndexSettings, data_dir: Path, fingerprint: str, doc_ids: list[str],
              texts: list[str], progress: ProgressFn | None, built: BuiltIndexes,
              bundled: Path | None = None, model: Any = None) -> ann.AnnSearcher:
    """An ANN index over ``texts`` (documents, or chunks under their ids), reloaded when its folder
    (named by ``fingerprint`` and the ANN settings) holds it, else embedded (only the texts the
    cache lacks) and built. Its stats and timings go to ``built``: the build's own, or a variant's
    record of its cost (indexes/variants/). ``model``: the embedder, when already loaded."""
    settings = settings.resolved(len(doc_ids))
    built.stats["ann_index"] = settings.ann_index
    backend = settings.embedding_backend
    if model is None:
        with timed(built.timings, "embedder_load"):
            model = load_embedder(settings.embedding_model, backend, settings.device, data_dir)
    built.stats.update(embedding_backend=backend, embedding_device=embedder_device(model))
    directory = ann.ann_dir(data_dir, fingerprint, settings)
    cache_dir = cache_dir_for(data_dir, settings.embedding_model, backend)
    built.artifacts.update(ann=str(directory), embeddings=str(cache_dir))
    with timed(built.timings, "ann_build"):
        index = ann.load_ann(directory, settings, doc_ids)
    built.stats["ann_reused"] = index is not None
    if index is None:
        if bundled is not None and bundled.is_file():
            built.stats["bundled_vectors_imported"] = EmbeddingCache(cache_dir).import_shard(bundled)
        with timed(built.timings, "embed"):
            vectors, embed_stats = encode_cached(settings.embedding_model, texts, cache_dir,
                                                 settings.batch_size, progress, model=model,
                                                 backend=backend)
        built.stats.update(embedded=embed_stats.embedded, cache_hits=embed_stats.cache_hits,
                           embed_docs_per_s=embed_stats.docs_per_s, encode_s=embed_stats.encode_s)
        with timed(built.timings, "ann_build"):
            index = ann.build_ann_index(vectors, settings)
            ann.save_ann(directory, index, doc_ids, settings)
        del vectors  # the index holds its own copy
    else:
        built.stats.update(embedded=0, cache_hits=0, embed_docs_per_s=None, encode_s=0.0)
        if progress:
            progress("embed", len(doc_ids), len(doc_ids))
    return ann.AnnSearcher(model, index, doc_ids)


def build_fulltext(settings: IndexSettings, data_dir: Path, fingerprint: str, doc_ids: list[str],
                   texts: list[str], progress: ProgressFn | None,
                   built: BuiltIndexes) -> fulltext.FulltextSearcher:
    """A BM25 index over ``texts`` (documents, or chunks under their ids), reloaded when its folder
    holds it; its stats and timings go to ``built`` (as ``build_ann``'s)."""
    directory = fulltext.bm25_dir(data_dir, fingerprint, settings)
    built.artifacts["bm25"] = str(directory)
    with timed(built.timings, "bm25_build"):
        index = fulltext.load_index(directory, doc_ids)
        built.stats["bm25_reused"] = index is not None
        if index is None:
            index = fulltext.build_index(directory, doc_ids, texts, progress)
        elif progress:
            progress("bm25_build", len(doc_ids), len(doc_ids))
        searcher = fulltext.FulltextSearcher.from_settings(index, settings)
    return searcher
