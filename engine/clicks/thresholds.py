"""The cut-points that turn a click model's estimate (the rank-1 click probability) into a grade
0-3, derived from the log's own clicks and stated.

Fixed cut-points cannot fit every log: where users click non-relevant results 5% of the time, a
cut at 0.1 grades a good share of them 1 (an estimate from a few dozen looks is noisy, and a
position bias that is a little off inflates it at deep ranks), and every system that repeats the
logged list collects that credit. So the cut-points come from the estimates themselves.

**The rule.** The judged pairs' estimates split into two groups at Otsu's threshold (the split that
maximises the variance between the groups; deterministic, no parameter): the lower group is the
results clicked at about the base rate of results people pass over, the upper group those people
choose. With b the lower group's mean (the base rate), t the split and h the upper group's mean:

- grade 0 below (b + t) / 2: clicked at about the base rate;
- grade 1 from (b + t) / 2 to t: clicked more than the base rate, but on the lower side of the split;
- grade 2 from t to h: in the chosen group (relevant: the run's threshold is 2);
- grade 3 from h: clicked at least as often as the chosen group's mean.

The split is used when there are ``MIN_PAIRS`` judged pairs or more and the chosen group's mean is
at least ``MIN_RATIO`` times the base rate (two groups clearly apart); otherwise the stated default
cut-points ``DEFAULT_CUTPOINTS`` (0.1, 0.25, 0.5) apply, and the reason says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

#: The cut-points used when the log's clicks do not split into two groups (rank-1 click probability
#: at which a pair gets grade 1, 2 and 3).
DEFAULT_CUTPOINTS = (0.1, 0.25, 0.5)
#: Judged pairs needed to derive cut-points from the data.
MIN_PAIRS = 20
#: The chosen group's mean must be at least this many times the base rate.
MIN_RATIO = 2.0


@dataclass(frozen=True)
class Thresholds:
    """The cut-points a run's click grades used, and where they came from."""

    cutpoints: tuple[float, float, float]
    #: "data" (derived from the log's estimates) or "default".
    source: str
    #: The lower group's mean (the base rate), the split, the upper group's mean (None: default).
    base_rate: float | None
    split: float | None
    chosen_rate: float | None
    pairs: int
    reason: str

    def words(self) -> str:
        """The cut-points as `show` and the pages say them."""
        c1, c2, c3 = self.cutpoints
        cuts = f"grade 1 from {c1:.3f}, 2 from {c2:.3f}, 3 from {c3:.3f} (rank-1 click probability)"
        if self.source == "data":
            return (f"{cuts}, derived from {self.pairs:,} judged pairs: results clicked at the base rate "
                    f"{self.base_rate:.3f} are 0, the chosen group (mean {self.chosen_rate:.3f}) starts at "
                    f"{self.split:.3f}")
        if self.source == "given":
            return f"{cuts}: the cut-points given"
        return f"{cuts}: the default cut-points ({self.reason})"

    def to_json(self) -> dict[str, object]:
        return {"cutpoints": list(self.cutpoints), "source": self.source, "base_rate": self.base_rate,
                "split": self.split, "chosen_rate": self.chosen_rate, "pairs": self.pairs, "reason": self.reason}


def otsu_split(values: np.ndarray) -> tuple[float, float, float] | None:
    """(lower mean, split, upper mean) of Otsu's two-group split of ``values``; None when fewer
    than two distinct values. The split lies halfway between the two groups' nearest values."""
    ordered = np.sort(np.asarray(values, dtype=float))
    distinct = np.flatnonzero(np.diff(ordered) > 0)  # a split after index i separates distinct values
    if not distinct.size:
        return None
    n = ordered.size
    cumulative = np.cumsum(ordered)
    left = distinct + 1
    lower = cumulative[distinct] / left
    upper = (cumulative[-1] - cumulative[distinct]) / (n - left)
    between = (left / n) * (1 - left / n) * (upper - lower) ** 2
    best = int(np.argmax(between))
    i = distinct[best]
    return float(lower[best]), float((ordered[i] + ordered[i + 1]) / 2), float(upper[best])


def derive_thresholds(estimates: Sequence[float] | np.ndarray, *, min_pairs: int = MIN_PAIRS,
                      min_ratio: float = MIN_RATIO) -> Thresholds:
    """The cut-points for these judged pairs' estimates (see the module)."""
    values = np.asarray(estimates, dtype=float)
    n = int(values.size)
    if n < min_pairs:
        return Thresholds(DEFAULT_CUTPOINTS, "default", None, None, None, n,
                          f"{n} judged pairs, fewer than the {min_pairs} a split needs")
    found = otsu_split(values)
    if found is None:
        return Thresholds(DEFAULT_CUTPOINTS, "default", None, None, None, n,
                          "every judged pair has the same estimate")
    base, split, chosen = found
    if chosen < min_ratio * max(base, 1e-12):
        return Thresholds(DEFAULT_CUTPOINTS, "default", base, split, chosen, n,
                          f"the clicks do not split into two groups apart: the upper group's mean {chosen:.3f} "
                          f"is less than {min_ratio:g} times the lower group's {base:.3f}")
    return Thresholds(((base + split) / 2, split, chosen), "data", base, split, chosen, n,
                      f"Otsu's split of {n:,} judged pairs")


def grade(estimate: float | np.ndarray, cutpoints: Sequence[float] = DEFAULT_CUTPOINTS) -> np.ndarray:
    """0-3: how many cut-points the rank-1 click probability reaches."""
    return np.searchsorted(np.asarray(cutpoints, dtype=float), estimate, side="right")
