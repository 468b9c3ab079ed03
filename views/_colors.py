"""How the charts draw each strategy: one colour per strategy on every chart (a built-in's reranked
twin the darker shade), so a reader who learnt "orange is full-text" on one chart reads every other."""

from __future__ import annotations

import zlib

#: Built-in strategy -> its colour.
STRATEGY_COLORS: dict[str, str] = {
    "ann": "#7fb3e0",
    "fulltext": "#f5b971",
    "hybrid": "#8fd19e",
    "ann_rerank": "#1f5f99",
    "fulltext_rerank": "#c26a00",
    "hybrid_rerank": "#2a8a3e",
}
#: Colours for strategies a person declared (none of the built-ins' hues): picked by the name, so a
#: declared strategy has the same colour on every chart, page and run.
DECLARED_COLORS = ("#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#d62728",
                   "#6b6ecf", "#b5cf6b", "#e7969c")


def strategy_color(name: str) -> str:
    """The chart colour of a strategy: the built-in's, else one of DECLARED_COLORS chosen by the name."""
    if name in STRATEGY_COLORS:
        return STRATEGY_COLORS[name]
    return DECLARED_COLORS[zlib.crc32(name.encode()) % len(DECLARED_COLORS)]


def band_color(name: str, alpha: float = 0.18) -> str:
    """The strategy's colour, translucent: the fill of its confidence band."""
    color = strategy_color(name)
    return "rgba({}, {}, {}, {})".format(*(int(color[i:i + 2], 16) for i in (1, 3, 5)), alpha)
