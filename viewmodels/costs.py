"""What each strategy of a run costs, beside its quality: its index (indexes/variants/costs.py, as
the build recorded it in the run's stats) and its query latency (the run's one latency summary).

``show --format json`` lists ``costs`` with exactly ``COST_FIELDS``; Results draws quality against
one of them (viewmodels/variants.py).
"""

from __future__ import annotations

from typing import Any

from searchgrade.engine.run.strategies import strategy_order
from searchgrade.engine.store import RunRecord, Store

#: One strategy's cost figures, as ``show --format json`` gives them.
COST_FIELDS = ("strategy", "index_build_s", "items_per_s", "index_bytes", "p50_ms", "p95_ms", "chunks_per_doc")
#: The figures a reader can weigh quality against, lower is cheaper: key -> words.
COST_AXES = {
    "p50_ms": "Query latency, median (ms)",
    "p95_ms": "Query latency, p95 (ms)",
    "index_build_s": "Index build time (s)",
    "index_bytes": "Index size on disk (MB)",
}


def cost_rows(store: Store, run: RunRecord, latency: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """One row per strategy with results, in display order: ``COST_FIELDS`` plus ``reused`` (its
    index was reloaded, not built) and ``embedded`` (items embedded in this run).

    Args:
        latency: the run's latency summary when the caller has it (Results keeps it); else read.
    """
    latency = latency if latency is not None else store.latency_summary(run.run_id)
    by_strategy = {r["strategy"]: r for r in latency}
    built = (run.stats or {}).get("costs") or {}
    rows = []
    for strategy in strategy_order(by_strategy):
        figures = built.get(strategy) or {}
        timing = by_strategy[strategy]
        rows.append({
            "strategy": strategy,
            "index_build_s": figures.get("index_build_s"),
            "items_per_s": figures.get("items_per_s"),
            "index_bytes": figures.get("index_bytes"),
            "p50_ms": _number(timing.get("p50_ms")),
            "p95_ms": _number(timing.get("p95_ms")),
            "chunks_per_doc": figures.get("chunks_per_doc"),
            "reused": figures.get("reused"),
            "embedded": figures.get("embedded"),
        })
    return rows


def _number(value: Any) -> float | None:
    return float(value) if value is not None else None


def costs_json(store: Store, run: RunRecord) -> list[dict[str, Any]]:
    """``show --format json``'s ``costs``: exactly ``COST_FIELDS`` per strategy."""
    return [{key: row[key] for key in COST_FIELDS} for row in cost_rows(store, run)]


def cost_lines(store: Store, run: RunRecord) -> list[str]:
    """``show``'s table of costs, one line per strategy (a dash where a figure does not apply)."""
    rows = cost_rows(store, run)
    if not rows:
        return []

    def cell(value: Any, fmt: str) -> str:
        return "-" if value is None else format(value, fmt)

    lines = [f"{'cost':<16}{'index build s':>14}{'items/s':>10}{'index MB':>10}{'p50 ms':>9}{'p95 ms':>9}"
             f"{'chunks/doc':>11}"]
    for r in rows:
        size = r["index_bytes"] / 1e6 if r["index_bytes"] is not None else None
        built = cell(r["index_build_s"], ".2f") + (" (reused)" if r["reused"] else "")
        lines.append(f"{r['strategy']:<16}{built:>14}{cell(r['items_per_s'], ',.0f'):>10}{cell(size, '.2f'):>10}"
                     f"{cell(r['p50_ms'], '.1f'):>9}{cell(r['p95_ms'], '.1f'):>9}{cell(r['chunks_per_doc'], '.2f'):>11}")
    return lines
