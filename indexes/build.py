"""Building the requested strategies: reuse artifacts on disk, rebuild what changed.

Each strategy is built by its factory in the registry (indexes/registry.py: the built-ins' entries,
and the declared kinds' builders) from a ``BuildContext`` that makes every shared component once.
What the built-ins need:

    ann           embedder + ANN index        fulltext         BM25 tokens
    hybrid        the ann and fulltext nodes  X_rerank         X's node + the cross-encoder

The ANN and BM25 indexes themselves (over documents, or a variant's chunks) are made by
indexes/variants/components.py, once per build for each setting. An artifact folder is named by the
collection fingerprint and the fingerprint of the settings that shape it (IndexSettings.fingerprint), so a changed corpus or setting builds a new one and an
unchanged one is reloaded. Embeddings are cached per text (indexes/embeddings/encoder.py), so even a
rebuilt ANN index only encodes documents it has never seen.

A reranker that cannot be loaded is not faked: its strategies are listed in BuiltIndexes.skipped
with the reason and the fix, and the other strategies are built as usual.
``reranker_model = "trained:NAME"`` reranks with a reranker trained by ``train-reranker`` in the
data directory, each query scored by the model that never saw it (indexes/rerank/trained.py):
the reranked strategies share one CrossFittedScorer behind the shared scores.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from searchgrade.core.checks import first_duplicate
from searchgrade.core.records import Collection, SearchGradeError
from searchgrade.core.records import collection_fingerprint as fingerprint_of
from searchgrade.indexes import registry as registry_module
from searchgrade.indexes.base import BuiltIndexes, Node, ProgressFn, timed
from searchgrade.indexes.builtin import ann, fulltext
from searchgrade.indexes.embeddings.encoder import (
    EmbeddingCache,
    cache_dir_for,
    encode_cached,
    load_embedder,
)
from searchgrade.indexes.executor import StrategySearcher
from searchgrade.indexes.rerank.cross_encoder import (
    CrossEncoderScorer,
    PairScorer,
    SharedScores,
    load_reranker,
)
from searchgrade.indexes.rerank.trained import CrossFittedScorer, TrainedReranker, trained_name
from searchgrade.indexes.settings import IndexSettings
from searchgrade.indexes.variants.components import ModelUnavailableError, bundled_shard
from searchgrade.indexes.variants.costs import strategy_costs


class SkipStrategy(SearchGradeError):  # noqa: N818 - a signal to skip, recorded, not an error
    """A strategy that cannot be built here for a reason the run records (and goes on without it)."""


class BuildContext:
    """What factories build their nodes from, each component made once and shared.

    ``node(name)`` builds a strategy's node (and the nodes it is built on) through the registry;
    ``ann()``, ``fulltext()``, ``scorer()``, ``embedder(model)`` are the shared components.
    """

    def __init__(self, collection: Collection, settings: IndexSettings, data_dir: Path,
                 fingerprint: str, progress: ProgressFn | None, built: BuiltIndexes,
                 registry: registry_module.Registry, services: Mapping[str, Any] | None = None) -> None:
        self.collection = collection
        self.settings = settings
        self.data_dir = Path(data_dir)
        self.fingerprint = fingerprint
        self.progress = progress
        self.built = built
        self.registry = registry
        self.doc_ids = [doc.doc_id for doc in collection.documents]
        self.texts = [doc.content for doc in collection.documents]
        self.contents = dict(zip(self.doc_ids, self.texts, strict=True))
        self.nodes: dict[str, Node] = {}
        self._ann: ann.AnnSearcher | None = None
        self._fulltext: fulltext.FulltextSearcher | None = None
        self._scores: SharedScores | None = None
        self._scorer_error: str | None = None
        #: What the run gives rerankers that need more than indexes/ has (``"llm_reranker"``: a
        #: factory of the LLM reranker over the run's endpoint, engine/llm/reranker.py).
        self.services = dict(services or {})
        #: Declared rerankers' shared scores (indexes/rerank/service.py), by reranker name.
        self._query_scores: dict[str, Any] = {}
        #: What factories share, made once by key (indexes/variants/components.py: indexes, chunks).
        self._shared: dict[Any, Any] = {}
        #: Node name -> the cost of the index it searches itself (indexes/variants/costs.py).
        self.own_costs: dict[str, Any] = {}

    def shared(self, key: Any, make: Callable[[], Any]) -> Any:
        """``make()`` once per key for the whole build (an index, a chunking), then the same object;
        a ``SearchGradeError`` it raised is raised again for the next strategy that asks (a model
        that cannot be loaded is tried once)."""
        if key not in self._shared:
            try:
                self._shared[key] = make()
            except SearchGradeError as exc:
                self._shared[key] = exc
        found = self._shared[key]
        if isinstance(found, SearchGradeError):
            raise found
        return found

    def node(self, name: str) -> Node:
        """The node of strategy ``name``, built once, with every node it is built on."""
        if name not in self.nodes:
            node = self.registry[name](self)
            for dep in node.inputs:
                self.node(dep)
            self.nodes[name] = node
        return self.nodes[name]

    def ann(self) -> ann.AnnSearcher:
        """The built-in ANN index (the run's settings, whole documents); its stats are the build's."""
        if self._ann is None:
            from searchgrade.indexes.variants.components import ann_component

            try:
                component = ann_component(self, self.settings, None, self.built)
            except ModelUnavailableError as exc:  # the run's own model: the run cannot go on without it
                raise SearchGradeError(str(exc)) from None
            self.own_costs["ann"] = component.cost
            # built.ann: what measure_ann_recall (issue 9) measures.
            self._ann = self.built.ann = component.searcher
        return self._ann

    def fulltext(self) -> fulltext.FulltextSearcher:
        """The built-in BM25 index (the run's settings, whole documents)."""
        if self._fulltext is None:
            from searchgrade.indexes.variants.components import fulltext_component

            component = fulltext_component(self, self.settings, None, self.built)
            self.own_costs["fulltext"] = component.cost
            self._fulltext = component.searcher
        return self._fulltext

    def embedder(self, model_name: str) -> Any:
        """An embedding model (the ANN's when it is the same name), loaded once per process."""
        with timed(self.built.timings, "embedder_load"):
            return load_embedder(model_name, self.settings.embedding_backend, self.settings.device,
                                 self.data_dir)

    def scorer(self) -> SharedScores:
        """The cross-encoder's shared scores; SkipStrategy when it cannot be loaded."""
        if self._scorer_error is not None:
            raise SkipStrategy(self._scorer_error)
        if self._scores is None:
            with timed(self.built.timings, "reranker_load"):
                try:
                    scorer = self._pair_scorer()
                except SearchGradeError as exc:
                    self._scorer_error = str(exc)
                    raise SkipStrategy(self._scorer_error) from None
            self._scores = SharedScores(scorer)
        return self._scores

    def query_scores(self, reranker: str) -> Any:
        """A declared reranker's shared scores (built once, shared by every ``X_NAME``)."""
        if reranker not in self._query_scores:
            from searchgrade.indexes.declared.rerankers import MissingService, reranker_kind
            from searchgrade.indexes.rerank import http, llm_kind  # noqa: F401  (they register the kinds)
            from searchgrade.indexes.rerank.service import QueryScores

            spec = self.registry.rerankers[reranker]
            with timed(self.built.timings, "reranker_load"):
                try:
                    scorer = reranker_kind(spec.kind, spec.where).build(spec, self)
                except MissingService as exc:
                    raise SkipStrategy(str(exc)) from None
            self._query_scores[reranker] = QueryScores(scorer)
        return self._query_scores[reranker]

    def declared_scorers(self) -> dict[str, Any]:
        """The declared rerankers built so far (QueryReranker by name)."""
        return {name: q.reranker for name, q in self._query_scores.items()}

    def declared_reranker_counts(self) -> dict[str, dict[str, Any]]:
        """Per declared reranker used: its kind, pairs scored and reused, and calls made."""
        return {name: {"kind": self.registry.rerankers[name].kind, "scored": q.scored, "reused": q.reused,
                       "calls": q.calls} for name, q in self._query_scores.items()}

    def bind_queries(self, queries: Sequence[Any]) -> None:
        """Give the reranker the run's queries (``query_id``, ``text``, ``source_doc_id``) before
        the search: a trained reranker picks its model per query and source document
        (``CrossFittedScorer.bind_queries``); any other reranker, or none, needs nothing."""
        bind = getattr(self._scores.scorer, "bind_queries", None) if self._scores is not None else None
        if bind is not None:
            bind(queries)

    def reranker_counts(self) -> dict[str, int] | None:
        """The cross-encoder's pairs so far: {"scored", "reused"}; None when no reranker was loaded."""
        if self._scores is None:
            return None
        return {"scored": self._scores.scored, "reused": self._scores.reused}

    def reranker_summary(self) -> dict[str, Any] | None:
        """A trained reranker's record of which model scored each query (``CrossFittedScorer.summary``);
        None for any other reranker, or none."""
        summary = getattr(self._scores.scorer, "summary", None) if self._scores is not None else None
        return summary() if summary is not None else None

    def _pair_scorer(self) -> PairScorer:
        """The cross-encoder, or a trained reranker's cross-fitted scorer for ``trained:NAME``
        (its fold models load when a query first needs one)."""
        name = self.settings.reranker_model
        trained = trained_name(name)
        if trained is not None:
            return CrossFittedScorer(TrainedReranker.load(self.data_dir, trained),
                                     batch_size=self.settings.batch_size)
        return CrossEncoderScorer(load_reranker(name), name, self.settings.batch_size)


def _check_inputs(collection: Collection, strategies: Sequence[str],
                  registry: registry_module.Registry) -> list[str]:
    known = ", ".join(registry.names())
    unknown = registry.unknown(strategies)
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
    registry: registry_module.Registry | None = None,
    services: Mapping[str, Any] | None = None,
) -> BuiltIndexes:
    """Build or reload what ``strategies`` need and return their executor nodes and searchers.

    Args:
        collection: the documents to index (queries and qrels are not used here).
        settings: models, index type and search knobs.
        data_dir: root of the artifacts (``embeddings/`` and ``indexes/`` go under it).
        strategies: strategy names to build (None: the registry's default selection).
        progress: called as progress(stage, done, total) for "embed" and "bm25_build".
        collection_fingerprint: names the artifact folders; computed from the documents
            when not given.
        registry: the strategies that exist (default: the built-ins and Python plugins).
        services: what rerankers that need the run get (``BuildContext.services``).

    Returns:
        BuiltIndexes with the nodes (requested strategies and those they are built on), a
        searcher per requested strategy, skipped strategies with their reasons, per-stage
        timings in seconds ("embedder_load", "embed", "ann_build", "bm25_build",
        "reranker_load"), and stats (documents, embedded, cache_hits, embed_docs_per_s,
        ann_reused, bm25_reused, collection_fingerprint).

    Raises:
        SearchGradeError: unknown strategy, empty collection, duplicate ids, a model that cannot
            be loaded, or a declared strategy that cannot be set up.
    """
    registry = registry if registry is not None else registry_module.registry_for()
    if strategies is None:
        strategies = registry.defaults()
    requested = _check_inputs(collection, strategies, registry)
    fingerprint = collection_fingerprint or fingerprint_of(collection)
    built = BuiltIndexes()
    built.stats.update(documents=len(collection.documents), collection_fingerprint=fingerprint,
                       ann_index=settings.ann_index)
    ctx = BuildContext(collection, settings, Path(data_dir), fingerprint, progress, built, registry, services)
    # The reranker first: when it cannot be loaded, its strategies are skipped before any work.
    default_declared = settings.reranker_model in registry.rerankers
    if not default_declared and any(registry.info(s).reranks is not None and registry.info(s).reranker is None
                                    for s in requested):
        try:
            ctx.scorer()
        except SkipStrategy:
            pass
    for strategy in requested:
        try:
            ctx.node(strategy)
        except (SkipStrategy, ModelUnavailableError) as exc:  # a variant's model that cannot load skips it
            built.skipped[strategy] = str(exc)
    built.nodes = ctx.nodes
    built.context = ctx
    built.costs = strategy_costs(ctx.own_costs, {n: node.inputs for n, node in ctx.nodes.items()},
                                 [s for s in requested if s not in built.skipped])
    built.searchers = {s: StrategySearcher(s, ctx.nodes) for s in requested if s not in built.skipped}
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


def measure_variant_recall(built: BuiltIndexes, queries: Sequence[str], seed: int = 0,
                           sample: int = 200, k: int = 10) -> dict[str, dict[str, object]]:
    """What each ANN variant's approximate index loses against exact search over the same items
    (documents or chunks), as ``measure_ann_recall`` measures the built-in's: variant -> {"index",
    "k", "queries", "recall", "items"}; variants searched exactly are left out. An index two
    variants share is measured once."""
    out: dict[str, dict[str, object]] = {}
    measured: dict[int, dict[str, object] | None] = {}
    with timed(built.timings, "ann_recall"):
        for name, searcher in built.variant_ann.items():
            if id(searcher) not in measured:
                found = searcher.recall_at_k(queries, k=k, sample=sample, seed=seed)
                measured[id(searcher)] = None if found is None else {**found, "items": len(searcher.doc_ids)}
            if measured[id(searcher)] is not None:
                out[name] = measured[id(searcher)]
    return out


def document_vectors(collection: Collection, settings: IndexSettings, data_dir: Path,
                     progress: ProgressFn | None = None) -> Any:
    """The collection's document vectors for ``settings.embedding_model``, in document order:
    from the embedding cache (and the vectors a collection folder ships), encoding only the rest."""
    backend = settings.embedding_backend
    cache_dir = cache_dir_for(Path(data_dir), settings.embedding_model, backend)
    bundled = bundled_shard(collection, settings.embedding_model, backend)
    if bundled is not None and bundled.is_file():
        EmbeddingCache(cache_dir).import_shard(bundled)
    vectors, _stats = encode_cached(settings.embedding_model, [d.content for d in collection.documents],
                                    cache_dir, settings.batch_size, progress, backend=backend,
                                    device=settings.device, models_dir=Path(data_dir))
    return vectors
