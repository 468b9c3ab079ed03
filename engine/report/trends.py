"""The Trends screen: one metric across complete runs over time, per strategy.

Read from the run-level summary (run_summary: one row per complete run, strategy, metric and
cut-off, written when the run completes), one query for the whole chart whatever the number of runs.
"""

from __future__ import annotations

import pandas as pd

from searchgrade.engine.report.common import one_session
from searchgrade.engine.run.strategies import label
from searchgrade.engine.store import Store


@one_session
def trend(store: Store, metric: str, k: int, collection_name: str | None = None) -> pd.DataFrame:
    """One metric across complete runs, oldest first: run_id, name, created_at, strategy, label, value, CI."""
    frame = pd.DataFrame(store.trend(metric, k, collection_name),
                         columns=["run_id", "name", "created_at", "collection_name", "strategy",
                                  "value", "ci_low", "ci_high", "n"])
    frame["label"] = frame["strategy"].map(label)
    return frame


def trend_cutoffs(store: Store) -> list[int]:
    """Cut-offs stored by at least one complete run."""
    return store.trend_cutoffs()
