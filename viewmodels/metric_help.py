"""What a metric is, in the words every page says it: where it is picked (the picker's help and the
line under it), in the glossary, and, for DCG, the queries' ideal beside the value.

Every word about a metric comes from its record (engine/metrics/record.py): its label, definition,
range and direction; the glossary adds the few other words the pages use.
"""

from __future__ import annotations

from dataclasses import dataclass

from searchgrade.engine.metrics import REGISTRY, metric_record
from searchgrade.engine.metrics.record import IDEAL
from searchgrade.engine.run.stored_metrics import ideal_dcg_values
from searchgrade.engine.store import RunRecord, Store

#: The words of the dashboard that are not metrics, as the glossary says them.
WORDS = {
    "qrels": "Human relevance judgments that come with a collection: a grade per (query, document) pair. "
             "A document the qrels do not grade counts as not relevant.",
    "RRF": "Reciprocal rank fusion: the hybrid strategy's way of merging the ANN and full-text lists; a "
           "document scores the sum of 1 / (RRF k + its rank) over the lists that hold it.",
    "Jaccard": "Jaccard@k: the documents two top-k lists share, over the documents either holds (1 = the same "
               "set, order ignored).",
    "RBO": "Rank-biased overlap: how alike two rankings are, agreement at the top weighing most (1 = the same "
           "ranking).",
    "Paired test": "Two strategies (or runs) compared on the same queries, the difference per query "
                   "resampled (10,000 paired bootstrap resamples, seed 0): the interval of the mean difference, "
                   "adjusted for the comparisons made together (Bonferroni, level 1 - 0.05/m for m of them). "
                   "Significant means that interval excludes 0.",
}


@dataclass(frozen=True)
class GlossaryEntry:
    word: str
    meaning: str


def metric_explained(metric: str, k: int | None, run: RunRecord | None = None) -> str:
    """The metric's definition, range at k on the run's scale and direction (its record's words)."""
    return metric_record(metric).explain(k, run.grade_max if run is not None else None)


def glossary(metrics: list[str], k: int | None = None, run: RunRecord | None = None) -> list[GlossaryEntry]:
    """The glossary of a page: every metric it offers (and judged@k, shown beside them), then the
    other words."""
    shown = [m for m in REGISTRY if m in metrics or (m == "judged" and metrics)]
    entries = [GlossaryEntry(f"{REGISTRY[m].label}@{k if k is not None else 'k'}", metric_explained(m, k, run))
               for m in shown]
    return entries + [GlossaryEntry(word, meaning) for word, meaning in WORDS.items()]


def ideal_words(store: Store, run: RunRecord, metric: str, k: int) -> str | None:
    """For a metric whose top is the query's ideal (DCG): the ideal DCG@k of the run's queries, in
    words, so that a value can be read against it; None for any other metric."""
    if metric_record(metric).high != IDEAL:
        return None
    ideal = ideal_dcg_values(store, run, k)
    if not len(ideal):
        return None
    label = f"{metric_record(metric).label}@{k}"
    zero = int((ideal == 0).sum())
    known = ideal[ideal > 0]
    if not len(known):
        return f"No query has a relevant document known: every ideal {label} is 0."
    text = (f"The queries' ideal {label} (each query's known grades in decreasing order) averages "
            f"{ideal.mean():.3f}, from {known.min():.3f} to {known.max():.3f}")
    if zero:
        text += f"; {zero} {'query has' if zero == 1 else 'queries have'} no relevant document known (ideal 0)"
    return text + f". NDCG@{k} is {label} over that ideal, query by query."


def metric_json(metric: str, k: int | None, run: RunRecord | None = None) -> dict[str, object]:
    """A metric's record as JSON fields (`show --format json`, MCP): its label, definition, range
    and direction in words, its ir_measures name, and whether it is a diagnostic."""
    record = metric_record(metric)
    return {"label": record.label, "definition": record.definition,
            "range": record.range_words(k, run.grade_max if run is not None else None),
            "higher_is_better": record.higher_is_better, "diagnostic": record.diagnostic,
            "ir_measures": record.measure(k, run.threshold if run is not None else None)}
