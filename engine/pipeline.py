"""The evaluation pipeline: queries -> search -> grades -> metrics, stored as one run.

A run is created as 'running' before any work and ends 'complete' only after its last write; a
failure ends it 'failed' and Ctrl-C 'interrupted', each with what it completed (stage timings and
the error). Results, grades and metrics of a run land in one transaction, so a run that did not
finish never holds half of them.

Modes:

- ``qrels``: the collection's queries with human judgments; unjudged results count as 0.
- ``llm``: an LLM writes queries for a seeded sample of documents (or ``queries_from`` reuses a
  stored run's queries) and judges every unique (query, result) pair plus each query's source
  document on the 0-3 scale (relevant: grade >= 2).
- ``qrels`` with ``llm`` settings: human grades win; the judge grades the retrieved pairs the
  humans graded (judge-vs-human agreement, stored in ``stats["agreement"]``) and, with
  ``judge_unjudged``, the retrieved pairs the qrels miss (label source "human+llm").

A failed judgment (grade None) is never a grade. In the rank metrics (DCG, NDCG, precision,
recall, MRR, MAP) it counts as 0, like an unjudged document in qrels mode, and ``judged@k`` shows
the share of the top k that holds a grade; mean relevance and the relevance distribution are
computed over the graded results only (a query whose top k all failed has no value for them);
the pools (ideal DCG, recall denominators) hold valid grades only. Failures are counted in
``stats["llm"]["judge_failures"]``.

LLM-mode runs can be resumed (`resume_run`): generated queries are stored in their own
transaction as soon as they exist, and every valid LLM reply is in the cache (``llm_cache``)
within seconds, so a resumed run reuses the queries, gets completed judgments from the cache and
sends only the missing calls. LLM accounting is added to ``llm_usage`` as work proceeds.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from engine.types import (
    STRATEGIES,
    Collection,
    Document,
    Grade,
    Query,
    SearchGradeError,
    SearchHits,
)

Progress = Callable[[str, int, int], None]
#: Called as on_usage(stage, counters) with a stage's LLM accounting so far (engine.llm.client.StageUsage).
UsageCallback = Callable[[str, dict[str, float]], None]

#: Cut-offs stored for every run (those up to its depth), besides the run's own k.
STANDARD_CUTOFFS = (1, 3, 5, 10, 20, 50, 100)
MODES = ("qrels", "llm")
#: Relevant on the judge's 0-3 scale.
JUDGE_THRESHOLD = 2
#: Metric name of "source found@k": 1 if the query's source document is in the top k.
SOURCE_FOUND = "source_found"
#: Metrics computed over graded results only (a failed judgment is left out, not counted as 0).
GRADED_ONLY_METRICS = ("mean_relevance", "pct_highly_relevant", "pct_relevant", "pct_not_relevant")
#: Environment variable naming the LLM model when the config does not.
ENV_MODEL = "SEARCHGRADE_LLM_MODEL"


@dataclass(frozen=True)
class RunConfig:
    """What a run does. Stored with the run (as JSON) so it can be repeated, compared and resumed."""

    name: str | None = None
    mode: str = "qrels"
    k: int = 10
    #: Results kept per query and strategy; metrics at any k up to it come from stored results.
    depth: int | None = None
    threshold: int | None = None
    strategies: tuple[str, ...] = STRATEGIES
    #: Mode qrels: evaluate a seeded sample of this many queries (None: all with judgments).
    #: Mode llm sets its query count with querygen (n_docs and queries per document).
    max_queries: int | None = None
    seed: int = 0
    n_bootstrap: int = 10_000
    index: Any = None  # indexes.settings.IndexSettings; None means the defaults
    #: engine.llm.client.LLMSettings. Mode "llm" with None: model from $SEARCHGRADE_LLM_MODEL,
    #: endpoint from $OPENAI_BASE_URL. Mode "qrels" with settings: the judge runs too.
    llm: Any = None
    querygen: Any = None  # engine.llm.querygen.QueryGenSettings; None means the defaults
    judge: Any = None  # engine.llm.judge.JudgeSettings; None means the defaults
    #: Mode "llm": evaluate the queries stored with this run instead of generating new ones.
    queries_from: str | None = None
    #: Mode "qrels" with llm: also judge the retrieved pairs the qrels miss, and use those grades.
    judge_unjudged: bool = False
    #: How the collection was loaded (id_field, title_field, text_field), so a resume loads it alike.
    collection_fields: dict[str, str] = field(default_factory=dict)

    @property
    def retrieval_depth(self) -> int:
        return self.depth if self.depth is not None else self.k

    @property
    def uses_llm(self) -> bool:
        return self.mode == "llm" or self.llm is not None

    def validate(self) -> None:
        if self.mode not in MODES:
            raise SearchGradeError(f"mode {self.mode!r} is not one of {', '.join(MODES)}")
        if self.k < 1:
            raise SearchGradeError(f"--k of {self.k} must be at least 1")
        if self.retrieval_depth < self.k:
            raise SearchGradeError(
                f"--depth of {self.retrieval_depth} is smaller than --k of {self.k}; set --depth >= --k"
            )
        unknown = [s for s in self.strategies if s not in STRATEGIES]
        if unknown or not self.strategies:
            raise SearchGradeError(
                f"unknown strategies {unknown or '(none given)'}; choose from {', '.join(STRATEGIES)}"
            )
        if self.max_queries is not None and self.max_queries < 1:
            raise SearchGradeError(f"--max-queries of {self.max_queries} must be at least 1")
        if self.threshold is not None and self.threshold < 1:
            raise SearchGradeError(
                f"--threshold of {self.threshold} must be at least 1 (a grade of 0 is never relevant)"
            )
        if self.mode == "llm" and self.threshold is not None and self.threshold > 3:
            raise SearchGradeError(
                f"--threshold of {self.threshold} is above the judge's top grade (3); use 1, 2 or 3"
            )
        if self.queries_from is not None and self.mode != "llm":
            raise SearchGradeError("--queries-from goes with --llm (it reuses generated queries)")
        if self.judge_unjudged and (self.mode != "qrels" or self.llm is None):
            raise SearchGradeError("--judge-unjudged goes with --qrels --llm (human grades first, "
                                   "the judge for the rest)")
        if self.llm is not None:
            self.llm.validate()
        if self.querygen is not None:
            self.querygen.validate()

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["strategies"] = list(self.strategies)
        d["index"] = asdict(self.index) if self.index is not None else None
        # The API key is no field of LLMSettings; to_json also drops credentials in the URL.
        d["llm"] = self.llm.to_json() if self.llm is not None else None
        d["querygen"] = self.querygen.to_json() if self.querygen is not None else None
        d["judge"] = self.judge.to_json() if self.judge is not None else None
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RunConfig:
        """The config a run stored (`to_json`), e.g. to resume it."""
        from engine.llm.client import LLMSettings
        from engine.llm.judge import JudgeSettings
        from engine.llm.querygen import QueryGenSettings
        from indexes.settings import IndexSettings

        known = {f for f in cls.__dataclass_fields__}
        values = {k: v for k, v in d.items() if k in known}
        values["strategies"] = tuple(values.get("strategies") or STRATEGIES)
        nested = {"index": IndexSettings, "llm": LLMSettings, "querygen": QueryGenSettings,
                  "judge": JudgeSettings}
        for key, settings_cls in nested.items():
            if values.get(key) is not None:
                names = settings_cls.__dataclass_fields__
                values[key] = settings_cls(**{k: v for k, v in values[key].items() if k in names})
        values["collection_fields"] = dict(values.get("collection_fields") or {})
        return cls(**values)


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
            f"collection {collection.path} has no query with a judgment in its qrels; "
            "check that qrels query ids match queries.jsonl"
        )
    if max_queries is not None and max_queries < len(queries):
        queries = sorted(random.Random(seed).sample(queries, max_queries), key=lambda q: q.query_id)
    return queries


def llm_settings_from_env(environ: dict[str, str] | None = None) -> Any:
    """LLMSettings with the model from $SEARCHGRADE_LLM_MODEL (the endpoint comes from $OPENAI_BASE_URL)."""
    from engine.llm.client import LLMSettings

    env = os.environ if environ is None else environ
    model = env.get(ENV_MODEL)
    if not model:
        raise SearchGradeError(f"no LLM model given; pass --model NAME or set {ENV_MODEL}")
    return LLMSettings(model=model)


@dataclass
class _Plan:
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


def _prepare(config: RunConfig) -> RunConfig:
    from indexes.settings import IndexSettings

    config.validate()
    if config.index is None:
        config = replace(config, index=IndexSettings())
    if config.mode == "llm" and config.llm is None:
        config = replace(config, llm=llm_settings_from_env())
    if config.uses_llm:
        from engine.llm.judge import JudgeSettings
        from engine.llm.querygen import QueryGenSettings

        if config.querygen is None and config.mode == "llm":
            config = replace(config, querygen=QueryGenSettings(seed=config.seed))
        if config.judge is None:
            config = replace(config, judge=JudgeSettings())
    return config


def _plan(collection: Collection, config: RunConfig, store: Any) -> _Plan:
    from engine.collections import default_threshold, grade_scale

    if config.mode == "llm":
        threshold = config.threshold if config.threshold is not None else JUDGE_THRESHOLD
        plan = _Plan("llm", 0, 3, threshold)
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
            from engine.llm.querygen import sample_documents

            qg = config.querygen
            sample_documents(collection.documents, 1, qg.seed, qg.min_words, qg.min_chars)
        return plan

    if not collection.has_qrels:
        raise SearchGradeError(
            f"collection {collection.path} has no qrels (human judgments); add qrels.tsv "
            "(query-id, corpus-id, score) or use the LLM mode"
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
    return _Plan(label_source, grade_min, grade_max, threshold, queries, qrels)


def _client(config: RunConfig) -> Any:
    if not config.uses_llm:
        return None
    from engine.llm.client import LLMClient

    return LLMClient(config.llm)


def run_evaluation(
    collection: Collection,
    config: RunConfig,
    store: Any,
    data_dir: str | Path,
    *,
    progress: Progress | None = None,
    on_run_created: Callable[[str], None] | None = None,
    on_usage: UsageCallback | None = None,
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

    Returns:
        The run id and its final status. Raises on failure after marking the run failed.
    """
    config = _prepare(config)
    plan = _plan(collection, config, store)
    client = _client(config)
    name = config.name or f"{collection.name} {time.strftime('%Y-%m-%d %H:%M')}"
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
    )
    if on_run_created is not None:
        on_run_created(run_id)
    return _execute(_Context(collection, config, store, Path(data_dir), run_id, plan, client,
                             progress, on_usage))


def resume_run(
    run_id: str,
    store: Any,
    data_dir: str | Path,
    *,
    collection: Collection | None = None,
    base_url: str | None = None,
    concurrency: int | None = None,
    progress: Progress | None = None,
    on_usage: UsageCallback | None = None,
) -> RunOutcome:
    """Continue an interrupted or failed run with its stored config; only missing work is done.

    Stored queries are reused, completed LLM replies come from the cache (none is asked again),
    and the run's results, grades and metrics are written once, at the end, as for a new run.

    Args:
        run_id: The run (or an unambiguous prefix).
        collection: The corpus; None loads it from the path and fields the run stored.
        base_url, concurrency: Override the stored LLM endpoint or concurrency (the model and
            prompts stay, or the cache would not apply).
    """
    from engine.collections import load_collection

    store.mark_stale_runs()
    run = store.get_run(run_id)
    if run.status == "complete":
        raise SearchGradeError(f"run {run.run_id} is already complete; start a new one with "
                               "`searchgrade evaluate`")
    if run.status == "running":
        raise SearchGradeError(f"run {run.run_id} is still running (process {store.run_pid(run.run_id)}); "
                               "stop that process first")
    config = RunConfig.from_json(run.config)
    if config.llm is not None and (base_url is not None or concurrency is not None):
        overrides: dict[str, Any] = {}
        if base_url is not None:
            overrides["base_url"] = base_url
        if concurrency is not None:
            overrides["concurrency"] = concurrency
        config = replace(config, llm=replace(config.llm, **overrides))
    if collection is None:
        collection = load_collection(run.collection_path, **config.collection_fields)
    config = _prepare(config)
    plan = _plan(collection, config, store)
    client = _client(config)
    store.reopen_run(run.run_id)
    return _execute(_Context(collection, config, store, Path(data_dir), run.run_id, plan, client,
                             progress, on_usage, timings=dict(run.timings), stats=dict(run.stats)))


@dataclass
class _Context:
    collection: Collection
    config: RunConfig
    store: Any
    data_dir: Path
    run_id: str
    plan: _Plan
    client: Any
    progress: Progress | None
    on_usage: UsageCallback | None
    timings: dict[str, float] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    stage: str = "starting"

    def enter(self, stage: str) -> None:
        self.stage = stage
        self.store.update_run(self.run_id, stage=stage, timings=self.timings)


def _execute(ctx: _Context) -> RunOutcome:
    usage = _UsageSink(ctx) if ctx.client is not None else None
    try:
        outcome = _run_stages(ctx, usage)
    except KeyboardInterrupt:
        _flush_quietly(usage)
        ctx.store.update_run(ctx.run_id, timings=ctx.timings, stats=ctx.stats)
        ctx.store.finish_run(ctx.run_id, "interrupted",
                             f"interrupted by the user (Ctrl-C) during {ctx.stage}")
        raise
    except BaseException as exc:
        _flush_quietly(usage)
        ctx.store.update_run(ctx.run_id, timings=ctx.timings, stats=ctx.stats)
        message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        ctx.store.finish_run(ctx.run_id, "failed", f"{type(exc).__name__}: {message}")
        raise
    ctx.store.finish_run(ctx.run_id, "complete")
    outcome.status = "complete"
    return outcome


def _flush_quietly(usage: _UsageSink | None) -> None:
    if usage is None:
        return
    try:
        usage.flush()
    except Exception:  # noqa: BLE001, S110 - the original error matters more than the accounting
        pass


class _UsageSink:
    """Writes the client's accounting to llm_usage as increments, and reports it to on_usage."""

    def __init__(self, ctx: _Context) -> None:
        self.ctx = ctx
        self.usage = ctx.client.usage
        self.written: dict[str, dict[str, float]] = {}

    def flush(self) -> None:
        now = self.usage.snapshot()
        for stage, counters in now.items():
            before = self.written.get(stage, {})
            deltas = {k: v - before.get(k, 0) for k, v in counters.items() if v != before.get(k, 0)}
            if deltas:
                self.ctx.store.add_llm_usage(self.ctx.run_id, stage, deltas)
        self.written = now

    def report(self, stage: str, done: int, total: int) -> None:
        if self.ctx.on_usage is not None:
            counters = self.usage.snapshot().get(stage)
            if counters is not None:
                self.ctx.on_usage(stage, counters)
        if self.ctx.progress is not None:
            self.ctx.progress(stage, done, total)


def _run_stages(ctx: _Context, usage: _UsageSink | None) -> RunOutcome:
    from engine.collections import collection_fingerprint
    from indexes.build import build_searchers

    config, store, run_id, collection = ctx.config, ctx.store, ctx.run_id, ctx.collection
    report = ctx.progress or (lambda stage, done, total: None)
    plan = ctx.plan

    if config.mode == "llm":
        ctx.enter("queries")
        t0 = time.perf_counter()
        queries = _llm_queries(ctx, usage)
        ctx.timings["queries"] = ctx.timings.get("queries", 0.0) + time.perf_counter() - t0
    else:
        queries = plan.queries

    ctx.enter("index")
    t0 = time.perf_counter()
    built = build_searchers(
        collection, config.index, ctx.data_dir, strategies=config.strategies, progress=report,
        collection_fingerprint=collection_fingerprint(collection),
    )
    ctx.timings["index"] = time.perf_counter() - t0
    ctx.stats.update({"queries": len(queries), "documents": len(collection.documents),
                      "index": built.stats, "index_timings": built.timings})
    store.update_run(run_id, timings=ctx.timings, skipped=built.skipped, stats=ctx.stats)

    ctx.enter("search")
    t0 = time.perf_counter()
    texts = [q.text for q in queries]
    query_ids = [q.query_id for q in queries]
    hits: dict[str, list[SearchHits]] = {}
    strategies = [s for s in config.strategies if s in built.searchers]
    # One bar for the stage, advanced per strategy (a searcher answers all queries in one call).
    report("search", 0, len(strategies))
    for i, strategy in enumerate(strategies):
        hits[strategy] = built.searchers[strategy].search(texts, config.retrieval_depth)
        report("search", i + 1, len(strategies))
    ctx.timings["search"] = time.perf_counter() - t0

    ctx.enter("grade")
    t0 = time.perf_counter()
    docs_by_id = {d.doc_id: d for d in collection.documents}
    failed: dict[str, set[str]] = {}
    if config.mode == "llm":
        grades = _judge(ctx, usage, _pairs(queries, hits, docs_by_id, with_source=True))
        judgments: dict[str, dict[str, int]] = {}
        for g in grades:
            if g.grade is None:
                failed.setdefault(g.query_id, set()).add(g.doc_id)
            else:
                judgments.setdefault(g.query_id, {})[g.doc_id] = g.grade
    else:
        grades = [
            Grade(qid, doc_id, grade, "human")
            for qid, judged in plan.qrels.items()
            for doc_id, grade in judged.items()
        ]
        judgments = plan.qrels
        if ctx.client is not None:
            grades, judgments, failed = _judge_with_qrels(ctx, usage, queries, hits, docs_by_id, grades)
    ctx.timings["grade"] = time.perf_counter() - t0

    ctx.enter("metrics")
    t0 = time.perf_counter()
    cutoffs = sorted({c for c in STANDARD_CUTOFFS if c <= config.retrieval_depth}
                     | {config.k, config.retrieval_depth})
    per_query = per_query_metrics(hits, query_ids, judgments, plan.threshold, cutoffs, failed=failed)
    per_query += source_found_metrics(hits, queries, cutoffs)
    summary = summarise(per_query, config.n_bootstrap, config.seed)
    ctx.timings["metrics"] = time.perf_counter() - t0

    keep = {d.doc_id for hs in hits.values() for h in hs for d in h.docs}
    keep |= {doc_id for judged in plan.qrels.values() for doc_id in judged}
    keep |= {q.source_doc_id for q in queries if q.source_doc_id}
    with store.transaction() as con:
        store.clear_run_contents(con, run_id)
        store.write_queries(con, run_id, queries)
        for strategy, strategy_hits in hits.items():
            store.write_results(con, run_id, strategy, query_ids, strategy_hits)
        store.write_grades(con, run_id, grades)
        store.write_documents(con, run_id, [docs_by_id[d] for d in sorted(keep) if d in docs_by_id])
        store.write_metric_values(con, run_id, per_query)
        store.write_metric_summary(con, run_id, summary)
    store.update_run(run_id, timings=ctx.timings, stats=ctx.stats)
    return RunOutcome(run_id, "running", skipped=built.skipped,
                      notes=[*collection.notes, *plan.notes])


# -- LLM stages ----------------------------------------------------------------------------


def _llm_queries(ctx: _Context, usage: _UsageSink) -> list[Query]:
    """The run's queries: stored ones (resume), another run's (queries_from), or generated."""
    from engine.llm.cache import StoreCache
    from engine.llm.querygen import generate_queries

    store, run_id = ctx.store, ctx.run_id
    stored = store.queries(run_id)
    if stored:
        return [Query(**row) for row in stored]
    if ctx.plan.queries_from is not None:
        queries = [Query(**row) for row in store.queries(ctx.plan.queries_from)]
        ctx.stats["queries_from"] = ctx.plan.queries_from
    else:
        result = generate_queries(ctx.collection.documents, ctx.client, StoreCache(store),
                                  ctx.config.querygen, progress=usage.report, on_flush=usage.flush)
        usage.flush()
        ctx.stats["querygen"] = {
            "sampled_docs": len(result.sampled_doc_ids), "generated": result.generated,
            "cache_hits": result.cache_hits, "failures": len(result.failures),
            "failure_examples": dict(list(result.failures.items())[:5]), "dropped": result.dropped,
            "model": result.model, "prompt_version": result.prompt_version,
        }
        queries = result.queries
        if not queries:
            first = next(iter(result.failures.values()), "every query was filtered out")
            raise SearchGradeError(
                f"no query was generated from {len(result.sampled_doc_ids)} documents ({first}); "
                "check --model and the endpoint, or raise --docs"
            )
    # Their own transaction, at once: a resumed run evaluates exactly these queries.
    with store.transaction() as con:
        store.write_queries(con, run_id, queries)
    store.update_run(run_id, stats=ctx.stats)
    return queries


def _pairs(
    queries: Sequence[Query],
    hits: dict[str, Sequence[SearchHits]],
    docs_by_id: dict[str, Document],
    *,
    with_source: bool,
    keep: Callable[[str, str], bool] | None = None,
) -> list[tuple[Query, Document]]:
    """Unique (query, document) pairs: every result over strategies, then the source document."""
    seen: set[tuple[str, str]] = set()
    pairs: list[tuple[Query, Document]] = []

    def add(query: Query, doc_id: str | None) -> None:
        if doc_id is None or doc_id not in docs_by_id or (query.query_id, doc_id) in seen:
            return
        if keep is not None and not keep(query.query_id, doc_id):
            return
        seen.add((query.query_id, doc_id))
        pairs.append((query, docs_by_id[doc_id]))

    for i, query in enumerate(queries):
        for strategy_hits in hits.values():
            for d in strategy_hits[i].docs:
                add(query, d.doc_id)
        if with_source:
            add(query, query.source_doc_id)
    return pairs


def _judge(ctx: _Context, usage: _UsageSink, pairs: list[tuple[Query, Document]]) -> list[Grade]:
    """Judge pairs (cached), record the counts in the run's stats; raise if every call failed."""
    from engine.llm.cache import StoreCache
    from engine.llm.judge import judge_pairs

    result = judge_pairs(pairs, ctx.client, StoreCache(ctx.store), ctx.config.judge,
                         progress=usage.report, on_flush=usage.flush)
    usage.flush()
    ctx.stats["llm"] = {
        "pairs": len(result.grades), "judged": result.judged, "judge_cache_hits": result.cache_hits,
        "judge_failures": result.failures, "failure_reasons": result.failure_reasons,
        "model": result.model, "prompt_version": result.prompt_version,
        "output_mode": ctx.client.output_mode,
    }
    ctx.store.update_run(ctx.run_id, stats=ctx.stats)
    if result.grades and result.failures == len(result.grades):
        first = next(g.reason for g in result.grades if g.grade is None)
        raise SearchGradeError(
            f"the judge failed on all {result.failures} pairs ({first}); check --model and the endpoint"
        )
    return result.grades


def _judge_with_qrels(
    ctx: _Context,
    usage: _UsageSink,
    queries: Sequence[Query],
    hits: dict[str, Sequence[SearchHits]],
    docs_by_id: dict[str, Document],
    human_grades: list[Grade],
) -> tuple[list[Grade], dict[str, dict[str, int]], dict[str, set[str]]]:
    """Qrels + LLM: judge the retrieved pairs humans graded (agreement) and, with judge_unjudged,
    the ones they did not (used in the metrics; human grades always win).

    With binary qrels a judge grade g becomes 1 if g >= 2 else 0, so one threshold fits both.
    """
    from engine.llm.agreement import judge_human_agreement

    qrels = ctx.plan.qrels
    fill = ctx.config.judge_unjudged

    def wanted(qid: str, doc_id: str) -> bool:
        return fill or doc_id in qrels.get(qid, {})

    pairs = _pairs(queries, hits, docs_by_id, with_source=False, keep=wanted)
    grades = _judge(ctx, usage, pairs) if pairs else []
    on_shared = {(g.query_id, g.doc_id): g.grade for g in grades if g.doc_id in qrels.get(g.query_id, {})}
    human = {(qid, doc_id): grade for qid, judged in qrels.items() for doc_id, grade in judged.items()}
    agreement = judge_human_agreement(on_shared, human, judge_threshold=JUDGE_THRESHOLD,
                                      human_threshold=ctx.plan.threshold)
    ctx.stats["agreement"] = asdict(agreement)
    ctx.store.update_run(ctx.run_id, stats=ctx.stats)

    judgments = {qid: dict(judged) for qid, judged in qrels.items()}
    failed: dict[str, set[str]] = {}
    merged = list(human_grades)
    if fill:
        binary = (ctx.plan.grade_max or 0) <= 1
        for g in grades:
            if g.doc_id in qrels.get(g.query_id, {}):
                continue
            if g.grade is None:
                failed.setdefault(g.query_id, set()).add(g.doc_id)
                merged.append(g)
                continue
            grade = int(g.grade >= JUDGE_THRESHOLD) if binary else g.grade
            reason = f"judge grade {g.grade}: {g.reason}" if binary else g.reason
            merged.append(g._replace(grade=grade, reason=reason))
            judgments.setdefault(g.query_id, {})[g.doc_id] = grade
        if not binary:
            ctx.store.update_run(ctx.run_id, grade_max=3, grade_min=0)
    return merged, judgments, failed


# -- metrics -------------------------------------------------------------------------------


def per_query_metrics(
    hits: dict[str, Sequence[SearchHits]],
    query_ids: Sequence[str],
    judgments: dict[str, dict[str, int]],
    threshold: int,
    cutoffs: Sequence[int],
    *,
    failed: dict[str, set[str]] | None = None,
) -> list[tuple[str, str, str, int, float]]:
    """Every metric for every strategy, query and cut-off: rows (strategy, query, metric, k, value).

    Unjudged documents have grade None (0 in the metrics; visible in `judged`). Documents in
    ``failed`` (query -> doc ids whose judgment failed) also count as 0 in the rank metrics, but
    are left out of mean relevance and the relevance distribution; a query whose top k all failed
    has no row for those.
    """
    from engine.metrics import compute_metrics

    failed = failed or {}
    rows: list[tuple[str, str, str, int, float]] = []
    for strategy, strategy_hits in hits.items():
        for qid, h in zip(query_ids, strategy_hits, strict=True):
            judged = judgments.get(qid, {})
            grades = [judged.get(d.doc_id) for d in h.docs]
            pool = list(judged.values())
            failed_here = failed.get(qid, set())
            for k in cutoffs:
                values = compute_metrics(grades, pool, k, threshold)
                top = h.docs[:k]
                if any(d.doc_id in failed_here for d in top):
                    graded = [judged.get(d.doc_id) for d in top if d.doc_id not in failed_here]
                    for name in GRADED_ONLY_METRICS:
                        if graded:
                            values[name] = compute_metrics(graded, pool, k, threshold, [name])[name]
                        else:
                            del values[name]
                for metric, value in values.items():
                    rows.append((strategy, qid, metric, k, float(value)))
    return rows


def source_found_metrics(
    hits: dict[str, Sequence[SearchHits]], queries: Sequence[Query], cutoffs: Sequence[int]
) -> list[tuple[str, str, str, int, float]]:
    """source_found@k: 1.0 if the query's source document is in the top k, else 0.0.

    Only for queries with a source document (generated ones); rows as in `per_query_metrics`.
    """
    rows: list[tuple[str, str, str, int, float]] = []
    for strategy, strategy_hits in hits.items():
        for query, h in zip(queries, strategy_hits, strict=True):
            if not query.source_doc_id:
                continue
            ranks = [d.rank for d in h.docs if d.doc_id == query.source_doc_id]
            for k in cutoffs:
                found = bool(ranks) and ranks[0] <= k
                rows.append((strategy, query.query_id, SOURCE_FOUND, k, 1.0 if found else 0.0))
    return rows


def summarise(
    rows: Sequence[tuple[str, str, str, int, float]], n_bootstrap: int, seed: int
) -> list[tuple[str, str, int, float, float, float, int]]:
    """Mean and 95% bootstrap CI per (strategy, metric, k): rows (strategy, metric, k, mean, lo, hi, n)."""
    from engine.statistics import bootstrap_ci

    groups: dict[tuple[str, str, int], list[float]] = {}
    for strategy, _qid, metric, k, value in rows:
        groups.setdefault((strategy, metric, k), []).append(value)
    out = []
    for (strategy, metric, k), values in groups.items():
        ci = bootstrap_ci(values, n_resamples=n_bootstrap, seed=seed)
        out.append((strategy, metric, k, ci.mean, ci.low, ci.high, len(values)))
    return out
