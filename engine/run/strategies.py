"""The strategies as the evaluator and the dashboard see them: names, order, labels, pairs, and the
strategies a user declares in a strategies file.

The registry lives in indexes/registry.py, the strategies file in indexes/declared/spec.py; engine
code and the views (which never import indexes/) take them from here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.declared.spec import (
    ENV_STRATEGIES_FILE,
    StrategySpec,
    load_strategies_file,
    strategies_file_from_env,
)
from searchgrade.indexes.registry import (
    Registry,
    base_of,
    base_strategies,
    display_rank,
    known_strategies,
    label,
    pairs,
    reranked_of,
    reranker_of,
    strategy_order,
    unknown_strategies,
)

__all__ = [
    "ENV_STRATEGIES_FILE",
    "saved_declarations",
    "Registry",
    "StrategySpec",
    "base_of",
    "base_strategies",
    "declared_from_file",
    "display_rank",
    "known_strategies",
    "label",
    "load_strategies_file",
    "pairs",
    "registry_for_declared",
    "rerankers_from_file",
    "with_rerankers",
    "reranked_of",
    "reranker_of",
    "strategies_file_from_env",
    "strategy_order",
    "sweeps_from_file",
    "unknown_strategies",
]


def declared_from_file(path: str | None) -> dict[str, dict[str, Any]]:
    """The declarations of a strategies file as a run stores them (name -> JSON); {} for None."""
    if not path:
        return {}
    return {name: spec.to_json() for name, spec in load_strategies_file(path).items()}


def registry_for_declared(declared: Mapping[str, Mapping[str, Any]] | None,
                          rerankers: Mapping[str, Mapping[str, Any]] | None = None) -> Registry:
    """The built-ins, installed plugins, and the declarations (strategies, rerankers) a run stored."""
    from searchgrade.indexes.declared.rerankers import RerankerSpec
    from searchgrade.indexes.registry import registry_for

    specs = {name: StrategySpec.from_json(name, d) for name, d in (declared or {}).items()}
    found = {name: RerankerSpec.from_json(name, d) for name, d in (rerankers or {}).items()}
    return registry_for(specs, rerankers=found)


def sweeps_from_file(path: str | None) -> dict[str, dict[str, Any]]:
    """The sweeps (``[sweep.NAME]``) of a strategies file as a run stores them; {} for None."""
    from searchgrade.indexes.declared.spec import load_sweeps

    if not path:
        return {}
    return {name: sweep.to_json() for name, sweep in load_sweeps(path).items()}


def rerankers_from_file(path: str | None) -> dict[str, dict[str, Any]]:
    """The rerankers (``[reranker.NAME]``) of a strategies file as a run stores them; {} for None."""
    from searchgrade.indexes.declared.spec import load_rerankers_file

    if not path:
        return {}
    return {name: spec.to_json() for name, spec in load_rerankers_file(path).items()}


def with_rerankers(strategies: Iterable[str], rerankers: Iterable[str], registry: Registry) -> tuple[str, ...]:
    """``strategies`` plus ``X_NAME`` for every retrieval strategy X among them and every reranker
    NAME (``--rerankers a,b``), registered in ``registry`` as they are added.

    Raises:
        SearchGradeError: a reranker that is not declared.
    """
    names = list(dict.fromkeys(strategies))
    bases = [n for n in names if registry.info(n).reranks is None]
    for reranker in rerankers:
        for base in bases:
            twin = registry.add_reranked(base, reranker, "--rerankers")
            if twin not in names:
                names.append(twin)
    return tuple(names)


def saved_declarations(data_dir: str | os.PathLike[str], names: Iterable[str] | None = None) -> dict[str, dict[str, Any]]:
    """The strategies added in the app and saved in the run store of ``data_dir`` (those named in
    ``names``, or all), checked as a strategies file's and kept as a run stores declarations, with
    where they were typed; {} when no store file exists yet (nothing is created for asking).

    Raises:
        SearchGradeError: a saved strategy named in ``names`` no longer passes the checks (one
            line); one that is not named is left out.
    """
    from searchgrade.engine.store import DB_FILENAME, Store
    from searchgrade.indexes.declared.spec import parse_spec

    if not (Path(data_dir) / DB_FILENAME).exists():
        return {}
    wanted = None if names is None else set(names)
    out: dict[str, dict[str, Any]] = {}
    for name, row in Store(data_dir).saved_strategies().items():
        if wanted is not None and name not in wanted:
            continue
        try:
            spec = parse_spec(name, row["table"], SAVED_SOURCE)
        except SearchGradeError:
            if wanted is None:
                continue
            raise
        out[name] = {**spec.to_json(), "declared_in": row["declared_in"]}
    return out


#: Where a strategy added in the app says it was declared, in messages.
SAVED_SOURCE = "the app"
