"""How the charts draw each strategy: one colour per strategy on every chart (a reranked twin a
darker shade of its base's), so a reader who learnt "orange is full-text" on one chart reads every
other."""

from __future__ import annotations

import zlib
from collections.abc import Iterable

from searchgrade.engine.run.strategies import base_of, reranker_of

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
#: How far toward black a declared reranker's twin (``ann_tei``) is drawn from its base's colour:
#: one shade per reranker, picked by the reranker's name (``twin_shades`` keeps the twins of one
#: chart apart when two names pick the same shade).
TWIN_SHADES = (0.25, 0.42, 0.56, 0.68)


def _hash(text: str) -> int:
    return zlib.crc32(text.encode())


def _darker(color: str, share: float) -> str:
    """``color`` (#rrggbb) moved ``share`` of the way to black."""
    channels = (int(color[i:i + 2], 16) for i in (1, 3, 5))
    return "#" + "".join(f"{round(c * (1 - share)):02x}" for c in channels)


def _base_color(name: str) -> str:
    if name in STRATEGY_COLORS:
        return STRATEGY_COLORS[name]
    return DECLARED_COLORS[_hash(name) % len(DECLARED_COLORS)]


def strategy_color(name: str) -> str:
    """The chart colour of a strategy: the built-in's; a declared reranker's twin (``ann_tei``) a
    shade of its base's colour picked by the reranker's name; else one of DECLARED_COLORS chosen by
    the name."""
    base, reranker = base_of(name), reranker_of(name)
    if name in STRATEGY_COLORS or base is None or reranker is None:
        return _base_color(name)
    return _darker(_base_color(base), TWIN_SHADES[_hash(reranker) % len(TWIN_SHADES)])


def strategy_colors(names: Iterable[str]) -> dict[str, str]:
    """``strategy_color`` of each name, except that two declared rerankers' twins of one base that
    pick the same shade are moved apart (the next free shade, in name order): on one chart, a colour
    per series. Drawn with these colours, a chart's strategies are the same colours as on any other
    chart of the same strategies."""
    out: dict[str, str] = {}
    taken: dict[str, set[float]] = {}
    for name in sorted(set(names)):
        base, reranker = base_of(name), reranker_of(name)
        if name in STRATEGY_COLORS or base is None or reranker is None:
            out[name] = _base_color(name)
            continue
        used = taken.setdefault(base, set())
        first = _hash(reranker) % len(TWIN_SHADES)
        free = [TWIN_SHADES[(first + i) % len(TWIN_SHADES)] for i in range(len(TWIN_SHADES))]
        shade = next((s for s in free if s not in used), None)
        if shade is None:  # more rerankers of one base than shades: a declared colour by the name
            out[name] = DECLARED_COLORS[_hash(name) % len(DECLARED_COLORS)]
            continue
        used.add(shade)
        out[name] = _darker(_base_color(base), shade)
    return out


def band_color(name: str, alpha: float = 0.18) -> str:
    """The strategy's colour, translucent: the fill of its confidence band."""
    color = strategy_color(name)
    return "rgba({}, {}, {}, {})".format(*(int(color[i:i + 2], 16) for i in (1, 3, 5)), alpha)
