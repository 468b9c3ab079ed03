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


def _interval(point: float, resampled: np.ndarray, confidence: float) -> Estimate:
    if point is None or not np.isfinite(point):
        return Estimate(None, None, None)
    finite = resampled[np.isfinite(resampled)]
    if len(finite) == 0:
        return Estimate(float(point), None, None)
    tail = 100 * (1 - confidence) / 2
    low, high = np.percentile(finite, [tail, 100 - tail])
    return Estimate(float(point), float(low), float(high))


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
    index = {g: i for i, g in enumerate(labels)}
    size = len(labels)
    queries: dict[Hashable, int] = {}
    per_query: list[np.ndarray] = []
    for query, judge, human in pairs:
        if judge not in index or human not in index:
            raise ValueError(f"grade {judge if judge not in index else human!r} is not on the scale {labels}")
        q = queries.setdefault(query, len(queries))
        if q == len(per_query):
            per_query.append(np.zeros((size, size)))
        per_query[q][index[judge], index[human]] += 1
    if not per_query:
        empty = Estimate(None, None, None)
        return JudgeVsHuman(0, 0, labels, [[0] * size for _ in labels], empty, empty, empty, empty,
                            [[empty] * size for _ in labels])
    by_query = np.stack(per_query)  # (Q, K, K)
    total = by_query.sum(axis=0)
    rng = np.random.default_rng(seed)
    n_q = len(by_query)
    weights_q = rng.multinomial(n_q, np.full(n_q, 1.0 / n_q), size=n_resamples)
    resampled = np.einsum("bq,qij->bij", weights_q, by_query)  # (B, K, K)
    values = np.asarray(labels, dtype=float)
    distance = np.abs(values[:, None] - values[None, :])
    span = values.max() - values.min() if size > 1 else 1.0
    linear, quadratic = distance / span, (distance / span) ** 2
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
    column_share = [[_interval(shares[i, j], resampled_shares[:, i, j], confidence) for j in range(size)]
                    for i in range(size)]
    return JudgeVsHuman(
        n_pairs=int(total.sum()), n_queries=n_q, labels=labels,
        confusion=total.astype(int).tolist(),
        kappa_linear=_interval(*both(lambda c: weighted_kappas(c, linear)), confidence),
        kappa_quadratic=_interval(*both(lambda c: weighted_kappas(c, quadratic)), confidence),
        exact=_interval(*both(exact), confidence),
        bias=_interval(*both(bias), confidence),
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
    index = {g: i for i, g in enumerate(labels)}
    size = len(labels)
    queries: dict[Hashable, int] = {}
    per_query: list[np.ndarray] = []
    for query, first, second, people in graded:
        for g in (first, second, people):
            if g not in index:
                raise ValueError(f"grade {g!r} is not on the scale {labels}")
        q = queries.setdefault(query, len(queries))
        if q == len(per_query):
            per_query.append(np.zeros((2, size, size)))
        per_query[q][0, index[first], index[people]] += 1
        per_query[q][1, index[second], index[people]] += 1
    if not per_query:
        empty = Estimate(None, None, None)
        return empty, empty, empty
    by_query = np.stack(per_query)  # (Q, 2, K, K)
    n_q = len(by_query)
    weights = np.random.default_rng(seed).multinomial(n_q, np.full(n_q, 1.0 / n_q), size=n_resamples)
    resampled = np.einsum("bq,qjik->bjik", weights, by_query)  # (B, 2, K, K)
    values = np.asarray(labels, dtype=float)
    span = values.max() - values.min() if size > 1 else 1.0
    linear = np.abs(values[:, None] - values[None, :]) / span
    point = weighted_kappas(by_query.sum(axis=0), linear)  # (2,)
    kappas = weighted_kappas(resampled, linear)  # (B, 2)
    return (_interval(point[0], kappas[:, 0], confidence), _interval(point[1], kappas[:, 1], confidence),
            _interval(point[0] - point[1], kappas[:, 0] - kappas[:, 1], confidence))
