"""Grading a run's results: human judgments, the LLM judge, or both merged.

- Mode ``qrels``: the collection's judgments; documents without one are unjudged (0 in the metrics).
- Mode ``llm``: the judge grades every unique (query, result) pair over the strategies, plus each
  query's source document; the queries themselves are generated first (``llm_queries``).
- Mode ``qrels`` with the judge: human grades win; the judge grades the retrieved pairs the humans
  graded (judge-vs-human agreement, ``stats["agreement"]``) and, with ``judge_unjudged``, the
  retrieved pairs the qrels miss (label source "human+llm").
- A panel (``judges``, ``--judge-models``): each judge grades every retrieved pair (qrels mode too:
  its decisions are measured against people's, engine/judges/), the panel's grade standing where
  one judge's would; each judge's grades are stored per pair (``judge_grades``).

A failed judgment (grade None) is never a grade: it is recorded, counted in
``stats["llm"]["judge_failures"]``, and the metrics count it as engine/run/scoring.py says. Generated
queries are stored in their own transaction as soon as they exist, and every valid LLM reply is
in the cache within seconds, so a resumed run asks only for what is missing. LLM accounting is
added to the store's ``llm_usage`` as work proceeds (``UsageSink``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING

from searchgrade.core.records import Document, Grade, Query, SearchGradeError, SearchHits
from searchgrade.engine.llm.cache import StoreCache
from searchgrade.engine.llm.judge import judge_pairs
from searchgrade.engine.llm.querygen import generate_queries
from searchgrade.engine.run.config import JUDGE_THRESHOLD
from searchgrade.engine.run.pool import PoolDepth, pool_pairs
from searchgrade.engine.statistics.judge_vs_human import judge_human_agreement

if TYPE_CHECKING:
    from searchgrade.engine.llm.client import LLMClient
    from searchgrade.engine.run.context import RunContext

#: A query's judgments: query_id -> doc_id -> grade.
Judgments = dict[str, dict[str, int]]
#: Pairs whose judgment failed: query_id -> doc ids.
Failed = dict[str, set[str]]


def grade_results(ctx: RunContext, client: LLMClient | None, usage: UsageSink | None,
                  queries: Sequence[Query], hits: dict[str, Sequence[SearchHits]],
                  docs_by_id: dict[str, Document]) -> tuple[list[Grade], Judgments, Failed]:
    """The run's grades (to store), the judgments the metrics use, and the failed pairs.

    Args:
        client: The client the judge sends its requests through (the run's runner gives it:
            engine/run/stage_runner.py); None: the run has no judge.
    """
    failed: Failed = {}
    if ctx.config.mode == "llm":
        grades = judge(ctx, client, usage, unique_pairs(queries, hits, docs_by_id, with_source=True,
                                                        keep=in_pool(ctx, queries, hits)))
        judgments: Judgments = {}
        for g in grades:
            if g.grade is None:
                failed.setdefault(g.query_id, set()).add(g.doc_id)
            else:
                judgments.setdefault(g.query_id, {})[g.doc_id] = g.grade
        return grades, judgments, failed
    qrels = ctx.plan.qrels
    grades = [Grade(qid, doc_id, grade, "human") for qid, judged in qrels.items()
              for doc_id, grade in judged.items()]
    if client is None:
        return grades, qrels, failed
    return judge_with_qrels(ctx, client, usage, queries, hits, docs_by_id, grades)


def in_pool(ctx: RunContext, queries: Sequence[Query],
            hits: dict[str, Sequence[SearchHits]]) -> Callable[[str, str], bool] | None:
    """Whether a retrieved pair is in the run's judging pool (``--pool-depth``); None: every
    result is (no pool depth set). A query's source document is judged whatever the pool."""
    depth = PoolDepth.from_json(ctx.config.pool_depth)
    if depth.is_everything:
        return None
    pool = set(pool_pairs(queries, hits, depth))
    ctx.stats["pool"] = {"depth": depth.to_json(), "pairs": len(pool)}
    sources = {(q.query_id, q.source_doc_id) for q in queries if q.source_doc_id}
    return lambda qid, doc_id: (qid, doc_id) in pool or (qid, doc_id) in sources


def flush_quietly(usage: UsageSink | None) -> None:
    if usage is None:
        return
    try:
        usage.flush()
    except Exception:  # noqa: BLE001, S110 - the original error matters more than the accounting
        pass


class UsageSink:
    """Writes the client's accounting to llm_usage as increments, and reports it to on_usage."""

    def __init__(self, ctx: RunContext) -> None:
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
        self.ctx.report(stage, done, total)


def llm_queries(ctx: RunContext, usage: UsageSink) -> list[Query]:
    """The run's queries: stored ones (resume), another run's (queries_from), or generated."""
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


def unique_pairs(
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
            if strategy_hits[i] is None:  # the strategy failed on this query
                continue
            for d in strategy_hits[i].docs:
                add(query, d.doc_id)
        if with_source:
            add(query, query.source_doc_id)
    return pairs


def judge(ctx: RunContext, client: LLMClient, usage: UsageSink,
          pairs: list[tuple[Query, Document]]) -> list[Grade]:
    """Judge pairs (cached), record the counts in the run's stats; raise if every call failed.

    With a panel (``--judge-models``), each judge grades every pair (engine/judges/panel.py), each
    judge's grades are kept for the store (``ctx.judge_rows``) and the panel's grade is returned.
    """
    if ctx.config.judges:
        return judge_with_panel(ctx, usage, pairs)
    result = judge_pairs(pairs, client, StoreCache(ctx.store), ctx.config.judge,
                         progress=usage.report, on_flush=usage.flush)
    usage.flush()
    ctx.stats["llm"] = {
        "pairs": len(result.grades), "judged": result.judged, "judge_cache_hits": result.cache_hits,
        "judge_failures": result.failures, "failure_reasons": result.failure_reasons,
        "model": result.model, "prompt_version": result.prompt_version,
        "output_mode": client.output_mode,
    }
    ctx.store.update_run(ctx.run_id, stats=ctx.stats)
    _stop_when_all_failed(result.grades, "the judge", "check --model and the endpoint")
    return result.grades


def _stop_when_all_failed(grades: Sequence[Grade], who: str, fix: str) -> None:
    failures = sum(g.grade is None for g in grades)
    if grades and failures == len(grades):
        first = next(g.reason for g in grades if g.grade is None)
        raise SearchGradeError(f"{who} failed on all {failures} pairs ({first}); {fix}")


def judge_with_panel(ctx: RunContext, usage: UsageSink, pairs: list[tuple[Query, Document]]) -> list[Grade]:
    """Every pair judged by each judge of the run's panel; the panel's grades (source "llm", model
    "panel"), each judge's kept in ``ctx.judge_rows`` for the store's judge_grades."""
    from searchgrade.engine.judges.panel import judge_clients, judge_panel

    config = ctx.config
    specs = config.judge_specs()
    result = judge_panel(pairs, judge_clients(config.llm, specs, ctx.client.usage, config.judges_declared_in),
                         StoreCache(ctx.store),
                         config.judge, aggregate=config.judge_aggregate, progress=usage.report,
                         on_flush=usage.flush)
    usage.flush()
    ctx.judge_rows = result.rows
    failures = sum(g.grade is None for g in result.grades)
    first = next(iter(result.results.values()))
    ctx.stats["llm"] = {
        "pairs": len(result.grades), "judged": sum(r.judged for r in result.results.values()),
        "judge_cache_hits": sum(r.cache_hits for r in result.results.values()), "judge_failures": failures,
        "failure_reasons": {}, "model": "panel", "prompt_version": first.prompt_version, "output_mode": None,
    }
    ctx.stats["judges"] = result.stats(specs, config.judge_aggregate)
    ctx.store.update_run(ctx.run_id, stats=ctx.stats)
    _stop_when_all_failed(result.grades, "every judge of the panel", "check --judge-models and the endpoints")
    return result.grades


def judge_with_qrels(
    ctx: RunContext,
    client: LLMClient,
    usage: UsageSink,
    queries: Sequence[Query],
    hits: dict[str, Sequence[SearchHits]],
    docs_by_id: dict[str, Document],
    human_grades: list[Grade],
) -> tuple[list[Grade], Judgments, Failed]:
    """Qrels + LLM: judge the retrieved pairs humans graded (agreement) and, with judge_unjudged,
    the ones they did not (used in the metrics; human grades always win).

    With binary qrels a judge grade g becomes 1 if g >= 2 else 0, so one threshold fits both.
    """
    qrels = ctx.plan.qrels
    fill = ctx.config.judge_unjudged
    # A panel judges every retrieved pair: its decisions are measured against people's (unjudged = 0).
    every = fill or bool(ctx.config.judges)

    pooled = in_pool(ctx, queries, hits)

    def wanted(qid: str, doc_id: str) -> bool:
        return (every or doc_id in qrels.get(qid, {})) and (pooled is None or pooled(qid, doc_id))

    pairs = unique_pairs(queries, hits, docs_by_id, with_source=False, keep=wanted)
    grades = judge(ctx, client, usage, pairs) if pairs else []
    on_shared = {(g.query_id, g.doc_id): g.grade for g in grades if g.doc_id in qrels.get(g.query_id, {})}
    human = {(qid, doc_id): grade for qid, judged in qrels.items() for doc_id, grade in judged.items()}
    agreement = judge_human_agreement(on_shared, human, judge_threshold=JUDGE_THRESHOLD,
                                      human_threshold=ctx.plan.threshold)
    ctx.stats["agreement"] = asdict(agreement)
    ctx.store.update_run(ctx.run_id, stats=ctx.stats)

    judgments: Judgments = {qid: dict(judged) for qid, judged in qrels.items()}
    failed: Failed = {}
    # The judge's grade stays beside the human one (agreement, trust in the judge).
    merged = [g._replace(llm_grade=on_shared.get((g.query_id, g.doc_id))) for g in human_grades]
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
