"""Rerankers a user declares in the strategies file: ``[reranker.NAME]`` tables, checked once.

    [reranker.cohere]
    kind = "cohere"                    # or "jina", "voyage", "tei", "http" (a template), "llm"
    model = "rerank-v3.5"
    api_key = "env:COHERE_API_KEY"     # sent as Authorization: Bearer ...; only ever env:NAME

    [strategy.prod-es]
    kind = "elasticsearch"
    index = "docs"
    query = '{"match": {"text": {{query}}}}'
    rerank = ["cohere"]                # grade prod-es and prod-es_cohere

A declared reranker ``NAME`` reranks a strategy ``X`` as the strategy ``X_NAME`` (paired with X
wherever a strategy and its reranked twin are: the bars, the baseline-vs-reranker table, the paired
tests), chosen with a strategy's ``rerank = "NAME"`` (or a list), with ``--rerankers NAME,...`` for
every base strategy, or as the run's default reranker (``--reranker-model NAME``: ``X_rerank``).
Reranker names take no ``_`` so that ``X_NAME`` is read from its end.

Each kind is one ``RerankerKind`` in ``RERANKER_KINDS`` (its keys, its checks, its builder), as
strategies' kinds are (kinds.py); spec.py parses the tables. The builders live with the rerankers
and register their kinds (indexes/rerank/http.py, indexes/rerank/llm_kind.py;
the LLM reranker, which needs the run's LLM, is given to the build by the run:
``BuildContext.services``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.declared.declaration import Key

if TYPE_CHECKING:
    from searchgrade.core.outbound import OutboundPolicy

#: What a declared reranker's name may look like: no "_", so ``X_NAME`` is read from its end.
RERANKER_NAME = re.compile(r"[a-z0-9-]+")
#: Names that are not a declared reranker's: "rerank" is the run's default (``X_rerank``).
RESERVED_NAMES = frozenset({"rerank", "default"})


@dataclass(frozen=True)
class RerankerSpec:
    """One declared reranker, checked.

    Attributes:
        name: ``[reranker.NAME]``; it reranks X as ``X_NAME``.
        kind: "http", "cohere", "jina", "voyage", "tei" or "llm" (``RERANKER_KINDS``).
        options: every key of the kind with its value or default (``env:`` values as written).
        source: where it was declared, for messages.
        declared_in: "" for the operator's; "app" / "exposed app" for one typed in the browser
            (its url and secrets go through core/outbound.py's policy).
    """

    name: str
    kind: str
    options: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    declared_in: str = ""

    @property
    def where(self) -> str:
        return f"{self.source}: [reranker.{self.name}]" if self.source else f"[reranker.{self.name}]"

    @property
    def depth(self) -> int | None:
        """Candidates it rescores per query (None: the run's --rerank-depth)."""
        value = self.options.get("depth")
        return int(value) if value is not None else None

    def to_json(self) -> dict[str, Any]:
        typed = {"declared_in": self.declared_in} if self.declared_in else {}
        return {"kind": self.kind, "source": self.source, **typed, **self.options}

    @classmethod
    def from_json(cls, name: str, d: Mapping[str, Any]) -> RerankerSpec:
        options = {k: v for k, v in d.items() if k not in ("kind", "source", "declared_in")}
        return cls(name, str(d["kind"]), options, str(d.get("source") or ""), str(d.get("declared_in") or ""))


@dataclass(frozen=True)
class RerankerKind:
    """One kind of declared reranker: its keys, the rules across them, and its builder.

    ``build(spec, ctx)`` returns an indexes.rerank.service.QueryReranker; ``check_typed`` checks
    a declaration typed in the app (None: it cannot be typed there).
    """

    name: str
    keys: Mapping[str, Key]
    check: Callable[[RerankerSpec], RerankerSpec]
    build: Callable[[RerankerSpec, Any], Any]
    check_typed: Callable[[RerankerSpec, OutboundPolicy], None] | None = None


#: Every reranker kind, by name.
RERANKER_KINDS: dict[str, RerankerKind] = {}

#: Reranker names seen in this process (declarations parsed, runs' configs read): ``X_NAME`` is
#: read as X reranked by NAME only for these (indexes/registry.py ``base_of``).
KNOWN_RERANKERS: set[str] = set()


def register_kind(kind: RerankerKind) -> RerankerKind:
    if kind.name in RERANKER_KINDS:
        raise ValueError(f"reranker kind {kind.name!r} is registered twice")
    RERANKER_KINDS[kind.name] = kind
    return kind


def note_rerankers(names: Any) -> None:
    """Remember reranker names (a run's ``rerankers`` config), so their ``X_NAME`` pair with X."""
    for name in names or ():
        if isinstance(name, str) and RERANKER_NAME.fullmatch(name) and name not in RESERVED_NAMES:
            KNOWN_RERANKERS.add(name)


def check_reranker_name(name: Any, source: str = "") -> str:
    prefix = f"{source}: " if source else ""
    if not isinstance(name, str) or not RERANKER_NAME.fullmatch(name):
        raise SearchGradeError(f"{prefix}reranker name {name!r} is not allowed: use lower-case letters, "
                               "digits and '-' only (no '_': X_NAME names what it reranks), e.g. "
                               "[reranker.cohere-v3]")
    if name in RESERVED_NAMES:
        raise SearchGradeError(f"{prefix}[reranker.{name}]: {name!r} is kept for the run's default "
                               "reranker (X_rerank): give it another name, e.g. [reranker.my-ce]")
    return name


class MissingService(SearchGradeError):  # noqa: N818 - a signal to skip, recorded, not an error
    """A reranker whose builder needs what the run did not give (the LLM reranker without the run's
    LLM): its strategies are skipped with this line."""


def reranker_kind(name: str, where: str = "") -> RerankerKind:
    found = RERANKER_KINDS.get(name)  # registered by indexes/rerank/ (http.py, llm_kind.py)
    if found is None:
        raise SearchGradeError(f"{where + ': ' if where else ''}unknown reranker kind {name!r}: use one of "
                               f"{', '.join(RERANKER_KINDS)}")
    return found
