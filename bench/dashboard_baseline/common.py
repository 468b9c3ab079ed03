"""What every screen's view model shares: the headline metric, labels, cut-off checks, sentences."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.metrics import METRIC_NAMES
from searchgrade.engine.run.scoring import SOURCE_FOUND
from searchgrade.engine.run.strategies import display_rank, label
from searchgrade.engine.store import RunRecord, Store

#: The headline metric: DCG at 10 (or at the run's depth when it retrieved fewer).
PRIMARY_METRIC = "dcg"
PRIMARY_K = 10
#: A paired difference with p below this is called significant.
ALPHA = 0.05
#: Resamples of the paired tests the dashboard runs (the stored CIs use the run's own setting).
PAIRED_RESAMPLES = 5_000
#: Resamples of the CIs of metrics recomputed at a cut-off the run did not store.
RECOMPUTE_RESAMPLES = 1_000

METRIC_LABELS = {
    "dcg": "DCG",
    "ndcg": "NDCG",
    "precision": "Precision",
    "recall": "Recall",
    "recall_single_hit": "Recall (single hit)",
    "mrr": "MRR",
    "map": "MAP",
    "mean_relevance": "Mean relevance",
    "judged": "Judged share",
    "pct_highly_relevant": "Share highly relevant",
    "pct_relevant": "Share relevant",
    "pct_not_relevant": "Share not relevant",
    SOURCE_FOUND: "Source found",
}
WITHOUT, WITH = "Without reranker", "With reranker"


def metric_label(metric: str, k: int) -> str:
    """ "DCG@10", "Mean relevance@5"."""
    return f"{METRIC_LABELS.get(metric, metric)}@{k}"


def metric_names(run: RunRecord | None = None) -> list[str]:
    """The metrics a run can show: every registered one, plus source found for generated queries."""
    names = list(METRIC_NAMES)
    if run is None or run.mode == "llm":
        names.append(SOURCE_FOUND)
    return names


def is_llm_run(run: RunRecord) -> bool:
    """The run used the LLM: its mode, or qrels with the judge (agreement, unjudged results)."""
    return run.mode == "llm" or bool(run.config.get("llm"))


def primary_k(run: RunRecord) -> int:
    return min(PRIMARY_K, run.depth)


def stored_cutoffs(store: Store, run_id: str) -> list[int]:
    return sorted({r["k"] for r in store.metric_summary(run_id)})


def check_cutoff(run: RunRecord, k: int) -> None:
    """A cut-off the run can show: 1 up to the results it kept per query."""
    if not 1 <= k <= run.depth:
        raise SearchGradeError(
            f"k of {k} is outside 1..{run.depth}: run {run.run_id} kept {run.depth} results per "
            "query; pick a k up to that"
        )


def metric_rows(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One metric's rows of a summary table, in display order, with each strategy's label."""
    rows = table[table["metric"] == metric].drop(columns="metric").copy()
    rows["order"] = rows["strategy"].map(display_rank)
    rows = rows.sort_values(["order", "strategy"]).drop(columns="order").reset_index(drop=True)
    rows.insert(1, "label", rows["strategy"].map(label))
    return rows


@dataclass
class Sentence:
    """A finding in words, with how much it matters ("good", "warn", "info")."""

    text: str
    kind: str = "info"
    #: The strategy a comparison is about, when it is one.
    subject: str | None = None


def plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"
