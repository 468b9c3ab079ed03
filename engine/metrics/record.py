"""What the app knows about a metric: one ``Metric`` record per metric, declared once
(engine/metrics/registry.py), from which every list, picker, label, verdict word, glossary entry,
exported column and MCP field is derived.

A record says how the metric is computed (``function``, one query; ``array``, many rankings at
once, engine/metrics/arrays.py), which way is better, its range and what its top means, the label
scales it applies to, its definition in words, its ir_measures / trec_eval name and parameters,
and whether it is a *diagnostic*: a figure about the grades (judged@k, the RBP residual) shown
beside the metrics, never ranked as if it were search quality.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

#: Label scales: relevant-or-not (the top grade 1, SciFact's qrels) and graded (0-3, 0-4, ...).
BINARY, GRADED = "binary", "graded"
#: A range whose top depends on the query: the ideal ordering of its known grades (DCG).
IDEAL = "ideal"
#: A range whose top is the label scale's top grade (mean relevance).
TOP_GRADE = "top grade"

MetricFn = Callable[[Sequence[int | None], Sequence[int], int, int], float]


def ideal_gain_bound(top_grade: int, k: int) -> float:
    """The largest DCG@k any query can have on a scale topped by ``top_grade``: every one of the k
    places holding that grade (13.63 at k = 10 on the 0-3 scale)."""
    return sum(top_grade / math.log2(i + 1) for i in range(1, k + 1))


@dataclass(frozen=True)
class Metric:
    """One metric, everything the app needs to know about it (see the module).

    Attributes:
        key: The stored key and the name's syntax ("ndcg"; "ndcg@10" with a cut-off).
        label: Its name on the pages ("NDCG", "Share not relevant").
        definition: One or two sentences for a newcomer: what it measures, in words.
        function: ``fn(grades, pool, k, threshold) -> float`` for one query (engine/metrics/*.py);
            None for a figure that is not computed from grades (source found).
        array: Its twin over many rankings (engine/metrics/arrays.py): the same values to the bit.
        higher_is_better: What "best", "recommended", "beats" and the verdict words follow.
        low, high: The range of one query's value (and of a mean of them). ``high`` is a number,
            ``IDEAL`` (the query's ideal, DCG's) or ``TOP_GRADE`` (the scale's top grade).
        maximum: What the best value means, in words ("every one of the k places relevant").
        scales: The label scales it applies to (``BINARY``, ``GRADED``); a run on another scale is
            never offered it.
        top_grade: The least top grade the labels need (share highly relevant needs a grade 3).
        ir_measures: Its name in ir_measures (and so trec_eval), ``{k}``, ``{rel}`` and ``{p}``
            standing for its parameters; None where neither has it.
        params: What its name takes besides @k: ``p`` (persistence), ``rel`` (the relevance
            threshold, which must be the run's), ``judged_only`` (NDCG's condensed-list switch).
        diagnostic: A figure about how complete the grades are, shown beside the metrics and never
            ranked as quality (no picker offers it, no verdict or gate reads it).
        percent: A share, shown as a percent.
        unjudged: An unjudged result differs from one graded 0 (the rest count it as 0).
        whole_list: A bare name means the whole stored list (the run's depth), not the run's k.
        holes: Its array form reads the rankings' holes (engine/metrics/arrays_holes.py).
        over_places: Divides by the k places, a failed judgment's place left out (mean relevance
            and the relevance distribution: engine/run/scoring.py).
        needs_sampling: Applies only to qrels that record sampling (infAP).
        needs_source: Applies only to generated queries, which have a source document.
        grade_scale: Takes the scale's top grade (``max_grade``: ERR).
    """

    key: str
    label: str
    definition: str
    function: MetricFn | None
    array: Callable[..., object] | None
    higher_is_better: bool = True
    low: float = 0.0
    high: float | str = 1.0
    maximum: str = ""
    scales: tuple[str, ...] = (BINARY, GRADED)
    top_grade: int = 1
    ir_measures: str | None = None
    params: tuple[str, ...] = ()
    diagnostic: bool = False
    percent: bool = False
    unjudged: bool = False
    whole_list: bool = False
    holes: bool = False
    over_places: bool = False
    needs_sampling: bool = False
    needs_source: bool = False
    grade_scale: bool = False

    @property
    def persistent(self) -> bool:
        """Takes a persistence ``p`` (RBP)."""
        return "p" in self.params

    @property
    def thresholded(self) -> bool:
        """Counts a result relevant at the run's threshold (ir_measures' ``rel=``)."""
        return "rel" in self.params

    @property
    def best_word(self) -> str:
        """ "highest" or "lowest": the word for the best value, on the tiles and in the sentences."""
        return "highest" if self.higher_is_better else "lowest"

    @property
    def direction(self) -> str:
        """ "higher is better" or "lower is better"."""
        return f"{'higher' if self.higher_is_better else 'lower'} is better"

    def applies(self, top_grade: int | None, *, sampled: bool = False, generated: bool = False) -> bool:
        """Whether the metric means anything for a run whose labels top at ``top_grade`` (None:
        unknown, every scale), whose qrels record sampling or not, and whose queries were generated
        (with a source document) or not."""
        if self.needs_sampling and not sampled:
            return False
        if self.needs_source and not generated:
            return False
        if top_grade is None:
            return True
        scale = BINARY if top_grade <= 1 else GRADED
        return scale in self.scales and top_grade >= self.top_grade

    def range_words(self, k: int | None = None, top_grade: int | None = None) -> str:
        """Its range in words: "0 to 1 (1: every known relevant document in the top 10)"; DCG's
        "0 to the query's ideal DCG@10 (its known grades in decreasing order; at most 13.63 on a
        0-3 scale)"."""
        if self.high == IDEAL:
            at = f"@{k}" if k is not None else "@k"
            notes = ["its known grades in decreasing order"]
            if k is not None and top_grade:
                notes.append(f"at most {ideal_gain_bound(top_grade, k):.2f} on a 0-{top_grade} scale")
            return f"0 to the query's ideal {self.label}{at} ({'; '.join(notes)})"
        high = (f"{self.high:g}" if not isinstance(self.high, str)
                else str(top_grade) if top_grade else "the top grade")
        meaning = self.maximum.format(k=k if k is not None else "k")
        if self.high == TOP_GRADE and meaning:
            meaning = f"{high}: {meaning}"
        return f"{self.low:g} to {high}" + (f" ({meaning})" if meaning else "")

    def explain(self, k: int | None = None, top_grade: int | None = None) -> str:
        """The definition, the range and the direction: what the pages say where the metric is
        picked and in the glossary."""
        extra = " A diagnostic of the grades, shown beside the metrics, never ranked as quality." \
            if self.diagnostic else ""
        return f"{self.definition} Range {self.range_words(k, top_grade)}; {self.direction}.{extra}"

    def measure(self, k: int | None = None, rel: int | None = None, p: float | None = None) -> str | None:
        """Its ir_measures name with the parameters filled in ("nDCG@10", "P(rel=2)@10"; "nDCG@k",
        "P(rel=T)@k" without them); None where ir_measures has no such measure."""
        if self.ir_measures is None:
            return None
        return self.ir_measures.format(k=k if k is not None else "k", rel=rel if rel is not None else "T",
                                       p=f"{p:g}" if p is not None else "0.8")
