"""How far the LLM judge agrees with people, on the pairs both graded.

``judge_human_agreement``: Cohen's kappa (unweighted, linear, quadratic: engine/statistics/kappa.py),
exact agreement and the confusion matrix, stored with a run. With binary human labels (0/1) and a
0-3 judge, compare on a common scale: ``binarize`` both with their own relevance thresholds
(judge >= 2, human >= 1) and read ``kappa_binary``.

``judge_vs_human``: the same with confidence intervals, bias and per-grade shares, for the Trust
page: a cluster bootstrap over queries. ``kappa_difference``: two judges' weighted kappa on the
same pairs and their paired difference (a calibrated prompt against the plain one).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from searchgrade.engine.statistics.kappa import cohen_kappa, confusion_matrix, weighted_kappas


def binarize(grades: Sequence[int], threshold: int) -> list[int]:
    """1 where grade >= threshold, else 0."""
    return [1 if g >= threshold else 0 for g in grades]


@dataclass(frozen=True)
class Agreement:
    """Judge vs human on their shared pairs (judge failures excluded)."""

    n: int
    labels: list[int]
    #: confusion[i][j]: pairs the judge graded labels[i] and humans labels[j].
    confusion: list[list[int]]
    exact: float | None
    kappa: float | None
    kappa_linear: float | None
    kappa_quadratic: float | None
    #: Kappa on relevant / not relevant (judge >= judge_threshold, human >= human_threshold).
    kappa_binary: float | None


def judge_human_agreement(
    judge: Mapping[tuple[Hashable, Hashable], int | None],
    human: Mapping[tuple[Hashable, Hashable], int],
    *,
    judge_threshold: int = 2,
    human_threshold: int = 1,
) -> Agreement:
    """Agreement on the (query_id, doc_id) pairs graded by both; judge grades None are skipped."""
    shared = sorted((k for k in judge if judge[k] is not None and k in human), key=str)
    a = [int(judge[k]) for k in shared]  # type: ignore[arg-type]
    b = [int(human[k]) for k in shared]
    labels = sorted(set(a) | set(b))
    return Agreement(
        n=len(shared),
        labels=labels,
        confusion=confusion_matrix(a, b, labels),
        exact=(sum(x == y for x, y in zip(a, b, strict=True)) / len(a)) if a else None,
        kappa=cohen_kappa(a, b, "unweighted", labels),
        kappa_linear=cohen_kappa(a, b, "linear", labels),
        kappa_quadratic=cohen_kappa(a, b, "quadratic", labels),
        kappa_binary=cohen_kappa(binarize(a, judge_threshold), binarize(b, human_threshold),
                                 "unweighted", [0, 1]) if a else None,
    )


# ---------------------------------------------------------------- with confidence intervals

#: The judge's scale.
JUDGE_LABELS = (0, 1, 2, 3)


class Estimate(NamedTuple):
    """A statistic and its bootstrap confidence interval (None where undefined)."""

    value: float | None
    low: float | None
    high: float | None


@dataclass(frozen=True)
class JudgeVsHuman:
    """The judge against people's grades on the pairs both graded, with 95% bootstrap CIs.

    The CIs resample queries, not pairs: the pairs of one query share its difficulty, so
    treating them as independent would make the intervals too narrow.
    """

    n_pairs: int
    n_queries: int
    labels: list[int]
    #: confusion[i][j]: pairs the judge graded labels[i] and people labels[j].
    confusion: list[list[int]]
    kappa_linear: Estimate
    kappa_quadratic: Estimate
    exact: Estimate
    #: mean(judge - human): above 0, the judge grades higher than people.
    bias: Estimate
    #: share[i][j]: of the pairs people graded labels[j], the share the judge graded labels[i].
    column_share: list[list[Estimate]]


def percentile_estimate(point: float | None, resampled: np.ndarray, confidence: float = 0.95) -> Estimate:
    """``point`` with the percentile interval of its finite resampled values; Estimate(None, ...)
    when the point is undefined (None, NaN), no interval when no resample is finite."""
    if point is None or not np.isfinite(point):
        return Estimate(None, None, None)
    finite = resampled[np.isfinite(resampled)]
    if len(finite) == 0:
        return Estimate(float(point), None, None)
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(finite, [tail, 100 - tail])
    return Estimate(float(point), float(low), float(high))



class PerQuery:
    """Counts kept per query on a grade scale, for a cluster bootstrap over queries (a query's
    pairs share its difficulty: resampling pairs would make the intervals too narrow)."""

    def __init__(self, labels: Sequence[int], shape: tuple[int, ...]) -> None:
        self.labels = list(labels)
        self._index = {g: i for i, g in enumerate(self.labels)}
        self._shape = shape
        self._queries: dict[Hashable, int] = {}
        self._counts: list[np.ndarray] = []

    def at(self, grade: int) -> int:
        """A grade's position on the scale.

        Raises:
            ValueError: a grade outside the scale.
        """
        if grade not in self._index:
            raise ValueError(f"grade {grade!r} is not on the scale {self.labels}")
        return self._index[grade]

    def of(self, query: Hashable) -> np.ndarray:
        """The query's counts (zeros the first time), to add to."""
        q = self._queries.setdefault(query, len(self._queries))
        if q == len(self._counts):
            self._counts.append(np.zeros(self._shape))
        return self._counts[q]

    def __len__(self) -> int:
        return len(self._counts)

    def resampled(self, n_resamples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
        """The counts over every query, and over each of ``n_resamples`` resamples of the queries
        (drawn with replacement, seeded): shapes ``shape`` and (n_resamples, *shape)."""
        by_query = np.stack(self._counts)
        n_q = len(by_query)
        weights = np.random.default_rng(seed).multinomial(n_q, np.full(n_q, 1.0 / n_q), size=n_resamples)
        return by_query.sum(axis=0), np.tensordot(weights, by_query, axes=(1, 0))


def linear_weights(labels: Sequence[int]) -> np.ndarray:
    """Linear disagreement weights by grade distance on the scale: |i - j| / (max - min)."""
    values = np.asarray(labels, dtype=float)
    span = values.max() - values.min() if len(values) > 1 else 1.0
    return np.abs(values[:, None] - values[None, :]) / span


def judge_vs_human(
    pairs: Sequence[tuple[Hashable, int, int]],
    labels: Sequence[int] = JUDGE_LABELS,
    *,
    n_resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> JudgeVsHuman:
    """Judge-vs-human agreement with CIs from a cluster bootstrap over queries.

    Args:
        pairs: (query key, judge grade, human grade) per pair both graded.
        labels: The ordered scale; weights use grade distances on it, so 1 vs 3 is twice 1 vs 2
            whichever grades occur (kappa is scale-invariant in the weights otherwise).

    Raises:
        ValueError: a grade outside ``labels``.
    """
    labels = list(labels)
    size = len(labels)
    counts = PerQuery(labels, (size, size))
    for query, judge, human in pairs:
        counts.of(query)[counts.at(judge), counts.at(human)] += 1
    if not len(counts):
        empty = Estimate(None, None, None)
        return JudgeVsHuman(0, 0, labels, [[0] * size for _ in labels], empty, empty, empty, empty,
                            [[empty] * size for _ in labels])
    total, resampled = counts.resampled(n_resamples, seed)  # (K, K), (B, K, K)
    n_q = len(counts)
    linear = linear_weights(labels)
    quadratic = linear**2
    values = np.asarray(labels, dtype=float)
    diff = values[:, None] - values[None, :]  # judge - human per cell

    def both(fn: Callable[[np.ndarray], np.ndarray]) -> tuple[float, np.ndarray]:
        return fn(total[None])[0], fn(resampled)

    def exact(c: np.ndarray) -> np.ndarray:
        return np.trace(c, axis1=-2, axis2=-1) / c.sum(axis=(-2, -1))

    def bias(c: np.ndarray) -> np.ndarray:
        return (c * diff).sum(axis=(-2, -1)) / c.sum(axis=(-2, -1))

    with np.errstate(invalid="ignore", divide="ignore"):
        shares = total / total.sum(axis=0, keepdims=True)
        resampled_shares = resampled / resampled.sum(axis=1, keepdims=True)
    column_share = [[percentile_estimate(shares[i, j], resampled_shares[:, i, j], confidence) for j in range(size)]
                    for i in range(size)]
    return JudgeVsHuman(
        n_pairs=int(total.sum()), n_queries=n_q, labels=labels,
        confusion=total.astype(int).tolist(),
        kappa_linear=percentile_estimate(*both(lambda c: weighted_kappas(c, linear)), confidence),
        kappa_quadratic=percentile_estimate(*both(lambda c: weighted_kappas(c, quadratic)), confidence),
        exact=percentile_estimate(*both(exact), confidence),
        bias=percentile_estimate(*both(bias), confidence),
        column_share=column_share,
    )


def kappa_difference(
    graded: Sequence[tuple[Hashable, int, int, int]],
    labels: Sequence[int] = JUDGE_LABELS,
    *,
    n_resamples: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[Estimate, Estimate, Estimate]:
    """Two judges' linear weighted kappa against people on the same pairs, and first - second,
    each with its interval from one cluster bootstrap over queries (the difference is paired: both
    kappas of a resample come from the same queries).

    Args:
        graded: (query key, first judge's grade, second judge's grade, people's grade) per pair.

    Raises:
        ValueError: a grade outside ``labels``.
    """
    labels = list(labels)
    size = len(labels)
    counts = PerQuery(labels, (2, size, size))
    for query, first, second, people in graded:
        of = counts.of(query)
        of[0, counts.at(first), counts.at(people)] += 1
        of[1, counts.at(second), counts.at(people)] += 1
    if not len(counts):
        empty = Estimate(None, None, None)
        return empty, empty, empty
    total, resampled = counts.resampled(n_resamples, seed)  # (2, K, K), (B, 2, K, K)
    linear = linear_weights(labels)
    point = weighted_kappas(total, linear)  # (2,)
    kappas = weighted_kappas(resampled, linear)  # (B, 2)
    return (percentile_estimate(point[0], kappas[:, 0], confidence), percentile_estimate(point[1], kappas[:, 1], confidence),
            percentile_estimate(point[0] - point[1], kappas[:, 0] - kappas[:, 1], confidence))
