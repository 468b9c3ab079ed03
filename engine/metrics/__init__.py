"""Retrieval metrics: pure functions of one query's ranked grades, one metric per module.

Every metric has the signature ``fn(grades, pool, k, threshold) -> float``:

- ``grades``: the grades of the ranked results, rank 1 first; only the first k count. None means
  no grade is known and counts as 0 everywhere except in ``judged``.
- ``pool``: every known grade for the query (its qrels, or every judged document for it across
  strategies): the ideal ranking for NDCG and the relevant count for recall and MAP.
- ``threshold``: a result is relevant when its grade >= threshold.

Each metric is declared once, as a ``Metric`` record (engine/metrics/record.py) in
engine/metrics/registry.py: its function and array twin, which way is better (what "best",
"recommended", "beats" and "highest"/"lowest" follow), its range, the label scales it applies to,
its definition, its ir_measures name and parameters, and whether it is a diagnostic (judged@k, the
RBP residual: beside the metrics, never ranked). ``METRICS``, ``METRIC_NAMES``, ``HIGHER_IS_BETTER``
and ``offered_metrics`` are read from those records.

Names follow one syntax, ``name``, ``name@k`` or ``name(params)@k`` (``"dcg@10"``, ``"mrr"``,
``"rbp(p=0.9)"``), parsed by :func:`parse_metric`, which also reads ir_measures' spelling of the
same measures (``"nDCG(judged_only=True)@10"``, ``"RBP(rel=2,p=0.8)"``, ``"Bpref"``, ``"ERR@10"``).

The metrics for incomplete judgments (bpref, ndcg_judged, err, rbp, rbp_residual, infap,
r_precision; docs/metrics.md) read holes: a grade None, or a negative grade (trec_eval's "in the
pool, not judged"), which every other metric counts as 0. Whole-list metrics (``Metric.whole_list``)
are computed over the ranked list cut at k, and a bare name means the whole stored list (the run's
depth).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from searchgrade.core.checks import check_k
from searchgrade.core.records import SearchGradeError
from searchgrade.engine.metrics.arrays import RankedGrades, TopK
from searchgrade.engine.metrics.dcg import dcg
from searchgrade.engine.metrics.rbp import DEFAULT_PERSISTENCE
from searchgrade.engine.metrics.record import BINARY, GRADED, Metric, MetricFn
from searchgrade.engine.metrics.registry import RECORDS, SOURCE_FOUND

#: Key -> record, every metric (source found included), in display order.
REGISTRY: dict[str, Metric] = {m.key: m for m in RECORDS}
#: Metric key -> function, in display order: the metrics computed from grades (every one but
#: source found, which reads the query's source document).
METRICS: dict[str, MetricFn] = {m.key: m.function for m in RECORDS if m.function is not None}
METRIC_NAMES: tuple[str, ...] = tuple(METRICS)
#: Metric key -> whether a larger value is better (source found included).
HIGHER_IS_BETTER: dict[str, bool] = {m.key: m.higher_is_better for m in RECORDS}

#: ir_measures' names (lowercased) of measures registered here under another name ("p" -> precision).
IR_MEASURES_NAMES: dict[str, str] = {
    head: m.key for m in RECORDS if m.ir_measures
    for head in [re.split(r"[(@]", m.ir_measures, maxsplit=1)[0].lower()] if head not in REGISTRY
}


def metric_record(name: str) -> Metric:
    """The record of a metric key, a key with parameters ("rbp(p=0.9)") or source found.

    Raises:
        SearchGradeError: not a metric.
    """
    record = REGISTRY.get(name.split("(", 1)[0].split("@", 1)[0])
    if record is None:
        raise SearchGradeError(f"unknown metric {name!r}: use one of {', '.join(REGISTRY)}")
    return record


def higher_is_better(name: str) -> bool:
    """Whether a larger value of the metric means better search ("pct_not_relevant": no); a key
    with parameters ("rbp_residual(p=0.9)") goes the way of its metric.

    Raises:
        SearchGradeError: not a metric.
    """
    return metric_record(name).higher_is_better


def offered_metrics(top_grade: int | None, *, sampled: bool = False, generated: bool = False,
                    diagnostics: bool = False) -> list[str]:
    """The metric keys a run's pickers offer, in display order: those that apply to its labels
    (``Metric.applies``), diagnostics only when asked for (they are never ranked as quality)."""
    return [m.key for m in RECORDS if (diagnostics or not m.diagnostic)
            and m.applies(top_grade, sampled=sampled, generated=generated)]


def check_quality(name: str, where: str) -> Metric:
    """The record of a metric a verdict is made on (the gate, a suite, the tuner, Compare).

    Raises:
        SearchGradeError: a diagnostic (judged@k, the RBP residual): it says how complete the grades
            are, not how good the search is.
    """
    record = metric_record(name)
    if record.diagnostic:
        raise SearchGradeError(
            f"{where} {name}: {record.label.lower()} is a diagnostic of the grades, not search quality, so "
            f"no verdict is made on it; pick a quality metric, e.g. ndcg@10 (or bpref, ndcg_judged for "
            "unjudged results)")
    return record


_SYNTAX = re.compile(r"(?P<name>[a-z_]+)(?:\((?P<params>[^()]*)\))?(?:@(?P<k>.*))?")


class MetricSpec(NamedTuple):
    """A parsed metric name: ``ndcg@10`` -> MetricSpec("ndcg", 10); ``rbp(p=0.9)`` ->
    MetricSpec("rbp", None, p=0.9).

    k None means the run's k (the depth retrieved and judged), or its depth for the whole-list
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
        """The cutoff to compute this metric at: its own k, else the run's depth for a whole-list
        metric (when given), else the run's k."""
        if self.k is not None:
            return self.k
        return depth if depth is not None and REGISTRY[self.name].whole_list else run_k

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
        record = REGISTRY[name]
        if key == "p" and record.persistent:
            try:
                p = float(value)
            except ValueError:
                p = None
            if p is None or not 0.0 < p < 1.0:
                raise _bad(text, f"p of {value} must be a persistence between 0 and 1, e.g. p=0.8", valid)
        elif key == "rel" and record.thresholded:
            if re.fullmatch(r"[0-9]+", value) is None or int(value) < 1:
                raise _bad(text, f"rel of {value} must be a positive grade, e.g. rel=2", valid)
            rel = int(value)
        elif key == "judged_only" and "judged_only" in record.params and value in ("true", "false"):
            name = "ndcg_judged" if value == "true" or name == "ndcg_judged" else "ndcg"
        else:
            takes = list(REGISTRY[name].params)
            raise _bad(text, f"{name} takes {', '.join(takes) or 'no parameter'}, not {key!r}", valid)
    return name, p, rel


def parse_metric(text: str) -> MetricSpec:
    """Parses ``name``, ``name@k`` or ``name(params)@k`` (case and surrounding spaces ignored).

    Any metric may omit k, meaning the run's k ("mrr", "map", "dcg"), or its depth for the
    whole-list metrics ("bpref"). ir_measures' names and parameters are read too: ``P(rel=2)@5``,
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
    record = REGISTRY[spec.name]
    options: dict[str, object] = {}
    if record.persistent:
        options["p"] = spec.persistence
    if record.grade_scale:
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


def metric_arrays(r: RankedGrades, k: int, threshold: int, names: Sequence[str]) -> dict[str, np.ndarray]:
    """The named metrics at cut-off k for every ranking: name -> (rankings,) values.

    NaN where per_query_metrics leaves a metric out: mean relevance and the distribution of a
    ranking whose k places all hold a failed judgment. Mean relevance and the shares divide by
    the k places (a place no result holds is 0, not relevant), a failed judgment's left out.

    Names are metric keys ("rbp", "rbp(p=0.9)"); the metrics for incomplete judgments need
    ``r.holes``.

    Raises:
        ValueError: a name without an array form.
    """
    unknown = [name for name in names if metric_record(name).array is None]
    if unknown:
        raise ValueError(f"no array form of metric(s) {', '.join(unknown)}")
    topk = TopK(r, k, threshold)
    out = {}
    for name in names:
        spec = metric_key(name)
        fn = metric_record(spec.name).array
        out[name] = fn(topk, p=spec.persistence) if metric_record(spec.name).persistent else fn(topk)
    return out


__all__ = [
    "BINARY",
    "GRADED",
    "HIGHER_IS_BETTER",
    "IR_MEASURES_NAMES",
    "METRICS",
    "METRIC_NAMES",
    "REGISTRY",
    "SOURCE_FOUND",
    "Metric",
    "MetricFn",
    "MetricSpec",
    "check_quality",
    "compute_metrics",
    "dcg",
    "higher_is_better",
    "metric_function",
    "metric_key",
    "metric_record",
    "RankedGrades",
    "metric_arrays",
    "offered_metrics",
    "parse_metric",
]
