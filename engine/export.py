"""Exporting a stored run: TREC run files per strategy, its ranked results and per-query metrics as
CSV or Parquet.

**One ranking everywhere.** A checker (trec_eval, ir_measures, ranx) ranks an exported run by its
score column, and breaks ties its own way (trec_eval by document id descending, ir_measures and
ranx otherwise); searchgrade ranks by the stored rank (a fusion's equal scores by document id
ascending: indexes/builtin/fusion.py). So every exported score (TREC, CSV, Parquet, and MCP's
query_results) is ``ranking_scores``' strictly decreasing score within each query: the stored score
where it is already below the one above it, else lowered to just below it (by ``TIE_GAP`` of the
score above it, at least that much in absolute value). Ranked by that column alone, a checker sees
the stored ranking and reproduces every figure the app shows; the scores themselves change only at
ties (or where a system's scores rise down its list), by a hair.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from searchgrade.core.records import SearchGradeError

if TYPE_CHECKING:
    import pandas as pd

    from searchgrade.engine.store import Store

EXPORT_FORMATS = ("trec", "csv", "parquet")
#: How far below the score above it a tied (or nearly tied) score is put, relative to that score:
#: ten times a 32-bit float's precision (trec_eval's), so every checker sees the order.
TIE_GAP = 1e-6
#: Columns of the ranked-results file (CSV, Parquet).
RESULT_COLUMNS = ["run_id", "strategy", "query_id", "rank", "doc_id", "score", "grade"]


def ranking_scores(scores: Sequence[float | None]) -> list[float]:
    """One query's scores in stored rank order, made strictly decreasing (see the module).

    A missing or non-finite score is put just below the one above it (the first, at 0.0).
    Example: [0.5, 0.5, 0.4, 0.45] -> [0.5, 0.4999995, 0.4, 0.3999996].
    """
    out: list[float] = []
    for score in scores:
        value = float(score) if score is not None and math.isfinite(score) else None
        if not out:
            out.append(value if value is not None else 0.0)
            continue
        below = out[-1] - TIE_GAP * max(abs(out[-1]), TIE_GAP)
        out.append(value if value is not None and value <= below else below)
    return out


def ranked_results(store: Store, run_id: str, strategy: str | None = None,
                   query_id: str | None = None) -> list[dict]:
    """The run's results by strategy, query and rank, with the export score (``ranking_scores``)
    as ``score`` and the score the system returned as ``stored_score``."""
    rows = store.results_with_grades(run_id, strategy, query_id)
    start = 0
    for end in range(1, len(rows) + 1):
        if end == len(rows) or (rows[end]["strategy"], rows[end]["query_id"]) != \
                (rows[start]["strategy"], rows[start]["query_id"]):
            scores = ranking_scores([r["score"] for r in rows[start:end]])
            for row, score in zip(rows[start:end], scores, strict=True):
                row["stored_score"], row["score"] = row["score"], score
            start = end
    return rows


def export_run(store: Store, run_id: str, fmt: str, out_dir: str | Path) -> list[Path]:
    """Write a run's files into out_dir and return their paths.

    trec: one file per strategy, `<strategy>.trec`, lines `qid Q0 docid rank score tag` with the run
    id as tag. csv / parquet: `<run_id>-metrics.<ext>` (one row per strategy, query, metric and k,
    with the metric's ir_measures name, the strategy's top 1 for the query, ``top1``: relevant,
    judged_not_relevant, unjudged or judge_failed, and for a failed query its ``cause``,
    engine/failures/causes.py) and `<run_id>-results.<ext>` (one row per result: strategy, query,
    rank, doc id, score, grade). Every score is the export score (see the module).
    """
    if fmt not in EXPORT_FORMATS:
        raise SearchGradeError(f"--format {fmt!r} is not one of {', '.join(EXPORT_FORMATS)}")
    run = store.get_run(run_id)
    out = _out_dir(out_dir)
    if fmt == "trec":
        return _export_trec(store, run.run_id, out)
    return [export_metrics(store, run.run_id, fmt, out), _export_results(store, run.run_id, fmt, out)]


def _out_dir(out_dir: str | Path) -> Path:
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise SearchGradeError(f"cannot create --out directory {out}: {exc.strerror}") from None
    return out


def trec_lines(rows: list[dict], tag: str) -> list[str]:
    """TREC run lines from result rows sorted by query and rank, each score as Python writes it
    (the shortest text that reads back as the same float)."""
    return [f"{r['query_id']} Q0 {r['doc_id']} {r['rank']} {float(r['score'])!r} {tag}" for r in rows]


def _export_trec(store: Store, run_id: str, out: Path) -> list[Path]:
    by_strategy: dict[str, list[dict]] = {}
    for row in ranked_results(store, run_id):
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


def export_metrics(store: Store, run_id: str, fmt: str, out_dir: str | Path) -> Path:
    """`<run_id>-metrics.<fmt>`: run_id, strategy, query_id, metric, k, value, and the metric's
    name in ir_measures (``measure``, empty where it has none: its record's, engine/metrics/)."""
    import pandas as pd

    from searchgrade.engine.metrics import metric_record

    out = _out_dir(out_dir)
    run = store.get_run(run_id)
    frame = pd.DataFrame(store.metric_values(run.run_id))
    if frame.empty:
        raise SearchGradeError(f"run {run.run_id} has no stored metrics to export (did it complete?)")
    frame.insert(0, "run_id", run.run_id)
    frame["measure"] = [metric_record(m).measure(int(k), run.threshold) or ""
                        for m, k in zip(frame["metric"], frame["k"], strict=True)]
    frame = frame.merge(_failure_columns(store, run.run_id), on=["strategy", "query_id"], how="left")
    return _write(frame, out / f"{run.run_id}-metrics.{fmt}", fmt)


def _export_results(store: Store, run_id: str, fmt: str, out: Path) -> Path:
    import pandas as pd

    rows = ranked_results(store, run_id)
    if not rows:
        raise SearchGradeError(f"run {run_id} has no stored results to export (did it complete?)")
    frame = pd.DataFrame([{**r, "run_id": run_id} for r in rows])[RESULT_COLUMNS]
    frame["grade"] = frame["grade"].astype("Int64")
    return _write(frame, out / f"{run_id}-results.{fmt}", fmt)


def _write(frame: object, path: Path, fmt: str) -> Path:
    """Write atomically: a half-written file never lands under its name."""
    tmp = path.parent / f".{path.name}.tmp"
    if fmt == "csv":
        frame.to_csv(tmp, index=False)  # type: ignore[attr-defined]
    else:
        frame.to_parquet(tmp, index=False)  # type: ignore[attr-defined]
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
