"""The strategies searchgrade evaluates: ids, display order, labels, base -> reranked pairs.

Defined once, as data (``BUILTIN``); every other module asks the functions below, so that the
registry of strategy factories and external backends (issue 8) changes this module only. engine/
reaches it through ``engine.strategies`` for the views, which never import indexes/.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class StrategyInfo:
    """One strategy as the rest of the project sees it.

    Attributes:
        name: The id stored with results and typed in ``--strategies``.
        label: What the dashboard and reports show.
        reranks: The strategy whose candidates this one rescores with the cross-encoder (None
            for a retrieval strategy).
        needs: Components building it takes: "ann", "fulltext", "reranker".
        color: Its colour in the dashboard's charts (a reranked twin is the darker shade).
    """

    name: str
    label: str
    reranks: str | None
    needs: frozenset[str]
    color: str


#: The built-in strategies, in display order: retrieval strategies first, then their reranked twins.
BUILTIN: dict[str, StrategyInfo] = {s.name: s for s in (
    StrategyInfo("ann", "ANN (dense)", None, frozenset({"ann"}), "#7fb3e0"),
    StrategyInfo("fulltext", "Full-text (BM25)", None, frozenset({"fulltext"}), "#f5b971"),
    StrategyInfo("hybrid", "Hybrid (RRF)", None, frozenset({"ann", "fulltext"}), "#8fd19e"),
    StrategyInfo("ann_rerank", "ANN + reranker", "ann", frozenset({"ann", "reranker"}), "#1f5f99"),
    StrategyInfo("fulltext_rerank", "Full-text + reranker", "fulltext",
                 frozenset({"fulltext", "reranker"}), "#c26a00"),
    StrategyInfo("hybrid_rerank", "Hybrid + reranker", "hybrid",
                 frozenset({"ann", "fulltext", "reranker"}), "#2a8a3e"),
)}


def known_strategies() -> tuple[str, ...]:
    """Every strategy id, in display order (the default of ``--strategies``)."""
    return tuple(BUILTIN)


def base_strategies() -> tuple[str, ...]:
    """The retrieval strategies (those that rerank nothing), in display order."""
    return tuple(name for name, info in BUILTIN.items() if info.reranks is None)


def is_known(name: str) -> bool:
    return name in BUILTIN


def unknown_strategies(names: Iterable[str]) -> list[str]:
    """The names in ``names`` that are no strategy, in the order given."""
    return [name for name in names if name not in BUILTIN]


def label(name: str) -> str:
    """"ANN (dense)" for "ann"; an unknown id is its own label."""
    info = BUILTIN.get(name)
    return info.label if info is not None else name


def color(name: str) -> str | None:
    """The chart colour of a strategy (None: the chart picks one)."""
    info = BUILTIN.get(name)
    return info.color if info is not None else None


def display_rank(name: str) -> int:
    """A strategy's place in the display order; unknown ids sort after every known one."""
    return _RANK.get(name, len(_RANK))


def strategy_order(names: Iterable[str]) -> list[str]:
    """``names`` in display order: known strategies first, then the others by name."""
    unique = set(names)
    return sorted(unique, key=lambda name: (display_rank(name), name))


def reranked_of(base: str) -> str | None:
    """The strategy that reranks ``base`` ("ann" -> "ann_rerank"), or None."""
    return _RERANKED.get(base)


def base_of(name: str) -> str | None:
    """The strategy ``name`` reranks ("ann_rerank" -> "ann"), or None for a retrieval strategy."""
    info = BUILTIN.get(name)
    return info.reranks if info is not None else None


def needs(name: str) -> frozenset[str]:
    """The components building ``name`` takes ("ann", "fulltext", "reranker")."""
    return BUILTIN[name].needs


_RANK = {name: i for i, name in enumerate(BUILTIN)}
_RERANKED = {info.reranks: name for name, info in BUILTIN.items() if info.reranks is not None}
