"""Grades from clicks: a click model's estimate per (query, document) pair, the pairs looked at
often enough to judge, and the grade 0-3 from cut-points derived from the log.

1. **Position bias** (``pbm``): from the log's interventions where it has them, else the stated
   default 1/p (engine/clicks/position_bias.py). The attractiveness of every pair is then fitted
   with that examination curve held fixed.
2. **Examinations.** A pair is judged when it was examined ``min_examinations`` times or more:
   its impressions each weighted by the examination of the position it was shown at (``pbm``),
   or its impressions (``ctr``, ``coec``, which model no examination). A result shown only where
   nobody looks is unjudged, not graded by the prior.
3. **Cut-points** from the judged pairs' estimates (engine/clicks/thresholds.py): results clicked
   at the base rate are 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from searchgrade.engine.clicks.models import CLICK_MODELS, ClickCounts, fit_pbm
from searchgrade.engine.clicks.position_bias import PositionBias, position_bias
from searchgrade.engine.clicks.thresholds import Thresholds, derive_thresholds, grade

#: Pairs examined fewer times than this stay unjudged.
MIN_EXAMINATIONS = 10


@dataclass(frozen=True)
class ClickGrades:
    """Per pair: the estimate (rank-1 click probability), its examinations, whether it is judged and
    its grade; with the cut-points and (``pbm``) the position bias they were made with."""

    model: str
    estimate: np.ndarray
    examinations: np.ndarray
    judged: np.ndarray
    grades: np.ndarray
    thresholds: Thresholds
    position_bias: PositionBias | None
    min_examinations: int

    def summary(self) -> dict[str, object]:
        """What a run stores about its click grades (``stats["clicks"]``)."""
        return {"model": self.model, "min_examinations": self.min_examinations,
                "thresholds": self.thresholds.to_json(),
                "position_bias": self.position_bias.to_json() if self.position_bias else None}


def click_grades(counts: ClickCounts, model: str, *, min_examinations: int = MIN_EXAMINATIONS,
                 cutpoints: Sequence[float] | None = None) -> ClickGrades:
    """Every pair's estimate, examinations, judged flag and grade (see the module). ``cutpoints``
    given: those instead of the ones derived from the data.

    Raises:
        ValueError: an unknown model, a minimum below 1, or cut-points not increasing within (0, 1].
    """
    if model not in CLICK_MODELS:
        raise ValueError(f"click model {model!r} is not one of {', '.join(CLICK_MODELS)}")
    if min_examinations < 1:
        raise ValueError(f"min_examinations of {min_examinations} must be at least 1")
    bias = None
    if model == "pbm":
        bias = position_bias(counts)
        estimate, theta = fit_pbm(counts, theta=bias.theta)
        examinations = counts.per_pair(counts.impressions * theta[counts.position])
    else:
        estimate = CLICK_MODELS[model](counts)
        examinations = counts.per_pair(counts.impressions)
    judged = examinations >= min_examinations
    if cutpoints is None:
        thresholds = derive_thresholds(estimate[judged])
    else:
        cuts = np.asarray(cutpoints, dtype=float)
        if cuts.size != 3 or (np.diff(cuts) <= 0).any() or cuts[0] <= 0 or cuts[-1] > 1:
            raise ValueError(f"cut-points {tuple(cutpoints)} must be three increasing probabilities in (0, 1]")
        thresholds = Thresholds(tuple(float(c) for c in cuts), "given", None, None, None, int(judged.sum()),
                                "the cut-points given")  # type: ignore[arg-type]
    return ClickGrades(model, estimate, examinations, judged, grade(estimate, thresholds.cutpoints), thresholds,
                       bias, min_examinations)
