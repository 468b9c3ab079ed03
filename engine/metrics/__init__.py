"""Retrieval metrics: pure functions of one query's ranked grades, one metric per module.

Every metric has the signature ``fn(grades, pool, k, threshold) -> float``:

- ``grades``: the grades of the ranked results, rank 1 first; only the first k count. None means
  no grade is known and counts as 0 everywhere except in ``judged``.
- ``pool``: every known grade for the query (its qrels, or every judged document for it across
  strategies): the ideal ranking for NDCG and the relevant count for recall and MAP.
- ``threshold``: a result is relevant when its grade >= threshold.

Beside each metric, ``HIGHER_IS_BETTER`` says which way is better: what "best", "recommended" and
"beats" follow (the share of results not relevant is the one where less is better).

Names follow one syntax, ``name``, ``name@k`` or ``name(params)@k`` (``"dcg@10"``, ``"mrr"``,
``"rbp(p=0.9)"``), parsed by :func:`parse_metric`, which also reads ir_measures' spelling of the
same measures (``"nDCG(judged_only=True)@10"``, ``"RBP(rel=2,p=0.8)"``, ``"Bpref"``, ``"ERR@10"``).

The metrics for incomplete judgments (bpref, ndcg_judged, err, rbp, rbp_residual, infap,
r_precision; docs/metrics.md) read holes: a grade None, or a negative grade (trec_eval's "in the
pool, not judged"), which every other metric counts as 0. ``WHOLE_LIST`` metrics are computed over
the ranked list cut at k, and a bare name means the whole stored list (the run's depth).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

from searchgrade.core.checks import check_k
from searchgrade.core.records import SearchGradeError
from searchgrade.engine.metrics.average_precision import average_precision
from searchgrade.engine.metrics.bpref import bpref
from searchgrade.engine.metrics.dcg import dcg
from searchgrade.engine.metrics.err import err
from searchgrade.engine.metrics.infap import infap
from searchgrade.engine.metrics.judged import judged
from searchgrade.engine.metrics.ndcg import ndcg
from searchgrade.engine.metrics.ndcg_judged import ndcg_judged
from searchgrade.engine.metrics.precision import precision
from searchgrade.engine.metrics.r_precision import r_precision
from searchgrade.engine.metrics.rbp import DEFAULT_PERSISTENCE, rbp, rbp_residual
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
    # For incomplete judgments (docs/metrics.md).
    "bpref": bpref,
    "ndcg_judged": ndcg_judged,
    "err": err,
    "rbp": rbp,
    "rbp_residual": rbp_residual,
    "infap": infap,
    "r_precision": r_precision,
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
    "bpref": True,
    "ndcg_judged": True,
    "err": True,
    "rbp": True,
    # How much RBP could still rise were the holes relevant: a smaller one is the surer figure.
    "rbp_residual": False,
    "infap": True,
    "r_precision": True,
}
if set(HIGHER_IS_BETTER) != set(METRICS):
    raise RuntimeError("every metric in METRICS needs its direction in HIGHER_IS_BETTER, and only those")
#: Metrics where a smaller value is the better one; every other metric grows with quality.
LOWER_IS_BETTER: frozenset[str] = frozenset(name for name, higher in HIGHER_IS_BETTER.items() if not higher)


def higher_is_better(name: str) -> bool:
    """Whether a larger value of the metric means better search ("pct_not_relevant": no); a key
    with parameters ("rbp_residual(p=0.9)") goes the way of its metric."""
    return name.split("(", 1)[0] not in LOWER_IS_BETTER


#: Metrics where an unjudged result differs from a result graded 0 (the rest count it as 0).
UNJUDGED_AWARE: frozenset[str] = frozenset({"judged", "bpref", "ndcg_judged", "rbp_residual", "infap"})
#: Metrics of the ranked list cut at k whose bare name means the whole stored list (the run's depth).
WHOLE_LIST: frozenset[str] = frozenset({"bpref", "rbp", "rbp_residual", "infap", "r_precision"})
#: Metrics a run stores only where they apply: infAP needs qrels that record sampling.
CONDITIONAL: frozenset[str] = frozenset({"infap"})
#: Metrics that take the run's grade scale (keyword ``max_grade``: its top grade).
SCALED: frozenset[str] = frozenset({"err"})
#: Metrics with a persistence parameter (keyword ``p``, in (0, 1)), and its default.
PERSISTENT: frozenset[str] = frozenset({"rbp", "rbp_residual"})
#: Metrics with a relevance threshold (ir_measures' ``rel=``, which must be the run's threshold).
THRESHOLDED: frozenset[str] = frozenset({
    "precision", "recall", "recall_single_hit", "mrr", "map", "pct_relevant", "pct_not_relevant",
    "bpref", "rbp", "rbp_residual", "infap", "r_precision"})

#: ir_measures' names (lowercased) of measures registered here under another name.
IR_MEASURES_NAMES: dict[str, str] = {
    "p": "precision", "r": "recall", "success": "recall_single_hit", "rr": "mrr", "ap": "map",
    "rprec": "r_precision",
}

_SYNTAX = re.compile(r"(?P<name>[a-z_]+)(?:\((?P<params>[^()]*)\))?(?:@(?P<k>.*))?")


class MetricSpec(NamedTuple):
    """A parsed metric name: ``ndcg@10`` -> MetricSpec("ndcg", 10); ``rbp(p=0.9)`` ->
    MetricSpec("rbp", None, p=0.9).

    k None means the run's k (the depth retrieved and judged), or its depth for the WHOLE_LIST
    metrics; p None the default persistence; rel, where given, the relevance threshold the name
    asked for (it must be the run's: ``check_threshold``).
    """

    name: str
    k: int | None = None
    p: float | None = None
    rel: int | None = None

    @property
    def key(self) -> str:
        """The metric as stored and registered: its name, with a persistence other than the default
        ("rbp", "rbp(p=0.9)")."""
        if self.p is None or self.p == DEFAULT_PERSISTENCE:
            return self.name
        return f"{self.name}(p={self.p:g})"

    @property
    def label(self) -> str:
        """The canonical spelling, e.g. "ndcg@10", "mrr" or "rbp(p=0.9)@20"."""
        return self.key if self.k is None else f"{self.key}@{self.k}"

    @property
    def persistence(self) -> float:
        return DEFAULT_PERSISTENCE if self.p is None else self.p

    def resolve_k(self, run_k: int, depth: int | None = None) -> int:
        """The cutoff to compute this metric at: its own k, else the run's depth for a WHOLE_LIST
        metric (when given), else the run's k."""
        if self.k is not None:
            return self.k
        return depth if depth is not None and self.name in WHOLE_LIST else run_k

    def check_threshold(self, threshold: int) -> None:
        """A ``rel=`` other than the run's threshold cannot be read from its stored grades' metrics.

        Raises:
            SearchGradeError: the name asked for another threshold.
        """
        if self.rel is not None and self.rel != threshold:
            raise SearchGradeError(
                f'metric "{self.label}" asks for rel={self.rel}, but this run counts a result as relevant '
                f"at grade >= {threshold}: use rel={threshold} or leave rel out (or evaluate again with "
                f"--threshold {self.rel})")


def _bad(text: str, why: str, valid: str) -> SearchGradeError:
    return SearchGradeError(f'metric "{text}": {why} (valid names: {valid})')


def _params(text: str, name: str, given: str, valid: str) -> tuple[str, float | None, int | None]:
    """The name a parameter list makes (``nDCG(judged_only=True)`` -> ndcg_judged), p and rel."""
    p: float | None = None
    rel: int | None = None
    for item in (part.strip() for part in given.split(",")):
        if not item:
            continue
        key, sep, value = (x.strip() for x in item.partition("="))
        if not sep:
            raise _bad(text, f"parameter {item!r} needs a value, e.g. p=0.8", valid)
        if key == "p" and name in PERSISTENT:
            try:
                p = float(value)
            except ValueError:
                p = None
            if p is None or not 0.0 < p < 1.0:
                raise _bad(text, f"p of {value} must be a persistence between 0 and 1, e.g. p=0.8", valid)
        elif key == "rel" and name in THRESHOLDED:
            if re.fullmatch(r"[0-9]+", value) is None or int(value) < 1:
                raise _bad(text, f"rel of {value} must be a positive grade, e.g. rel=2", valid)
            rel = int(value)
        elif key == "judged_only" and name in ("ndcg", "ndcg_judged") and value in ("true", "false"):
            name = "ndcg_judged" if value == "true" or name == "ndcg_judged" else "ndcg"
        else:
            takes = (["p"] if name in PERSISTENT else []) + (["rel"] if name in THRESHOLDED else []) + (
                ["judged_only"] if name == "ndcg" else [])
            raise _bad(text, f"{name} takes {', '.join(takes) or 'no parameter'}, not {key!r}", valid)
    return name, p, rel


def parse_metric(text: str) -> MetricSpec:
    """Parses ``name``, ``name@k`` or ``name(params)@k`` (case and surrounding spaces ignored).

    Any metric may omit k, meaning the run's k ("mrr", "map", "dcg"), or its depth for the
    WHOLE_LIST metrics ("bpref"). ir_measures' names and parameters are read too: ``P(rel=2)@5``,
    ``nDCG(judged_only=True)@10``, ``RBP(rel=2,p=0.8)``, ``Bpref``, ``Rprec``, ``infAP``, ``ERR@10``.

    Raises:
        SearchGradeError: an unknown name or parameter, k not a positive integer, or p outside
            (0, 1); the one-line message lists the valid names.
    """
    valid = ", ".join(METRIC_NAMES)
    match = _SYNTAX.fullmatch(text.strip().lower()) if isinstance(text, str) else None
    name = IR_MEASURES_NAMES.get(match["name"], match["name"]) if match is not None else None
    if match is None or name not in METRICS:
        raise SearchGradeError(
            f'unknown metric "{text}": use one of {valid}, optionally with @k (e.g. "ndcg@10")'
        )
    name, p, rel = _params(text, name, match["params"] or "", valid)
    k_text = match["k"]
    if k_text is None:
        return MetricSpec(name, None, p, rel)
    if re.fullmatch(r"[0-9]+", k_text) is None or int(k_text) < 1:
        raise SearchGradeError(
            f'metric "{text}": k must be a positive integer, e.g. "{name}@10"'
            f" (valid names: {valid})"
        )
    return MetricSpec(name, int(k_text), p, rel)


@functools.lru_cache(maxsize=256)
def metric_key(key: str) -> MetricSpec:
    """A stored or registered key ("rbp", "rbp(p=0.9)") parsed once.

    Raises:
        SearchGradeError: not a metric name.
    """
    spec = parse_metric(key)
    if spec.k is not None:
        raise SearchGradeError(f'"{key}" is a metric with a cut-off; name the metric only, e.g. "{spec.key}"')
    return spec


@functools.lru_cache(maxsize=1024)
def metric_function(key: str, max_grade: int | None = None) -> Callable[..., float]:
    """The per-query function of a key, its persistence and grade scale bound:
    ``fn(grades, pool, k, threshold)``."""
    spec = metric_key(key)
    fn = METRICS[spec.name]
    options: dict[str, object] = {}
    if spec.name in PERSISTENT:
        options["p"] = spec.persistence
    if spec.name in SCALED:
        options["max_grade"] = max_grade
    return functools.partial(fn, **options) if options else fn


def compute_metrics(
    grades: Sequence[int | None],
    pool: Sequence[int],
    k: int,
    threshold: int,
    names: Sequence[str] | None = None,
    *,
    max_grade: int | None = None,
) -> dict[str, float]:
    """Every registered metric (or those named, in that order) for one query at cutoff k.

    Names are keys ("rbp", "rbp(p=0.9)"); max_grade is the grade scale's top grade (ERR).

    Raises:
        ValueError: k is not a positive integer.
        SearchGradeError: a name is not registered.
    """
    check_k(k)
    selected = METRIC_NAMES if names is None else tuple(names)
    return {name: fn(grades, pool, k, threshold) for name, fn in _functions(selected, max_grade)}


@functools.lru_cache(maxsize=256)
def _functions(names: tuple[str, ...], max_grade: int | None) -> tuple[tuple[str, Callable[..., float]], ...]:
    """The functions of some keys, resolved once per (keys, scale)."""
    unknown = []
    for name in names:
        try:
            metric_key(name)
        except SearchGradeError:
            unknown.append(name)
    if unknown:
        raise SearchGradeError(
            f"unknown metric(s) {', '.join(unknown)}: use one of {', '.join(METRIC_NAMES)}"
        )
    return tuple((name, metric_function(name, max_grade)) for name in names)


__all__ = [
    "CONDITIONAL",
    "HIGHER_IS_BETTER",
    "IR_MEASURES_NAMES",
    "PERSISTENT",
    "SCALED",
    "THRESHOLDED",
    "UNJUDGED_AWARE",
    "WHOLE_LIST",
    "LOWER_IS_BETTER",
    "METRICS",
    "METRIC_NAMES",
    "MetricFn",
    "MetricSpec",
    "compute_metrics",
    "higher_is_better",
    "metric_function",
    "metric_key",
    "parse_metric",
]
