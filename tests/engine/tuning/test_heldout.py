"""The tuner never reads a held-out query's grades, and its split is fixed before the first trial."""

from __future__ import annotations

import pytest

from searchgrade.core.records import ScoredDoc
from searchgrade.engine.metrics import parse_metric
from searchgrade.engine.tuning.grades import Grades, HeldOutRead
from searchgrade.engine.tuning.space import default_space
from searchgrade.engine.tuning.split import split_queries
from searchgrade.engine.tuning.target import Target
from searchgrade.engine.tuning.tuner import optimise, tune
from searchgrade.indexes.base import Answer
from searchgrade.indexes.builtin.fusion import Fusion
from searchgrade.indexes.builtin.hybrid import HybridNode

N = 60


class Lists:
    """A leaf node answering fixed lists (what ann / fulltext computed), counting its calls."""

    inputs: tuple[str, ...] = ()

    def __init__(self, name: str, lists: dict[str, list[ScoredDoc]]) -> None:
        self.name, self.lists, self.answered = name, lists, 0

    def input_depth(self, depth: int) -> int:
        return depth

    def answer(self, batch, depth, inputs):
        self.answered += len(batch)
        return [Answer(self.lists[q][:depth], 0.001) for q in batch.ids]


class Trap(dict):
    """A held-out query's grades: any read raises while ``armed[0]``."""

    def __init__(self, grades, armed) -> None:
        super().__init__(grades)
        self.armed = armed

    def _check(self):
        if self.armed[0]:
            raise AssertionError("a held-out grade was read during tuning")

    def get(self, *a):
        self._check()
        return super().get(*a)

    def values(self):
        self._check()
        return super().values()

    def __getitem__(self, key):
        self._check()
        return super().__getitem__(key)


def fixture(armed):
    """Query i: the relevant doc r{i} is 3rd in list a and 1st in list b, x{i} 1st and 2nd: RRF puts
    x first (1/61 + 1/62 > 1/63 + 1/61), a fusion leaning on list b puts r first."""
    a = {f"q{i}": [ScoredDoc(f"x{i}", 0.9, 1), ScoredDoc(f"y{i}", 0.5, 2), ScoredDoc(f"r{i}", 0.1, 3)] for i in range(N)}
    b = {f"q{i}": [ScoredDoc(f"r{i}", 9.0, 1), ScoredDoc(f"x{i}", 8.0, 2), ScoredDoc(f"z{i}", 1.0, 3)] for i in range(N)}
    nodes = {"a": Lists("a", a), "b": Lists("b", b)}
    queries = {f"q{i}": f"text {i}" for i in range(N)}
    types = {f"q{i}": "keyword" if i % 3 else "natural" for i in range(N)}
    split = split_queries(list(queries), types, seed=1)
    held = set(split.heldout)
    grades = {q: (Trap({f"r{q[1:]}": 1}, armed) if q in held else {f"r{q[1:]}": 1}) for q in queries}

    def make(params, batch):
        p = {"method": "rrf", "weight": None, "norm": "minmax", "fusion_depth": 3, "rrf_k": 60, **params}
        weights = (p["weight"],) if p["weight"] is not None and p["method"] != "rrf" else None
        return HybridNode(("a", "b"), name="h", fusion=Fusion(p["method"], p["norm"], weights, p["rrf_k"],
                                                              p["fusion_depth"])), None

    start = {"method": "rrf", "norm": "minmax", "weight": None, "fusion_depth": 3, "rrf_k": 60}
    target = Target("h", "hybrid", queries, nodes, ["a", "b"], 3, 3, make, start)
    return target, Grades(grades), split, nodes


def test_the_split_is_seeded_stratified_and_disjoint():
    _, _, split, _ = fixture([False])
    again = fixture([False])[2]
    assert split == again and split.method == "holdout"
    assert not set(split.tuning) & set(split.heldout) and len(split.tuning) + len(split.heldout) == N
    natural = [q for q in split.heldout if int(q[1:]) % 3 == 0]
    assert len(natural) == round(20 * 0.3) and len(split.heldout) == 6 + round(40 * 0.3)


def test_a_study_on_the_tuning_queries_never_reads_a_held_out_grade():
    armed = [True]
    target, grades, split, _ = fixture(armed)
    (tuning, heldout), = split.folds
    space = default_space("hybrid", "h")
    records = optimise(target, grades.only(tuning), tuning, space, parse_metric("ndcg@3"), 3, 1,
                       fold=0, trials=12, time_budget_s=None, seed=0)
    assert len(records) == 12 and grades.reads_of(heldout) == 0
    with pytest.raises(HeldOutRead):
        grades.only(tuning).of(heldout[0])


def test_tune_reads_held_out_grades_only_after_its_last_trial_and_reports_zero():
    armed = [True]
    target, grades, split, nodes = fixture(armed)
    trials = 15

    def disarm_after_the_last(record):
        if record.number == trials - 1:
            armed[0] = False

    report = tune(target, grades, split, default_space("hybrid", "h"), parse_metric("ndcg@3"), k=3,
                  threshold=1, trials=trials, seed=0, on_trial=disarm_after_the_last)
    assert report["heldout_grade_reads"] == 0 and report["trials"] == trials
    assert report["split"]["heldout"] == split.heldout and report["split"]["tuning"] == split.tuning
    h = report["heldout"]
    # RRF puts x (1st in a, 3rd in b) above r; a fusion leaning on list b finds r first on every query.
    assert h["start"]["value"] < h["tuned"]["value"] == pytest.approx(1.0)
    assert h["difference"]["ci_low"] > 0 and h["difference"]["p"] < 0.05 and report["recommendation"] == "tuned"
    # The inputs were answered once per query, not once per trial.
    assert nodes["a"].answered == nodes["b"].answered == N


def test_a_gain_that_is_not_significant_keeps_the_start():
    target, grades, split, _ = fixture([False])
    # Only RRF with other constants: every trial ranks as the start does, on every query.
    from searchgrade.engine.tuning.space import parse_space

    space = parse_space({"rrf_k": [50, 70]}, "hybrid", "h")
    report = tune(target, grades, split, space, parse_metric("ndcg@3"), k=3, threshold=1, trials=4, seed=0)
    assert report["heldout"]["difference"]["value"] == 0 and report["recommendation"] == "start"
    assert "not significant; the starting configuration stays the recommendation" in report["heldout"]["verdict"]


def test_few_queries_are_cross_validated_each_held_out_once():
    split = split_queries([f"q{i}" for i in range(12)], seed=0)
    assert split.method == "k-fold" and len(split.folds) == 5
    assert sorted(q for _, held in split.folds for q in held) == sorted(f"q{i}" for i in range(12))
    for tuning, held in split.folds:
        assert not set(tuning) & set(held)
