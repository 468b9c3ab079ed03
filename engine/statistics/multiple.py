"""Multiple comparisons: p-values adjusted over the family of tests read together."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def holm(p_values: Sequence[float]) -> list[float]:
    """Holm-Bonferroni adjusted p-values, in the order given.

    Sorted ascending p_(1) <= ... <= p_(m), the adjusted value of p_(i) is
    max over j <= i of min(1, (m - j + 1) * p_(j)); rejecting where the adjusted p < alpha keeps
    the family-wise error rate at alpha. Edge cases: no p-values -> []; one -> itself.

    Raises:
        ValueError: a p-value outside [0, 1] or NaN.
    """
    p = np.asarray(p_values, dtype=float)
    if p.size and (not np.isfinite(p).all() or (p < 0).any() or (p > 1).any()):
        raise ValueError(f"p-values must lie in [0, 1]; got {list(p_values)}")
    m = len(p)
    order = np.argsort(p, kind="stable")
    adjusted = np.minimum(1.0, (m - np.arange(m)) * p[order])
    adjusted = np.maximum.accumulate(adjusted) if m else adjusted
    out = np.empty(m)
    out[order] = adjusted
    return [float(x) for x in out]
