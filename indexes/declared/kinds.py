"""The kinds of declared strategy: each kind's keys, checks and builder, registered once.

A kind is one ``BackendKind`` record in ``KINDS``: the strategies file (spec.py) takes its keys and
checks from it, and the registry (indexes/registry.py) builds its strategies with its builder.
Presets are kinds too: ``elasticsearch`` and ``opensearch`` are the http backend with their own
keys and defaults.

Adding a kind (postgres, lancedb, a rerank service, ...) is one new module and one registration:

1. ``indexes/declared/NAME.py`` defines

   - ``KEYS``: ``dict[str, Key]``, the keys it takes (type, default, required, an example value);
   - ``check(spec) -> StrategySpec``: the rules across keys, each problem one SearchGradeError
     line naming the strategy, the key and the fix (``spec.where``);
   - ``build_node(spec, ctx) -> Node``: its executor node (``Node`` in indexes/base.py), built from
     the checked spec and the build's shared components (``ctx``: indexes.build.BuildContext, e.g.
     ``ctx.settings``, ``ctx.embedder(model)``). A backend that searches one query at a time
     subclasses ``DeclaredNode`` (node.py) and writes only ``search_one`` (one attempt) and
     ``explain`` (what its errors mean, and which are worth another attempt): the timing, the
     retries, the queries in flight and the embedding of queries are done there;
   - optionally ``check_typed(spec, policy)``: the checks of a declaration typed in the app (its
     hosts, paths and ``env:`` secrets against core/outbound.py's policy), which its builder applies
     again for such a spec. A kind without it cannot be declared in the app (``python``: code).

   It imports declaration.py (Key, StrategySpec, the env:/URL/secret checks), core/ and what its
   own concept folder holds (the variants: indexes/variants/), and its client library inside
   functions, with a message saying how to install it when missing.
2. One ``register(BackendKind("NAME", NAME.KEYS, NAME.check, NAME.build_node, NAME.check_typed))``
   line below.

``kind = "NAME"`` is then accepted in a strategies file with exactly those keys, listed in every
"use one of ..." message, and built by the registry: nothing else changes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.declared import http, hybrid, lancedb, milvus, plugin, postgres
from searchgrade.indexes.declared.declaration import Key, StrategySpec
from searchgrade.indexes.variants import ann as variant_ann
from searchgrade.indexes.variants import fulltext as variant_fulltext

if TYPE_CHECKING:
    from searchgrade.core.outbound import OutboundPolicy
    from searchgrade.indexes.base import Node


@dataclass(frozen=True)
class BackendKind:
    """One kind of declared strategy: what ``kind = "NAME"`` takes and how it is built.

    Attributes:
        name: the value of ``kind`` in the strategies file.
        keys: the keys it takes besides ``kind`` and ``rerank``.
        check: the rules across keys; returns the spec it accepts (derived keys filled in).
        build: its executor node from a checked spec and the build's context.
        check_typed: the checks of a declaration typed in the app (None: the app cannot declare it).
    """

    name: str
    keys: Mapping[str, Key]
    check: Callable[[StrategySpec], StrategySpec]
    build: Callable[[StrategySpec, Any], Node]
    check_typed: Callable[[StrategySpec, OutboundPolicy], None] | None = None


#: Every kind, by name, in the order the messages list them.
KINDS: dict[str, BackendKind] = {}


def register(kind: BackendKind) -> BackendKind:
    """Add a kind to ``KINDS``.

    Raises:
        ValueError: a kind of that name is registered already (two modules would claim it).
    """
    if kind.name in KINDS:
        raise ValueError(f"backend kind {kind.name!r} is registered twice: give the new one another name")
    KINDS[kind.name] = kind
    return kind


def backend_kind(name: str, where: str = "") -> BackendKind:
    """The registration of kind ``name``.

    Raises:
        SearchGradeError: no such kind (a run stored by a version that had it, say).
    """
    found = KINDS.get(name)
    if found is None:
        raise SearchGradeError(f"{where + ': ' if where else ''}unknown kind {name!r}: use one of "
                               f"{', '.join(KINDS)}")
    return found


def factory(spec: StrategySpec) -> Callable[[Any], Node]:
    """The registry's factory of a declared strategy: its kind's builder, looked up when built."""

    def build(ctx: Any) -> Node:
        return backend_kind(spec.kind, spec.where).build(spec, ctx)

    return build


register(BackendKind("http", http.KEYS, http.check, http.build_node, http.check_typed))
register(BackendKind("elasticsearch", http.PRESET_KEYS, http.check_preset, http.build_node, http.check_typed))
register(BackendKind("opensearch", http.PRESET_KEYS, http.check_preset, http.build_node, http.check_typed))
register(BackendKind("milvus", milvus.KEYS, milvus.check, milvus.build_node, milvus.check_typed))
register(BackendKind("python", plugin.KEYS, plugin.check, plugin.build_node))
register(BackendKind("postgres", postgres.KEYS, postgres.check, postgres.build_node, postgres.check_typed))
register(BackendKind("lancedb", lancedb.KEYS, lancedb.check, lancedb.build_node, lancedb.check_typed))
register(BackendKind("hybrid", hybrid.KEYS, hybrid.check, hybrid.build_node, hybrid.check_typed))
# Variants of the built-ins (indexes/variants/): their own model, chunking, BM25 parameters.
register(BackendKind("ann", variant_ann.KEYS, variant_ann.check, variant_ann.build_node, variant_ann.check_typed))
register(BackendKind("fulltext", variant_fulltext.KEYS, variant_fulltext.check, variant_fulltext.build_node,
                     variant_fulltext.check_typed))
