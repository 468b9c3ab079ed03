"""Exporting a stored run: TREC run files per strategy, per-query metrics as CSV or Parquet."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from searchgrade.core.records import SearchGradeError

if TYPE_CHECKING:
    import pandas as pd

    from searchgrade.engine.store import Store

EXPORT_FORMATS = ("trec", "csv", "parquet")


def export_run(store: Store, run_id: str, fmt: str, out_dir: str | Path) -> list[Path]:
    """Write a run's files into out_dir and return their paths.

    trec: one file per strategy, `<strategy>.trec`, lines `qid Q0 docid rank score tag` with the run id
    as tag. csv / parquet: `<run_id>-metrics.<ext>`, one row per strategy, query, metric and k, with
    the strategy's top 1 for the query (``top1``: relevant, judged_not_relevant, unjudged or
    judge_failed) and, for a failed query, its cause (``cause``; engine/failures/causes.py).
    """
    if fmt not in EXPORT_FORMATS:
        raise SearchGradeError(f"--format {fmt!r} is not one of {', '.join(EXPORT_FORMATS)}")
    run = store.get_run(run_id)
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SearchGradeError(f"cannot create --out directory {out}: {exc.strerror}") from None
    if fmt == "trec":
        return _export_trec(store, run.run_id, out)
    return [_export_metrics(store, run.run_id, fmt, out)]


def trec_lines(rows: list[dict], tag: str) -> list[str]:
    """TREC run lines from result rows sorted by query and rank."""
    return [f"{r['query_id']} Q0 {r['doc_id']} {r['rank']} {r['score']:.6f} {tag}" for r in rows]


def _export_trec(store: Store, run_id: str, out: Path) -> list[Path]:
    by_strategy: dict[str, list[dict]] = {}
    for row in store.results_with_grades(run_id):
        by_strategy.setdefault(row["strategy"], []).append(row)
    if not by_strategy:
        raise SearchGradeError(f"run {run_id} has no stored results to export (did it complete?)")
    paths = []
    for strategy, rows in by_strategy.items():
        path = out / f"{strategy}.trec"
        tmp = path.with_suffix(".trec.tmp")
        tmp.write_text("\n".join(trec_lines(rows, run_id)) + "\n", encoding="utf-8")
        tmp.replace(path)
        paths.append(path)
    return paths


def _export_metrics(store: Store, run_id: str, fmt: str, out: Path) -> Path:
    import pandas as pd

    frame = pd.DataFrame(store.metric_values(run_id))
    if frame.empty:
        raise SearchGradeError(f"run {run_id} has no stored metrics to export (did it complete?)")
    frame.insert(0, "run_id", run_id)
    frame = frame.merge(_failure_columns(store, run_id), on=["strategy", "query_id"], how="left")
    path = out / f"{run_id}-metrics.{fmt}"
    tmp = out / f".{path.name}.tmp"
    if fmt == "csv":
        frame.to_csv(tmp, index=False)
    else:
        frame.to_parquet(tmp, index=False)
    tmp.replace(path)
    return path


def _failure_columns(store: Store, run_id: str) -> pd.DataFrame:
    """strategy, query_id, top1 (what the strategy's top 1 for the query is) and cause (a failed
    query's, engine/failures/)."""
    import pandas as pd

    from searchgrade.engine.failures.diagnosis import diagnose_run

    run = store.get_run(run_id)
    top1 = pd.DataFrame(store.top1_kinds(run.run_id, run.threshold), columns=["strategy", "query_id", "top1"])
    causes = diagnose_run(store, run).rows[["strategy", "query_id", "cause"]]
    return top1.merge(causes, on=["strategy", "query_id"], how="left")
