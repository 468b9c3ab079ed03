"""Cross-fitting: which models are trained on which queries, training them, and scoring each
held-out query with the one model that never saw it.

With k folds, model f trains on every fold but f (and, when blending, but its validation fold
f + 1), chooses its blend weight on fold f + 1 and scores fold f; the full model (``--full-model``)
trains on every query for queries none of them saw. With a separate training split, one model
trains on the split and scores every run query. The held-out scores give the model card's
figures (engine/training/heldout.py) and are kept for later evaluations (``scores.parquet``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from searchgrade.engine.training.config import RerankerTrainingConfig, TrainingWork
from searchgrade.engine.training.folds import FoldQuery, assign_folds
from searchgrade.engine.training.heldout import HeldOutFigure, fit_blend_weight, heldout_figures
from searchgrade.engine.training.pairs import PairStats, QueryLabels, training_pairs
from searchgrade.engine.training.trainer import LabelledPair, train_cross_encoder
from searchgrade.indexes.base import ProgressFn
from searchgrade.indexes.rerank.trained import FULL, digest, model_key, predict, write_scores

#: The metrics of the held-out figures (at the run's k).
HELDOUT_METRICS = ("ndcg", "dcg")


class CrossFitted(NamedTuple):
    """What the models did: the model card's ``models`` and its held-out figures."""

    #: model key -> what it trained on, validated and scored, its cost and its blend weight.
    models: dict[str, Any]
    #: each base strategy vs the same strategy reranked (blended, as evaluations rerank).
    figures: list[HeldOutFigure]
    #: the same with the cross-encoder's scores alone.
    alone: list[HeldOutFigure]
    heldout_queries: int
    total_steps: int


@dataclass
class Plan:
    """One model to train: on which queries, and which queries it scores (none of those)."""

    key: str
    train_ids: list[str]
    #: Queries scored to choose the blend weight (a fold this model did not train on).
    validation_ids: list[str]
    #: Queries scored for the held-out figures and the score cache.
    heldout_ids: list[str]


def plan_models(work: TrainingWork, config: RerankerTrainingConfig) -> list[Plan]:
    """Cross-fitted: model f trains on every fold but f (and, when blending, but f's validation
    fold f + 1), is validated on f + 1 and scores f. Split: one model on the training queries
    (blending: minus one fifth of their groups, kept for validation) scores every run query."""
    train = work.train_queries
    graded = {q.query_id for q in work.eval_queries if q.grades}
    train_graded = {q.query_id for q in train if q.grades}
    if config.split:
        validation: list[str] = []
        if config.blend and len(set(work.groups.values())) >= 2:
            inner = assign_folds([FoldQuery(q.query_id, q.text, q.source_doc_id) for q in train],
                                 min(5, len(set(work.groups.values()))), config.training.seed)
            validation = [q.query_id for q in train if inner[q.query_id] == 1]
        held = [q.query_id for q in work.eval_queries if q.query_id in graded]
        fit = [q.query_id for q in train if q.query_id not in set(validation)]
        validation = [v for v in validation if v in train_graded][:config.max_validation]
        return [Plan(FULL, fit, validation, held)]
    k = config.folds
    plans = []
    for fold in range(1, k + 1):
        val_fold = fold % k + 1 if config.blend else None
        validation = [q.query_id for q in train
                      if work.folds[q.query_id] == val_fold and q.query_id in train_graded]
        if len(validation) > config.max_validation:
            validation = sorted(random.Random(f"{config.training.seed}:{fold}").sample(
                validation, config.max_validation))
        plans.append(Plan(
            model_key(fold),
            [q.query_id for q in train if work.folds[q.query_id] not in (fold, val_fold)],
            validation,
            [q.query_id for q in train if work.folds[q.query_id] == fold and q.query_id in graded],
        ))
    if config.full_model:
        plans.append(Plan(FULL, [q.query_id for q in train], [], []))
    return plans


def train_and_score(work: TrainingWork, config: RerankerTrainingConfig, folder: Path,
                    report: ProgressFn) -> CrossFitted:
    """Train every planned model into ``folder / "models"``, score the queries each one never saw,
    save those scores (``scores.parquet``) and measure them against the base strategies."""
    train = work.train_queries
    per_query: dict[str, tuple[list[LabelledPair], PairStats]] = {}
    for q in train:
        lists = [work.candidates[s].get(q.query_id, []) for s in work.strategies]
        per_query[q.query_id] = training_pairs([q], {q.query_id: lists}, work.contents,
                                               work.top_grade, config.sampling, config.training.seed)
    labels = {q.query_id: q for q in [*train, *work.eval_queries]}
    plans = plan_models(work, config)
    sizes = [sum(len(per_query[q][0]) for q in plan.train_ids) for plan in plans]
    total_steps = sum(config.training.steps(n) for n in sizes)
    total_pairs = sum(len(_to_score(work, labels[q])) for plan in plans
                      for q in [*plan.validation_ids, *plan.heldout_ids])

    models: dict[str, Any] = {}
    scores: dict[str, dict[str, float]] = {}
    weights: dict[str, float | None] = {}
    score_rows: list[tuple[str, str, str, str, float]] = []
    progress = {"steps": 0, "pairs": 0}
    clock = {"train_s": 0.0, "train_cpu_s": 0.0, "score_s": 0.0, "score_cpu_s": 0.0}
    fold_weights: list[float | None] = []
    report("train", 0, total_steps)
    for plan, n in zip(plans, sizes, strict=True):
        pairs = [p for q in plan.train_ids for p in per_query[q][0]]
        result, model = train_cross_encoder(pairs, config.training, folder / "models" / plan.key,
                                            progress=report, stage="train",
                                            step_offset=progress["steps"], step_total=total_steps)
        progress["steps"] += config.training.steps(n)
        clock["train_s"] += result.seconds
        clock["train_cpu_s"] += result.cpu_seconds

        def score(ids: Sequence[str], cache: bool, model: Any = model) -> dict[str, dict[str, float]]:
            t0, c0 = time.perf_counter(), time.process_time()
            out = {}
            for qid in ids:
                query = labels[qid]
                doc_ids = _to_score(work, query)
                texts = [work.contents[d] for d in doc_ids]
                values = predict(model, query.text, texts, batch_size=32)
                out[qid] = dict(zip(doc_ids, values, strict=True))
                if cache:
                    score_rows.extend((plan.key, digest(query.text), d, digest(t), v)
                                      for d, t, v in zip(doc_ids, texts, values, strict=True))
                progress["pairs"] += len(doc_ids)
                report("score", progress["pairs"], total_pairs)
            clock["score_s"] += time.perf_counter() - t0
            clock["score_cpu_s"] += time.process_time() - c0
            return out

        search: dict[str, float] = {}
        if not config.blend:
            weight: float | None = 0.0
        elif plan.validation_ids:
            validation = score(plan.validation_ids, cache=False)
            lists = {s: {q: work.candidates[s][q] for q in validation} for s in work.strategies}
            weight, search = fit_blend_weight(lists, validation, {q: labels[q].grades for q in validation},
                                              int(work.run.threshold), depth=work.depth, k=int(work.run.k))
            fold_weights.append(weight)
        else:  # the full model of cross-fitting: the folds' median weight
            weight = _median_weight(fold_weights)
        for qid, values in score(plan.heldout_ids, cache=True).items():
            scores[qid], weights[qid] = values, weight
        models[plan.key] = {
            "train_queries": len(plan.train_ids), "train_query_ids": sorted(plan.train_ids),
            "validation_query_ids": sorted(plan.validation_ids),
            "heldout_query_ids": sorted(plan.heldout_ids),
            "pairs": _sum_stats([per_query[q][1] for q in plan.train_ids]).to_json(),
            "steps": result.steps, "seconds": round(result.seconds, 2),
            "cpu_seconds": round(result.cpu_seconds, 2), "final_loss": result.final_loss,
            "fresh_head": result.fresh_head, "body_layers": result.body_layers,
            "blend_weight": weight, "blend_search": search,
        }
        del model, score  # the fold's model goes before the next one trains
    work.timings.update(clock, scored_pairs=total_pairs)
    write_scores(folder / "scores.parquet", score_rows)

    judgments = {q.query_id: q.grades for q in work.eval_queries}
    lists = {s: {q: work.candidates[s][q] for q in scores} for s in work.strategies}
    common = {"threshold": int(work.run.threshold), "depth": work.depth, "k": int(work.run.k),
              "metrics": HELDOUT_METRICS, "seed": config.training.seed}
    figures, _ = heldout_figures(lists, scores, judgments, weights=weights, **common)
    alone, _ = heldout_figures(lists, scores, judgments, **common)
    return CrossFitted(models, figures, alone, len(scores), total_steps)


def _median_weight(weights: Sequence[float | None]) -> float | None:
    """The median of blend weights, None (keep the base order) counting as the largest."""
    if not weights:
        return 0.0
    ordered = sorted(weights, key=lambda w: float("inf") if w is None else w)
    return ordered[(len(ordered) - 1) // 2]


def _to_score(work: TrainingWork, query: QueryLabels) -> list[str]:
    """The union of every base strategy's top ``max(depth, k)`` (what the reranked list is
    drawn from, engine.training.heldout.rerank) for a query, in first-seen order."""
    seen: dict[str, None] = {}
    for s in work.strategies:
        for d in work.candidates[s].get(query.query_id, [])[:max(work.depth, int(work.run.k))]:
            if d in work.contents:
                seen.setdefault(d, None)
    return list(seen)


def _sum_stats(parts: Sequence[PairStats]) -> PairStats:
    total = PairStats()
    for p in parts:
        for name in ("queries", "pairs", "positives", "judged_negatives", "hard_negatives",
                     "skipped_missing_documents"):
            setattr(total, name, getattr(total, name) + getattr(p, name))
        for source, n in p.by_source.items():
            total.by_source[source] = total.by_source.get(source, 0) + n
    return total
