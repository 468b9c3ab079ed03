"""The registry of strategies: a dict from strategy name to the factory that builds it.

A built-in strategy is one entry of ``BUILTIN`` (name, label, what it reranks, what it needs, its
factory; its place in the table is its display order). Every strategy a user declares in a
strategies file (indexes/declared/spec.py) is built by its kind's registration
(indexes/declared/kinds.py, one registration per kind): an HTTP, Elasticsearch or OpenSearch
endpoint, a Milvus collection, a Postgres table (pgvector, full text), a LanceDB table, a Python
class, or a hybrid fusing two other strategies. Any registered strategy ``X`` can be wrapped by our cross-encoder: ``X_rerank``
reranks X's top candidates (the built-ins always offer their reranked twin; a declared strategy
offers it with ``rerank = true``).

Names are the user's (``[a-z0-9_-]+``); the suffix ``_rerank`` is reserved for the reranked twin,
so a stored run's pairs (``X`` / ``X_rerank``), labels and display order are read from the names
alone, without the strategies file the run was made with.

engine/ reaches this module through ``engine.run.strategies`` (the views never import indexes/;
how a strategy is drawn, its colour, is the app's: views/_colors.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.declared import kinds
from searchgrade.indexes.declared.declaration import StrategySpec
from searchgrade.indexes.declared.plugin import entry_point_specs

if TYPE_CHECKING:
    from searchgrade.indexes.base import Node

#: Suffix of the strategy that reranks another one with the cross-encoder.
RERANK_SUFFIX = "_rerank"
#: What a strategy name may look like (the user's names too).
NAME_PATTERN = re.compile(r"[a-z0-9_-]+")


#: A factory builds a strategy's executor node from what the build made (indexes.build.BuildContext).
Factory = Callable[[Any], "Node"]


@dataclass(frozen=True)
class StrategyInfo:
    """One strategy: what the rest of the project sees of it, and the factory that builds it.

    Attributes:
        name: The id stored with results and typed in ``--strategies``.
        label: What the dashboard and reports show.
        reranks: The strategy whose candidates this one rescores with the cross-encoder (None
            for a retrieval strategy).
        needs: Built-in components building it takes: "ann", "fulltext", "reranker".
        factory: Builds its executor node from the build's context (indexes.build.BuildContext).
        kind: "builtin", or the kind of a declared strategy ("http", "elasticsearch", ...); for
            a strategy a declared reranker makes, the reranker's kind ("tei", "cohere", ...).
        reranker: the declared reranker of ``X_NAME`` (None: the run's default reranker).
    """

    name: str
    label: str
    reranks: str | None
    needs: frozenset[str]
    factory: Factory = field(compare=False, repr=False)
    kind: str = "builtin"
    reranker: str | None = None

    def reranked_by(self, reranker: str, kind: str) -> StrategyInfo:
        """``NAME_RERANKER``: a declared reranker (``[reranker.RERANKER]``) over this strategy."""
        return StrategyInfo(f"{self.name}_{reranker}", f"{self.name} + {reranker}", self.name,
                            self.needs, declared_rerank_factory(self.name, reranker), kind, reranker)

    def reranked(self, label: str | None = None) -> StrategyInfo:
        """``NAME_rerank``: our cross-encoder over this strategy's candidates."""
        return StrategyInfo(self.name + RERANK_SUFFIX, label or f"{self.name} + reranker", self.name,
                            self.needs | {"reranker"}, rerank_factory(self.name), self.kind)


def rerank_factory(base: str) -> Factory:
    """The factory of ``base + "_rerank"``: our cross-encoder over base's candidates."""

    def build(ctx: Any) -> Node:
        from searchgrade.indexes.rerank.cross_encoder import RerankNode

        default = ctx.settings.reranker_model
        if default in getattr(getattr(ctx, "registry", None), "rerankers", {}):  # --reranker-model NAME: declared
            return declared_rerank_factory(base, default, base + RERANK_SUFFIX)(ctx)
        shared = ctx.scorer()
        depth = ctx.settings.rerank_depth
        limit = getattr(shared.scorer, "max_depth", None)  # a trained reranker's measured depth
        return RerankNode(base + RERANK_SUFFIX, base, shared, min(depth, limit) if limit else depth,
                          ctx.contents, capped=bool(limit))

    return build


def declared_rerank_factory(base: str, reranker: str, name: str | None = None) -> Factory:
    """The factory of ``base_RERANKER``: a declared reranker's node over base's candidates, at the
    reranker's own depth (its ``depth`` key; the run's --rerank-depth when it has none)."""

    def build(ctx: Any) -> Node:
        from searchgrade.indexes.rerank.service import ServiceRerankNode

        spec = ctx.registry.rerankers[reranker]
        depth = spec.depth if spec.depth is not None else ctx.settings.rerank_depth
        return ServiceRerankNode(name or f"{base}_{reranker}", base, ctx.query_scores(reranker), depth,
                                 ctx.contents)

    return build


def _ann(ctx: Any) -> Node:
    from searchgrade.indexes.builtin.ann import AnnNode

    return AnnNode(ctx.ann(), ctx.settings.batch_size)


def _fulltext(ctx: Any) -> Node:
    from searchgrade.indexes.builtin.fulltext import FulltextNode

    return FulltextNode(ctx.fulltext())


def _hybrid(ctx: Any) -> Node:
    from searchgrade.indexes.builtin.hybrid import HybridNode

    return HybridNode(("ann", "fulltext"), fusion=ctx.settings.hybrid_fusion())


_ANN = StrategyInfo("ann", "ANN (dense)", None, frozenset({"ann"}), _ann)
_FULLTEXT = StrategyInfo("fulltext", "Full-text (BM25)", None, frozenset({"fulltext"}), _fulltext)
_HYBRID = StrategyInfo("hybrid", "Hybrid (RRF)", None, frozenset({"ann", "fulltext"}), _hybrid)

#: The built-in strategies, in display order: retrieval strategies first, then their reranked twins.
BUILTIN: dict[str, StrategyInfo] = {s.name: s for s in (
    _ANN,
    _FULLTEXT,
    _HYBRID,
    _ANN.reranked("ANN + reranker"),
    _FULLTEXT.reranked("Full-text + reranker"),
    _HYBRID.reranked("Hybrid + reranker"),
)}


@dataclass
class Registry(Mapping[str, Factory]):
    """Strategy name -> factory, with what each strategy is (``info``).

    A plain mapping to the executor and the build; ``with_declared`` gives a registry that also
    holds a strategies file's declarations (and their reranked twins), leaving this one as it is.
    """

    infos: dict[str, StrategyInfo] = field(default_factory=dict)
    #: Declared strategies by name, for the run's record of its declarations.
    declared: dict[str, StrategySpec] = field(default_factory=dict)
    #: Strategies known but left out of the default selection (plugins found by entry point).
    optional: set[str] = field(default_factory=set)
    #: Declared rerankers by name (``[reranker.NAME]``, indexes/declared/rerankers.py).
    rerankers: dict[str, Any] = field(default_factory=dict)

    def __getitem__(self, name: str) -> Factory:
        return self.infos[name].factory

    def __iter__(self) -> Iterator[str]:
        return iter(self.infos)

    def __len__(self) -> int:
        return len(self.infos)

    def register(self, info: StrategyInfo, *, optional: bool = False) -> None:
        check_name(info.name)
        self.infos[info.name] = info
        if optional:
            self.optional.add(info.name)

    def declare(self, spec: StrategySpec, *, optional: bool = False) -> None:
        """Register a declared strategy (built by its kind, indexes/declared/kinds.py) and, with
        ``rerank = true``, its reranked twin."""
        info = StrategyInfo(spec.name, spec.name, None, frozenset(), kinds.factory(spec), spec.kind)
        self.declared[spec.name] = spec
        self.register(info, optional=optional)
        if spec.rerank:
            self.register(info.reranked())
        for reranker in spec.rerankers:
            self.add_reranked(spec.name, reranker, spec.where)

    def add_reranked(self, base: str, reranker: str, where: str = "") -> str:
        """Register ``base_RERANKER`` (a declared reranker over ``base``) and return its name.

        Raises:
            SearchGradeError: the reranker is not declared, or base is no retrieval strategy.
        """
        if reranker not in self.rerankers:
            known = f"one of {', '.join(self.rerankers)}" if self.rerankers else "a [reranker.NAME] table"
            raise SearchGradeError(f"{where + ': ' if where else ''}reranker {reranker!r} is not declared: "
                                   f"use {known} (declared in the strategies file)")
        info = self.infos[base]
        if info.reranks is not None:
            raise SearchGradeError(f"{base} is a reranked strategy already: rerank its base {info.reranks}")
        twin = info.reranked_by(reranker, self.rerankers[reranker].kind)
        if twin.name in self.infos and self.infos[twin.name].reranker != reranker:
            raise SearchGradeError(f"{twin.name} would be both a declared strategy and {base} reranked by "
                                   f"{reranker}: rename [strategy.{twin.name}] or [reranker.{reranker}]")
        self.register(twin)
        return twin.name

    def with_rerankers(self, specs: Mapping[str, Any]) -> Registry:
        """This registry plus declared rerankers (``RerankerSpec`` by name), for declared strategies'
        ``rerank = "NAME"`` and ``--rerankers``."""
        from searchgrade.indexes.declared.rerankers import note_rerankers

        out = self.copy()
        out.rerankers.update(specs)
        note_rerankers(specs)
        return out

    def copy(self) -> Registry:
        return Registry(dict(self.infos), dict(self.declared), set(self.optional), dict(self.rerankers))

    def names(self) -> tuple[str, ...]:
        """Every registered name, in display order."""
        return tuple(strategy_order(self.infos))

    def defaults(self) -> tuple[str, ...]:
        """What ``--strategies`` means when not given: every strategy but the optional ones."""
        return tuple(n for n in self.names() if n not in self.optional)

    def unknown(self, names: Iterable[str]) -> list[str]:
        return [n for n in names if n not in self.infos]

    def info(self, name: str) -> StrategyInfo:
        return self.infos[name]

    def with_declared(self, specs: Mapping[str, StrategySpec]) -> Registry:
        """This registry plus declared strategies (and ``X_rerank`` for those with rerank = true).

        Raises:
            SearchGradeError: a declared name is a registered one (a built-in, say).
        """
        out = self.copy()
        for name, spec in specs.items():
            clash = name in BUILTIN or (name in out.infos and name not in self.optional)
            if clash:
                raise SearchGradeError(
                    f"strategy name {name!r} is taken by a built-in strategy: rename "
                    f"[strategy.{name}] in the strategies file (e.g. [strategy.my-{name}])"
                )
            out.optional.discard(name)
            out.declare(spec)
        return out


def check_name(name: str) -> str:
    """``name`` if it is a valid strategy name, else SearchGradeError with the rule."""
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        raise SearchGradeError(
            f"strategy name {name!r} is not allowed: use lower-case letters, digits, '_' and '-' "
            "only, e.g. prod-es"
        )
    return name


_BUILTINS: Registry | None = None


def builtin_registry() -> Registry:
    """The registry of the six built-in strategies (made once)."""
    global _BUILTINS
    if _BUILTINS is None:
        registry = Registry()
        for info in BUILTIN.values():
            registry.register(info)
        _BUILTINS = registry
    return _BUILTINS


def registry_for(specs: Mapping[str, StrategySpec] | None = None, *, plugins: bool = True,
                 rerankers: Mapping[str, Any] | None = None) -> Registry:
    """The built-ins, Python plugins found by entry point (optional), declared ``rerankers``
    (``RerankerSpec`` by name), and ``specs`` declared.

    An entry point whose name is no strategy name (or is a built-in's, or ends in ``_rerank``) is
    left out.
    """
    registry = builtin_registry()
    if rerankers:
        registry = registry.with_rerankers(rerankers)
    if plugins:
        found = {name: spec for name, spec in entry_point_specs().items()
                 if NAME_PATTERN.fullmatch(name) and not name.endswith(RERANK_SUFFIX)
                 and name not in BUILTIN}
        if found:
            registry = registry.copy()
            for spec in found.values():
                registry.declare(spec, optional=True)
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
    if base is not None and reranker_of(name) is not None:
        return f"{label(base)} + {reranker_of(name)}"
    return f"{base} + reranker" if base is not None else name


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
    base, _, reranker = name.rpartition("_")
    if base and reranker_known(reranker):
        return base
    return None


def reranker_of(name: str) -> str | None:
    """The declared reranker of ``X_NAME`` ("ann_cohere" -> "cohere"); None for ``X_rerank`` (the run's
    default reranker) and for a retrieval strategy."""
    if base_of(name) is None or name.endswith(RERANK_SUFFIX) or name in BUILTIN:
        return None
    return name.rpartition("_")[2]


def reranker_known(name: str) -> bool:
    """Whether ``name`` is a declared reranker this process has seen (a strategies file, a run's config)."""
    from searchgrade.indexes.declared.rerankers import KNOWN_RERANKERS

    return name in KNOWN_RERANKERS


def pairs(names: Iterable[str]) -> list[tuple[str, str | None]]:
    """(retrieval strategy, a reranked twin or None) for the strategies in ``names``, in display
    order; a reranked strategy whose base is absent is listed under its base's name. A base that
    several rerankers rerank (``X_rerank``, ``X_cohere``, ...) has one pair per reranker."""
    present = set(names)
    bases = strategy_order({base_of(n) or n for n in present})
    out: list[tuple[str, str | None]] = []
    for base in bases:
        twin = reranked_of(base)
        twins = ([twin] if twin in present else []) + sorted(
            n for n in present if n != twin and base_of(n) == base)
        out += [(base, t) for t in twins] or [(base, None)]
    return out


def needs(name: str) -> frozenset[str]:
    """The built-in components building ``name`` takes ("ann", "fulltext", "reranker")."""
    return BUILTIN[name].needs
