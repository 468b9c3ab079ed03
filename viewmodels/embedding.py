"""Which backend embedded a run's documents and queries, in words (`searchgrade show`, Results).

No pandas here: the CLI imports it.
"""

from __future__ import annotations

from typing import Any

BACKEND_NAMES = {
    "torch": "sentence-transformers (torch, fp32)",
    "onnx": "ONNX Runtime (fp32)",
    "onnx-int8": "ONNX Runtime (int8 weights)",
}


def embedding_text(config: dict[str, Any], stats: dict[str, Any]) -> str | None:
    """The run's embedding model, backend and device, and what it embedded; None without ANN.

    "embeddings: sentence-transformers/all-MiniLM-L6-v2 by ONNX Runtime (int8 weights) on cpu;
    5,183 documents embedded (21.4 docs/s), 0 from the cache".
    """
    index = (stats or {}).get("index") or {}
    backend = index.get("embedding_backend")
    if backend is None:
        return None
    model = ((config or {}).get("index") or {}).get("embedding_model", "?")
    line = f"embeddings: {model} by {BACKEND_NAMES.get(backend, backend)} on {index.get('embedding_device', '?')}"
    if index.get("ann_reused"):
        return line + "; the ANN index was reused from an earlier build"
    embedded, hits, rate = index.get("embedded"), index.get("cache_hits"), index.get("embed_docs_per_s")
    if embedded is None:
        return line
    speed = f" ({rate:.1f} docs/s)" if rate else ""
    return line + f"; {embedded:,} documents embedded{speed}, {hits or 0:,} from the cache"
