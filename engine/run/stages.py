"""A run's stages, in order: queries -> index -> search -> grade -> diagnose -> metrics -> store.

Each stage is a small function of the run in progress (``RunContext``: its config, plan, stats and
timings) and of what the stages before it gave; ``run_stages`` calls them in order. Where the
heavy work runs, here or on Ray, is the run's ``StageRunner`` (engine/run/stage_runner.py): no stage
asks. Results and failed queries land in their own transaction as soon as they are searched (a
resume searches only what is missing); grades, documents and metrics land together, in one
transaction, at the end.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from searchgrade.core.records import Grade, Query, collection_fingerprint
from searchgrade.engine.failures.exact import RunEvidence, failing_queries, run_evidence
from searchgrade.engine.run.clicks import grade_by_clicks
from searchgrade.engine.run.context import RunContext, RunOutcome
from searchgrade.engine.run.grading import Failed, Judgments, UsageSink, grade_results, llm_queries
from searchgrade.engine.run.lexical_overlap import query_overlaps
from searchgrade.engine.run.pool import still_pooled_unjudged
from searchgrade.engine.run.scoring import (
    MetricRow,
    per_query_metrics,
    source_found_metrics,
    stored_cutoffs,
    summarise,
)
from searchgrade.engine.run.search import SearchResults, run_search
from searchgrade.engine.run.stage_runner import SearchJob
from searchgrade.engine.run.strategies import Registry
from searchgrade.indexes.base import BuiltIndexes
from searchgrade.indexes.build import build_searchers, measure_ann_recall, measure_variant_recall
from searchgrade.indexes.rerank.trained import merge_records


class Graded(NamedTuple):
    """What the grade stage gives: the grades to store, the judgments the metrics use, the failed pairs."""

    grades: list[Grade]
    judgments: Judgments
    failed: Failed


class Scored(NamedTuple):
    """What the metrics stage gives: every per-query value, and the means with their CIs."""

    per_query: list[MetricRow]
    summary: list[tuple[str, str, int, float, float, float, int]]


def run_stages(ctx: RunContext, usage: UsageSink | None) -> RunOutcome:
    """Every stage of the run, in order; the outcome is 'running' until the caller completes it."""
    queries = queries_stage(ctx, usage)
    registry = ctx.config.registry()
    built = index_stage(ctx, registry, queries)
    searched = search_stage(ctx, registry, built, queries)
    store_search(ctx, queries, searched)
    graded = grade_stage(ctx, usage, queries, searched)
    evidence = diagnosis_stage(ctx, registry, built, queries, searched, graded)
    scored = metrics_stage(ctx, queries, searched, graded)
    store_graded(ctx, queries, searched, graded, scored, evidence)
    return RunOutcome(ctx.run_id, "running", skipped=built.skipped,
                      notes=[*ctx.collection.notes, *ctx.plan.notes, *search_notes(searched.stats)])


def queries_stage(ctx: RunContext, usage: UsageSink | None) -> list[Query]:
    """The run's queries: the plan's (mode qrels, a query set), or generated, reused or resumed (mode llm)."""
    if ctx.config.mode != "llm" or ctx.config.query_set is not None:
        return ctx.plan.queries
    with ctx.timed_stage("queries", add=True):
        return llm_queries(ctx, usage)


def index_stage(ctx: RunContext, registry: Registry, queries: list[Query]) -> BuiltIndexes:
    """Every strategy built or reloaded, the corpus embedded first by the runner where the ANN needs it."""
    collection, config = ctx.collection, ctx.config
    with ctx.timed_stage("index"):
        fingerprint = collection_fingerprint(collection)
        if any("ann" in registry.info(s).needs for s in config.strategies):
            ctx.runner.embed_corpus(collection, config.index, ctx.data_dir, fingerprint, ctx.report, ctx.stats)
        built = build_searchers(collection, config.index, ctx.data_dir, strategies=config.strategies,
                                progress=ctx.report, collection_fingerprint=fingerprint, registry=registry,
                                services=rerank_services(ctx))
        if built.ann is not None:
            ctx.stats["ann_recall"] = measure_ann_recall(built, [q.text for q in queries], config.seed)
        variant_recall = measure_variant_recall(built, [q.text for q in queries], config.seed)
        if variant_recall:  # an ANN variant over an approximate index (chunks past 200,000, say)
            ctx.stats["variant_ann_recall"] = variant_recall
    ctx.stats.update({"queries": len(queries), "documents": len(collection.documents),
                      "index": built.stats, "index_timings": built.timings,
                      # What each strategy's index cost when it was built for this run: a resume, which
                      # reloads them, keeps the first figures (indexes/variants/costs.py).
                      "costs": {**built.costs, **ctx.stats.get("costs", {})}})
    graded_by_itself = self_graded_stats(ctx, built)
    if graded_by_itself is not None:
        ctx.stats["self_graded"] = graded_by_itself
    ctx.store.update_run(ctx.run_id, timings=ctx.timings, skipped=built.skipped, stats=ctx.stats)
    return built


def rerank_services(ctx: RunContext) -> dict[str, Any]:
    """What declared rerankers get from the run: the LLM reranker over the run's endpoint, its
    accounting and its cache (engine/llm/reranker.py), when the run has an LLM."""
    if ctx.client is None:
        return {}
    from searchgrade.engine.llm.cache import StoreCache
    from searchgrade.engine.llm.reranker import llm_reranker_factory

    return {"llm_reranker": llm_reranker_factory(ctx.client, StoreCache(ctx.store))}


def self_graded_stats(ctx: RunContext, built: BuiltIndexes) -> dict[str, Any] | None:
    """The LLM rerankers whose model is the judge's, when the judge's grades are the run's."""
    from searchgrade.engine.llm.reranker import LLMReranker, self_graded

    config = ctx.config
    if config.llm is None or not (config.mode == "llm" or config.judge_unjudged):
        return None
    models = {name: r.model for name, r in built.context.declared_scorers().items() if isinstance(r, LLMReranker)}
    return self_graded(models, config.llm.model)


def search_stage(ctx: RunContext, registry: Registry, built: BuiltIndexes, queries: list[Query]) -> SearchResults:
    """Every built strategy over every query (what a stopped run stored is kept, not searched again)."""
    config = ctx.config
    strategies = [s for s in config.strategies if s in built.searchers]
    with ctx.timed_stage("search", add=True):
        built.context.bind_queries(queries)  # a trained reranker picks its model per query (and source document)
        job = SearchJob(ctx.collection, config, ctx.data_dir, built, tuple(strategies), tuple(queries))
        with ctx.runner.searching(job, ctx.stats) as search:
            searched = run_search(
                strategies, queries, execute=search.execute, collection_ids=set(ctx.docs_by_id),
                declared={s for s in strategies if registry.info(s).kind != "builtin"},
                judges_described=config.mode == "llm" or config.judge_unjudged,
                stored=ctx.stored_hits, progress=ctx.report, strict=config.strict,
            )
            reranker = search.reranker_counts()
    ctx.stats.update(searched.stats)
    declared_rerankers = built.context.declared_reranker_counts()
    if declared_rerankers:  # per declared reranker: pairs scored / reused, calls (this process's)
        ctx.stats["declared_rerankers"] = declared_rerankers
    if reranker is not None:
        ctx.stats["reranker_pairs"] = {"scored": reranker.scored, "reused": reranker.reused}
        if reranker.summary is not None:  # which model scored each query (viewmodels/reranker.py)
            ctx.stats["reranker"] = merge_records(ctx.stats.get("reranker"), reranker.summary)
    return searched


def store_search(ctx: RunContext, queries: list[Query], searched: SearchResults) -> None:
    """Results and failed queries, stored now in their own transaction: a resume searches only
    what is missing (failed queries, or what an interrupted run had not searched)."""
    store, run_id = ctx.store, ctx.run_id
    with ctx.transaction() as con:
        if not store.queries(run_id):
            store.write_queries(con, run_id, queries)
        store.write_search(con, run_id, [q.query_id for q in queries], searched.hits, searched.failures)
    store.update_run(run_id, timings=ctx.timings, stats=ctx.stats)


def grade_stage(ctx: RunContext, usage: UsageSink | None, queries: list[Query], searched: SearchResults) -> Graded:
    """The results graded (engine/run/grading.py), the collection's human labels winning."""
    with ctx.timed_stage("grade"):
        # Documents a strategy's replies described that the collection lacks are judged too.
        judged_docs = {**searched.described, **ctx.docs_by_id}
        with ctx.runner.judging(ctx.client, ctx.stats) as client:
            grade = grade_by_clicks if ctx.config.mode == "clicks" else grade_results
            graded = Graded(*grade(ctx, client, usage, queries, searched.hits, judged_docs))
        return with_people(ctx, queries, graded)


def with_people(ctx: RunContext, queries: list[Query], graded: Graded) -> Graded:
    """The collection's human labels win over the run's grades (engine/labels/rescore.py)."""
    from searchgrade.engine.labels.rescore import label_source_with_people, labels_at_grading
    from searchgrade.engine.run.derived import judgments_of

    run = ctx.store.get_run(ctx.run_id)
    merged, summary, note = labels_at_grading(ctx.store, ctx.collection.name, queries, ctx.docs_by_id,
                                              graded.grades, run.grade_min, run.grade_max)
    if note is not None:
        ctx.store.update_run(ctx.run_id, notes=[*run.notes, note])
    if summary is None:
        return graded
    ctx.stats["labels"] = summary
    ctx.store.update_run(ctx.run_id, stats=ctx.stats, label_source=label_source_with_people(run.label_source))
    return Graded(merged, *judgments_of(merged))


def diagnosis_stage(ctx: RunContext, registry: Registry, built: BuiltIndexes, queries: list[Query],
                    searched: SearchResults, graded: Graded) -> RunEvidence:
    """While the ANN is loaded: the queries' vectors, and an exact search of the same vectors for
    the queries an ANN-based strategy failed on (engine/failures/exact.py), what the diagnosis of
    failed queries reads later. Nothing without an ANN."""
    if built.ann is None:
        ctx.stats.pop("exact_search", None)
        return RunEvidence()
    strategies = [s for s in searched.hits if "ann" in registry.info(s).needs]
    with ctx.timed_stage("diagnose"):
        failing = failing_queries(searched.hits, [q.query_id for q in queries], graded.judgments, graded.failed,
                                  ctx.plan.threshold, strategies)
        evidence = run_evidence(built.ann, queries, ctx.config.retrieval_depth, strategies, failing)
    ctx.stats["exact_search"] = evidence.stats
    return evidence


def metrics_stage(ctx: RunContext, queries: list[Query], searched: SearchResults, graded: Graded) -> Scored:
    """Every metric per strategy, query and stored cut-off, and their means with 95% CIs."""
    config = ctx.config
    with ctx.timed_stage("metrics"):
        cutoffs = stored_cutoffs(config.k, config.retrieval_depth)
        pooled = still_pooled_unjudged(ctx.plan.pooled_unjudged, graded.grades)
        if pooled:  # the qrels record sampling: infAP applies (docs/metrics.md)
            ctx.stats["pooled_unjudged"] = sum(len(docs) for docs in pooled.values())
        per_query = per_query_metrics(searched.hits, [q.query_id for q in queries], graded.judgments,
                                      ctx.plan.threshold, cutoffs, failed=graded.failed, pooled_unjudged=pooled,
                                      max_grade=ctx.store.get_run(ctx.run_id).grade_max)
        per_query += source_found_metrics(searched.hits, queries, cutoffs)
        return Scored(per_query, summarise(per_query, config.n_bootstrap, config.seed))


def store_graded(ctx: RunContext, queries: list[Query], searched: SearchResults, graded: Graded,
                 scored: Scored, evidence: RunEvidence | None = None) -> None:
    """Grades, the documents the run shows, its metrics and its failure evidence, in one transaction."""
    store, run_id, docs_by_id = ctx.store, ctx.run_id, ctx.docs_by_id
    keep = {d.doc_id for hs in searched.hits.values() for h in hs if h is not None for d in h.docs}
    keep |= {doc_id for judged in ctx.plan.qrels.values() for doc_id in judged}
    keep |= {q.source_doc_id for q in queries if q.source_doc_id}
    keep |= {g.doc_id for g in graded.grades}
    with ctx.transaction() as con:
        store.clear_run_contents(con, run_id, store.GRADED_TABLES)
        store.write_grades(con, run_id, graded.grades)
        store.write_judge_grades(con, run_id, ctx.judge_rows)
        store.write_pooled_unjudged(con, run_id, [(q, d) for q, docs in still_pooled_unjudged(
            ctx.plan.pooled_unjudged, graded.grades).items() for d in docs])
        store.write_documents(con, run_id, [docs_by_id[d] for d in sorted(keep) if d in docs_by_id])
        for strategy in dict.fromkeys(searched.described_by.values()):
            store.write_documents(con, run_id, [doc for d, doc in sorted(searched.described.items())
                                                if d in keep and searched.described_by[d] == strategy],
                                  origin=strategy)
        store.write_metric_values(con, run_id, scored.per_query)
        store.write_metric_summary(con, run_id, scored.summary)
        store.write_query_overlap(con, run_id, query_overlaps(queries, docs_by_id))
        if evidence is not None and evidence.vectors is not None:
            store.write_query_vectors(con, run_id, evidence.query_ids, evidence.vectors)
            store.write_exact_search(con, run_id, evidence.exact_rows)
    store.update_run(run_id, timings=ctx.timings, stats=ctx.stats)


def search_notes(stats: dict[str, Any]) -> list[str]:
    """One line per strategy that returned ids the collection lacks (the strategies that failed on
    queries are said, with their reasons, by `searchgrade show`: engine/failures/diagnosis.py)."""
    notes = []
    if stats.get("self_graded"):
        notes.append("warning: " + stats["self_graded"]["note"])
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
