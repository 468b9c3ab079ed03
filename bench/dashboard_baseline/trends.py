"""The Trends screen: one metric across complete runs over time, per strategy."""

from __future__ import annotations

import pandas as pd

from bench.dashboard_baseline.common import stored_cutoffs
from searchgrade.engine.run.strategies import label
from searchgrade.engine.store import Store


def trend(store: Store, metric: str, k: int, collection_name: str | None = None) -> pd.DataFrame:
    """One metric across complete runs, oldest first: run_id, name, created_at, strategy, label, value, CI."""
    frame = pd.DataFrame(store.trend(metric, k, collection_name),
                         columns=["run_id", "name", "created_at", "collection_name", "strategy",
                                  "value", "ci_low", "ci_high", "n"])
    frame["label"] = frame["strategy"].map(label)
    return frame


def trend_cutoffs(store: Store) -> list[int]:
    """Cut-offs stored by at least one complete run."""
    return sorted({k for run in store.list_runs() if run.status == "complete"
                   for k in stored_cutoffs(store, run.run_id)})
