"""What every screen's view model shares: the headline metric, labels, sentences, the direction
of each metric, and one open database per view."""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import Concatenate, ParamSpec, TypeVar

import pandas as pd

from searchgrade.engine.metrics import REGISTRY, higher_is_better, metric_record, offered_metrics
from searchgrade.engine.run.strategies import display_rank, label
from searchgrade.engine.statistics.paired import ALPHA as PAIRED_ALPHA
from searchgrade.engine.store import RunRecord, Store

#: The headline metric: DCG at 10 (or at the run's depth when it retrieved fewer).
PRIMARY_METRIC = "dcg"
PRIMARY_K = 10
#: The family-wise level of a page's paired comparisons (engine/statistics/paired.py): a
#: difference is significant when its interval, adjusted for the m comparisons shown, excludes 0.
ALPHA = PAIRED_ALPHA
#: Resamples of the CIs of metrics recomputed at a cut-off the run did not store.
RECOMPUTE_RESAMPLES = 1_000

#: Metric key -> its name on the pages, from the metric records (engine/metrics/registry.py).
METRIC_LABELS = {key: record.label for key, record in REGISTRY.items()}
WITHOUT, WITH = "Without reranker", "With reranker"


def metric_label(metric: str, k: int) -> str:
    """ "DCG@10", "Mean relevance@5"."""
    return f"{METRIC_LABELS.get(metric, metric)}@{k}"


def metric_names(*runs: RunRecord) -> list[str]:
    """The metrics the pickers offer for some runs: those that apply to the labels of every one
    (engine.metrics.offered_metrics: no "highly relevant" share on binary labels, infAP only where
    the qrels record sampling, source found only for generated queries), diagnostics left out
    (judged@k, the RBP residual are shown beside the metrics, never ranked). No run: every metric
    that applies to some labels."""
    if not runs:
        return offered_metrics(None, sampled=True, generated=True)
    offered = [set(offered_metrics(run.grade_max, sampled=bool(run.stats.get("pooled_unjudged")),
                                   generated=run.mode == "llm")) for run in runs]
    return [m for m in REGISTRY if all(m in names for names in offered)]


def best_word(metric: str) -> str:
    """ "highest" or "lowest": the best value of ``metric`` in words (its record's)."""
    return metric_record(metric).best_word


def is_llm_run(run: RunRecord) -> bool:
    """The run used the LLM: its mode, or qrels with the judge (agreement, unjudged results)."""
    return run.mode == "llm" or bool(run.config.get("llm"))


def primary_k(run: RunRecord) -> int:
    return min(PRIMARY_K, run.depth)


def stored_cutoffs(store: Store, run_id: str) -> list[int]:
    return store.stored_cutoffs(run_id)


def best_row(rows: pd.DataFrame, metric: str) -> pd.Series:
    """The row with the best value of ``metric``: the largest, or the smallest where lower is
    better; ties go to the row listed first (baselines before rerankers: the cheaper choice)."""
    return rows.loc[rows["value"].idxmax() if higher_is_better(metric) else rows["value"].idxmin()]


P = ParamSpec("P")
R = TypeVar("R")


def one_session(view: Callable[Concatenate[Store, P], R]) -> Callable[Concatenate[Store, P], R]:
    """Run a view model's reads over one open database (``Store.session``): one file open per
    view instead of one per read."""

    @functools.wraps(view)
    def wrapper(store: Store, *args: P.args, **kwargs: P.kwargs) -> R:
        with store.session():
            return view(store, *args, **kwargs)

    return wrapper


def metric_rows(table: pd.DataFrame, metric: str) -> pd.DataFrame:
    """One metric's rows of a summary table, in display order, with each strategy's label."""
    others = [c for c in table.columns if c not in ("strategy", "metric")]
    rows = sorted((r for r in table.to_dict("records") if r["metric"] == metric),
                  key=lambda r: (display_rank(r["strategy"]), r["strategy"]))
    return pd.DataFrame([{"strategy": r["strategy"], "label": label(r["strategy"]),
                          **{c: r[c] for c in others}} for r in rows],
                        columns=["strategy", "label", *others])


@dataclass
class Sentence:
    """A finding in words, with how much it matters ("good", "warn", "info")."""

    text: str
    kind: str = "info"
    #: The strategy a comparison is about, when it is one.
    subject: str | None = None


def plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"
