"""Retrieval metrics: pure functions of one query's ranked grades, one metric per module.

Every metric has the signature ``fn(grades, pool, k, threshold) -> float``:

- ``grades``: the grades of the ranked results, rank 1 first; only the first k count. None means
  no grade is known and counts as 0 everywhere except in ``judged``.
- ``pool``: every known grade for the query (its qrels, or every judged document for it across
  strategies): the ideal ranking for NDCG and the relevant count for recall and MAP.
- ``threshold``: a result is relevant when its grade >= threshold.

Beside each metric, ``HIGHER_IS_BETTER`` says which way is better: what "best", "recommended" and
"beats" follow (the share of results not relevant is the one where less is better).

Names follow one syntax, ``name`` or ``name@k`` (``"dcg@10"``, ``"mrr"``), parsed by
:func:`parse_metric`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

from searchgrade.core.checks import check_k
from searchgrade.core.records import SearchGradeError
from searchgrade.engine.metrics.average_precision import average_precision
from searchgrade.engine.metrics.dcg import dcg
from searchgrade.engine.metrics.judged import judged
from searchgrade.engine.metrics.ndcg import ndcg
from searchgrade.engine.metrics.precision import precision
from searchgrade.engine.metrics.recall import recall, recall_single_hit
from searchgrade.engine.metrics.reciprocal_rank import reciprocal_rank
from searchgrade.engine.metrics.relevance import (
    mean_relevance,
    pct_highly_relevant,
    pct_not_relevant,
    pct_relevant,
)

MetricFn = Callable[[Sequence[int | None], Sequence[int], int, int], float]

#: Metric name -> function, in display order (the primary metric, DCG, first).
METRICS: dict[str, MetricFn] = {
    "dcg": dcg,
    "ndcg": ndcg,
    "precision": precision,
    "recall": recall,
    "recall_single_hit": recall_single_hit,
    "mrr": reciprocal_rank,
    "map": average_precision,
    "mean_relevance": mean_relevance,
    "judged": judged,
    "pct_highly_relevant": pct_highly_relevant,
    "pct_relevant": pct_relevant,
    "pct_not_relevant": pct_not_relevant,
}

METRIC_NAMES: tuple[str, ...] = tuple(METRICS)

#: Metric name -> whether a larger value is better; one entry beside each registered metric.
HIGHER_IS_BETTER: dict[str, bool] = {
    "dcg": True,
    "ndcg": True,
    "precision": True,
    "recall": True,
    "recall_single_hit": True,
    "mrr": True,
    "map": True,
    "mean_relevance": True,
    # More judged results make the figures more complete, not the search better, but a larger
    # share is still the one to prefer.
    "judged": True,
    "pct_highly_relevant": True,
    "pct_relevant": True,
    "pct_not_relevant": False,
}
if set(HIGHER_IS_BETTER) != set(METRICS):
    raise RuntimeError("every metric in METRICS needs its direction in HIGHER_IS_BETTER, and only those")
#: Metrics where a smaller value is the better one; every other metric grows with quality.
LOWER_IS_BETTER: frozenset[str] = frozenset(name for name, higher in HIGHER_IS_BETTER.items() if not higher)


def higher_is_better(name: str) -> bool:
    """Whether a larger value of the metric means better search ("pct_not_relevant": no)."""
    return name not in LOWER_IS_BETTER

_SYNTAX = re.compile(r"(?P<name>[a-z_]+)(?:@(?P<k>.*))?")


class MetricSpec(NamedTuple):
    """A parsed metric name: ``ndcg@10`` -> MetricSpec("ndcg", 10).

    k None means the run's k (the depth retrieved and judged).
    """

    name: str
    k: int | None = None

    @property
    def label(self) -> str:
        """The canonical spelling, e.g. "ndcg@10" or "mrr"."""
        return self.name if self.k is None else f"{self.name}@{self.k}"

    def resolve_k(self, run_k: int) -> int:
        """The cutoff to compute this metric at: its own k, else the run's k."""
        return run_k if self.k is None else self.k


def parse_metric(text: str) -> MetricSpec:
    """Parses ``name`` or ``name@k`` (case and surrounding spaces ignored).

    Any metric may omit k, meaning the run's k ("mrr", "map", "dcg").

    Raises:
        SearchGradeError: an unknown name, or k not a positive integer; the one-line message
            lists the valid names.
    """
    valid = ", ".join(METRIC_NAMES)
    match = _SYNTAX.fullmatch(text.strip().lower()) if isinstance(text, str) else None
    if match is None or match["name"] not in METRICS:
        raise SearchGradeError(
            f'unknown metric "{text}": use one of {valid}, optionally with @k (e.g. "ndcg@10")'
        )
    k_text = match["k"]
    if k_text is None:
        return MetricSpec(match["name"])
    if re.fullmatch(r"[0-9]+", k_text) is None or int(k_text) < 1:
        raise SearchGradeError(
            f'metric "{text}": k must be a positive integer, e.g. "{match["name"]}@10"'
            f" (valid names: {valid})"
        )
    return MetricSpec(match["name"], int(k_text))


def compute_metrics(
    grades: Sequence[int | None],
    pool: Sequence[int],
    k: int,
    threshold: int,
    names: Sequence[str] | None = None,
) -> dict[str, float]:
    """Every registered metric (or those named, in that order) for one query at cutoff k.

    Raises:
        ValueError: k is not a positive integer.
        SearchGradeError: a name is not registered.
    """
    check_k(k)
    selected = METRIC_NAMES if names is None else tuple(names)
    unknown = [name for name in selected if name not in METRICS]
    if unknown:
        raise SearchGradeError(
            f"unknown metric(s) {', '.join(unknown)}: use one of {', '.join(METRIC_NAMES)}"
        )
    return {name: METRICS[name](grades, pool, k, threshold) for name in selected}


__all__ = [
    "HIGHER_IS_BETTER",
    "LOWER_IS_BETTER",
    "METRICS",
    "METRIC_NAMES",
    "MetricFn",
    "MetricSpec",
    "compute_metrics",
    "higher_is_better",
    "parse_metric",
]
