"""The Trends screen: one metric across complete runs over time, one series per collection and
strategy, broken where it would join what is not comparable.

Read from the run-level summary (run_summary: one row per complete run, strategy, metric and
cut-off, written when the run completes), one query for the whole chart whatever the number of runs.

A series joins two runs only when they are comparable: the same collection and the same query set
(the same queries, by id and text: a suite). A series breaks (a gap in its line) at a run in which
its strategy did not run, and between two runs whose query sets differ: SciFact at 0.7 joined to a
30-document collection at 3.3 is no five-fold jump, and a new sample of queries is no change in
quality.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from searchgrade.engine.run.strategies import label, strategy_order
from searchgrade.engine.store import Store
from searchgrade.viewmodels.common import one_session

TREND_COLUMNS = ["run_id", "name", "created_at", "collection_name", "strategy", "value", "ci_low", "ci_high",
                 "n", "label", "query_set"]
POINT_COLUMNS = ["created_at", "run_id", "name", "value", "ci_low", "ci_high", "n"]


@dataclass
class TrendSeries:
    """One strategy on one collection across its runs, oldest first."""

    collection: str
    strategy: str
    #: The legend's name: the strategy's label, with the collection when the chart shows several.
    name: str
    #: created_at, run_id, name, value, ci_low, ci_high, n: one row per run of the collection and a
    #: row between two query sets, NaN value where the line breaks.
    points: pd.DataFrame
    #: How many times the line breaks because the query set changed.
    query_set_breaks: int = 0


@one_session
def trend(store: Store, metric: str, k: int, collection_name: str | None = None) -> pd.DataFrame:
    """One metric across complete runs, oldest first: run_id, name, created_at, collection_name,
    strategy, value, CI, n, label, query_set (``Store.query_set_keys``: equal exactly when two runs hold
    the same queries), in one read for every run."""
    frame = pd.DataFrame(store.trend(metric, k, collection_name), columns=TREND_COLUMNS[:-2])
    frame["label"] = frame["strategy"].map(label)
    frame["query_set"] = frame["run_id"].map(store.query_set_keys(frame["run_id"].unique().tolist()))
    return frame[TREND_COLUMNS]


def trend_series(frame: pd.DataFrame) -> list[TrendSeries]:
    """``trend``'s rows as the chart's series: one per collection and strategy, each with a point per
    run of its collection (NaN where the strategy did not run) and a NaN point between two runs on
    different query sets, so that the line breaks there."""
    several = frame["collection_name"].nunique() > 1
    out = []
    for collection in sorted(frame["collection_name"].unique()):
        rows = frame[frame["collection_name"] == collection]
        runs = rows.drop_duplicates("run_id").sort_values(["created_at", "run_id"])
        for strategy in strategy_order(rows["strategy"].unique()):
            values = rows[rows["strategy"] == strategy].set_index("run_id")
            points, breaks, previous = [], 0, None
            for run in runs.itertuples(index=False):
                if previous is not None and run.query_set != previous.query_set:
                    breaks += 1
                    middle = previous.created_at + (run.created_at - previous.created_at) / 2
                    points.append({"created_at": middle, "run_id": None, "name": None})
                point = {"created_at": run.created_at, "run_id": run.run_id, "name": run.name}
                if run.run_id in values.index:
                    point.update(values.loc[run.run_id, ["value", "ci_low", "ci_high", "n"]].to_dict())
                points.append(point)
                previous = run
            name = label(strategy) + (f" · {collection}" if several else "")
            out.append(TrendSeries(collection, strategy, name,
                                   pd.DataFrame(points, columns=POINT_COLUMNS).astype(
                                       {"value": float, "ci_low": float, "ci_high": float}), breaks))
    return out


def trend_table(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per run: Date, Run, Collection, then a column per strategy (NaN where it did not run)."""
    if frame.empty:
        return pd.DataFrame(columns=["Date", "Run", "Collection"])
    wide = frame.pivot_table(index=["created_at", "name", "collection_name", "run_id"], columns="label",
                             values="value", sort=False).reset_index()
    order = [label(s) for s in strategy_order(frame["strategy"].unique())]
    wide = wide.sort_values(["created_at", "run_id"]).drop(columns="run_id")
    wide = wide.rename(columns={"created_at": "Date", "name": "Run", "collection_name": "Collection"})
    return wide[["Date", "Run", "Collection", *[c for c in order if c in wide.columns]]]


def trend_cutoffs(store: Store) -> list[int]:
    """Cut-offs stored by at least one complete run."""
    return store.trend_cutoffs()
