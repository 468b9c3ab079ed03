"""The registry of strategies: a dict from strategy name to the factory that builds it.

The three built-in retrieval strategies (``ann``, ``fulltext``, ``hybrid``) register here, and so
does every strategy a user declares in a strategies file (indexes/declared/spec.py): an HTTP or
Elasticsearch/OpenSearch endpoint, a Milvus collection, a Python class. Any registered strategy
``X`` can be wrapped by our cross-encoder: ``X_rerank`` reranks X's top candidates (the built-ins
always offer their reranked twin; a declared strategy offers it with ``rerank = true``).

Names are the user's (``[a-z0-9_-]+``); the suffix ``_rerank`` is reserved for the reranked twin,
so a stored run's pairs (``X`` / ``X_rerank``), labels and display order are read from the names
alone, without the strategies file the run was made with.

engine/ reaches this module through ``engine.run.strategies`` (the views never import indexes/).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from searchgrade.indexes.executor import Node

#: Suffix of the strategy that reranks another one with the cross-encoder.
RERANK_SUFFIX = "_rerank"
#: What a strategy name may look like (the user's names too).
NAME_PATTERN = re.compile(r"[a-z0-9_-]+")


@dataclass(frozen=True)
class StrategyInfo:
    """One strategy as the rest of the project sees it.

    Attributes:
        name: The id stored with results and typed in ``--strategies``.
        label: What the dashboard and reports show.
        reranks: The strategy whose candidates this one rescores with the cross-encoder (None
            for a retrieval strategy).
        needs: Built-in components building it takes: "ann", "fulltext", "reranker".
        color: Its colour in the dashboard's charts (a reranked twin is the darker shade).
        kind: "builtin", or the kind of a declared strategy ("http", "elasticsearch", ...).
    """

    name: str
    label: str
    reranks: str | None
    needs: frozenset[str]
    color: str | None = None
    kind: str = "builtin"


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


#: A factory builds a strategy's executor node from what the build made (indexes.build.BuildContext).
Factory = Callable[[Any], "Node"]


@dataclass
class Registry(Mapping[str, Factory]):
    """Strategy name -> factory, with what each strategy is (``info``).

    A plain mapping to the executor and the build; ``with_declared`` gives a registry that also
    holds a strategies file's declarations (and their reranked twins), leaving this one as it is.
    """

    factories: dict[str, Factory] = field(default_factory=dict)
    infos: dict[str, StrategyInfo] = field(default_factory=dict)
    #: Declared strategies by name (indexes.declared.spec.StrategySpec), for the factories.
    declared: dict[str, Any] = field(default_factory=dict)
    #: Strategies known but left out of the default selection (plugins found by entry point).
    optional: set[str] = field(default_factory=set)

    def __getitem__(self, name: str) -> Factory:
        return self.factories[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.factories)

    def __len__(self) -> int:
        return len(self.factories)

    def register(self, info: StrategyInfo, factory: Factory, *, optional: bool = False) -> None:
        check_name(info.name)
        self.factories[info.name] = factory
        self.infos[info.name] = info
        if optional:
            self.optional.add(info.name)

    def names(self) -> tuple[str, ...]:
        """Every registered name, in display order."""
        return tuple(strategy_order(self.factories))

    def defaults(self) -> tuple[str, ...]:
        """What ``--strategies`` means when not given: every strategy but the optional ones."""
        return tuple(n for n in self.names() if n not in self.optional)

    def unknown(self, names: Iterable[str]) -> list[str]:
        return [n for n in names if n not in self.factories]

    def info(self, name: str) -> StrategyInfo:
        return self.infos[name]

    def with_declared(self, specs: Mapping[str, Any]) -> Registry:
        """This registry plus declared strategies (and ``X_rerank`` for those with rerank = true).

        Raises:
            SearchGradeError: a declared name is a registered one (a built-in, say).
        """
        from searchgrade.core.records import SearchGradeError
        from searchgrade.indexes.declared.factories import declared_factory

        out = Registry(dict(self.factories), dict(self.infos), dict(self.declared), set(self.optional))
        for name, spec in specs.items():
            clash = name in BUILTIN or (name in out.factories and name not in self.optional)
            if clash:
                raise SearchGradeError(
                    f"strategy name {name!r} is taken by a built-in strategy: rename "
                    f"[strategy.{name}] in the strategies file (e.g. [strategy.my-{name}])"
                )
            out.optional.discard(name)
            out.declared[name] = spec
            out.register(StrategyInfo(name, name, None, frozenset(), None, spec.kind),
                         declared_factory(spec))
            if spec.rerank:
                twin = name + RERANK_SUFFIX
                out.register(StrategyInfo(twin, f"{name} + reranker", name, frozenset({"reranker"}),
                                          None, spec.kind), rerank_factory(name))
        return out


def check_name(name: str) -> str:
    """``name`` if it is a valid strategy name, else SearchGradeError with the rule."""
    from searchgrade.core.records import SearchGradeError

    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise SearchGradeError(
            f"strategy name {name!r} is not allowed: use lower-case letters, digits, '_' and '-' "
            "only, e.g. prod-es"
        )
    return name


def rerank_factory(base: str) -> Factory:
    """The factory of ``base + "_rerank"``: our cross-encoder over base's candidates."""

    def build(ctx: Any) -> Node:
        from searchgrade.indexes.rerank.cross_encoder import RerankNode

        shared = ctx.scorer()
        depth = ctx.settings.rerank_depth
        limit = getattr(shared.scorer, "max_depth", None)  # a trained reranker's measured depth
        return RerankNode(base + RERANK_SUFFIX, base, shared, min(depth, limit) if limit else depth,
                          ctx.contents, capped=bool(limit))

    return build


def _builtin_registry() -> Registry:
    from searchgrade.indexes.build import builtin_factory

    registry = Registry()
    for name, info in BUILTIN.items():
        factory = rerank_factory(info.reranks) if info.reranks else builtin_factory(name)
        registry.register(info, factory)
    return registry


_BUILTINS: Registry | None = None


def builtin_registry() -> Registry:
    """The registry of the six built-in strategies (made once)."""
    global _BUILTINS
    if _BUILTINS is None:
        _BUILTINS = _builtin_registry()
    return _BUILTINS


def registry_for(specs: Mapping[str, Any] | None = None, *, plugins: bool = True) -> Registry:
    """The built-ins, Python plugins found by entry point (optional), and ``specs`` declared."""
    registry = builtin_registry()
    if plugins:
        from searchgrade.indexes.declared.plugin import entry_point_specs

        found = entry_point_specs()
        if found:
            registry = Registry(dict(registry.factories), dict(registry.infos),
                                dict(registry.declared), set(registry.optional))
            from searchgrade.indexes.declared.factories import declared_factory

            for name, spec in found.items():
                if name in BUILTIN:
                    continue
                registry.declared[name] = spec
                registry.register(StrategyInfo(name, name, None, frozenset(), None, spec.kind),
                                  declared_factory(spec), optional=True)
    return registry.with_declared(specs or {})


# -- what a strategy name says, for stored runs (no strategies file needed) -----------------------

def known_strategies() -> tuple[str, ...]:
    """The built-in strategy ids, in display order (the default of ``--strategies``)."""
    return tuple(BUILTIN)


def base_strategies() -> tuple[str, ...]:
    """The built-in retrieval strategies (those that rerank nothing), in display order."""
    return tuple(name for name, info in BUILTIN.items() if info.reranks is None)


def is_known(name: str) -> bool:
    return name in BUILTIN


def unknown_strategies(names: Iterable[str]) -> list[str]:
    """The names in ``names`` that are no built-in strategy, in the order given."""
    return [name for name in names if name not in BUILTIN]


def label(name: str) -> str:
    """"ANN (dense)" for "ann"; "prod-es + reranker" for "prod-es_rerank"; else the name itself."""
    info = BUILTIN.get(name)
    if info is not None:
        return info.label
    base = base_of(name)
    return f"{base} + reranker" if base is not None else name


def color(name: str) -> str | None:
    """The chart colour of a strategy (None: the chart picks one)."""
    info = BUILTIN.get(name)
    return info.color if info is not None else None


def display_rank(name: str) -> int:
    """A strategy's place in the display order: built-in retrieval strategies, then declared ones,
    then the reranked twins in the same order."""
    base = base_of(name)
    reranked = base is not None
    root = base if reranked else name
    builtin = list(base_strategies())
    group = builtin.index(root) if root in builtin else len(builtin)
    return (len(builtin) + 1) * int(reranked) + group


def strategy_order(names: Iterable[str]) -> list[str]:
    """``names`` in display order (declared strategies by name within their group)."""
    unique = set(names)
    return sorted(unique, key=lambda name: (display_rank(name), base_of(name) or name, name))


def reranked_of(base: str) -> str | None:
    """The strategy that reranks ``base`` ("ann" -> "ann_rerank"); None for a reranked one."""
    if base.endswith(RERANK_SUFFIX):
        return None
    return base + RERANK_SUFFIX


def base_of(name: str) -> str | None:
    """The strategy ``name`` reranks ("ann_rerank" -> "ann"), or None for a retrieval strategy."""
    info = BUILTIN.get(name)
    if info is not None:
        return info.reranks
    if name.endswith(RERANK_SUFFIX) and len(name) > len(RERANK_SUFFIX):
        return name[: -len(RERANK_SUFFIX)]
    return None


def pairs(names: Iterable[str]) -> list[tuple[str, str | None]]:
    """(retrieval strategy, its reranked twin or None) for the strategies in ``names``, in display
    order; a reranked strategy whose base is absent is listed under its base's name."""
    present = set(names)
    bases = strategy_order({base_of(n) or n for n in present})
    out = []
    for base in bases:
        twin = reranked_of(base)
        out.append((base, twin if twin in present else None))
    return out


def needs(name: str) -> frozenset[str]:
    """The built-in components building ``name`` takes ("ann", "fulltext", "reranker")."""
    return BUILTIN[name].needs
