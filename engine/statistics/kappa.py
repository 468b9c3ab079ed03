"""Cohen's kappa between two raters, and their confusion matrix.

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
"""

from __future__ import annotations

from collections.abc import Sequence

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


def weighted_kappas(confusions: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Weighted kappa of confusion matrices (..., K, K) with disagreement weights (K, K); NaN where
    the expected disagreement is 0. Vectorised over the leading axes (bootstrap resamples)."""
    n = confusions.sum(axis=(-2, -1), keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = confusions / n
        rows, cols = p.sum(axis=-1), p.sum(axis=-2)
        observed = (weights * p).sum(axis=(-2, -1))
        expected = (weights * rows[..., :, None] * cols[..., None, :]).sum(axis=(-2, -1))
        return np.where(expected > 0, 1.0 - observed / expected, np.nan)
