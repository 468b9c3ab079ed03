"""Building the searchers of the requested strategies: reuse artifacts on disk, rebuild what changed.

What each strategy needs:

    ann           embedder + ANN index        fulltext         BM25 tokens
    hybrid        both                        *_rerank         its base + the cross-encoder

An artifact folder is named by the collection fingerprint and the fingerprint of the settings that
shape it (IndexSettings.fingerprint), so a changed corpus or setting builds a new one and an
unchanged one is reloaded. Embeddings are cached per text (indexes/embeddings.py), so even a
rebuilt ANN index only encodes documents it has never seen.

A reranker that cannot be loaded is not faked: its three strategies are listed in
BuiltIndexes.skipped with the reason and the fix, and the other strategies are built as usual.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from core.checks import first_duplicate
from core.records import Collection, SearchGradeError
from core.records import collection_fingerprint as fingerprint_of
from indexes import ann, fulltext, registry
from indexes.base import BuiltIndexes, ProgressFn, Searcher, timed
from indexes.embeddings import (
    EmbeddingCache,
    cache_dir_for,
    encode_cached,
    load_embedder,
    model_slug,
)
from indexes.hybrid import HybridSearcher
from indexes.rerank import RerankSearcher, load_reranker
from indexes.settings import IndexSettings


def _check_inputs(collection: Collection, strategies: Sequence[str]) -> list[str]:
    known = ", ".join(registry.known_strategies())
    unknown = registry.unknown_strategies(strategies)
    if unknown:
        raise SearchGradeError(f"unknown strategy {unknown[0]!r}: use any of {known}")
    if not strategies:
        raise SearchGradeError(f"no strategies requested: use any of {known}")
    if not collection.documents:
        raise SearchGradeError(
            f"collection {collection.name!r} ({collection.path}) has no documents: nothing to index"
        )
    duplicate = first_duplicate(doc.doc_id for doc in collection.documents)
    if duplicate is not None:
        raise SearchGradeError(
            f"collection {collection.name!r} has document id {duplicate!r} twice: ids must be unique"
        )
    return list(dict.fromkeys(strategies))


def build_searchers(
    collection: Collection,
    settings: IndexSettings,
    data_dir: Path,
    strategies: Sequence[str] | None = None,
    progress: ProgressFn | None = None,
    collection_fingerprint: str | None = None,
) -> BuiltIndexes:
    """Build or reload what ``strategies`` need and return ready searchers.

    Args:
        collection: the documents to index (queries and qrels are not used here).
        settings: models, index type and search knobs.
        data_dir: root of the artifacts (``embeddings/`` and ``indexes/`` go under it).
        strategies: strategy ids to build (indexes.registry; None: every known one).
        progress: called as progress(stage, done, total) for "embed" and "bm25_build".
        collection_fingerprint: names the artifact folders; computed from the documents
            when not given.

    Returns:
        BuiltIndexes with searchers in the requested order, skipped strategies with their
        reasons, per-stage timings in seconds ("embedder_load", "embed", "ann_build",
        "bm25_build", "reranker_load"), and stats (documents, embedded, cache_hits,
        embed_docs_per_s, ann_reused, bm25_reused, collection_fingerprint).

    Raises:
        SearchGradeError: unknown strategy, empty collection, duplicate ids, or an embedding
            model that cannot be loaded.
    """
    if strategies is None:
        strategies = registry.known_strategies()
    requested = _check_inputs(collection, strategies)
    data_dir = Path(data_dir)
    fingerprint = collection_fingerprint or fingerprint_of(collection)
    doc_ids = [doc.doc_id for doc in collection.documents]
    texts = [doc.content for doc in collection.documents]
    built = BuiltIndexes()
    built.stats.update(documents=len(doc_ids), collection_fingerprint=fingerprint,
                       ann_index=settings.ann_index)

    reranker = None
    if any("reranker" in registry.needs(s) for s in requested):
        with timed(built.timings, "reranker_load"):
            try:
                reranker = load_reranker(settings.reranker_model)
            except SearchGradeError as exc:
                for strategy in requested:
                    if "reranker" in registry.needs(strategy):
                        built.skipped[strategy] = str(exc)
    active = [s for s in requested if s not in built.skipped]
    needs = set().union(*(registry.needs(s) for s in active)) if active else set()

    bases: dict[str, Searcher] = {}
    if "ann" in needs:
        bases["ann"] = built.ann = _build_ann(settings, data_dir, fingerprint, doc_ids, texts,
                                              progress, built,
                                              bundled_shard(collection, settings.embedding_model))
    if "fulltext" in needs:
        bases["fulltext"] = _build_fulltext(settings, data_dir, fingerprint, doc_ids, texts,
                                            progress, built)
    if "ann" in needs and "fulltext" in needs:
        bases["hybrid"] = HybridSearcher(bases["ann"], bases["fulltext"], settings.rrf_k,
                                         settings.fusion_depth)

    contents = dict(zip(doc_ids, texts, strict=True))
    for strategy in active:
        base_name = registry.base_of(strategy)
        if base_name is None:
            built.searchers[strategy] = bases[strategy]
        else:
            built.searchers[strategy] = RerankSearcher(
                bases[base_name], reranker, contents, depth=settings.rerank_depth,
                batch_size=settings.batch_size, name=strategy,
            )
    return built


def measure_ann_recall(built: BuiltIndexes, queries: Sequence[str], seed: int = 0,
                       sample: int = 200, k: int = 10) -> dict[str, object]:
    """What the ANN index loses against exact search, on a seeded sample of the run's queries.

    Returns:
        {"index", "k", "queries", "recall"} for an approximate index (recall in 0..1: "the index
        finds 97% of what exact search finds"), or {"index": "flat", "exact": True} for exact
        search, which loses nothing. The seconds spent go to ``built.timings["ann_recall"]``.
    """
    with timed(built.timings, "ann_recall"):
        measured = built.ann.recall_at_k(queries, k=k, sample=sample, seed=seed)
    if measured is not None:
        return measured
    if built.ann.kind == "flat":
        return {"index": "flat", "exact": True}
    return {"index": built.ann.kind, "k": k, "queries": 0, "recall": None}


def bundled_shard(collection: Collection, model_name: str) -> Path | None:
    """Vectors a collection folder ships for a model: ``embeddings/<model slug>.npz`` beside its corpus.

    An ordinary embedding-cache shard (see indexes/embeddings.py); texts it does not cover are
    embedded as usual, so a stale shard costs time, never correctness.
    """
    folder = Path(collection.path)
    return folder / "embeddings" / f"{model_slug(model_name)}.npz" if folder.is_dir() else None


def _build_ann(settings: IndexSettings, data_dir: Path, fingerprint: str, doc_ids: list[str],
               texts: list[str], progress: ProgressFn | None, built: BuiltIndexes,
               bundled: Path | None = None) -> ann.AnnSearcher:
    settings = settings.resolved(len(doc_ids))
    built.stats["ann_index"] = settings.ann_index
    with timed(built.timings, "embedder_load"):
        model = load_embedder(settings.embedding_model)
    directory = ann.ann_dir(data_dir, fingerprint, settings)
    cache_dir = cache_dir_for(data_dir, settings.embedding_model)
    built.artifacts.update(ann=str(directory), embeddings=str(cache_dir))
    with timed(built.timings, "ann_build"):
        index = ann.load_ann(directory, settings, doc_ids)
    built.stats["ann_reused"] = index is not None
    if index is None:
        if bundled is not None and bundled.is_file():
            built.stats["bundled_vectors_imported"] = EmbeddingCache(cache_dir).import_shard(bundled)
        with timed(built.timings, "embed"):
            vectors, embed_stats = encode_cached(settings.embedding_model, texts, cache_dir,
                                                 settings.batch_size, progress, model=model)
        built.stats.update(embedded=embed_stats.embedded, cache_hits=embed_stats.cache_hits,
                           embed_docs_per_s=embed_stats.docs_per_s)
        with timed(built.timings, "ann_build"):
            index = ann.build_ann_index(vectors, settings)
            ann.save_ann(directory, index, doc_ids, settings)
    else:
        built.stats.update(embedded=0, cache_hits=0, embed_docs_per_s=None)
        if progress:
            progress("embed", len(doc_ids), len(doc_ids))
    return ann.AnnSearcher(model, index, doc_ids)


def _build_fulltext(settings: IndexSettings, data_dir: Path, fingerprint: str, doc_ids: list[str],
                    texts: list[str], progress: ProgressFn | None,
                    built: BuiltIndexes) -> fulltext.FulltextSearcher:
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
