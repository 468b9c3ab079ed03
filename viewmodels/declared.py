"""The Evaluate page's declared strategies: what the app's strategies file declares (``searchgrade
app --strategies-file`` or ``$SEARCHGRADE_STRATEGIES_FILE``) and what was added in the app ("Add
your search", saved in the run store), and a "Test" of one of them: one sample query, the ids and
titles it maps, and how many are in the collection."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from searchgrade.core.records import Collection, SearchGradeError
from searchgrade.engine.run.strategies import (
    ENV_STRATEGIES_FILE,
    declared_from_file,
    registry_for_declared,
    rerankers_from_file,
)


@dataclass
class Declared:
    """The strategies the app offers.

    Attributes:
        names: every strategy that can run, built-in and declared, in display order.
        declared: name -> declaration as a run stores it (``env:`` values as written).
        kinds: the strategies file's strategies -> their kind (shown read-only).
        path: the strategies file ("" when none).
        error: why the file could not be read (one line), or "".
        saved: strategies added in the app -> their kind (editable; a name the file also declares
            is the file's).
        rerankers: the strategies file's ``[reranker.NAME]`` declarations, as a run stores them
            (the Reranker model field takes a NAME; ``X_NAME`` strategies are offered).
        elsewhere: strategies added in the app for another collection -> that collection: not
            offered here (their ids are that collection's).
    """

    names: tuple[str, ...]
    declared: dict[str, dict[str, Any]] = field(default_factory=dict)
    kinds: dict[str, str] = field(default_factory=dict)
    path: str = ""
    error: str = ""
    saved: dict[str, str] = field(default_factory=dict)
    rerankers: dict[str, dict[str, Any]] = field(default_factory=dict)
    elsewhere: dict[str, str] = field(default_factory=dict)


def declared_strategies(environ: Any = None, saved: dict[str, dict[str, Any]] | None = None,
                        collection: str | None = None) -> Declared:
    """The app's strategies: the built-ins, the strategies file's (a bad file: error, no crash) and
    those added in the app (``saved``; default: the run store's of this app's data directory), of
    them only those added for ``collection`` (or for any) when it is given."""
    from searchgrade.engine.paths import data_dir
    from searchgrade.engine.run.strategies import saved_declarations

    path = ((environ if environ is not None else os.environ).get(ENV_STRATEGIES_FILE) or "").strip()
    elsewhere: dict[str, str] = {}
    if saved is None:
        saved = saved_declarations(data_dir(), collection=collection)
        elsewhere = added_elsewhere(data_dir(), collection) if collection is not None else {}
    error = ""
    try:
        declared = declared_from_file(path or None)
        rerankers = rerankers_from_file(path or None)
    except SearchGradeError as exc:
        declared, rerankers, error = {}, {}, str(exc)
    added = {name: d for name, d in saved.items() if name not in declared}
    registry = registry_for_declared({**declared, **added}, rerankers)
    kinds = {name: registry.info(name).kind for name in registry.names()
             if registry.info(name).kind != "builtin" and name not in added}
    return Declared(registry.defaults(), {**declared, **added}, kinds, path, error,
                    {name: str(d["kind"]) for name, d in added.items()}, rerankers,
                    {name: where for name, where in elsewhere.items() if name not in declared})


def added_elsewhere(data: Path, collection: str) -> dict[str, str]:
    """The strategies added in the app for another collection than ``collection`` -> that collection."""
    from searchgrade.engine.store import DB_FILENAME, Store

    if not (Path(data) / DB_FILENAME).exists():
        return {}
    return {name: row["collection_name"] for name, row in Store(data).saved_strategies().items()
            if row["collection_name"] not in (None, collection)}


@dataclass
class StrategyTest:
    """One sample query through a declared strategy."""

    strategy: str
    query: str
    results: pd.DataFrame  # Rank, Id, Title, In collection
    in_collection: int
    seconds: float
    error: str = ""


def test_strategy(name: str, declared: dict[str, dict[str, Any]], collection: Collection, data_dir: Path,
                  query: str | None = None, k: int = 10) -> StrategyTest:
    """Run one query (the collection's first, or ``query``) through strategy ``name``.

    Errors (the backend's, or a strategy that cannot be built) are returned as ``error``.
    """
    from searchgrade.indexes.base import QueryBatch
    from searchgrade.indexes.build import build_searchers
    from searchgrade.indexes.executor import Executor
    from searchgrade.indexes.settings import IndexSettings

    text = query or (collection.queries[0].text if collection.queries else "")
    empty = pd.DataFrame(columns=["Rank", "Id", "Title", "In collection"])
    if not text:
        return StrategyTest(name, "", empty, 0, 0.0, "the collection has no queries: type one")
    titles = {d.doc_id: d.title for d in collection.documents}
    try:
        registry = registry_for_declared(declared)
        built = build_searchers(collection, IndexSettings(), data_dir, strategies=[name], registry=registry)
        if name in built.skipped:
            return StrategyTest(name, text, empty, 0, 0.0, built.skipped[name])
        execution = Executor(built.nodes, [name], k).run(QueryBatch(["sample"], [text]))
    except SearchGradeError as exc:
        return StrategyTest(name, text, empty, 0, 0.0, str(exc))
    hits = execution.hits[name][0]
    if hits is None:
        failure = execution.failures[name]["sample"]
        return StrategyTest(name, text, empty, 0, 0.0, failure.error)
    described = execution.documents.get(name, {})
    rows = []
    for d in hits.docs:
        inside = d.doc_id in titles
        title = titles.get(d.doc_id) or (described[d.doc_id].title if d.doc_id in described else "")
        rows.append((d.rank, d.doc_id, title, "yes" if inside else "no"))
    frame = pd.DataFrame(rows, columns=empty.columns)
    return StrategyTest(name, text, frame, int((frame["In collection"] == "yes").sum()), hits.latency_s)
