"""Train a domain reranker from a run's grades, and measure it on queries it never saw.

``train_reranker`` reads a complete run (its queries and grades, human labels first), finds the
candidates the run's base strategies retrieve for each query (searching again, deeper than the run
kept), builds training pairs with hard negatives (engine/training/pairs.py), deals the queries to
query-disjoint folds (engine/training/folds.py), trains one model per fold on the other folds and
scores each held-out query with the model that never saw it (cross-fitting), then trains a full
model on every query for later, unseen queries. The held-out scores give the figures of the model
card: each base strategy vs the same strategy reranked, with paired 95% confidence intervals.

With a separate training split (qrels of other queries), the model is trained on those queries
(minus any that leak into the run's queries) and the run's queries are all held out.

Everything is written to a temporary folder first and moved into ``rerankers/<name>`` at the end:
an interrupted or failed training leaves no half-written reranker behind.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from searchgrade.core.owner import left_by_dead_process, owner_tag
from searchgrade.core.records import Collection, SearchGradeError
from searchgrade.engine.run.strategies import base_of, base_strategies
from searchgrade.engine.training.folds import FoldQuery, assign_folds, query_groups
from searchgrade.engine.training.heldout import HeldOutFigure, fit_blend_weight, heldout_figures
from searchgrade.engine.training.pairs import (
    NegativeSampling,
    PairStats,
    QueryLabels,
    labels_from_grades,
    training_pairs,
)
from searchgrade.indexes.rerank.trained import (
    CARD_FORMAT,
    FULL,
    TrainedReranker,
    check_name,
    digest,
    leakage_keys,
    model_key,
    rerankers_dir,
    write_scores,
)
from searchgrade.indexes.rerank.training import (
    LabelledPair,
    TrainingSettings,
    check_body,
    predict,
    train_cross_encoder,
)

Progress = Callable[[str, int, int], None]
#: Candidates of each base strategy a trained reranker rescores by default (at most the run's
#: --rerank-depth). Every held-out and validation query's union of them is scored while training,
#: so the depth sets most of the time: at 20, SciFact's 300 queries make ~19,000 pairs, at the
#: run's default 50, ~45,000 (the 33 minutes of the first demo). An evaluation with the reranker
#: rescores no deeper (indexes.rerank.trained.CrossFittedScorer.max_depth).
DEFAULT_DEPTH = 20
#: The metrics of the held-out figures (at the run's k).
HELDOUT_METRICS = ("ndcg", "dcg")


@dataclass(frozen=True)
class RerankerTrainingConfig:
    """What `train-reranker` does.

    Attributes:
        name: the reranker's name (``--reranker-model trained:NAME``).
        folds: query-disjoint folds for cross-fitting (ignored with a training split).
        sampling: hard negatives per query and the ranks they come from.
        training: body, length, epochs, batch size, learning rate, seed.
        depth: candidates of each base strategy the reranker rescores in the held-out figures
            and in evaluations with it (default: DEFAULT_DEPTH, or the run's --rerank-depth when
            smaller).
        full_model: also train on every query, for queries none of the fold models saw
            (without it, such queries are scored by fold 1's model).
        train_qrels: a qrels file of other queries to train on instead of the run's grades.
        train_queries: the texts of those queries (default: queries.jsonl of the collection).
        replace: overwrite a reranker of the same name.
        blend: blend each model's scores with the base ranking, with a weight chosen on a fold
            the model did not train on (indexes.rerank.trained.blend); each fold model then
            trains on k - 2 folds. Without it: the cross-encoder alone, on k - 1 folds.
        max_validation: at most this many validation queries per model (a seeded sample): they
            cost scoring time and only choose one weight.
        threads: torch threads while training and scoring (None: torch's default, one per
            core). On a machine whose cores are busy with other work, 1 can be several times
            faster than 2: threads that wait for each other under contention waste their turns.
    """

    name: str
    folds: int = 5
    sampling: NegativeSampling = field(default_factory=NegativeSampling)
    training: TrainingSettings = field(default_factory=TrainingSettings)
    depth: int | None = None
    full_model: bool = False
    train_qrels: str | None = None
    train_queries: str | None = None
    replace: bool = False
    threads: int | None = None
    blend: bool = True
    max_validation: int = 40

    def validate(self) -> None:
        check_name(self.name)
        if self.train_qrels is None and (not isinstance(self.folds, int) or self.folds < 2):
            raise SearchGradeError(f"--folds of {self.folds!r} must be at least 2")
        if self.depth is not None and self.depth < 1:
            raise SearchGradeError(f"--depth of {self.depth} must be at least 1")
        if self.threads is not None and (not isinstance(self.threads, int) or self.threads < 1):
            raise SearchGradeError(f"--threads of {self.threads!r} must be at least 1")
        if self.train_queries is not None and self.train_qrels is None:
            raise SearchGradeError("--train-queries goes with --train-qrels (the texts of its queries)")
        check_body(self.training.base_model)


@dataclass
class _Work:
    """What the stages share."""

    run: Any
    collection: Collection
    contents: dict[str, str]
    eval_queries: list[QueryLabels]
    train_queries: list[QueryLabels]
    top_grade: int
    strategies: list[str]
    depth: int
    candidates: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    folds: dict[str, int] = field(default_factory=dict)
    groups: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)


def train_reranker(
    store: Any,
    run_id: str,
    data_dir: str | Path,
    config: RerankerTrainingConfig,
    *,
    progress: Progress | None = None,
    collection: Collection | None = None,
) -> TrainedReranker:
    """Train the reranker ``config.name`` from run ``run_id``'s grades; returns it, card included.

    Raises:
        SearchGradeError: the run is not complete, has too few graded queries, its collection
            cannot be loaded, the name is taken (without ``replace``), or a setting is invalid.
    """
    config.validate()
    data_dir = Path(data_dir)
    report = progress or (lambda stage, done, total: None)
    started = time.perf_counter()
    load_before = _loadavg()
    target = rerankers_dir(data_dir) / config.name
    if target.exists() and not config.replace:
        raise SearchGradeError(f"a reranker named {config.name!r} exists ({target}); pass --replace "
                               "to overwrite it or pick another --name")
    work = _prepare(store, run_id, data_dir, config, collection)
    fold_queries = [FoldQuery(q.query_id, q.text, q.source_doc_id) for q in work.train_queries]
    work.groups = query_groups(fold_queries)
    if config.train_qrels is None:  # before any work: too few groups for the folds fails here
        work.folds = assign_folds(fold_queries, config.folds, config.training.seed)
    sweep_stale(rerankers_dir(data_dir))
    partial = rerankers_dir(data_dir) / f".partial-{config.name}-{owner_tag()}"
    shutil.rmtree(partial, ignore_errors=True)
    threads = _set_threads(config.threads)
    with _stop_on_signals() as stops:
        try:
            (partial / "models").mkdir(parents=True)
            t0 = time.perf_counter()
            _find_candidates(work, config, data_dir, report)
            work.timings["candidates_s"] = time.perf_counter() - t0
            card = _train_and_score(work, config, partial, report)
            card["timings"] = {**work.timings, "total_s": time.perf_counter() - started}
            card["machine"] = _machine(load_before)
            card["notes"] = work.notes
            (partial / "card.json").write_text(json.dumps(card, indent=2, default=str), encoding="utf-8")
            (partial / "README.md").write_text(model_card_markdown(card), encoding="utf-8")
            with stops.held():  # a signal between the two renames would lose the old reranker
                _move_into_place(partial, target)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
            _set_threads(threads)
    return TrainedReranker.load(data_dir, config.name)


class TrainingStopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived while training (in the main thread).

    Raised from the signal handler so that the temporary folder is removed on the way out, as for
    Ctrl-C (a KeyboardInterrupt too, so no ``except Exception`` in between swallows it). ``saved``:
    the signal arrived while the finished reranker was being moved into place, and was held until
    it was there, so the training stopped with its reranker saved.
    """

    def __init__(self, signum: int, saved: bool = False) -> None:
        self.signum = signum
        self.saved = saved
        super().__init__(f"stopped by {signal.Signals(signum).name}" + (" (saved)" if saved else ""))


class _Stops:
    """The signal handler of one training: raises TrainingStopped, or holds it while ``held``."""

    def __init__(self) -> None:
        self._holding = False
        self._pending: int | None = None

    def handle(self, signum: int, frame: Any) -> None:  # noqa: ARG002 - signal's API
        if self._holding:
            self._pending = signum
        else:
            raise TrainingStopped(signum)

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold signals while the reranker is moved into place; one that arrived meanwhile is
        raised after a move that succeeded, as a stop with the reranker saved."""
        self._holding = True
        try:
            yield
        finally:
            self._holding = False
        if self._pending is not None:
            raise TrainingStopped(self._pending, saved=True)


@contextmanager
def _stop_on_signals() -> Iterator[_Stops]:
    """While training, SIGTERM and SIGHUP stop it like Ctrl-C (the default would kill the process
    before the temporary folder is removed). Only the main thread can set handlers: elsewhere (a
    training job of the app) the signals keep their handling, and ``sweep_stale`` removes what a
    killed process left at the next training."""
    stops = _Stops()
    if threading.current_thread() is not threading.main_thread():
        yield stops
        return
    wanted = [s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None]
    previous = {s: signal.signal(s, stops.handle) for s in wanted}
    try:
        yield stops
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


#: Temporary folders of a training: ``.partial-NAME-PID@HOST`` (being written),
#: ``.old-NAME-PID@HOST`` (the reranker being replaced, for the moment between two renames).
#: Earlier versions wrote them without ``@HOST``. A NAME holds no "@" (check_name).
_TEMPORARY = re.compile(r"\.(partial|old)-([^@]+)-(\d+)(?:@([A-Za-z0-9._-]+))?")


def sweep_stale(folder: Path) -> list[str]:
    """Remove the temporary folders of trainings whose process is gone; returns their names.

    A ``.partial`` folder is an unfinished reranker: removed. An ``.old`` folder is a reranker a
    killed process was replacing: put back under its name if nothing took that name, else removed.
    Folders of a live process (another training running now) and of another host (a data
    directory shared between machines: its process ids mean nothing here) are left alone.
    """
    swept = []
    for path in sorted(folder.glob(".*-*")) if folder.is_dir() else []:
        match = _TEMPORARY.fullmatch(path.name)
        if match is None or not path.is_dir() or not left_by_dead_process(int(match.group(3)),
                                                                          match.group(4)):
            continue
        kind, name = match.group(1), match.group(2)
        if kind == "old" and not (folder / name).exists():
            path.rename(folder / name)
        else:
            shutil.rmtree(path, ignore_errors=True)
        swept.append(path.name)
    return swept


# -- preparing -----------------------------------------------------------------------------


def _prepare(store: Any, run_id: str, data_dir: Path, config: RerankerTrainingConfig,
             collection: Collection | None) -> _Work:
    from searchgrade.engine.collections import load_collection
    from searchgrade.engine.run.config import RunConfig

    run = store.get_run(run_id)
    if run.status != "complete":
        raise SearchGradeError(f"run {run.run_id} is {run.status}, not complete: its grades are "
                               f"partial; finish it with `searchgrade resume {run.run_id}` first")
    run_config = RunConfig.from_json(run.config)
    if collection is None:
        path = Path(run.collection_path)
        if not path.exists():
            raise SearchGradeError(
                f"run {run.run_id}'s collection {run.collection_path} is gone: the reranker reads the "
                "documents' text; train from a run whose collection is still on this machine"
            )
        collection = load_collection(path, **run_config.collection_fields)
    contents = {d.doc_id: d.content for d in collection.documents}
    eval_queries = labels_from_grades(store.queries(run.run_id), store.grades(run.run_id))
    graded = [q for q in eval_queries if q.grades]
    if not graded:
        raise SearchGradeError(f"run {run.run_id} holds no grades to learn from")
    top_grade = int(run.grade_max or 1)
    if config.train_qrels is not None:
        train_queries, notes = _training_split(config, collection, eval_queries)
    else:
        train_queries, notes = eval_queries, []
    wanted = {base_of(s) or s for s in run_config.strategies}
    strategies = [s for s in base_strategies() if s in wanted]
    settings = run_config.index
    depth = config.depth or min(DEFAULT_DEPTH, settings.rerank_depth if settings is not None else DEFAULT_DEPTH)
    return _Work(run, collection, contents, eval_queries, train_queries, top_grade, strategies,
                 depth, notes=notes)


def _training_split(config: RerankerTrainingConfig, collection: Collection,
                    eval_queries: Sequence[QueryLabels]) -> tuple[list[QueryLabels], list[str]]:
    """The queries of a separate training split, minus any that leak into the evaluated ones."""
    from searchgrade.engine.collections import load_judgments

    root = Path(collection.path)
    queries_path = Path(config.train_queries) if config.train_queries else root / "queries.jsonl"
    queries, qrels, notes = load_judgments(Path(config.train_qrels), queries_path,
                                           [d.doc_id for d in collection.documents])
    eval_keys = {k for q in eval_queries for k in leakage_keys(q.text, q.source_doc_id)}
    kept, dropped = [], []
    for q in queries:
        if q.query_id not in qrels:
            continue
        if any(k in eval_keys for k in leakage_keys(q.text, q.source_doc_id)) or \
                q.query_id in {e.query_id for e in eval_queries}:
            dropped.append(q.query_id)
            continue
        kept.append(QueryLabels(q.query_id, q.text, q.source_doc_id, dict(qrels[q.query_id]),
                                dict.fromkeys(qrels[q.query_id], "human")))
    if dropped:
        notes.append(f"left out {len(dropped)} training-split queries that are also evaluated "
                     f"(same id or text), so no evaluated query is trained on")
    if not kept:
        raise SearchGradeError(f"{config.train_qrels} has no judged query outside the run's queries: "
                               "nothing to train on")
    return kept, notes


def _find_candidates(work: _Work, config: RerankerTrainingConfig, data_dir: Path,
                     report: Progress) -> None:
    """Every base strategy's ranked doc ids for every query, deep enough for the negatives and
    the held-out reranking."""
    from searchgrade.core.records import collection_fingerprint
    from searchgrade.engine.run.config import RunConfig
    from searchgrade.indexes.build import build_searchers
    from searchgrade.indexes.settings import IndexSettings

    settings = RunConfig.from_json(work.run.config).index or IndexSettings()
    built = build_searchers(work.collection, settings, data_dir, strategies=work.strategies,
                            progress=report, collection_fingerprint=collection_fingerprint(work.collection))
    missing = [s for s in work.strategies if s not in built.searchers]
    if missing:
        raise SearchGradeError(f"base strategies {', '.join(missing)} could not be built: "
                               f"{next(iter(built.skipped.values()), 'unknown reason')}")
    queries = {q.query_id: q.text for q in [*work.train_queries, *work.eval_queries]}
    ids = sorted(queries)
    depth = max(work.depth, config.sampling.last, int(work.run.k))
    report("search", 0, len(work.strategies))
    for i, strategy in enumerate(work.strategies):
        hits = built.searchers[strategy].search([queries[q] for q in ids], depth)
        work.candidates[strategy] = {q: [d.doc_id for d in h.docs] for q, h in zip(ids, hits, strict=True)}
        report("search", i + 1, len(work.strategies))


# -- training and scoring ------------------------------------------------------------------


@dataclass
class _Plan:
    """One model to train: on which queries, and which queries it scores (none of those)."""

    key: str
    train_ids: list[str]
    #: Queries scored to choose the blend weight (a fold this model did not train on).
    validation_ids: list[str]
    #: Queries scored for the held-out figures and the score cache.
    heldout_ids: list[str]


def _plans(work: _Work, config: RerankerTrainingConfig, split: bool) -> list[_Plan]:
    """Cross-fitted: model f trains on every fold but f (and, when blending, but f's validation
    fold f + 1), is validated on f + 1 and scores f. Split: one model on the training queries
    (blending: minus one fifth of their groups, kept for validation) scores every run query."""
    train = work.train_queries
    graded = {q.query_id for q in work.eval_queries if q.grades}
    train_graded = {q.query_id for q in train if q.grades}
    if split:
        validation: list[str] = []
        if config.blend and len(set(work.groups.values())) >= 2:
            inner = assign_folds([FoldQuery(q.query_id, q.text, q.source_doc_id) for q in train],
                                 min(5, len(set(work.groups.values()))), config.training.seed)
            validation = [q.query_id for q in train if inner[q.query_id] == 1]
        held = [q.query_id for q in work.eval_queries if q.query_id in graded]
        fit = [q.query_id for q in train if q.query_id not in set(validation)]
        validation = [v for v in validation if v in train_graded][:config.max_validation]
        return [_Plan(FULL, fit, validation, held)]
    k = config.folds
    plans = []
    for fold in range(1, k + 1):
        val_fold = fold % k + 1 if config.blend else None
        validation = [q.query_id for q in train
                      if work.folds[q.query_id] == val_fold and q.query_id in train_graded]
        if len(validation) > config.max_validation:
            validation = sorted(random.Random(f"{config.training.seed}:{fold}").sample(
                validation, config.max_validation))
        plans.append(_Plan(
            model_key(fold),
            [q.query_id for q in train if work.folds[q.query_id] not in (fold, val_fold)],
            validation,
            [q.query_id for q in train if work.folds[q.query_id] == fold and q.query_id in graded],
        ))
    if config.full_model:
        plans.append(_Plan(FULL, [q.query_id for q in train], [], []))
    return plans


def _train_and_score(work: _Work, config: RerankerTrainingConfig, folder: Path,
                     report: Progress) -> dict[str, Any]:
    split = config.train_qrels is not None
    train = work.train_queries
    per_query: dict[str, tuple[list[LabelledPair], PairStats]] = {}
    for q in train:
        lists = [work.candidates[s].get(q.query_id, []) for s in work.strategies]
        per_query[q.query_id] = training_pairs([q], {q.query_id: lists}, work.contents,
                                               work.top_grade, config.sampling, config.training.seed)
    labels = {q.query_id: q for q in [*train, *work.eval_queries]}
    plans = _plans(work, config, split)
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

        def score(ids: Sequence[str], cache: bool) -> dict[str, dict[str, float]]:
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
        del model
    work.timings.update(clock, scored_pairs=total_pairs)
    write_scores(folder / "scores.parquet", score_rows)

    judgments = {q.query_id: q.grades for q in work.eval_queries}
    lists = {s: {q: work.candidates[s][q] for q in scores} for s in work.strategies}
    common = {"threshold": int(work.run.threshold), "depth": work.depth, "k": int(work.run.k),
              "metrics": HELDOUT_METRICS, "seed": config.training.seed}
    figures, _ = heldout_figures(lists, scores, judgments, weights=weights, **common)
    alone, _ = heldout_figures(lists, scores, judgments, **common)
    return _card(work, config, models, figures, alone, len(scores), total_steps, split)


def _median_weight(weights: Sequence[float | None]) -> float | None:
    """The median of blend weights, None (keep the base order) counting as the largest."""
    if not weights:
        return 0.0
    ordered = sorted(weights, key=lambda w: float("inf") if w is None else w)
    return ordered[(len(ordered) - 1) // 2]


def _to_score(work: _Work, query: QueryLabels) -> list[str]:
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


# -- the model card ------------------------------------------------------------------------


def _card(work: _Work, config: RerankerTrainingConfig, models: dict[str, Any],
          figures: Sequence[HeldOutFigure], alone: Sequence[HeldOutFigure], n_heldout: int,
          total_steps: int, split: bool) -> dict[str, Any]:
    run = work.run
    label_counts: dict[str, int] = {}
    for q in work.train_queries:
        for source in q.sources.values():
            label_counts[source] = label_counts.get(source, 0) + 1
    return {
        "format": CARD_FORMAT,
        "name": config.name,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "mode": "training-split" if split else "cross-fitted",
        "source_run": {
            "run_id": run.run_id, "name": run.name, "collection_name": run.collection_name,
            "collection_path": run.collection_path, "mode": run.mode, "label_source": run.label_source,
            "grade_max": work.top_grade, "threshold": run.threshold, "k": run.k,
        },
        "train_qrels": config.train_qrels,
        "labels": {"by_source": label_counts, "queries": len(work.train_queries),
                   "graded_queries": sum(1 for q in work.train_queries if q.grades)},
        "folds": 0 if split else config.folds,
        "groups": len(set(work.groups.values())),
        "training": config.training.to_json(),
        "blend": config.blend,
        "negatives": {"per_query": config.sampling.negatives, "first_rank": config.sampling.first,
                      "last_rank": config.sampling.last},
        "strategies": work.strategies,
        "models": models,
        "total_steps": total_steps,
        "queries": [
            {"query_id": q.query_id, "text": q.text, "source_doc_id": q.source_doc_id,
             "group": work.groups.get(q.query_id), "fold": work.folds.get(q.query_id)}
            for q in work.train_queries
        ],
        "heldout": {
            "depth": work.depth, "k": int(run.k), "queries": n_heldout,
            "scored_by": "the full model (trained on the separate split)" if split
            else "the fold model that never saw the query",
            "figures": [f.to_json() for f in figures],
            "cross_encoder_alone": [f.to_json() for f in alone],
        },
    }


def model_card_markdown(card: Mapping[str, Any]) -> str:
    """The card for people: what it learnt from, how, and how it did on queries it never saw."""
    src = card["source_run"]
    training = card["training"]
    lines = [
        f"# Reranker `{card['name']}`",
        "",
        f"Trained by searchgrade on {card['created_at']} from run `{src['run_id']}` ({src['name']}, "
        f"collection {src['collection_name']}, {src['label_source']} labels, top grade {src['grade_max']}).",
        "",
        "## Training data",
        "",
        f"- Mode: {card['mode']}"
        + (f", {card['folds']} query-disjoint folds over {card['groups']} groups of queries "
           "(queries from one source document or with the same text share a fold)"
           if card["mode"] == "cross-fitted" else f", trained on {card.get('train_qrels')}"),
        f"- Labels: {card['labels']['queries']} queries; label sources "
        + ", ".join(f"{k} {v}" for k, v in sorted(card["labels"]["by_source"].items())),
        f"- Hard negatives: up to {card['negatives']['per_query']} unjudged candidates per query from "
        f"ranks {card['negatives']['first_rank']}-{card['negatives']['last_rank']} of "
        f"{', '.join(card['strategies'])}",
        "",
        "## Hyper-parameters",
        "",
        f"- Body: `{training['base_model']}`"
        + (f", first {training['body_layers']} transformer layers" if training.get("body_layers") else "")
        + f", top {'all' if training.get('train_layers') is None else training['train_layers']} layers "
        f"trained; max length {training['max_length']} tokens; "
        f"{training['epochs']} epoch(s); batch {training['batch_size']}; learning rate "
        f"{training['learning_rate']}; warm-up {training['warmup']}; seed {training['seed']}",
        "",
        "## Models",
        "",
        "| model | training queries | pairs | steps | seconds |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for key, m in card["models"].items():
        lines.append(f"| {key} | {m['train_queries']} | {m['pairs']['pairs']} | {m['steps']} | {m['seconds']} |")
    t = card.get("timings", {})
    machine = card.get("machine", {})
    lines += [
        "",
        f"Time: {t.get('total_s', 0):.0f} s in all (candidates {t.get('candidates_s', 0):.0f} s, "
        f"training {t.get('train_s', 0):.0f} s, held-out scoring {t.get('score_s', 0):.0f} s) on "
        f"{machine.get('cpus')} CPUs, {machine.get('torch_threads')} torch threads, load average "
        f"{machine.get('load_before')} before and {machine.get('load_after')} after.",
        "",
        "## Held-out figures (measured on queries the reranker never saw)",
        "",
        f"{card['heldout']['queries']} queries, each reranked by {card['heldout']['scored_by']}; "
        f"the top {card['heldout']['depth']} of each strategy rescored; paired 95% CIs (bootstrap) and "
        "sign-flip p-values, Holm-adjusted over the strategies; significant: adjusted p < 0.05.",
        "",
    ]
    if card.get("blend"):
        weights = ", ".join(f"{key} {_weight_text(m.get('blend_weight'))}" for key, m in card["models"].items())
        lines += [
            "The reranker's score blends the cross-encoder's with the base ranking; each model's "
            f"weight was chosen on queries it neither trained on nor is measured on ({weights}; "
            "0: the cross-encoder alone, 'base': keep the base order).",
            "",
        ]
    lines += _figure_table(card["heldout"]["figures"])
    if card.get("blend") and card["heldout"].get("cross_encoder_alone"):
        lines += ["", "The cross-encoder alone (no blend), for comparison:", ""]
        lines += _figure_table(card["heldout"]["cross_encoder_alone"])
    if card.get("notes"):
        lines += ["", "## Notes", "", *[f"- {n}" for n in card["notes"]]]
    return "\n".join(lines) + "\n"


def _weight_text(weight: float | None) -> str:
    return "base" if weight is None else f"{weight:g}"


def _figure_table(figures: Sequence[Mapping[str, Any]]) -> list[str]:
    lines = [
        "| strategy | metric | base | reranked | change | 95% CI | p | p (Holm) | improved / hurt | judged@k |",
        "| --- | --- | ---: | ---: | ---: | --- | ---: | ---: | --- | ---: |",
    ]
    for f in figures:
        lines.append(
            f"| {f['strategy']} | {f['metric']}@{f['k']} | {f['base']:.4f} | {f['reranked']:.4f} | "
            f"{f['diff']:+.4f} | [{f['ci_low']:+.4f}, {f['ci_high']:+.4f}] | {f['p_value']:.4f} | "
            f"{f['p_holm']:.4f} | {f['improved']} / {f['hurt']} | {f['judged_reranked']:.2f} |"
        )
    return lines


# -- small helpers -------------------------------------------------------------------------


def _move_into_place(partial: Path, target: Path) -> None:
    old = target.with_name(f".old-{target.name}-{owner_tag()}")
    if target.exists():
        target.rename(old)
    partial.rename(target)
    shutil.rmtree(old, ignore_errors=True)


def _set_threads(threads: int | None) -> int | None:
    """Set torch's thread count (None: leave it); returns the previous one."""
    if threads is None:
        return None
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    return previous


def _loadavg() -> float | None:
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def _machine(load_before: float | None) -> dict[str, Any]:
    import platform

    import torch

    return {"cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "processor": platform.processor() or platform.machine(),
            "load_before": load_before, "load_after": _loadavg()}
