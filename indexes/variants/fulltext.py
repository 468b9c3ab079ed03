"""``kind = "fulltext"``: the built-in BM25 with its own k1 and b, over documents or chunks.

    [strategy.bm25-passages]
    kind = "fulltext"
    bm25_k1 = 1.2
    bm25_b = 0.75
    chunking = { method = "sentences", size = 4, overlap = 1 }
    aggregate = "max"

Chunks of a full-text variant count BM25's own words (it has no model tokenizer). Its BM25
statistics (idf, the average length) are the chunks', as a passage index's are.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from searchgrade.indexes.declared.declaration import Key, StrategySpec
from searchgrade.indexes.variants.common import CHUNK_KEYS, check_chunk_keys, check_settings

SETTINGS = ("bm25_k1", "bm25_b")

KEYS: dict[str, Key] = {
    "bm25_k1": Key((float,), None, example="1.2"),
    "bm25_b": Key((float,), None, example="0.75"),
    **CHUNK_KEYS,
}


def check(spec: StrategySpec) -> StrategySpec:
    """k1 >= 0, 0 <= b <= 1, the chunking."""
    options = dict(spec.options)
    check_settings(spec, SETTINGS)
    check_chunk_keys(spec, options)
    return replace(spec, options=options)


def check_typed(spec: StrategySpec, policy: Any) -> None:
    """Typed in the app: BM25 over the collection reaches nothing outside it."""


def build_node(spec: StrategySpec, ctx: Any) -> Any:
    from searchgrade.indexes.variants.nodes import variant_node

    return variant_node(spec, ctx, "fulltext", SETTINGS)
