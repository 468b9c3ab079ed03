"""The strategies as the evaluator and the dashboard see them: names, order, labels, pairs, and the
strategies a user declares in a strategies file.

The registry lives in indexes/registry.py, the strategies file in indexes/declared/spec.py; engine
code and the views (which never import indexes/) take them from here.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
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
    "choose_strategies",
    "declared_from_file",
    "declarations",
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


def choose_strategies(names: Sequence[str] | None, rerankers: Iterable[str], registry: Registry, *,
                      data_dir: str | os.PathLike[str] | None = None) -> tuple[str, ...]:
    """The strategies asked for (``--strategies``; None: the registry's defaults), each once, with
    ``X_NAME`` for every retrieval strategy X among them and every NAME of ``rerankers``.

    Raises:
        SearchGradeError: a name the registry does not know, or none at all (one line listing the
            names there are: the registry's, and those added in the app and saved in the run store
            of ``data_dir``, which a typo would otherwise hide).
    """
    if names is None:
        return with_rerankers(registry.defaults(), rerankers, registry)
    chosen = tuple(dict.fromkeys(n.strip() for n in names if n.strip()))
    for name in chosen:  # X_NAME asked for by name: a declared reranker over X
        base, _, reranker = name.rpartition("_")
        if name not in registry.infos and reranker in registry.rerankers and base in registry.infos:
            registry.add_reranked(base, reranker, "--strategies")
    unknown = registry.unknown(chosen)
    if unknown or not chosen:
        saved = [n for n in saved_declarations(data_dir) if n not in registry.names()] if data_dir else []
        raise SearchGradeError(f"--strategies {','.join(names)!r}: unknown {unknown or 'empty list'}; "
                               f"choose from {', '.join([*registry.names(), *saved])}"
                               + (f" (added in the app: {', '.join(saved)})" if saved else ""))
    return with_rerankers(chosen, rerankers, registry)


def declarations(strategies_file: str | None, data_dir: str | os.PathLike[str],
                 names: Iterable[str] | None) -> dict[str, dict[str, Any]]:
    """The declarations a run may use, as it stores them: the strategies file's (``strategies_file``,
    else $SEARCHGRADE_STRATEGIES_FILE), and those of ``names`` that were added in the app (saved in
    the run store of ``data_dir``); the file's declaration wins over a saved one of the same name."""
    found = declared_from_file(strategies_file_from_env(strategies_file))
    asked = [n.strip() for n in names or () if n.strip()]
    wanted = {base_of(n) or n for n in asked} - set(found) - set(known_strategies())
    if wanted:
        found.update(saved_declarations(data_dir, wanted))
    return found


def saved_declarations(data_dir: str | os.PathLike[str], names: Iterable[str] | None = None,
                       collection: str | None = None) -> dict[str, dict[str, Any]]:
    """The strategies added in the app and saved in the run store of ``data_dir`` (those named in
    ``names``, or all; with ``collection``, only those added for it or for any), checked as a
    strategies file's and kept as a run stores declarations, with where they were typed; {} when no
    store file exists yet (nothing is created for asking).

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
        if collection is not None and row["collection_name"] not in (None, collection):
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
