"""A suite's definition: made from a run, and what a new run of it evaluates.

``suite_from_run`` freezes a complete run: its configuration as stored (strategies, declared
strategies' declarations, index settings, grading mode, judge settings) and its queries (their ids
in mode qrels; in mode llm the run itself is where the generated queries are read from, through
``queries_from``, so no query is generated again and the judge's grades come from its cache).
``suite_collection`` and ``suite_config`` give what ``run_evaluation`` takes for a new run.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from searchgrade.core.records import Collection, SearchGradeError, collection_fingerprint
from searchgrade.engine.collections import load_collection
from searchgrade.engine.metrics import check_quality, parse_metric
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.strategies import declared_from_file, registry_for_declared
from searchgrade.engine.store import Store, SuiteRecord
from searchgrade.engine.suites.changes import snapshot

#: Suite names are typed on command lines and shown in alerts: short and plain.
_NAME_CHARS = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.")


def check_name(name: str) -> str:
    if not name or len(name) > 64 or not set(name) <= _NAME_CHARS:
        raise SearchGradeError(f"suite name {name!r} is not 1-64 letters, digits, '-', '_' or '.'; pick e.g. "
                               "nightly-prod")
    return name


def suite_from_run(store: Store, name: str, run_id: str, *, metric: str | None = None,
                   margin: float = 0.0) -> SuiteRecord:
    """Make suite ``name`` from a complete run (module docstring); its run is the suite's first.

    Raises:
        SearchGradeError: a bad name, metric or margin, a run that is not complete or has no
            queries, a collection that can no longer be loaded, a suite of that name.
    """
    check_name(name)
    run = store.get_run(run_id)
    if run.status != "complete":
        raise SearchGradeError(f"run {run.run_id} is {run.status}: a suite is made from a complete run "
                               f"(finish it with `searchgrade resume {run.run_id}`)")
    metric = metric or f"dcg@{run.k}"
    spec = parse_metric(metric)
    check_quality(spec.key, "--metric")  # no verdict on a diagnostic (judged@k, the RBP residual)
    if spec.resolve_k(run.k, run.depth) > run.depth:
        raise SearchGradeError(f"--metric {metric}: its k is above run {run.run_id}'s depth ({run.depth}); "
                               "pick a k up to it")
    if not margin >= 0:
        raise SearchGradeError(f"--margin of {margin} is negative: use 0 or a positive number, e.g. 0.01")
    queries = store.queries(run.run_id)
    if not queries:
        raise SearchGradeError(f"run {run.run_id} has no stored queries: pick another run (`searchgrade runs`)")
    config = dict(run.config)
    config["max_queries"] = None  # the frozen ids say which queries, not a sample size
    if run.mode == "llm" and not config.get("query_set"):
        config["queries_from"] = run.run_id
    RunConfig.from_json(config).validate()
    store.create_suite(name=name, collection_name=run.collection_name, collection_path=run.collection_path,
                       source_run_id=run.run_id, mode=run.mode, config=config,
                       query_ids=[q["query_id"] for q in queries], metric=spec.label, margin=float(margin))
    suite = store.get_suite(name)
    try:
        collection, _ = suite_collection(suite, store)
        snap = snapshot(config, fingerprint=collection_fingerprint(collection),
                        documents=len(collection.documents))
    except SearchGradeError:
        snap = snapshot(config, fingerprint="", documents=0)
    entry = store.start_suite_entry(name, "source")
    store.update_suite_entry(entry, run_id=run.run_id, status="source", snapshot=snap, changes=[], verdict=[])
    return suite


def suite_config(suite: SuiteRecord) -> RunConfig:
    """The configuration of a new run of the suite (named after the suite and the time, UTC)."""
    config = RunConfig.from_json(suite.config)
    return replace(config, name=f"{suite.name} {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC",
                   max_queries=None)


def suite_collection(suite: SuiteRecord, store: Store) -> tuple[Collection, list[str]]:
    """The suite's collection as a run of it evaluates it, and notes on what is gone.

    Mode qrels: only the frozen queries; a frozen query the collection lost is listed, and so are
    queries whose judged documents are gone. Mode llm: the source run's queries whose source
    document is gone are listed (they are still evaluated, as asked).
    """
    fields = dict(suite.config.get("collection_fields") or {})
    collection = load_collection(suite.collection_path, **fields)
    doc_ids = {d.doc_id for d in collection.documents}
    notes: list[str] = []
    if suite.mode == "qrels" and not suite.config.get("query_set"):
        wanted = set(suite.query_ids)
        kept = [q for q in collection.queries if q.query_id in wanted]
        gone = sorted(wanted - {q.query_id for q in kept})
        if gone:
            notes.append(f"{len(gone)} of the suite's queries are no longer in the collection: {', '.join(gone[:10])}")
        qrels = {q.query_id: (collection.qrels or {}).get(q.query_id, {}) for q in kept}
        lost = sorted(q for q, judged in qrels.items() if any(d not in doc_ids for d in judged))
        if lost:
            notes.append(f"queries whose judged documents are gone from the collection: {', '.join(lost[:10])}")
        if not kept:
            raise SearchGradeError(f"none of suite {suite.name!r}'s {len(wanted)} queries is in collection "
                                   f"{suite.collection_path} any more; make a new suite from a new run")
        collection = replace(collection, queries=kept, qrels=qrels, notes=[*collection.notes, *notes],
                             pooled_unjudged={q: d for q, d in collection.pooled_unjudged.items() if q in qrels})
    elif suite.mode == "llm":
        sources = {q["query_id"]: q["source_doc_id"] for q in store.queries(suite.source_run_id)}
        lost = sorted(q for q, d in sources.items() if d and d not in doc_ids)
        if lost:
            notes.append(f"queries whose source document is gone from the collection: {', '.join(lost[:10])}")
            collection = replace(collection, notes=[*collection.notes, *notes])
    return collection, notes


def updated_declarations(suite: SuiteRecord, strategies_file: str | None,
                         saved: dict[str, dict[str, Any]] | None = None) -> dict[str, Any]:
    """The suite's configuration with the current declarations of its declared strategies (from
    ``strategies_file``, else the strategies saved in the app), as `suite update` stores it.

    Raises:
        SearchGradeError: a declared strategy of the suite is in neither place.
    """
    current = declared_from_file(strategies_file) if strategies_file else dict(saved or {})
    config = dict(suite.config)
    old = dict(config.get("declared") or {})
    missing = sorted(n for n in old if n not in current)
    if missing:
        where = f"strategies file {strategies_file}" if strategies_file else "the strategies saved in the app"
        raise SearchGradeError(f"suite {suite.name!r} evaluates {', '.join(missing)}, not declared in {where}; "
                               "declare it there, or make a new suite")
    config["declared"] = {**old, **{n: current[n] for n in old}}
    registry = registry_for_declared(config["declared"])
    unknown = registry.unknown(config.get("strategies") or [])
    if unknown:
        raise SearchGradeError(f"suite {suite.name!r}: strategies {unknown} are no longer known; make a new suite")
    RunConfig.from_json(config).validate()
    return config
