"""How the charts draw each strategy: a colour per built-in, its reranked twin the darker shade."""

from __future__ import annotations

#: Built-in strategy -> its colour; a declared strategy has none (the chart picks one).
STRATEGY_COLORS: dict[str, str] = {
    "ann": "#7fb3e0",
    "fulltext": "#f5b971",
    "hybrid": "#8fd19e",
    "ann_rerank": "#1f5f99",
    "fulltext_rerank": "#c26a00",
    "hybrid_rerank": "#2a8a3e",
}


def strategy_color(name: str) -> str | None:
    """The chart colour of a strategy (None: the chart picks one)."""
    return STRATEGY_COLORS.get(name)
