"""The kinds of a failed top 1 and the causes of a failed query, each defined once, in order.

A query *fails* for a strategy when the strategy's top result for it is not relevant. The
failure is of one of two **kinds**: its top result is *judged not relevant* (a grade below the
run's threshold), or *unjudged* (nobody graded it: a labelling gap more than a search failure).
Each failed (strategy, query) also gets exactly one **cause**: the first of ``CAUSES`` whose
evidence holds (``assign_causes``), ``unexplained`` when none does. The evidence is what the run
stored (results, grades, the exact search of the failed queries): a cause is never guessed.
docs/metrics.md#why-queries-fail says the same in words.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import pandas as pd


@dataclass(frozen=True)
class Category:
    """A kind or a cause: its key (as `show --format json` writes it), its title, what it means,
    and what to do about it."""

    key: str
    title: str
    meaning: str
    fix: str


#: The two kinds of a failed top 1, keyed as ``show --format json``'s ``category`` (kind "top1").
KINDS: dict[str, Category] = {c.key: c for c in (
    Category("judged_not_relevant", "Top result judged not relevant",
             "the top result has a grade below the run's relevance threshold",
             "a search failure: its cause says where"),
    Category("unjudged", "Top result unjudged",
             "nobody graded the top result (or the qrels hold it in the pool without a judgment)",
             "a labelling gap, not known to be a search failure: rate the results (Review's "
             "\"Fill the holes\") or have the LLM judge grade them (`searchgrade judge-pool`)"),
)}

#: The causes in the order they are tried: a failed query gets the first that holds.
CAUSES: dict[str, Category] = {c.key: c for c in (
    Category("no_relevant_known", "No relevant document known",
             "the labels (or the judge) know no relevant document for the query",
             "label the query (rate its results, or judge them): no strategy can be blamed yet"),
    Category("lost_by_index", "Lost by the approximate index",
             "an exact search of the same vectors finds a relevant document that the approximate "
             "index and the strategy's list miss",
             "search more of the index (more IVF probes, a wider HNSW search) or use an exact index "
             "(--ann-index flat)"),
    Category("ranked_too_low", "Ranked too low",
             "the strategy has a relevant document, below rank 1 (the best rank is given)",
             "a reranker's job (it reorders what is retrieved)"),
    Category("one_strategy_only", "Found by another strategy",
             "another strategy of the run has a relevant document at rank 1",
             "combine the strategies (hybrid): vocabulary (BM25) and meaning (ANN) find different things"),
    Category("judge_disagrees", "Judge and people disagree",
             "people rated the top result relevant and the judge did not, or the reverse",
             "look at the pair: the label, or the judge's prompt"),
    Category("not_retrieved", "Not retrieved",
             "relevant documents are known and no strategy has one in the results it kept",
             "a reranker cannot fix that: look at chunking, the embedding model or the wording of "
             "the documents"),
    Category("unexplained", "Unexplained",
             "none of the causes above holds (counted, never guessed)",
             "look at the query in the drill-down"),
)}

#: The relevance threshold of the judge's 0-3 grades (a human grade uses the run's threshold).
Thresholds = tuple[int, int]


def _people_and_judge_disagree(f: pd.DataFrame, thresholds: Thresholds) -> pd.Series:
    """The top 1 has a grade from people (qrels or ratings) and one from the judge, and they
    disagree on relevant or not (people at the run's threshold, the judge at its own)."""
    threshold, judge_threshold = thresholds
    people = f["source"].notna() & (f["source"] != "llm") & f["grade"].notna() & f["llm_grade"].notna()
    grade = f["grade"].fillna(-1).astype(float)
    judge = f["llm_grade"].fillna(-1).astype(float)
    return people & ((grade >= threshold) != (judge >= judge_threshold))


#: Each cause but the last, with the evidence that makes it hold (a column test over the rows of
#: ``FailuresMixin.failure_evidence`` plus ``uses_index``), in the order of ``CAUSES``.
RULES: dict[str, Callable[[pd.DataFrame, Thresholds], pd.Series]] = {
    "no_relevant_known": lambda f, t: f["relevant_known"] == 0,
    "lost_by_index": lambda f, t: f["uses_index"] & f["lost_doc"].notna(),
    "ranked_too_low": lambda f, t: f["best_rank"].notna(),
    "one_strategy_only": lambda f, t: f["first_by"].map(len) > 0,
    "judge_disagrees": _people_and_judge_disagree,
    "not_retrieved": lambda f, t: f["any_rank"].isna(),
}
if list(RULES) + ["unexplained"] != list(CAUSES):
    raise RuntimeError("RULES must test every cause of CAUSES but the last, in its order")


def assign_causes(evidence: pd.DataFrame, thresholds: Thresholds) -> np.ndarray:
    """Each row's cause: the first of ``CAUSES`` whose rule holds, ``unexplained`` otherwise.

    Args:
        evidence: rows of ``FailuresMixin.failure_evidence`` with ``uses_index`` (the strategy
            searches the approximate index whose misses exact search measured).
        thresholds: the run's relevance threshold and the judge's.
    """
    if evidence.empty:
        return np.array([], dtype=object)
    tests = [np.asarray(rule(evidence, thresholds), dtype=bool) for rule in RULES.values()]
    return np.select(tests, list(RULES), default="unexplained").astype(object)
