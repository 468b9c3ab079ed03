"""``kind = "ann"``: the built-in dense strategy with its own model, backend, index and chunking.

    [strategy.minilm-chunks]
    kind = "ann"
    embedding_model = "all-MiniLM-L6-v2"       # any sentence-transformers name or folder, a model2vec folder
    chunking = { method = "tokens", size = 128, overlap = 16 }
    aggregate = "max"                          # or "sum_top2", "first"
    # embedding_backend = "onnx-int8"   ann_index = "auto"   (default: the run's)

Without ``chunking`` it searches whole documents, as the built-in does; with it, the chunks, each
document ranked by the aggregate of its chunks' scores (indexes/variants/nodes.py). A model that
cannot be loaded here skips the strategy with the reason and the fix; the rest of the run goes on.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.declared.declaration import Key, StrategySpec
from searchgrade.indexes.variants.common import (
    CHUNK_KEYS,
    check_chunk_keys,
    check_model,
    check_settings,
    looks_like_path,
)

#: The run's settings a variant may change.
SETTINGS = ("embedding_model", "embedding_backend", "ann_index")

KEYS: dict[str, Key] = {
    "embedding_model": Key((str,), None, example='"all-MiniLM-L6-v2" (or a model folder)'),
    "embedding_backend": Key((str,), None, example='"onnx-int8"'),
    "ann_index": Key((str,), None, example='"auto"'),
    **CHUNK_KEYS,
}


def check(spec: StrategySpec) -> StrategySpec:
    """The model (a folder is checked by its files), the backend and index type, the chunking."""
    options = dict(spec.options)
    check_model(spec.where, options["embedding_model"])
    check_settings(spec, SETTINGS)
    check_chunk_keys(spec, options)
    model, backend = options["embedding_model"], options["embedding_backend"]
    if model is not None and backend not in (None, "torch") and looks_like_path(model):
        from searchgrade.indexes.embeddings.models import MODEL2VEC, model_kind

        if model_kind(model) == MODEL2VEC:
            raise SearchGradeError(f"{spec.where}: embedding_model '{model}' is a model2vec static model, which "
                                   f"runs no transformer: drop embedding_backend = \"{backend}\"")
    return replace(spec, options=options)


def check_typed(spec: StrategySpec, policy: Any) -> None:
    """Typed in the app: a model folder only inside the collections root."""
    model = spec.options.get("embedding_model")
    if model is not None and looks_like_path(model):
        policy.check_path(model, f"{spec.where}: embedding_model")


def build_node(spec: StrategySpec, ctx: Any) -> Any:
    from searchgrade.indexes.variants.nodes import variant_node

    return variant_node(spec, ctx, "ann", SETTINGS)
