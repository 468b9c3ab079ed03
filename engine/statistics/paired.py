"""The one statistical procedure: paired differences between two systems over the same queries,
each with an interval adjusted for the comparisons read together, whose verdict is the interval's.

Results, Compare, the gate, the CLI (and suites' alerts and the tuner's report) all call this.

**What it computes.** For a comparison of a and b over the same n queries, d_i = a_i - b_i and
the difference is mean(d). R bootstrap resamples of the queries (drawn with replacement, seeded;
one draw shared by every comparison over the same number of queries) give R resampled means
B_1..B_R. For a family of m comparisons read together, at family level ``alpha`` (0.05):

- the interval is the paired percentile bootstrap interval at level 1 - alpha/m (Bonferroni):
  the order statistics B_(l) and B_(R+1-l), l ~ R * alpha/(2m) (exactly: see ``tail_count``);
- the p-value comes from the same resamples and the same adjustment:
  p = min(1, m * 2 * (c + 1) / (R + 1)), c = min(#{B_r <= 0}, #{B_r >= 0}): twice the share of
  resampled means on the far side of 0, Bonferroni-adjusted;
- "significant" means the interval excludes 0, and l is chosen so that this holds exactly when
  p < alpha: the interval and the p-value can never disagree (not even at a tie or a boundary).

A comparison over fewer than ``min_queries(m, alpha)`` queries has no verdict: no paired test of n
queries can reach level alpha/m when even the most extreme of the 2**n sign patterns of the
differences has probability 2**(1-n) >= alpha/m (one query, or five all improved). Its interval
is NaN (none can be estimated) and its p-value 1.0. Edge cases: all differences 0 -> interval
[0, 0], p = 1; all differences equal to d != 0 (zero variance, enough queries) -> [d, d],
significant. Resampled means within 1e-9 (relative) of 0 count as 0, so float noise never decides
a tie.

**How to call it for m comparisons.** Pass the family at once; m defaults to the number of pairs::

    diffs = paired_differences([(a1, b1), (a2, b2), (a3, b3)])    # m = 3
    diffs[0].significant, diffs[0].ci_low, diffs[0].p_value        # 1 - 0.05/3 interval

or say how many comparisons the page makes when the pairs passed are not the family (the same
comparison listed twice, a family split over calls): ``paired_differences(pairs, m=8)``.
``paired_difference(a, b, m=...)`` treats one pair. The words to say beside a figure are
``interval_words``: "95% CI +0.049 to +0.454, adjusted for 8 comparisons".

**Two runs** are compared through engine/statistics/pairing.py, which pairs their queries by one
rule, in one order, with one resample policy, and reads a drop or a gain (a significant change
larger than a margin) from this interval: the gate, suites, Compare and MCP all do.

Pure numpy, vectorised (one resample draw and one matrix product per number of queries), seeded:
the same inputs and seed give the same numbers.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from searchgrade.engine.statistics.resampling import as_values, by_length, one_blas_thread, resampled_means

#: The family-wise level: a page's comparisons together are wrong at most this often.
ALPHA = 0.05
#: Resamples when the caller does not say (raised when a family needs more: ``resamples_for``).
N_RESAMPLES = 10_000
#: The fewest resampled means beyond each end of the interval: the resamples are raised for a
#: large family so that its interval's ends are never the most extreme resamples.
MIN_TAIL = 20
#: Resampled means within this (times max(1, max |d|)) of 0 are 0: float noise never decides a tie.
TIE_TOLERANCE = 1e-9


class PairedDifference(NamedTuple):
    """mean(a - b) over the same queries, with its interval adjusted for m comparisons."""

    #: mean(a - b)
    diff: float
    #: The paired bootstrap interval at level 1 - alpha/m (NaN: too few queries for any).
    ci_low: float
    ci_high: float
    #: Two-sided, Bonferroni-adjusted, from the same resamples: < alpha exactly when significant.
    p_value: float
    #: Queries compared.
    n: int
    #: Comparisons in the family the interval is adjusted for.
    m: int
    #: The family-wise level (0.05).
    alpha: float = ALPHA

    @property
    def significant(self) -> bool:
        """The interval excludes 0 (equivalently, p_value < alpha). False when NaN."""
        return bool(self.ci_low > 0 or self.ci_high < 0)

    @property
    def confidence(self) -> float:
        """The interval's level: 1 - alpha/m (0.95 for one comparison)."""
        return 1 - self.alpha / self.m

    @property
    def estimable(self) -> bool:
        """Enough queries for a verdict (n >= min_queries(m, alpha)); else the interval is NaN."""
        return not math.isnan(self.ci_low)


def min_queries(m: int = 1, alpha: float = ALPHA) -> int:
    """The fewest queries a comparison in a family of m needs for a verdict: the smallest n with
    2**(1-n) < alpha/m (6 for one comparison at 0.05, 9 for eight)."""
    _check_family(m, alpha)
    n = 1
    while 2.0 ** (1 - n) >= alpha / m:
        n += 1
    return n


def resamples_for(m: int, alpha: float = ALPHA, n_resamples: int = N_RESAMPLES) -> int:
    """The resamples a family of m uses: ``n_resamples``, or more when the interval's ends at
    level 1 - alpha/m would have fewer than MIN_TAIL resampled means beyond them."""
    _check_family(m, alpha)
    if n_resamples < 1:
        raise ValueError(f"n_resamples of {n_resamples} is not positive: use e.g. {N_RESAMPLES:_}")
    return max(n_resamples, math.ceil(2 * m * MIN_TAIL / alpha))


def adjusted_p(count: int | np.ndarray, m: int, n_resamples: int) -> float | np.ndarray:
    """p = min(1, m * 2 * (count + 1) / (n_resamples + 1)): the adjusted p-value of a comparison
    with ``count`` resampled means on the far side. Non-decreasing in count (the interval's ends
    are chosen from this very function: ``tail_count``)."""
    return np.minimum(1.0, m * 2.0 * (np.asarray(count) + 1) / (n_resamples + 1))


def tail_count(m: int, alpha: float, n_resamples: int) -> int:
    """The largest count of far-side resampled means whose adjusted p is below alpha (J).

    The interval is [B_(J+1), B_(R-J)]: it excludes 0 from below exactly when #{B <= 0} <= J,
    from above exactly when #{B >= 0} <= J, which is exactly when adjusted_p(c) < alpha.
    """
    counts = np.arange(n_resamples)
    below = np.flatnonzero(adjusted_p(counts, m, n_resamples) < alpha)
    if not below.size:
        raise ValueError(f"{n_resamples} resamples cannot give an interval at level 1 - {alpha}/{m}: "
                         f"use at least {resamples_for(m, alpha, 1)} (resamples_for)")
    return int(below[-1])


def paired_difference(a: Sequence[float], b: Sequence[float], *, m: int = 1, alpha: float = ALPHA,
                      n_resamples: int = N_RESAMPLES, seed: int = 0) -> PairedDifference:
    """One comparison of a family of m (see the module): ``paired_differences([(a, b)], m=m)[0]``."""
    return paired_differences([(a, b)], m=m, alpha=alpha, n_resamples=n_resamples, seed=seed)[0]


def paired_differences(pairs: Sequence[tuple[Sequence[float], Sequence[float]]], *, m: int | None = None,
                       alpha: float = ALPHA, n_resamples: int = N_RESAMPLES,
                       seed: int = 0) -> list[PairedDifference]:
    """Each (a, b) pair's mean difference with its interval and p-value, adjusted for m
    comparisons (default: one per pair); see the module for the procedure.

    a and b hold one value per query, over the same queries in the same order. All pairs of the
    same length are resampled with one draw. ``n_resamples`` is raised when the family needs more
    (``resamples_for``).

    Raises:
        ValueError: a pair's lengths differ or are zero, NaN or infinite values, m < 1 (or not an
            integer), alpha outside (0, 1), or n_resamples < 1.
    """
    diffs = _differences(pairs)
    m = len(diffs) if m is None else m
    if not diffs:
        return []
    return _compare(diffs, m, alpha, n_resamples, seed)


def interval_words(d: PairedDifference, decimals: int = 3) -> str:
    """The interval as the pages say it: "95% CI +0.049 to +0.454, adjusted for 8 comparisons";
    "no 95% CI from 3 queries: a verdict over 8 comparisons needs at least 9". (The level named
    is the family's, 1 - alpha: "95%" at the default alpha.)"""
    level = f"{100 * (1 - d.alpha):g}% CI"
    adjusted = f", adjusted for {d.m} comparisons" if d.m > 1 else ""
    if not d.estimable:
        over = f" over {d.m} comparisons" if d.m > 1 else ""
        return (f"no {level} from {d.n} quer{'y' if d.n == 1 else 'ies'}: a verdict{over} needs at "
                f"least {min_queries(d.m, d.alpha)}")
    return f"{level} {d.ci_low:+.{decimals}f} to {d.ci_high:+.{decimals}f}{adjusted}"


def p_words(p_value: float, name: str = "p") -> str:
    """ "p < 0.001", "p = 0.042"."""
    return f"{name} < 0.001" if p_value < 0.001 else f"{name} = {p_value:.3f}"


def _check_family(m: int, alpha: float) -> None:
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
        raise ValueError(f"m of {m!r} is not a positive whole number of comparisons: use e.g. 3")
    if not 0 < alpha < 1:
        raise ValueError(f"alpha of {alpha} is not in (0, 1): use e.g. 0.05")


def _differences(pairs: Sequence[tuple[Sequence[float], Sequence[float]]]) -> list[np.ndarray]:
    out = []
    for i, (a, b) in enumerate(pairs):
        a_values, b_values = as_values(a, f"pair {i}: a"), as_values(b, f"pair {i}: b")
        if len(a_values) != len(b_values):
            raise ValueError(f"pair {i}: a has {len(a_values)} values and b has {len(b_values)}: a paired "
                             "comparison needs one value per query from each, over the same queries in "
                             "the same order")
        if len(a_values) == 0:
            raise ValueError(f"pair {i}: a and b are empty: a paired comparison needs at least one query")
        out.append(a_values - b_values)
    return out


def _compare(diffs: list[np.ndarray], m: int, alpha: float, n_resamples: int, seed: int) -> list[PairedDifference]:
    """Each difference's PairedDifference (see the module)."""
    r = resamples_for(m, alpha, n_resamples)
    j = tail_count(m, alpha, r)
    fewest = min_queries(m, alpha)
    out: list[PairedDifference | None] = [None] * len(diffs)
    with one_blas_thread():
        for n, indices in by_length(diffs).items():
            matrix = np.stack([diffs[i] for i in indices])
            centre = matrix.mean(axis=1)
            if n < fewest:
                for i, mean in zip(indices, centre, strict=True):
                    out[i] = PairedDifference(float(mean), math.nan, math.nan, 1.0, n, m, alpha)
                continue
            means = resampled_means(matrix, r, np.random.default_rng(seed))
            constant = (matrix == matrix[:, :1]).all(axis=1)
            # Every resample of a constant column is that constant: no rounding noise around it.
            means[:, constant] = matrix[constant, 0]
            tolerance = TIE_TOLERANCE * np.maximum(1.0, np.abs(matrix).max(axis=1))
            means[np.abs(means) <= tolerance] = 0.0
            ends = np.partition(means, [j, r - 1 - j], axis=0)
            low, high = ends[j], ends[r - 1 - j]
            far = np.minimum((means <= 0).sum(axis=0), (means >= 0).sum(axis=0))
            p_values = adjusted_p(far, m, r)
            for col, i in enumerate(indices):
                out[i] = PairedDifference(float(centre[col]), float(low[col]), float(high[col]),
                                          float(p_values[col]), n, m, alpha)
    return out  # type: ignore[return-value]
