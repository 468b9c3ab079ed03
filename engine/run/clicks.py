"""Grading a run by clicks (mode ``clicks``).

The click model the run names turns the click stats of its query set's log into grades on the
judge's 0-3 scale (engine/clicks/grading.py: the log's position bias, cut-points derived from its
clicks), label source "clicks"; a pair examined fewer than ``min_impressions`` times is unjudged
(0 in the metrics, visible in judged@k and in each strategy's coverage). What the grades were made
with (the cut-points, the position bias, each with its source) is stored as ``stats["clicks"]``. With the judge too
(``--clicks --llm``), the judge grades the retrieved pairs the clicks graded, click grades win, and
the judge's agreement with the clicks is stored as ``stats["click_agreement"]``, as judge-vs-human
agreement is for qrels; with ``--judge-unjudged`` too, it also grades the retrieved pairs the clicks
left unjudged (the holes), and those grades count in the metrics (label source ``clicks+llm``). People's ratings win over both (engine/labels/rescore.py), as in every run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

import numpy as np

from searchgrade.core.records import Document, Grade, Query, SearchGradeError, SearchHits
from searchgrade.engine.clicks.grading import click_grades
from searchgrade.engine.clicks.models import ClickCounts
from searchgrade.engine.run.config import JUDGE_THRESHOLD
from searchgrade.engine.run.grading import Failed, Judgments, UsageSink, in_pool, judge, unique_pairs
from searchgrade.engine.statistics.judge_vs_human import judge_human_agreement
from searchgrade.engine.traffic.query_sets import set_queries

if TYPE_CHECKING:
    from searchgrade.engine.llm.client import LLMClient
    from searchgrade.engine.run.context import RunContext


def click_judgments(store: Any, set_name: str, model: str, min_impressions: int,
                    queries: Sequence[Query]) -> tuple[list[Grade], dict[str, Any]]:
    """The click grades of the queries' pairs (every pair of theirs the model judged), and a summary.

    The model is fitted on the whole log's clicks (the examination curve is shared by all queries).
    """
    record = store.query_set(set_name)
    stats = store.click_stats(record["log_name"])
    ranks = {q.log_rank: q.query_id for q in set_queries(store, set_name)}
    wanted = {q.query_id for q in queries}
    keys = list(zip(stats["rank"].tolist(), stats["doc_id"].tolist(), strict=True))
    pair_of: dict[tuple[int, str], int] = {}
    codes = np.fromiter((pair_of.setdefault(k, len(pair_of)) for k in keys), dtype=int, count=len(keys))
    counts = ClickCounts.of(codes, stats["position"], stats["impressions"], stats["clicks"], len(pair_of))
    found = click_grades(counts, model, min_examinations=min_impressions)
    estimate, grades, judged = found.estimate, found.grades, found.judged
    shown = counts.per_pair(counts.impressions)
    clicked = counts.per_pair(counts.clicks)
    out: list[Grade] = []
    unjudged = 0
    for (rank, doc_id), i in pair_of.items():
        qid = ranks.get(rank)
        if qid is None or qid not in wanted:
            continue
        if not judged[i]:
            unjudged += 1
            continue
        out.append(Grade(qid, doc_id, int(grades[i]), "clicks", f"clicks:{model}", None,
                         f"{model} {estimate[i]:.3f} (rank-1 click probability) from {int(shown[i]):,} "
                         f"impressions ({found.examinations[i]:,.1f} examined), {int(clicked[i]):,} clicks"))
    summary = {**found.summary(), "log": record["log_name"], "min_impressions": min_impressions,
               "cutpoints": list(found.thresholds.cutpoints), "judged_pairs": len(out), "unjudged_pairs": unjudged,
               "queries_with_clicks": len({g.query_id for g in out})}
    return out, summary


def grade_by_clicks(ctx: RunContext, client: LLMClient | None, usage: UsageSink | None,
                    queries: Sequence[Query], hits: dict[str, Sequence[SearchHits]],
                    docs_by_id: dict[str, Document]) -> tuple[list[Grade], Judgments, Failed]:
    """Mode clicks: the click grades, and with the judge its agreement with them (click grades win);
    with ``judge_unjudged``, the judge's grades of the retrieved pairs the clicks did not judge (in
    the run's pool, through the cache) fill the holes, label source ``clicks+llm``."""
    config = ctx.config
    grades, summary = click_judgments(ctx.store, config.query_set, config.click_model, config.min_impressions,
                                      queries)
    if not grades:
        raise SearchGradeError(
            f"no pair of query set {config.query_set!r} was shown {config.min_impressions} times or more in the "
            "clicks: lower --min-impressions, or import more events")
    ctx.stats["clicks"] = summary
    judgments: Judgments = {}
    for g in grades:
        judgments.setdefault(g.query_id, {})[g.doc_id] = g.grade
    if client is None:
        return grades, judgments, {}
    fill = config.judge_unjudged
    pooled = in_pool(ctx, queries, hits) if fill else None

    def wanted(qid: str, doc: str) -> bool:
        if doc in judgments.get(qid, {}):
            return True  # the judge against the clicks
        return fill and (pooled is None or pooled(qid, doc))

    pairs = unique_pairs(queries, hits, docs_by_id, with_source=False, keep=wanted)
    judged = judge(ctx, client, usage, pairs) if pairs else []
    clicks = {(g.query_id, g.doc_id): g.grade for g in grades}
    by_pair = {(g.query_id, g.doc_id): g.grade for g in judged if (g.query_id, g.doc_id) in clicks}
    agreement = judge_human_agreement(by_pair, clicks, judge_threshold=JUDGE_THRESHOLD,
                                      human_threshold=ctx.plan.threshold)
    ctx.stats["click_agreement"] = asdict(agreement)
    out = [g._replace(llm_grade=by_pair.get((g.query_id, g.doc_id))) for g in grades]
    failed: Failed = {}
    filled = 0
    for g in judged if fill else []:
        if (g.query_id, g.doc_id) in clicks:
            continue
        out.append(g)
        if g.grade is None:
            failed.setdefault(g.query_id, set()).add(g.doc_id)
            continue
        judgments.setdefault(g.query_id, {})[g.doc_id] = g.grade
        filled += 1
    if fill:
        ctx.stats["clicks"]["filled_by_judge"] = filled
    ctx.store.update_run(ctx.run_id, stats=ctx.stats)
    return out, judgments, failed
