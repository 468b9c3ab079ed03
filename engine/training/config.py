"""What ``train-reranker`` is asked to do (``RerankerTrainingConfig``), and what its steps share
(``TrainingWork``: the run, its documents and labels, the candidates, the folds)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from searchgrade.core.records import Collection, SearchGradeError
from searchgrade.engine.training.pairs import NegativeSampling, QueryLabels
from searchgrade.engine.training.trainer import TrainingSettings, check_body
from searchgrade.indexes.rerank.trained import check_name

#: Candidates of each base strategy a trained reranker rescores by default (at most the run's
#: --rerank-depth). Every held-out and validation query's union of them is scored while training,
#: so the depth sets most of the time: at 20, SciFact's 300 queries make ~19,000 pairs, at the
#: run's default 50, ~45,000 (the 33 minutes of the first demo). An evaluation with the reranker
#: rescores no deeper (indexes.rerank.trained.CrossFittedScorer.max_depth).
DEFAULT_DEPTH = 20


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

    @property
    def split(self) -> bool:
        """Trained on a separate split (``train_qrels``), not cross-fitted on the run's queries."""
        return self.train_qrels is not None


@dataclass
class TrainingWork:
    """What the steps of one training share.

    Attributes:
        run: the stored run whose grades it learns from.
        contents: doc id -> the text the reranker reads.
        eval_queries: the run's queries with their labels (held out, scored for the figures).
        train_queries: the queries trained on (the run's, or a separate split's).
        top_grade: the run's grade scale (labels are grade / top grade).
        strategies: the run's built-in base strategies, whose candidates are reranked.
        depth: candidates of each strategy rescored.
        candidates: strategy -> query id -> ranked doc ids (found by searching again).
        folds: query id -> fold (cross-fitting); groups: query id -> its leakage group.
        notes: said on the model card; timings: seconds by step.
    """

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
