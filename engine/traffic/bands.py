"""Head, torso and tail: a log's queries banded by cumulative share of traffic.

Pure numpy. The queries are ordered by searches, most first; a query's band is decided by the
share of all searches that the queries before it carry: below ``head_share`` it is head, below
``torso_share`` torso, else tail. With the defaults (0.5, 0.8) the head is the few queries that
make the first half of the traffic, the tail the many that make its last fifth. The most
searched query is always head.
"""

from __future__ import annotations

import numpy as np

BANDS = ("head", "torso", "tail")
HEAD_SHARE = 0.5
TORSO_SHARE = 0.8


def check_shares(head_share: float, torso_share: float) -> None:
    """Raises ValueError unless 0 < head_share < torso_share < 1."""
    if not 0 < head_share < torso_share < 1:
        raise ValueError(f"head share {head_share} and torso share {torso_share} must satisfy "
                         "0 < head < torso < 1 (e.g. 0.5 and 0.8: the head is the first half of the traffic)")


def bands(counts: np.ndarray, head_share: float = HEAD_SHARE, torso_share: float = TORSO_SHARE) -> np.ndarray:
    """Each query's band index (0 head, 1 torso, 2 tail), for counts sorted most searched first.

    Raises:
        ValueError: counts not sorted in decreasing order, negative, or bad shares.
    """
    check_shares(head_share, torso_share)
    c = np.asarray(counts, dtype=float)
    if c.size and ((c < 0).any() or (np.diff(c) > 0).any()):
        raise ValueError("counts must be non-negative and sorted most searched first")
    total = c.sum()
    if total == 0:
        return np.zeros(c.size, dtype=int)
    before = (np.cumsum(c) - c) / total
    return np.where(before < head_share, 0, np.where(before < torso_share, 1, 2))
