"""Results by kind of generated query: natural language vs keyword, and by lexical overlap with the
source document (engine/run/lexical_overlap.py), so a user sees whether a strategy wins only on queries that
copy the document's words.

Each cell is the strategy's mean of the metric over the queries of the slice, with the number of
queries and a bootstrap CI; a gap that is large between bands (BM25 far ahead on high-overlap
queries, level on low-overlap ones) says the generated queries favour lexical matching.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from searchgrade.engine.run.lexical_overlap import BANDS, band
from searchgrade.engine.run.strategies import label, strategy_order
from searchgrade.engine.statistics.bootstrap import bootstrap_ci
from searchgrade.engine.store import Store
from searchgrade.viewmodels.common import RECOMPUTE_RESAMPLES, Sentence, metric_label
from searchgrade.viewmodels.recompute import per_query_values

QUERY_TYPES = {"natural": "natural language", "keyword": "keyword"}


@dataclass
class QuerySlices:
    #: Slice kind ("Query type" or "Overlap"), Slice, Strategy, strategy, value, ci_low, ci_high, n.
    rows: pd.DataFrame
    #: Mean term overlap and longest shared span per query type.
    overlap_summary: pd.DataFrame
    sentences: list[Sentence]


def query_slices(store: Store, run_id: str, metric: str, k: int) -> QuerySlices | None:
    """The metric by query type and by overlap band, or None when the run has no generated query."""
    run = store.get_run(run_id)
    queries = pd.DataFrame(store.queries(run_id), columns=["query_id", "text", "query_type", "source_doc_id"])
    queries = queries[queries["query_type"].isin(list(QUERY_TYPES))]
    if queries.empty:
        return None
    overlap = pd.DataFrame(store.query_overlap(run_id), columns=["query_id", "term_overlap", "longest_span"])
    queries = queries.merge(overlap, on="query_id", how="left")
    queries["type_name"] = queries["query_type"].map(QUERY_TYPES)
    queries["band"] = queries["term_overlap"].map(lambda v: None if pd.isna(v) else band(v))
    values = per_query_values(store, run, metric, k).merge(queries, on="query_id")
    values = values.dropna(subset=["value"])
    rows = []
    order = strategy_order(set(values["strategy"]))
    for kind, column, names in (("Query type", "type_name", list(QUERY_TYPES.values())),
                                ("Overlap", "band", [name for _, name in reversed(BANDS)])):
        for name in names:
            for strategy in order:
                cell = values[(values[column] == name) & (values["strategy"] == strategy)]["value"]
                if cell.empty:
                    continue
                ci = bootstrap_ci(cell.to_numpy(), n_resamples=RECOMPUTE_RESAMPLES, seed=0)
                rows.append((kind, name, label(strategy), strategy, ci.mean, ci.low, ci.high, len(cell)))
    frame = pd.DataFrame(rows, columns=["Slice kind", "Slice", "Strategy", "strategy", "value", "ci_low",
                                        "ci_high", "n"])
    summary = (queries.groupby("type_name", sort=False)
               .agg(Queries=("query_id", "size"), term_overlap=("term_overlap", "mean"),
                    longest_span=("longest_span", "mean"))
               .reset_index()
               .rename(columns={"type_name": "Query type", "term_overlap": "Mean term overlap",
                                "longest_span": "Mean longest shared span"}))
    return QuerySlices(frame, summary, _sentences(frame, metric_label(metric, k)))


def _sentences(frame: pd.DataFrame, name: str) -> list[Sentence]:
    """Where the best strategy differs between the low and the high overlap band, say so."""
    bands = frame[frame["Slice kind"] == "Overlap"]
    if bands["strategy"].nunique() < 2:
        return []  # a lone strategy leads nothing: there is no comparison to make
    low, high = BANDS[-1][1], BANDS[0][1]
    best = {}
    for band_name in (low, high):
        cells = bands[bands["Slice"] == band_name]
        if not cells.empty:
            best[band_name] = cells.loc[cells["value"].idxmax()]
    if len(best) < 2:
        return [Sentence(kind="info", text="Too few bands have queries to compare strategies across overlap; "
                                 "generate more queries to see it.")]
    lo, hi = best[low], best[high]
    if lo["strategy"] == hi["strategy"]:
        return [Sentence(kind="good", text=f"{lo['Strategy']} leads on {name} both on queries that share few terms with "
                                 f"their document ({lo['n']} queries) and on queries that copy them "
                                 f"({hi['n']}): its lead is not only lexical.")]
    return [Sentence(kind="warn", text=f"{hi['Strategy']} leads on {name} on queries that copy their document's terms "
                             f"({hi['n']} queries), {lo['Strategy']} on queries that share few "
                             f"({lo['n']}): the first may win only because the queries copy the document.")]
