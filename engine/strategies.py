"""The strategies as the evaluator and the dashboard see them: ids, order, labels, pairs.

The data lives in indexes/registry.py; engine code and the views (which never import indexes/)
take it from here.
"""

from __future__ import annotations

from indexes.registry import (
    base_of,
    base_strategies,
    color,
    display_rank,
    known_strategies,
    label,
    reranked_of,
    strategy_order,
    unknown_strategies,
)

__all__ = [
    "base_of",
    "base_strategies",
    "color",
    "display_rank",
    "known_strategies",
    "label",
    "reranked_of",
    "strategy_order",
    "unknown_strategies",
]
