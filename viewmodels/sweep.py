"""A sweep's grid (indexes/variants/sweep.py): each variant's settings, its figure at the page's
metric and k, its paired difference from the sweep's reference strategy, and its cost.

The differences of one sweep are one family (the one paired procedure, engine/statistics/paired.py):
each interval is adjusted for the sweep's number of variants.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from searchgrade.engine.statistics.paired import PairedDifference
from searchgrade.engine.store import RunRecord, Store
from searchgrade.viewmodels.common import PRIMARY_METRIC, metric_label, metric_rows, primary_k
from searchgrade.viewmodels.costs import cost_rows
from searchgrade.viewmodels.significance import comparison_record, figures_text, paired_comparisons, verdict


@dataclass
class SweepGrid:
    """One sweep of a run, at one metric and k."""

    name: str
    reference: str
    metric: str
    k: int
    axes: list[str]
    #: One per variant: its name, its axes' values, value, ci_low, ci_high, the difference from the
    #: reference (a PairedDifference or None), and its cost figures (viewmodels/costs.py).
    rows: list[dict[str, Any]] = field(default_factory=list)

    @property
    def family(self) -> int:
        return next((r["difference"].m for r in self.rows if r["difference"] is not None), 0)


def _axis_text(key: str, value: Any) -> str:
    if key == "chunking":
        return "whole documents" if value is None else (
            f"{value['method']} {value['size']}/{value.get('overlap', 0)}")
    return str(value)


def sweep_grids(store: Store, run: RunRecord, metric: str = PRIMARY_METRIC, k: int | None = None) -> list[SweepGrid]:
    """The run's sweeps (none for a run without one), each at metric@k (default the headline's k)."""
    from searchgrade.viewmodels.recompute import Figures

    sweeps = (run.config or {}).get("sweeps") or {}
    if not sweeps:
        return []
    k = k or primary_k(run)
    figures = Figures(store, run, k)
    rows = metric_rows(figures.summary(), metric).set_index("strategy")
    wide = figures.wide(metric)
    costs = {r["strategy"]: r for r in cost_rows(store, run)}
    grids = []
    for name, sweep in sweeps.items():
        reference, variants = sweep["reference"], list(sweep["variants"])
        tested: dict[tuple[str, str], PairedDifference] = paired_comparisons(
            wide, [(v, reference) for v in variants if v != reference])
        grid = SweepGrid(name, reference, metric, k, list(sweep.get("axes") or {}))
        for variant in variants:
            row = rows.loc[variant] if variant in rows.index else None
            grid.rows.append({
                "strategy": variant,
                **{key: sweep["variants"][variant].get(key) for key in grid.axes},
                "value": float(row["value"]) if row is not None else None,
                "ci_low": float(row["ci_low"]) if row is not None else None,
                "ci_high": float(row["ci_high"]) if row is not None else None,
                "difference": tested.get((variant, reference)),
                **{key: costs.get(variant, {}).get(key) for key in ("p50_ms", "index_bytes", "items_per_s",
                                                                   "chunks_per_doc")},
            })
        grids.append(grid)
    return grids


def sweep_lines(grids: list[SweepGrid]) -> list[str]:
    """The grids as text (``show`` and ``evaluate``): one line per variant."""
    lines = []
    for grid in grids:
        name = metric_label(grid.metric, grid.k)
        lines.append(f"sweep {grid.name}: {name} of each variant, and its paired difference from {grid.reference} "
                     f"(intervals adjusted for the sweep's {grid.family} comparisons)")
        for row in grid.rows:
            settings = ", ".join(_axis_text(key, row[key]) for key in grid.axes) or "-"
            value = "-" if row["value"] is None else f"{row['value']:.3f}"
            d = row["difference"]
            compared = "no paired difference" if d is None else f"{d.diff:+.3f} ({figures_text(d)}): {verdict(d)}"
            cost = []
            if row["p50_ms"] is not None:
                cost.append(f"p50 {row['p50_ms']:.1f} ms")
            if row["index_bytes"] is not None:
                cost.append(f"index {row['index_bytes'] / 1e6:.1f} MB")
            if row["chunks_per_doc"] is not None:
                cost.append(f"{row['chunks_per_doc']:.2f} chunks/doc")
            lines.append(f"  {row['strategy']} [{settings}]: {value}; vs {grid.reference} {compared}"
                         + (f"; {', '.join(cost)}" if cost else ""))
    return lines


def sweeps_json(grids: list[SweepGrid]) -> list[dict[str, Any]]:
    """The grids as plain JSON (``show --format json``'s ``sweeps``)."""
    def number(x: float | None) -> float | None:
        return None if x is None or (isinstance(x, float) and math.isnan(x)) else x

    return [{"name": g.name, "reference": g.reference, "metric": g.metric, "k": g.k, "axes": g.axes,
             "variants": [{**{key: value for key, value in r.items() if key != "difference"},
                           "value": number(r["value"]),
                           "vs_reference": comparison_record(r["strategy"], g.reference, r["difference"])
                           if r["difference"] is not None else None} for r in g.rows]}
            for g in grids]
