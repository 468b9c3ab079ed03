"""``kind = "hybrid"``: a fusion of other strategies' lists, declared in a strategies file.

    [strategy.es-plus-dense]
    kind = "hybrid"
    inputs = ["ann", "prod-es"]          # any registered strategies, built-in or declared
    fusion = "convex(w=0.4,norm=minmax)" # indexes/builtin/fusion.py: rrf, wrrf, combsum, combmnz, convex
    depth = 100                          # entries of each list fused (or depth= in fusion)
    rrf_k = 60

A hybrid of variants (indexes/variants/) may name its two lists instead, each defaulting to the
built-in: ``ann = "minilm-chunks"``, ``fulltext = "bm25-passages"`` (inputs = [ann, fulltext]).

Each input is computed once per query by the executor and shared with every other strategy that
uses it; the fused strategy's latency is the fusion's plus its inputs'.
"""

from __future__ import annotations

from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.builtin.fusion import parse_fusion
from searchgrade.indexes.declared.declaration import Key, StrategySpec

KEYS: dict[str, Key] = {
    "inputs": Key((list,), ["ann", "fulltext"], example='["ann", "prod-es"]'),
    "fusion": Key((str,), "rrf", example='"convex(w=0.4,norm=minmax)"'),
    "depth": Key((int,), 100, example="100"),
    "rrf_k": Key((int,), 60, example="60"),
    "ann": Key((str,), None, example='"minilm-chunks" (a kind = "ann" variant; default the built-in ann)'),
    "fulltext": Key((str,), None, example='"bm25-passages" (a kind = "fulltext" variant; default the built-in)'),
}


def check(spec: StrategySpec) -> StrategySpec:
    """Two or more distinct input names, a fusion that parses, depth >= 1, rrf_k >= 0."""
    o, where = dict(spec.options), spec.where
    if o.get("ann") is not None or o.get("fulltext") is not None:
        if o["inputs"] != KEYS["inputs"].default:
            raise SearchGradeError(f"{where}: name the lists either with inputs = [...] or with ann = / fulltext =, "
                                   "not both")
        o["inputs"] = [o.get("ann") or "ann", o.get("fulltext") or "fulltext"]
    inputs = o["inputs"]
    if (len(inputs) < 2 or not all(isinstance(i, str) and i for i in inputs) or len(set(inputs)) != len(inputs)):
        raise SearchGradeError(f"{where}: inputs must name two or more different strategies, got {inputs!r}; "
                               f"e.g. inputs = {KEYS['inputs'].example}")
    if spec.name in inputs:
        raise SearchGradeError(f"{where}: inputs name the strategy itself ({spec.name!r}): fuse other strategies")
    if o["depth"] < 1 or o["rrf_k"] < 0:
        raise SearchGradeError(f"{where}: depth must be >= 1 and rrf_k >= 0")
    fusion = parse_fusion(o["fusion"], rrf_k=o["rrf_k"], depth=o["depth"], where=f"{where}: fusion")
    try:
        fusion.list_depths(len(inputs))
        fusion.list_weights(len(inputs))
    except SearchGradeError as exc:
        raise SearchGradeError(f"{where}: fusion: {exc}") from None
    o["inputs"] = list(inputs)
    return StrategySpec(spec.name, spec.kind, o, spec.rerank, spec.source, spec.declared_in)


def check_typed(spec: StrategySpec, policy: Any) -> None:
    """Typed in the app: a fusion connects nowhere, so there is nothing more to check."""


def build_node(spec: StrategySpec, ctx: Any) -> Any:
    from searchgrade.indexes.builtin.hybrid import HybridNode

    o = spec.options
    fusion = parse_fusion(o["fusion"], rrf_k=o["rrf_k"], depth=o["depth"], where=f"{spec.where}: fusion")
    return HybridNode(tuple(o["inputs"]), name=spec.name, fusion=fusion)
