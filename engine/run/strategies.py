"""The strategies as the evaluator and the dashboard see them: names, order, labels, pairs, and the
strategies a user declares in a strategies file.

The registry lives in indexes/registry.py, the strategies file in indexes/declared/spec.py; engine
code and the views (which never import indexes/) take them from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

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
    strategy_order,
    unknown_strategies,
)

__all__ = [
    "ENV_STRATEGIES_FILE",
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
    "reranked_of",
    "strategies_file_from_env",
    "strategy_order",
    "unknown_strategies",
]


def declared_from_file(path: str | None) -> dict[str, dict[str, Any]]:
    """The declarations of a strategies file as a run stores them (name -> JSON); {} for None."""
    if not path:
        return {}
    return {name: spec.to_json() for name, spec in load_strategies_file(path).items()}


def registry_for_declared(declared: Mapping[str, Mapping[str, Any]] | None) -> Registry:
    """The built-ins, installed plugins, and the declarations a run stored."""
    from searchgrade.indexes.registry import registry_for

    specs = {name: StrategySpec.from_json(name, d) for name, d in (declared or {}).items()}
    return registry_for(specs)
