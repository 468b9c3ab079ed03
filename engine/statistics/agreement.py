"""Agreement between the LLM judge and human judgments on the pairs both graded.

Cohen's kappa, with labels l_1 < ... < l_K, observed joint proportions p_ij and marginals
p_i., p_.j:

    kappa_w = 1 - sum_ij w_ij p_ij / sum_ij w_ij p_i. p_.j

with disagreement weights w_ij = 0 on the diagonal and 1 elsewhere (unweighted),
|i - j| / (K - 1) (linear) or (i - j)^2 / (K - 1)^2 (quadratic), i and j being label positions.
Linear weights suit an ordinal 0-3 scale (2 vs 3 is a smaller disagreement than 0 vs 3);
quadratic is reported too, as it is common in the literature. Matches
``sklearn.metrics.cohen_kappa_score(a, b, weights=...)``.

Edge cases: no pairs -> None; expected disagreement 0 (both raters used one and the same label
throughout) -> None, kappa is undefined there (sklearn gives NaN).

With binary human labels (0/1) and a 0-3 judge, compare on a common scale: ``binarize`` both with
their own relevance thresholds (judge >= 2, human >= 1) and read ``kappa``.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

WEIGHTINGS = ("unweighted", "linear", "quadratic")


def confusion_matrix(a: Sequence[int], b: Sequence[int], labels: Sequence[int]) -> list[list[int]]:
    """counts[i][j] = number of items rated labels[i] by a and labels[j] by b.

    Raises:
        ValueError: Lengths differ, or a rating is not in labels.
    """
    if len(a) != len(b):
        raise ValueError(f"ratings differ in length: {len(a)} and {len(b)}; pass the same pairs")
    index = {label: i for i, label in enumerate(labels)}
    counts = [[0] * len(labels) for _ in labels]
    for x, y in zip(a, b, strict=True):
        if x not in index or y not in index:
            raise ValueError(f"rating {x if x not in index else y!r} is not in labels {list(labels)}")
        counts[index[x]][index[y]] += 1
    return counts


def cohen_kappa(
    a: Sequence[int], b: Sequence[int], weights: str = "unweighted", labels: Sequence[int] | None = None
) -> float | None:
    """Cohen's kappa between two raters (see the module docstring for formula and edge cases).

    Args:
        a, b: Ratings of the same items, in the same order.
        weights: "unweighted", "linear" or "quadratic".
        labels: The ordered label set; default: sorted union of both ratings.
    """
    if weights not in WEIGHTINGS:
        raise ValueError(f"weights {weights!r} is not one of {WEIGHTINGS}")
    if not a and not b:
        return None
    labels = sorted(set(a) | set(b)) if labels is None else list(labels)
    counts = confusion_matrix(a, b, labels)
    k = len(labels)
    n = len(a)
    rows = [sum(r) / n for r in counts]
    cols = [sum(counts[i][j] for i in range(k)) / n for j in range(k)]

    def weight(i: int, j: int) -> float:
        if i == j:
            return 0.0
        if weights == "unweighted":
            return 1.0
        span = k - 1
        if weights == "linear":
            return abs(i - j) / span
        return (i - j) ** 2 / span**2

    observed = sum(weight(i, j) * counts[i][j] / n for i in range(k) for j in range(k))
    expected = sum(weight(i, j) * rows[i] * cols[j] for i in range(k) for j in range(k))
    if expected == 0:
        return None
    return 1.0 - observed / expected


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


def _kappas(confusions: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted kappa of confusion matrices (..., K, K); NaN where the expected disagreement is 0."""
    n = confusions.sum(axis=(-2, -1), keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = confusions / n
        rows, cols = p.sum(axis=-1), p.sum(axis=-2)
        observed = (weights * p).sum(axis=(-2, -1))
        expected = (weights * rows[..., :, None] * cols[..., None, :]).sum(axis=(-2, -1))
        return np.where(expected > 0, 1.0 - observed / expected, np.nan)


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

    def both(fn):
        return fn(total[None])[0], fn(resampled)

    def exact(c):
        return np.trace(c, axis1=-2, axis2=-1) / c.sum(axis=(-2, -1))

    def bias(c):
        return (c * diff).sum(axis=(-2, -1)) / c.sum(axis=(-2, -1))

    with np.errstate(invalid="ignore", divide="ignore"):
        shares = total / total.sum(axis=0, keepdims=True)
        resampled_shares = resampled / resampled.sum(axis=1, keepdims=True)
    column_share = [[_interval(shares[i, j], resampled_shares[:, i, j], confidence) for j in range(size)]
                    for i in range(size)]
    return JudgeVsHuman(
        n_pairs=int(total.sum()), n_queries=n_q, labels=labels,
        confusion=total.astype(int).tolist(),
        kappa_linear=_interval(*both(lambda c: _kappas(c, linear)), confidence),
        kappa_quadratic=_interval(*both(lambda c: _kappas(c, quadratic)), confidence),
        exact=_interval(*both(exact), confidence),
        bias=_interval(*both(bias), confidence),
        column_share=column_share,
    )
