"""Kind of a declared strategy -> the function that builds its executor node (a dict, not if/elif)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from searchgrade.indexes.declared.spec import StrategySpec


def _http(spec: StrategySpec, ctx: Any) -> Any:
    from searchgrade.indexes.declared.http import build_node

    return build_node(spec, ctx)


def _milvus(spec: StrategySpec, ctx: Any) -> Any:
    from searchgrade.indexes.declared.milvus import build_node

    return build_node(spec, ctx)


def _python(spec: StrategySpec, ctx: Any) -> Any:
    from searchgrade.indexes.declared.plugin import build_node

    return build_node(spec, ctx)


BUILDERS: dict[str, Callable[[StrategySpec, Any], Any]] = {
    "http": _http,
    "elasticsearch": _http,
    "opensearch": _http,
    "milvus": _milvus,
    "python": _python,
}


def declared_factory(spec: StrategySpec) -> Callable[[Any], Any]:
    """The registry factory of a declared strategy."""

    def build(ctx: Any) -> Any:
        return BUILDERS[spec.kind](spec, ctx)

    return build
