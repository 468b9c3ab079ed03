"""The evaluation pipeline: queries -> search -> grades -> metrics, stored as one run.

A run is created as 'running' before any work and ends 'complete' only after its last write; a
failure ends it 'failed', and Ctrl-C or Cancel in the app 'cancelled', each with what it completed
(stage timings and the error). While it runs, its heartbeat is kept (engine/run/lifecycle.py): a run
whose process dies is seen 'interrupted' once the heartbeat is stale. Results, grades and metrics
of a run land in one transaction, so a run that did not finish never holds half of them.

What a run does is its ``RunConfig`` (engine/run/config.py); how results are graded, by qrels, the LLM
judge or both, is engine/run/grading.py; how they are scored, engine/run/scoring.py.

LLM-mode runs can be resumed (`resume_run`): generated queries are stored as soon as they exist
and every valid LLM reply is cached within seconds, so a resumed run reuses the queries, gets
completed judgments from the cache and sends only the missing calls.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchgrade.core.records import Collection, Query, SearchGradeError, SearchHits, collection_fingerprint
from searchgrade.engine.collections import default_threshold, grade_scale, load_collection
from searchgrade.engine.llm.client import LLMClient
from searchgrade.engine.llm.settings import settings_from_env
from searchgrade.engine.run.config import JUDGE_THRESHOLD, RunConfig
from searchgrade.engine.run.grading import UsageSink, flush_quietly, grade_results, llm_queries
from searchgrade.engine.run.lexical_overlap import query_overlaps
from searchgrade.engine.run.lifecycle import RunCancelled, RunGuard, RunTakenOver
from searchgrade.engine.run.scoring import per_query_metrics, source_found_metrics, stored_cutoffs, summarise
from searchgrade.engine.run.search import run_search
from searchgrade.engine.store import Store, heartbeat_timeout_s, new_owner
from searchgrade.indexes.build import build_searchers, measure_ann_recall
from searchgrade.indexes.rerank.trained import merge_records
from searchgrade.indexes.settings import IndexSettings

if TYPE_CHECKING:
    from searchgrade.engine.ray.runner import RaySession

Progress = Callable[[str, int, int], None]
#: Called as on_usage(stage, counters) with a stage's LLM accounting so far (engine.llm.accounting.StageUsage).
UsageCallback = Callable[[str, dict[str, float]], None]


@dataclass
class RunOutcome:
    run_id: str
    status: str
    skipped: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


def select_qrels_queries(collection: Collection, max_queries: int | None, seed: int) -> list[Query]:
    """The collection's queries that have at least one judgment, optionally a seeded sample."""
    qrels = collection.qrels or {}
    queries = [q for q in collection.queries if qrels.get(q.query_id)]
    if not queries:
        raise SearchGradeError(
            f"collection {collection.name!r} has no query with a judgment in its qrels; "
            "check that the qrels' query ids match the queries' ids"
        )
    if max_queries is not None and max_queries < len(queries):
        queries = sorted(random.Random(seed).sample(queries, max_queries), key=lambda q: q.query_id)
    return queries


@dataclass
class RunPlan:
    """What a run evaluates, decided before the run row exists (bad input fails with no run)."""

    label_source: str
    grade_min: int | None
    grade_max: int | None
    threshold: int
    #: Mode qrels: the queries and their judgments.
    queries: list[Query] = field(default_factory=list)
    qrels: dict[str, dict[str, int]] = field(default_factory=dict)
    #: Mode llm with queries_from: the run whose queries are reused.
    queries_from: str | None = None
    notes: list[str] = field(default_factory=list)


def _on_ray_device(config: RunConfig, ray: RaySession | None) -> tuple[RunConfig, str | None]:
    """The config with the device a Ray run embeds on (engine/ray/runner.py: ``device_on_ray``)."""
    if ray is None:
        return config, None
    from searchgrade.engine.ray.runner import device_on_ray

    index = config.index or IndexSettings()
    device, note = device_on_ray(index.device, index.embedding_backend)
    return (replace(config, index=replace(index, device=device)) if device != index.device else config), note


def _prepare(config: RunConfig) -> RunConfig:
    config.validate()
    config.check_environment()
    if config.index is None:
        config = replace(config, index=IndexSettings())
    if config.mode == "llm" and config.llm is None:
        config = replace(config, llm=settings_from_env())
    if config.uses_llm:
        from searchgrade.engine.llm.judge import JudgeSettings
        from searchgrade.engine.llm.querygen import QueryGenSettings

        if config.querygen is None and config.mode == "llm":
            config = replace(config, querygen=QueryGenSettings(seed=config.seed))
        if config.judge is None:
            config = replace(config, judge=JudgeSettings())
    return config


def _plan(collection: Collection, config: RunConfig, store: Store) -> RunPlan:
    if config.mode == "llm":
        threshold = config.threshold if config.threshold is not None else JUDGE_THRESHOLD
        plan = RunPlan("llm", 0, 3, threshold)
        if config.queries_from is not None:
            source = store.get_run(config.queries_from)
            if not store.queries(source.run_id):
                raise SearchGradeError(
                    f"run {source.run_id} has no stored queries to reuse; pick another run for "
                    "--queries-from (see `searchgrade runs`)"
                )
            plan.queries_from = source.run_id
            if source.collection_name != collection.name:
                plan.notes.append(f"--queries-from {source.run_id} was run on collection "
                                  f"{source.collection_name!r}, not {collection.name!r}")
        else:
            from searchgrade.engine.llm.querygen import sample_documents

            qg = config.querygen
            sample_documents(collection.documents, 1, qg.seed, qg.min_words, qg.min_chars)
        return plan

    if not collection.has_qrels:
        raise SearchGradeError(
            f"collection {collection.name!r} has no qrels (human judgments); add qrels.tsv "
            "(query-id, corpus-id, score) or --qrels-file FILE, or use the LLM mode",
            page=f"collection {collection.name!r} has no judgments (qrels); add a judgments file, "
            "or use the LLM judge",
        )
    queries = select_qrels_queries(collection, config.max_queries, config.seed)
    qrels = {q.query_id: collection.qrels[q.query_id] for q in queries}
    grade_min, grade_max = grade_scale(qrels)
    if config.judge_unjudged and not (grade_max <= 1 or grade_max == 3):
        raise SearchGradeError(
            f"--judge-unjudged needs qrels on the judge's 0-3 scale or binary (0/1); these go up "
            f"to {grade_max}: drop --judge-unjudged (judge-vs-human agreement is still reported)"
        )
    threshold = config.threshold if config.threshold is not None else default_threshold(grade_max)
    if threshold > grade_max:
        raise SearchGradeError(
            f"--threshold of {threshold} is above the highest grade in the qrels ({grade_max}); "
            "no document could count as relevant: lower it"
        )
    label_source = "human+llm" if config.judge_unjudged else "human"
    return RunPlan(label_source, grade_min, grade_max, threshold, queries, qrels)


def _client(config: RunConfig) -> LLMClient | None:
    return LLMClient(config.llm) if config.uses_llm else None


def _check_trained_reranker(config: RunConfig, data_dir: str | Path) -> None:
    """A ``trained:NAME`` reranker that is not there stops the run before it starts."""
    from searchgrade.engine.run.strategies import base_of
    from searchgrade.indexes.rerank.trained import TrainedReranker, trained_name

    name = trained_name(config.index.reranker_model) if config.index is not None else None
    if name is not None and any(base_of(s) for s in config.strategies):
        TrainedReranker.load(Path(data_dir), name)


def run_evaluation(
    collection: Collection,
    config: RunConfig,
    store: Store,
    data_dir: str | Path,
    *,
    progress: Progress | None = None,
    on_run_created: Callable[[str], None] | None = None,
    on_usage: UsageCallback | None = None,
    ray: RaySession | None = None,
) -> RunOutcome:
    """Evaluate every strategy on a collection and store the run.

    Args:
        collection: The corpus, with queries and qrels for mode "qrels".
        config: What to run.
        store: The run store (engine.store.Store).
        data_dir: Where index artifacts and caches live.
        progress: Called as progress(stage, done, total) while work advances.
        on_run_created: Called with the run id as soon as the run row exists.
        on_usage: Called as on_usage(stage, counters) with the LLM accounting of a stage so far.
        ray: Run the heavy stages on this Ray session (engine/ray/runner.py); None runs them here.

    Returns:
        The run id and its final status. Raises on failure after marking the run failed.
    """
    config, ray_note = _on_ray_device(config, ray)
    # How the collection was loaded (columns, queries and qrels files), so a resume loads it alike.
    config = _prepare(replace(config, collection_fields=dict(collection.fields)))
    _check_trained_reranker(config, data_dir)
    plan = _plan(collection, config, store)
    if ray_note is not None:
        plan.notes.append(ray_note)
    client = _client(config)
    name = config.name or f"{collection.name} {time.strftime('%Y-%m-%d %H:%M')}"
    owner = new_owner()
    run_id = store.create_run(
        name=name,
        collection_name=collection.name,
        collection_path=str(collection.path),
        mode=config.mode,
        label_source=plan.label_source,
        grade_min=plan.grade_min,
        grade_max=plan.grade_max,
        threshold=plan.threshold,
        k=config.k,
        depth=config.retrieval_depth,
        config=config.to_json(),
        notes=[*collection.notes, *plan.notes],
        owner=owner,
    )
    if on_run_created is not None:
        on_run_created(run_id)
    return _execute(RunContext(collection, config, store, Path(data_dir), run_id, plan, client,
                               progress, on_usage, owner=owner, ray=ray))


def resume_run(
    run_id: str,
    store: Store,
    data_dir: str | Path,
    *,
    collection: Collection | None = None,
    base_url: str | None = None,
    concurrency: int | None = None,
    progress: Progress | None = None,
    on_usage: UsageCallback | None = None,
    ray: RaySession | None = None,
) -> RunOutcome:
    """Continue an interrupted, cancelled or failed run with its stored config; only missing work is done.

    Stored queries are reused, completed LLM replies come from the cache (none is asked again),
    and the run's results, grades and metrics are written once, at the end, as for a new run.

    Args:
        run_id: The run (or an unambiguous prefix).
        collection: The corpus; None loads it from the path and fields the run stored.
        base_url, concurrency: Override the stored LLM endpoint or concurrency (the model and
            prompts stay, or the cache would not apply).
        ray: Run the missing work on this Ray session (engine/ray/runner.py); None runs it here.
    """
    run = store.get_run(run_id)
    failed_queries = store.failed_query_counts(run.run_id)
    if run.status == "complete" and not failed_queries:
        raise SearchGradeError(f"run {run.run_id} is already complete; start a new one with "
                               "`searchgrade evaluate`")
    if run.status == "running":
        raise SearchGradeError(
            f"run {run.run_id} is still running ({store.running_where(run.run_id)}); stop or cancel "
            f"it first, or wait: without a heartbeat for {heartbeat_timeout_s():g} s it counts as interrupted")
    config = RunConfig.from_json(run.config)
    if config.llm is not None and (base_url is not None or concurrency is not None):
        overrides: dict[str, Any] = {}
        if base_url is not None:
            overrides["base_url"] = base_url
        if concurrency is not None:
            overrides["concurrency"] = concurrency
        config = replace(config, llm=replace(config.llm, **overrides))
    config, _ = _on_ray_device(config, ray)
    if collection is None:
        collection = load_collection(run.collection_path, **config.collection_fields)
    config = _prepare(config)
    _check_trained_reranker(config, data_dir)  # gone since the run started: stop before any work
    plan = _plan(collection, config, store)
    client = _client(config)
    owner = new_owner()
    store.reopen_run(run.run_id, owner, allow_complete=bool(failed_queries))
    stored = {key: hits for key, hits in store.stored_hits(run.run_id).items()
              if key[0] in config.strategies}
    return _execute(RunContext(collection, config, store, Path(data_dir), run.run_id, plan, client,
                               progress, on_usage, owner=owner, timings=dict(run.timings),
                               stats=dict(run.stats), stored_hits=stored, ray=ray))


@dataclass
class RunContext:
    """A run in progress: what the stages share."""

    collection: Collection
    config: RunConfig
    store: Store
    data_dir: Path
    run_id: str
    plan: RunPlan
    client: LLMClient | None
    progress: Progress | None
    on_usage: UsageCallback | None
    #: This process's token for the run (engine.store.new_owner).
    owner: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    stage: str = "starting"
    guard: RunGuard | None = None
    #: The Ray session the heavy stages run on (engine/ray/runner.py), or None: here.
    ray: RaySession | None = None

    def check(self) -> None:
        """Stop here if the run was cancelled or taken over (engine/run/lifecycle.py)."""
        if self.guard is not None:
            self.guard.check()

    def report(self, stage: str, done: int, total: int) -> None:
        """Progress, and a point where a cancel takes effect."""
        self.check()
        if self.progress is not None:
            self.progress(stage, done, total)
    #: (strategy, query id) -> results a stopped run already stored (a resume keeps them).
    stored_hits: dict[tuple[str, str], SearchHits] = field(default_factory=dict)

    def enter(self, stage: str) -> None:
        self.check()
        self.stage = stage
        self.store.update_run(self.run_id, stage=stage, timings=self.timings)


def _execute(ctx: RunContext) -> RunOutcome:
    usage = UsageSink(ctx) if ctx.client is not None else None
    with RunGuard(ctx.store, ctx.run_id, ctx.owner or "") as ctx.guard:
        try:
            outcome = _run_stages(ctx, usage)
        except RunTakenOver:
            # Another process resumed the run: its status and contents are that process's now.
            flush_quietly(usage)
            raise
        except (KeyboardInterrupt, RunCancelled) as exc:
            flush_quietly(usage)
            how = "by the user (Ctrl-C)" if isinstance(exc, KeyboardInterrupt) else "from the app"
            _stop(ctx, "cancelled", f"cancelled {how} during {ctx.stage}; what was done is kept for resume")
            raise
        except BaseException as exc:
            flush_quietly(usage)
            message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            _stop(ctx, "failed", f"{type(exc).__name__}: {message}")
            raise
        ctx.store.finish_run(ctx.run_id, "complete", owner=ctx.owner)
    from searchgrade.engine.report.results import keep_first_view

    keep_first_view(ctx.store, ctx.run_id)
    outcome.status = "complete"
    return outcome


def _stop(ctx: RunContext, status: str, error: str) -> None:
    ctx.store.update_run(ctx.run_id, timings=ctx.timings, stats=ctx.stats)
    ctx.store.finish_run(ctx.run_id, status, error, owner=ctx.owner)


def _run_stages(ctx: RunContext, usage: UsageSink | None) -> RunOutcome:
    config, store, run_id, collection = ctx.config, ctx.store, ctx.run_id, ctx.collection
    report = ctx.report
    plan = ctx.plan

    if config.mode == "llm":
        ctx.enter("queries")
        t0 = time.perf_counter()
        queries = llm_queries(ctx, usage)
        ctx.timings["queries"] = ctx.timings.get("queries", 0.0) + time.perf_counter() - t0
    else:
        queries = plan.queries

    ctx.enter("index")
    t0 = time.perf_counter()
    registry = config.registry()
    fingerprint = collection_fingerprint(collection)
    if ctx.ray is not None:
        _embed_on_ray(ctx, registry, fingerprint)
    built = build_searchers(
        collection, config.index, ctx.data_dir, strategies=config.strategies, progress=report,
        collection_fingerprint=fingerprint, registry=registry,
    )
    if built.ann is not None:
        ctx.stats["ann_recall"] = measure_ann_recall(built, [q.text for q in queries], config.seed)
    ctx.timings["index"] = time.perf_counter() - t0
    ctx.stats.update({"queries": len(queries), "documents": len(collection.documents),
                      "index": built.stats, "index_timings": built.timings})
    store.update_run(run_id, timings=ctx.timings, skipped=built.skipped, stats=ctx.stats)

    ctx.enter("search")
    t0 = time.perf_counter()
    query_ids = [q.query_id for q in queries]
    strategies = [s for s in config.strategies if s in built.searchers]
    docs_by_id = {d.doc_id: d for d in collection.documents}
    scores = getattr(built.context, "_scores", None)
    bind = getattr(getattr(scores, "scorer", None), "bind_queries", None)
    if bind is not None:  # a trained reranker picks its model per query (and source document)
        bind(queries)
    ray_search = _ray_search(ctx, built, queries, strategies) if ctx.ray is not None else None
    try:
        searched = run_search(
            built.nodes, strategies, queries, config.retrieval_depth, collection_ids=set(docs_by_id),
            declared={s for s in strategies if registry.info(s).kind != "builtin"},
            judges_described=ctx.config.mode == "llm" or ctx.config.judge_unjudged,
            stored=ctx.stored_hits, progress=report,
            execute=ray_search.execute if ray_search is not None else None,
        )
        counters = ray_search.counters() if ray_search is not None else None
    finally:
        if ray_search is not None:
            ray_search.close()
    hits = searched.hits
    ctx.timings["search"] = ctx.timings.get("search", 0.0) + time.perf_counter() - t0
    ctx.stats.update(searched.stats)
    if ray_search is not None:
        ctx.stats["ray"] = {**ctx.stats.get("ray", {}), **ctx.ray.info(), "search": ray_search.stats()}
    if scores is not None:
        if counters is not None:  # the cross-encoder ran on the Ray workers
            ctx.stats["reranker_pairs"] = {"scored": counters.get("scored", 0),
                                           "reused": counters.get("reused", 0)}
            summary_now = counters.get("summary")
        else:
            ctx.stats["reranker_pairs"] = {"scored": scores.scored, "reused": scores.reused}
            summary = getattr(scores.scorer, "summary", None)
            summary_now = summary() if summary is not None else None
        if summary_now is not None:  # which model scored each query (engine/report/reranker.py)
            ctx.stats["reranker"] = merge_records(ctx.stats.get("reranker"), summary_now)
    # Results and failed queries land now, in their own transaction: a resume searches only what
    # is missing (failed queries, or what an interrupted run had not searched).
    ctx.check()
    with store.transaction() as con:
        if ctx.owner is not None and not store.owns(con, run_id, ctx.owner):
            raise RunTakenOver(f"run {run_id} was resumed by another process; this one stops")
        if not store.queries(run_id):
            store.write_queries(con, run_id, queries)
        store.write_search(con, run_id, query_ids, hits, searched.failures)
    store.update_run(run_id, timings=ctx.timings, stats=ctx.stats)

    ctx.enter("grade")
    t0 = time.perf_counter()
    # Documents a strategy's replies described that the collection lacks are judged too.
    judged_docs = {**searched.described, **docs_by_id}
    with _judging_on_ray(ctx):
        grades, judgments, failed = grade_results(ctx, usage, queries, hits, judged_docs)
    grades, judgments, failed = _with_people(ctx, queries, docs_by_id, grades, judgments, failed)
    ctx.timings["grade"] = time.perf_counter() - t0

    ctx.enter("metrics")
    t0 = time.perf_counter()
    cutoffs = stored_cutoffs(config.k, config.retrieval_depth)
    per_query = per_query_metrics(hits, query_ids, judgments, plan.threshold, cutoffs, failed=failed)
    per_query += source_found_metrics(hits, queries, cutoffs)
    summary = summarise(per_query, config.n_bootstrap, config.seed)
    ctx.timings["metrics"] = time.perf_counter() - t0

    keep = {d.doc_id for hs in hits.values() for h in hs if h is not None for d in h.docs}
    keep |= {doc_id for judged in plan.qrels.values() for doc_id in judged}
    keep |= {q.source_doc_id for q in queries if q.source_doc_id}
    keep |= {g.doc_id for g in grades}
    ctx.check()
    with store.transaction() as con:
        if ctx.owner is not None and not store.owns(con, run_id, ctx.owner):
            raise RunTakenOver(f"run {run_id} was resumed by another process; this one stops")
        store.clear_run_contents(con, run_id, store.GRADED_TABLES)
        store.write_grades(con, run_id, grades)
        store.write_documents(con, run_id, [docs_by_id[d] for d in sorted(keep) if d in docs_by_id])
        for strategy in dict.fromkeys(searched.described_by.values()):
            store.write_documents(con, run_id, [doc for d, doc in sorted(searched.described.items())
                                                if d in keep and searched.described_by[d] == strategy],
                                  origin=strategy)
        store.write_metric_values(con, run_id, per_query)
        store.write_metric_summary(con, run_id, summary)
        store.write_query_overlap(con, run_id, query_overlaps(queries, docs_by_id))
    store.update_run(run_id, timings=ctx.timings, stats=ctx.stats)
    return RunOutcome(run_id, "running", skipped=built.skipped,
                      notes=[*collection.notes, *plan.notes, *search_notes(run_id, searched.stats)])


@contextmanager
def _judging_on_ray(ctx: RunContext) -> Iterator[None]:
    """With a Ray session, the judge's requests are sent by Ray workers through a cluster-wide
    bound on requests in flight (engine/ray/runner.py); the driver keeps the cache and accounting."""
    if ctx.ray is None or ctx.client is None:
        yield
        return
    from searchgrade.engine.ray.runner import RayLLM

    local = ctx.client
    ctx.client = on_ray = RayLLM(local, ctx.ray)
    try:
        yield
    finally:
        ctx.client = local
        try:
            ctx.stats["ray"] = {**ctx.stats.get("ray", {}), "judge": on_ray.stats()}
        except Exception as exc:  # noqa: BLE001 - the judging's own error, if any, is the one to see
            ctx.stats["ray"] = {**ctx.stats.get("ray", {}), "judge": {"stats_error": str(exc)[:200]}}
        finally:
            on_ray.close()


def _embed_on_ray(ctx: RunContext, registry: Any, fingerprint: str) -> None:
    """The corpus's missing vectors embedded on Ray Data into the embedding cache, when a
    strategy needs the ANN index and it is not on disk yet (the build then embeds nothing)."""
    from searchgrade.engine.ray.runner import embed_on_ray
    from searchgrade.indexes.build import bundled_shard
    from searchgrade.indexes.builtin import ann
    from searchgrade.indexes.embeddings.encoder import EmbeddingCache, cache_dir_for, load_embedder

    if not any("ann" in registry.info(s).needs for s in ctx.config.strategies):
        return
    settings = ctx.config.index.resolved(len(ctx.collection.documents))
    if (ann.ann_dir(ctx.data_dir, fingerprint, settings) / ann.MANIFEST).exists():
        return
    backend = settings.embedding_backend
    # Loaded here first (the driver needs it for the queries anyway): a model that cannot be loaded
    # stops the run with its one line, not with Ray Data restarting actors that fail. An ONNX
    # backend's export is made here, once, before the actors load it.
    load_embedder(settings.embedding_model, backend, settings.device, ctx.data_dir)
    cache_dir = cache_dir_for(ctx.data_dir, settings.embedding_model, backend)
    bundled = bundled_shard(ctx.collection, settings.embedding_model, backend)
    if bundled is not None and bundled.is_file():
        EmbeddingCache(cache_dir).import_shard(bundled)
    embedded = embed_on_ray(ctx.ray, settings.embedding_model, [d.content for d in ctx.collection.documents],
                            cache_dir, settings.batch_size, ctx.report, backend=backend,
                            device=settings.device, models_dir=Path(ctx.data_dir).resolve())
    ctx.stats["ray"] = {**ctx.stats.get("ray", {}), "embed": embedded.to_json()}


def _ray_search(ctx: RunContext, built: Any, queries: list[Query], strategies: list[str]) -> Any:
    """The search stage's executor on the run's Ray session, building what the driver built."""
    from searchgrade.engine.ray.runner import BuildSpec, RaySearch

    spec = BuildSpec(
        collection_path=str(Path(ctx.collection.path).resolve()),
        collection_fields=dict(ctx.config.collection_fields),
        fingerprint=built.stats["collection_fingerprint"], settings=ctx.config.index,
        data_dir=str(Path(ctx.data_dir).resolve()), strategies=tuple(strategies),
        declared=dict(ctx.config.declared), artifacts=dict(built.artifacts), queries=tuple(queries),
    )
    return RaySearch(ctx.ray, spec, ctx.config.retrieval_depth)


def _with_people(ctx: RunContext, queries, docs_by_id, grades, judgments, failed):
    """The collection's human labels win over the run's grades (engine/labels/rescore.py)."""
    from searchgrade.engine.labels.rescore import judgments_of, label_source_with_people, labels_at_grading

    run = ctx.store.get_run(ctx.run_id)
    merged, summary, note = labels_at_grading(ctx.store, ctx.collection.name, queries, docs_by_id, grades,
                                              run.grade_min, run.grade_max)
    if note is not None:
        ctx.store.update_run(ctx.run_id, notes=[*run.notes, note])
    if summary is None:
        return grades, judgments, failed
    ctx.stats["labels"] = summary
    ctx.store.update_run(ctx.run_id, stats=ctx.stats, label_source=label_source_with_people(run.label_source))
    judgments, failed = judgments_of(merged)
    return merged, judgments, failed


def search_notes(run_id: str, stats: dict[str, Any]) -> list[str]:
    """One line per strategy that failed on queries or returned ids the collection lacks."""
    notes = []
    for strategy, n in sorted(stats.get("failed_queries", {}).items()):
        notes.append(f"{strategy} failed on {n} quer{'y' if n == 1 else 'ies'} (recorded as failed, "
                     f"not scored); retry them with `searchgrade resume {run_id}`")
    for strategy, c in sorted(stats.get("not_in_collection", {}).items()):
        notes.append(not_in_collection_text(strategy, c))
    return notes


def not_in_collection_text(strategy: str, counts: dict[str, int]) -> str:
    """ "37% of prod-es results are not in the collection: check the id mapping"."""
    share = counts["not_in_collection"] / max(1, counts["results"])
    text = f"{share:.0%} of {strategy} results are not in the collection: check the id mapping"
    if counts.get("described"):
        text += (f" ({counts['described']} of them came with a title/text, shown with the run and "
                 "graded by the LLM judge when it runs)")
    return text
