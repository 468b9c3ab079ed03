"""What a run on a query set says about traffic: each strategy's traffic-weighted mean beside its
per-query mean, the figures per band (head, torso, tail), how often each band fails, and, for a
run graded by clicks with the judge, the judge's agreement with the clicks.

The per-query mean and its interval are the run's stored ones (the same figure as everywhere else);
the traffic-weighted ones come from engine/statistics/weighted_bootstrap.py with the query set's
design weights, the run's seed and number of resamples. Computed when read: a set of a few hundred
queries takes well under a second.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from searchgrade.engine.run.strategies import label, strategy_order
from searchgrade.engine.statistics.bootstrap import bootstrap_cis
from searchgrade.engine.statistics.weighted_bootstrap import weighted_bootstrap_cis
from searchgrade.engine.store import RunRecord, Store
from searchgrade.engine.traffic.bands import BANDS
from searchgrade.engine.traffic.query_sets import set_queries
from searchgrade.viewmodels.clicks import run_interleaving
from searchgrade.viewmodels.common import metric_label
from searchgrade.viewmodels.llm_panel import AgreementView, agreement_view

#: A query fails when its top result is graded 0 (as the Results page's failed queries).
FAILURE_METRIC = ("mean_relevance", 1)


@dataclass
class TrafficView:
    set_name: str
    log_name: str
    method: str
    metric: str
    k: int
    #: Searches the set's queries carry, and the log's.
    searches: int
    log_searches: int
    #: Per strategy: strategy, Strategy, Queries, Per-query mean, CI low, CI high, Traffic-weighted,
    #: TW CI low, TW CI high.
    table: pd.DataFrame
    #: Per strategy and band: the same columns, plus Band, Share of searches, Failure rate.
    bands: pd.DataFrame
    #: "Tail queries fail 3.1x as often as head queries ..." (None: too little to say).
    sentence: str | None
    #: The judge against the clicks (runs graded by clicks with the judge).
    agreement: AgreementView | None = None
    clicks: dict[str, Any] | None = None
    notes: list[str] = field(default_factory=list)


def _aligned(store: Store, run: RunRecord, metric: str, k: int, query_ids: list[str]) -> tuple[list[str], np.ndarray]:
    strategies, ids, matrix = store.metric_matrix(run.run_id, metric, k)
    position = {q: i for i, q in enumerate(ids)}
    out = np.full((len(strategies), len(query_ids)), np.nan)
    for j, q in enumerate(query_ids):
        if q in position:
            out[:, j] = matrix[position[q]]
    return strategies, out


def _rows(strategies: list[str], values: np.ndarray, weights: np.ndarray, strata: list[str], fixed: np.ndarray,
          n_resamples: int, seed: int) -> list[dict[str, Any]]:
    weighted = weighted_bootstrap_cis(values, weights, strata, fixed, n_resamples=n_resamples, seed=seed)
    present = [row[~np.isnan(row)] for row in values]
    plain = bootstrap_cis([p for p in present if p.size], n_resamples=n_resamples, seed=seed)
    plain_iter = iter(plain)
    rows = []
    for strategy, row, w in zip(strategies, present, weighted, strict=True):
        if not row.size:
            continue
        p = next(plain_iter)
        rows.append({"strategy": strategy, "Strategy": label(strategy), "Queries": int(row.size),
                     "Per-query mean": p.mean, "CI low": p.low, "CI high": p.high,
                     "Traffic-weighted": w.mean, "TW CI low": w.low, "TW CI high": w.high})
    return rows


def traffic_view(store: Store, run: RunRecord, metric: str, k: int) -> TrafficView | None:
    """The traffic figures of a run on a query set at metric@k (None: the run used no query set)."""
    set_name = (run.config or {}).get("query_set")
    if not set_name or not store.query_set_exists(set_name):
        return None
    record = store.query_set(set_name)
    queries = set_queries(store, set_name)
    run_ids = {q["query_id"] for q in store.queries(run.run_id)}
    notes = []
    if run_ids - {q.query_id for q in queries}:
        notes.append(f"query set {set_name!r} was replaced after this run: its weights cover "
                     f"{len(run_ids & {q.query_id for q in queries})} of the run's {len(run_ids)} queries")
    queries = [q for q in queries if q.query_id in run_ids]
    ids = [q.query_id for q in queries]
    weights = np.array([q.weight for q in queries])
    strata = [q.stratum for q in queries]
    fixed = np.array([q.fixed for q in queries])
    bands = np.array([q.band for q in queries])
    n_resamples = int((run.config or {}).get("n_bootstrap") or 10_000)
    seed = int((run.config or {}).get("seed") or 0)
    strategies, values = _aligned(store, run, metric, k, ids)
    order = {s: i for i, s in enumerate(strategy_order(strategies))}
    table = pd.DataFrame(_rows(strategies, values, weights, strata, fixed, n_resamples, seed))
    stored = {(r["strategy"]): r for r in store.metric_summary(run.run_id, k) if r["metric"] == metric}
    for i, row in table.iterrows():  # the stored figure where there is one: one value wherever it appears
        s = stored.get(row["strategy"])
        if s is not None:
            table.loc[i, ["Per-query mean", "CI low", "CI high"]] = [s["value"], s["ci_low"], s["ci_high"]]
    if not table.empty:
        table = table.sort_values("strategy", key=lambda c: c.map(order)).reset_index(drop=True)
    _, failed_values = _aligned(store, run, *FAILURE_METRIC, ids)
    failed = np.where(np.isnan(failed_values), np.nan, (failed_values == 0).astype(float))
    total = float(sum(q.searches for q in queries)) or 1.0
    band_rows = []
    for band in BANDS:
        members = np.flatnonzero(bands == band)
        if members.size == 0:
            continue
        part = _rows(strategies, values[:, members], weights[members], [strata[i] for i in members],
                     fixed[members], n_resamples, seed)
        share = sum(queries[i].searches for i in members) / total
        for row in part:
            f = failed[strategies.index(row["strategy"]), members]
            row.update({"Band": band, "Share of searches": share,
                        "Failure rate": float(np.nanmean(f)) if np.isfinite(f).any() else np.nan})
        band_rows += part
    by_band = pd.DataFrame(band_rows)
    if not by_band.empty:
        by_band = by_band.sort_values(["Band", "strategy"], key=lambda c: c.map(
            {b: i for i, b in enumerate(BANDS)} if c.name == "Band" else order)).reset_index(drop=True)
    stats = run.stats or {}
    return TrafficView(set_name, record["log_name"], record["method"], metric, k, int(record["searches"]),
                       int(record["log_searches"]), table, by_band, failure_sentence(table, by_band, metric, k),
                       agreement_view(stats.get("click_agreement", {}), run.threshold), stats.get("clicks"), notes)


def failure_sentence(table: pd.DataFrame, by_band: pd.DataFrame, metric: str, k: int) -> str | None:
    """How much more often the tail fails than the head, for the best strategy by traffic-weighted metric
    (the only one, when one was evaluated)."""
    if table.empty or by_band.empty:
        return None
    best = table.loc[table["Traffic-weighted"].idxmax()]
    rates = {r["Band"]: r["Failure rate"] for _, r in by_band[by_band["strategy"] == best["strategy"]].iterrows()}
    head, tail = rates.get("head"), rates.get("tail")
    if head is None or tail is None or np.isnan(head) or np.isnan(tail):
        return None
    # A lone strategy is not "the best" of anything: it is the one evaluated.
    which = (f"the best by traffic-weighted {metric_label(metric, k)}" if len(table) > 1
             else "the only strategy evaluated")
    where = (f"with {best['Strategy']} ({which}), the top result is "
             f"graded 0 for {tail:.0%} of tail queries and {head:.0%} of head queries")
    if head > 0 and tail > 0:
        ratio = tail / head
        lead = (f"Tail queries fail {ratio:.1f}x as often as head queries" if ratio >= 1.05 else
                f"Head queries fail {1 / ratio:.1f}x as often as tail queries" if ratio <= 1 / 1.05 else
                "Head and tail queries fail about as often")
    elif tail > 0:
        lead = "Tail queries fail; head queries never do"
    elif head > 0:
        lead = "Head queries fail; tail queries never do"
    else:
        return f"No head or tail query fails: {where}."
    return f"{lead}: {where}."


def _number(value: Any) -> str:
    return "-" if value is None or (isinstance(value, float) and np.isnan(value)) else f"{value:.3f}"


def traffic_json(store: Store, run: RunRecord, metric: str, k: int) -> dict[str, Any] | None:
    """The traffic figures for `show --format json` (None: no query set)."""
    view = traffic_view(store, run, metric, k)
    if view is None:
        return None
    return {"query_set": view.set_name, "log": view.log_name, "method": view.method, "metric": view.metric,
            "k": view.k, "searches": view.searches, "log_searches": view.log_searches,
            "strategies": view.table.to_dict("records"), "bands": view.bands.to_dict("records"),
            "failure": view.sentence, "clicks": view.clicks,
            "interleaving": run_interleaving(store, run)}


def traffic_lines(store: Store, run: RunRecord, metric: str, k: int) -> list[str]:
    """The traffic figures as `searchgrade show` prints them."""
    view = traffic_view(store, run, metric, k)
    if view is None:
        return []
    share = view.searches / view.log_searches if view.log_searches else 0.0
    name = metric_label(view.metric, view.k)
    out = [f"query set {view.set_name} ({view.method}, log {view.log_name}: {share:.1%} of its searches); "
           f"{name}, per-query mean vs traffic-weighted mean with 95% CIs:"]
    for _, r in view.table.iterrows():
        out.append(f"  {r['strategy']:<16} {r['Per-query mean']:.3f} [{r['CI low']:.3f},{r['CI high']:.3f}]   "
                   f"traffic-weighted {r['Traffic-weighted']:.3f} [{r['TW CI low']:.3f},{r['TW CI high']:.3f}]")
    for _, r in view.bands.iterrows():
        out.append(f"  {r['Band']:<5} {r['strategy']:<16} {r['Queries']:>5} queries {r['Share of searches']:>6.1%} of "
                   f"searches: traffic-weighted {r['Traffic-weighted']:.3f} [{r['TW CI low']:.3f},"
                   f"{r['TW CI high']:.3f}], top result graded 0 for {r['Failure rate']:.0%}")
    if view.sentence:
        out.append(f"  {view.sentence}")
    if view.agreement is not None:
        kappa = view.agreement.kappas["Value"].tolist()
        out.append(f"  judge vs clicks on {view.agreement.n} pairs: kappa {_number(kappa[0])}, linear-weighted "
                   f"{_number(kappa[1])}")
    interleaved = run_interleaving(store, run)
    if interleaved:
        out.append("  team-draft interleaving of the set's searches:")
        out += [f"    {c['sentence']}" for c in interleaved]
    out += [f"  note: {n}" for n in view.notes]
    return out
