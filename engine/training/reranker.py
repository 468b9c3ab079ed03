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
an interrupted or failed training leaves no half-written reranker behind (engine/training/stops.py).

The steps, one module each: what is asked (config.py), the pairs (pairs.py), the folds (folds.py),
training one cross-encoder (trainer.py), the cross-fitted models and their held-out scores
(crossfit.py), the figures (heldout.py), the model card (card.py, its Markdown a template,
model_card.md). This module prepares the data and runs them in order.
"""


from __future__ import annotations

import json
import shutil
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from searchgrade.core.records import Collection, SearchGradeError
from searchgrade.engine.run.strategies import base_of, base_strategies
from searchgrade.engine.training.card import card_json, loadavg, machine, model_card_markdown
from searchgrade.engine.training.config import DEFAULT_DEPTH, RerankerTrainingConfig, TrainingWork
from searchgrade.engine.training.crossfit import train_and_score
from searchgrade.engine.training.folds import FoldQuery, assign_folds, query_groups
from searchgrade.engine.training.pairs import QueryLabels, labels_from_grades
from searchgrade.engine.training.stops import (
    TrainingStopped,
    move_into_place,
    partial_folder,
    stop_on_signals,
    sweep_stale,
)
from searchgrade.indexes.base import ProgressFn
from searchgrade.indexes.rerank.trained import TrainedReranker, leakage_keys, rerankers_dir

#: What callers use: train_reranker(store, run_id, data_dir, RerankerTrainingConfig(...)), which
#: raises TrainingStopped when SIGTERM or SIGHUP stops it.
__all__ = ["DEFAULT_DEPTH", "RerankerTrainingConfig", "TrainingStopped", "train_reranker"]


def train_reranker(
    store: Any,
    run_id: str,
    data_dir: str | Path,
    config: RerankerTrainingConfig,
    *,
    progress: ProgressFn | None = None,
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
    load_before = loadavg()
    target = rerankers_dir(data_dir) / config.name
    if target.exists() and not config.replace:
        raise SearchGradeError(f"a reranker named {config.name!r} exists ({target}); pass --replace "
                               "to overwrite it or pick another --name")
    work = _prepare(store, run_id, data_dir, config, collection)
    fold_queries = [FoldQuery(q.query_id, q.text, q.source_doc_id) for q in work.train_queries]
    work.groups = query_groups(fold_queries)
    if not config.split:  # before any work: too few groups for the folds fails here
        work.folds = assign_folds(fold_queries, config.folds, config.training.seed)
    sweep_stale(rerankers_dir(data_dir))
    partial = partial_folder(rerankers_dir(data_dir), config.name)
    shutil.rmtree(partial, ignore_errors=True)
    threads = _set_threads(config.threads)
    with stop_on_signals() as stops:
        try:
            (partial / "models").mkdir(parents=True)
            t0 = time.perf_counter()
            _find_candidates(work, config, data_dir, report)
            work.timings["candidates_s"] = time.perf_counter() - t0
            card = card_json(work, config, train_and_score(work, config, partial, report))
            card["timings"] = {**work.timings, "total_s": time.perf_counter() - started}
            card["machine"] = machine(load_before)
            card["notes"] = work.notes
            (partial / "card.json").write_text(json.dumps(card, indent=2, default=str), encoding="utf-8")
            (partial / "README.md").write_text(model_card_markdown(card), encoding="utf-8")
            with stops.held():  # a signal between the two renames would lose the old reranker
                move_into_place(partial, target)
        finally:
            shutil.rmtree(partial, ignore_errors=True)
            _set_threads(threads)
    return TrainedReranker.load(data_dir, config.name)


def _prepare(store: Any, run_id: str, data_dir: Path, config: RerankerTrainingConfig,
             collection: Collection | None) -> TrainingWork:
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
    return TrainingWork(run, collection, contents, eval_queries, train_queries, top_grade, strategies,
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


def _find_candidates(work: TrainingWork, config: RerankerTrainingConfig, data_dir: Path,
                     report: ProgressFn) -> None:
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


def _set_threads(threads: int | None) -> int | None:
    """Set torch's thread count (None: leave it); returns the previous one."""
    if threads is None:
        return None
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(threads)
    return previous
