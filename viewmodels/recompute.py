"""Metrics at any cut-off with their confidence intervals, for the dashboard: read when the run
stored them, else recomputed from its stored results and grades (engine/run/stored_metrics.py).

The confidence intervals of a recomputed cut-off come from one bootstrap index matrix shared by
all strategies and metrics (engine.statistics.bootstrap.bootstrap_cis).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from searchgrade.engine.metrics import METRIC_NAMES, SOURCE_FOUND
from searchgrade.engine.run.stored_metrics import (
    Recomputed,
    check_cutoff,
    per_query_values,
    recompute_values,
    wide_values,
)
from searchgrade.engine.statistics.bootstrap import bootstrap_cis
from searchgrade.engine.store import RunRecord, Store
from searchgrade.viewmodels.common import RECOMPUTE_RESAMPLES

#: per_query_values and recompute_values are the run's (engine/run/stored_metrics.py), shown here too.
__all__ = ["SUMMARY_COLUMNS", "Figures", "Recomputed", "per_query_values", "recompute_values", "summary"]

SUMMARY_COLUMNS = ["strategy", "metric", "value", "ci_low", "ci_high", "n"]


class Figures:
    """One run's metrics at one cut-off: read where the run stored them, else recomputed once."""

    def __init__(self, store: Store, run: RunRecord, k: int):
        check_cutoff(run, k)
        self.store, self.run, self.k = store, run, k
        self.stored = k in store.stored_cutoffs(run.run_id)
        self._recomputed: Recomputed | None = None

    def recomputed(self) -> Recomputed:
        """Every metric (and source found) recomputed: a cut-off the run did not store."""
        if self._recomputed is None:
            self._recomputed = Recomputed(self.store, self.run, [*METRIC_NAMES, SOURCE_FOUND], self.k)
        return self._recomputed

    def per_query(self, metric: str) -> pd.DataFrame:
        """One metric per strategy and query: columns strategy, query_id, value (queries without
        a value left out, as the stored rows leave them out)."""
        if self.stored:
            return self.store.metric_frame(self.run.run_id, metric, self.k)
        return self.recomputed().per_query(metric)

    def wide(self, metric: str) -> pd.DataFrame:
        """One metric as one column per strategy, one row per query (indexed by id, in id order),
        NaN where a strategy has no value for it (engine/run/stored_metrics.py's ``wide_values``)."""
        return wide_values(self.store, self.run, metric, self.k,
                           None if self.stored or metric not in (*METRIC_NAMES, SOURCE_FOUND) else self.recomputed())

    def summary(self) -> pd.DataFrame:
        """Every metric per strategy with its 95% CI: strategy, metric, value, ci_low, ci_high, n."""
        if self.stored:
            rows = self.store.metric_summary(self.run.run_id, self.k)
            return pd.DataFrame(rows, columns=["strategy", "metric", "k", *SUMMARY_COLUMNS[2:]])[
                SUMMARY_COLUMNS]
        recomputed = self.recomputed()
        columns, keys = [], []
        for i, strategy in enumerate(recomputed.strategies):
            for metric, values in recomputed.values.items():
                # Left out where a query has no value (every judgment failed; no source document).
                column = values[i][~np.isnan(values[i])]
                if len(column):
                    columns.append(column)
                    keys.append((strategy, metric))
        intervals = bootstrap_cis(columns, n_resamples=RECOMPUTE_RESAMPLES, seed=0)
        return pd.DataFrame([(s, m, ci.mean, ci.low, ci.high, len(c))
                             for (s, m), ci, c in zip(keys, intervals, columns, strict=True)],
                            columns=SUMMARY_COLUMNS)


def summary(store: Store, run: RunRecord, k: int) -> pd.DataFrame:
    """Every metric per strategy at cut-off k with its 95% CI: strategy, metric, value, ci_low, ci_high, n.

    Stored summaries are read; a cut-off the run did not store is recomputed from stored grades.
    """
    return Figures(store, run, k).summary()
