"""A tuned configuration as a new run: the tuned run's configuration with the study's best parameters.

``tuned_run_config`` takes a stored run and a tuning report of it (engine/tuning/study.py) and
returns the RunConfig of a new run of the same collection that evaluates the tuned configuration
(the app's "Evaluate this configuration", views/_tune.py): the same strategies, queries (the same
seeded sample), grading and settings, with the tuned parameters written where the run reads them: BM25's k1 and b, the
fusion string, the rerank depth and IVF's nprobe in the index settings (the command line's
``--bm25-k1 --bm25-b --fusion --rerank-depth --ivf-nprobe``), a declared strategy's ``fusion`` or
``variables``, or a full-text variant's ``bm25_k1`` and ``bm25_b``, in its declaration (the
strategies-file snippet of the report). A run of mode llm reuses the tuned run's queries (``queries_from``), so nothing is generated again and the judge's
grades come from its cache.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from searchgrade.core.records import SearchGradeError

#: Tuned parameter -> the index setting the run reads it from.
_INDEX_FIELDS = {"fusion": "fusion", "bm25_k1": "bm25_k1", "bm25_b": "bm25_b", "rerank_depth": "rerank_depth",
                 "ivf_nprobe": "ivf_nprobe"}


def tuned_run_config(run: Any, report: dict[str, Any]) -> Any:
    """The configuration of a new run evaluating ``report``'s tuned configuration (see the module).

    Raises:
        SearchGradeError: the report is of another run, or the configuration does not validate.
    """
    from searchgrade.engine.run.config import RunConfig

    if report.get("run") != run.run_id:
        raise SearchGradeError(f"the tuning report is of run {report.get('run')}, not of run {run.run_id}")
    strategy, best = report["strategy"], dict(report["best"])
    config = dict(run.config)
    declared = {name: dict(spec) for name, spec in (config.get("declared") or {}).items()}
    index = dict(config.get("index") or {})
    spec = declared.get(strategy)
    if spec is not None and report.get("kind") == "declared":
        spec["variables"] = {**(spec.get("variables") or {}), **best}
    elif spec is not None and spec.get("kind") == "fulltext":  # a BM25 variant: its own k1 and b
        spec.update(best)
    else:
        if spec is not None and "fusion" in best:  # a declared kind = "hybrid": its own fusion string
            spec["fusion"] = best.pop("fusion")
            spec.pop("rrf_k", None)
            spec.pop("depth", None)
        for name, value in best.items():
            if name not in _INDEX_FIELDS:
                raise SearchGradeError(f"tuned parameter {name!r} of strategy {strategy} has no run setting")
            index[_INDEX_FIELDS[name]] = int(value) if name in ("rerank_depth", "ivf_nprobe") else value
    config.update(index=index or None, declared=declared or config.get("declared"))
    if run.mode == "llm" and not config.get("query_set"):
        config["queries_from"] = config.get("queries_from") or run.run_id
    tuned = RunConfig.from_json(config)
    tuned = replace(tuned, name=f"{run.name} · {strategy} tuned")
    tuned.validate()
    return tuned


def tuned_run_parts(store: Any, run_id: str, report: dict[str, Any]) -> tuple[Any, Any]:
    """(load, config) for server.jobs.start_job: the run's collection, loaded as the run loaded
    it, and the tuned configuration."""
    from searchgrade.engine.collections import load_collection

    run = store.get_run(run_id)
    config = tuned_run_config(run, report)
    fields = dict(config.collection_fields or {})
    return (lambda: load_collection(run.collection_path, **fields)), config
