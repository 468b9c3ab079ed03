"""What the Results page shows for one run, metric and k: the record results.py builds and the
recommendations read."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from searchgrade.engine.store import RunRecord
from searchgrade.viewmodels.common import Sentence
from searchgrade.viewmodels.llm_panel import LLMPanel


@dataclass
class Headline:
    metric: str
    value: float
    ci_low: float
    ci_high: float
    strategy: str
    label: str
    n_queries: int
    #: The strategies compared at this metric and k: with one, there was no choice to make.
    n_strategies: int = 1
    #: The strategies the page's paired test cannot tell from the best (labels): while there are
    #: any, the best is the highest on these queries, not a recommendation.
    ties: list[str] = field(default_factory=list)
    #: The strategies whose comparison with the best the holes in the judgments withhold (labels):
    #: too few of their results were judged to tell (engine/statistics/holes.py).
    withheld: list[str] = field(default_factory=list)

    @property
    def recommended(self) -> bool:
        """There was a choice, and the best beats every other strategy (its interval excludes 0)."""
        return self.n_strategies >= 2 and not self.ties and not self.withheld


@dataclass
class ResultsView:
    """Everything the results page shows for one run, metric and k."""

    run: RunRecord
    metric: str
    k: int
    headline: Headline | None
    strategies: list[str]
    #: strategy, label, value, ci_low, ci_high, n for the selected metric.
    metric_summary: pd.DataFrame
    #: Per retrieval strategy and reranker (results.with_without): Strategy (the base's label, or
    #: the reranked twin's when a declared reranker ran), Without reranker, With reranker, Change;
    #: for the selected metric and for mean relevance.
    metric_table: pd.DataFrame
    relevance_table: pd.DataFrame
    #: Per strategy and rank 1..k (results.relevance_by_position): strategy, rank, mean_grade (over
    #: the queries with a graded result there), n, judge_failed, with_result (queries with a
    #: result at the rank), queries (answered), mean_grade_all (missing results as 0), label.
    by_position: pd.DataFrame
    best_queries: pd.DataFrame
    worst_queries: pd.DataFrame
    reranker_table: pd.DataFrame
    distribution: pd.DataFrame
    significance: list[Sentence]
    recommendations: list[Sentence]
    latency: pd.DataFrame
    notes: list[str] = field(default_factory=list)
    #: The LLM's part of the run (judge, calls, failures, source found, agreement); None without LLM.
    llm: LLMPanel | None = None
    #: What the ANN index costs against exact search, in words; None without ANN.
    ann_index: str | None = None
    #: Which model and backend embedded the documents, in words; None without ANN.
    embedding: str | None = None
    #: Per strategy: queries answered, short (fewer than k results), share, flagged (share > 10%):
    #: strategy, Strategy, queries, short, share, flagged (results.short_lists).
    short_lists: pd.DataFrame = field(default_factory=pd.DataFrame)
    #: A warning per flagged strategy, in words (the missing places count 0, not relevant).
    short_list_warnings: list[Sentence] = field(default_factory=list)
    #: The m comparisons the page's paired differences (``significance``, ``reranker_table``) are
    #: one family of: each interval is a 95% CI adjusted for m (engine/statistics/paired.py).
    comparisons: int = 0
    #: What "significant" means over those m comparisons, in words ("" when none was made).
    significance_note: str = ""
