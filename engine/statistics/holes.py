"""Comparisons over judgments with holes: the verdict the data can support, or none, with the reason.

A result nobody judged counts as not relevant in every standard metric, so a strategy whose top k
holds more unjudged results loses for that alone. Click judgments make this the rule rather than the
exception: users judge only what they were shown, so every strategy that differs from the logged
one is full of holes, and "the logged system is best" would be read off its own log. The same holds
for qrels pooled from other systems. So every paired comparison of two strategies (in one run, or
across runs) passes this rule, for any grading: clicks, qrels, the judge.

**The rule.** With J_a and J_b each side's judged share of its top k (judged@k, the mean over the
compared queries):

1. Both J_a and J_b >= 1 - ``TOLERANCE`` (0.9): the comparison as always. Neither side has more
   than a tenth of its results unjudged, so they cannot differ by more than that either.
2. Otherwise, when min(J_a, J_b) >= ``MIN_JUDGED`` (0.5): the comparison is made on **condensed
   lists** (``condensed``): per query, each side's top k with its unjudged results removed, both cut
   to the shorter one's length n, the metric at k of each; a query where either side has no judged
   result is left out. Neither side gains or loses for a hole, nor for holding fewer judged results.
   So two strategies whose judged shares differ by more than the tolerance are never compared on
   their holes; nor are two that both have many (what their holes hide may differ as much: in the
   click study, two hybrids judged 60% and 56% were "significantly" apart in the wrong direction).
3. Otherwise the verdict is **withheld**, with the reason: less than half of a side's results were
   judged, so its judged part says more about what happened to be judged (what the logged system
   showed) than about the strategy; the holes must be filled first (the judge, or people).

**Where it applies** (``judges_what_it_saw``). To a grading that judges what it was shown, so that
an unjudged result is unknown: clicks (the log judges only what users saw often enough), the LLM
judge (a failed judgment; the results outside its pool), and people's labels that mark what they
left unjudged (qrels with pooled-but-unjudged judgments: a negative grade, as trec_eval reads it).
Other qrels count an absent result as not relevant by their collection's convention, as trec_eval
does (BEIR's and SciFact's list only relevant documents: there judged@k measures how many relevant
documents a list found, not how complete the labels are); their comparisons are made as always,
with the holes warning beside them when judged@k differs (viewmodels/holes.py).

A withheld comparison has no interval and is never significant; it is not a test, so it does not
count in the family the others are adjusted for. Condensed and plain comparisons are one family,
each interval adjusted for all of them, by the one resample policy. The procedure that applies the
rule is engine/statistics/pairing.py's (``compare_with_holes``): within a run for the Results page,
across runs in ``compare_runs`` (Compare, the gate, suites, MCP).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from searchgrade.engine.statistics.paired import PairedDifference

#: A side with more than this share of its top k unjudged makes a comparison condensed (or withheld);
#: so do two sides whose judged shares differ by more.
TOLERANCE = 0.1
#: The smaller judged share a condensed comparison needs; below it the verdict is withheld.
MIN_JUDGED = 0.5


@dataclass(frozen=True)
class Sides:
    """One comparison's inputs: each side's metric per query (holes as not relevant) and its
    judged share per query, over the same queries in the same order; ``condensed`` computes the
    condensed lists' values (kept queries' a and b) only when the rule asks for them."""

    a: np.ndarray
    b: np.ndarray
    judged_a: np.ndarray
    judged_b: np.ndarray
    condensed: Callable[[], tuple[np.ndarray, np.ndarray]]


@dataclass(frozen=True)
class HoleVerdict:
    """A comparison's outcome: its paired difference (None when withheld), whether it was computed
    on condensed lists, or why it was withheld; with both judged shares."""

    difference: PairedDifference | None
    condensed: bool
    withheld: str | None
    judged_a: float
    judged_b: float
    #: The means of the two sides the difference was computed on (the condensed lists' when
    #: condensed; NaN when withheld).
    mean_a: float = float("nan")
    mean_b: float = float("nan")

    @property
    def significant(self) -> bool:
        return self.difference is not None and self.difference.significant


def judges_what_it_saw(label_source: str, marks_holes: bool) -> bool:
    """Whether the rule applies to a grading (see the module): clicks and the judge always; people's
    labels when they mark what they left unjudged (``marks_holes``: pooled-but-unjudged judgments)."""
    return bool({"clicks", "llm"} & set(label_source.split("+"))) or marks_holes


def rule_metric(metric: str) -> bool:
    """Whether the rule applies to a metric: one computed from grades that counts an unjudged result
    as not relevant (not bpref, the condensed NDCG, the RBP residual, infAP or judged@k, which read
    holes themselves or are diagnostics; not source found, which reads no grade)."""
    from searchgrade.engine.metrics import metric_record

    record = metric_record(metric)
    return record.function is not None and not record.unjudged and not record.diagnostic


def reading(judged_a: float, judged_b: float, tolerance: float = TOLERANCE,
            min_judged: float = MIN_JUDGED) -> str:
    """ "plain", "condensed" or "withheld": which way the rule compares two sides with these judged
    shares."""
    if min(judged_a, judged_b) >= 1 - tolerance - 1e-12:
        return "plain"
    return "condensed" if min(judged_a, judged_b) >= min_judged else "withheld"


def withheld_reason(name_a: str, name_b: str, judged_a: float, judged_b: float, k: int) -> str:
    """Why a comparison is withheld, in words, with the way out."""
    low_name, low, high_name, high = ((name_a, judged_a, name_b, judged_b) if judged_a <= judged_b
                                      else (name_b, judged_b, name_a, judged_a))
    return (f"{low:.0%} of {low_name}'s top {k} is judged ({high_name}: {high:.0%}): too little for a verdict, which "
            f"would say more about what was judged than about {low_name}; fill the holes first (evaluate with "
            "--judge-unjudged, or rate them on the Review page's \"Fill the holes\")")


def condensed_lists(a: Sequence[int | None], b: Sequence[int | None], k: int) -> tuple[list[int], list[int]]:
    """Each top k's judged grades in rank order (holes removed: None, or negative as trec_eval's
    pooled-but-unjudged), both cut to the shorter one's length."""
    ja = [g for g in a[:k] if g is not None and g >= 0]
    jb = [g for g in b[:k] if g is not None and g >= 0]
    n = min(len(ja), len(jb))
    return ja[:n], jb[:n]
