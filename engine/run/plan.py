"""A run's plan, decided before the run row exists: bad input fails with no run.

``prepare`` validates the config and fills in its defaults; ``plan_run`` decides what the run
evaluates (the queries with judgments in mode qrels, optionally a seeded sample; in mode llm,
the threshold and the run whose queries are reused); ``check_trained_reranker`` stops a run whose
``trained:NAME`` reranker is not there.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace
from pathlib import Path

from searchgrade.core.records import Collection, Query, SearchGradeError
from searchgrade.engine.collections import default_threshold, grade_scale
from searchgrade.engine.llm.settings import settings_from_env
from searchgrade.engine.run.config import JUDGE_THRESHOLD, RunConfig
from searchgrade.engine.store import Store
from searchgrade.indexes.settings import IndexSettings


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
    #: Mode qrels: query -> doc ids its qrels mark as pooled but not judged (a negative grade).
    pooled_unjudged: dict[str, set[str]] = field(default_factory=dict)
    #: Mode llm with queries_from: the run whose queries are reused.
    queries_from: str | None = None
    notes: list[str] = field(default_factory=list)


def prepare(config: RunConfig) -> RunConfig:
    """The config validated, with the defaults a run fills in (index settings, the LLM from the
    environment in mode llm, query generation and judge settings)."""
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


def plan_run(collection: Collection, config: RunConfig, store: Store) -> RunPlan:
    """What the run evaluates (its label source, grade scale, threshold and, in mode qrels, its
    queries); bad input raises here, before the run row exists."""
    if config.query_set is not None:
        from searchgrade.engine.run.query_set import query_set_plan

        threshold = config.threshold if config.threshold is not None else JUDGE_THRESHOLD
        queries, notes = query_set_plan(store, config.query_set, collection.name, clicks=config.mode == "clicks")
        source = "clicks+llm" if config.mode == "clicks" and config.judge_unjudged else config.mode
        return RunPlan(source, 0, 3, threshold, queries, notes=notes)
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
    pooled = {q: set(docs) for q, docs in collection.pooled_unjudged.items() if q in qrels}
    return RunPlan(label_source, grade_min, grade_max, threshold, queries, qrels, pooled_unjudged=pooled)


def check_trained_reranker(config: RunConfig, data_dir: str | Path) -> None:
    """A ``trained:NAME`` reranker that is not there stops the run before it starts."""
    from searchgrade.engine.run.strategies import base_of
    from searchgrade.indexes.rerank.trained import TrainedReranker, trained_name

    name = trained_name(config.index.reranker_model) if config.index is not None else None
    if name is not None and any(base_of(s) for s in config.strategies):
        TrainedReranker.load(Path(data_dir), name)
