"""What a strategy's index cost in a run: build time, embedding throughput, size on disk, chunks.

Each index a build makes or reloads (the built-in ANN and BM25 indexes, a variant's over chunks)
records an ``IndexCost``; a strategy's figures are those of every index it searches, its own and
its inputs' (a hybrid adds its two lists' indexes, a reranked strategy has its base's), each index
counted once. Query latency is not here: it is the run's latency summary (the store's
``latency_summary``, one definition), joined where the figures are shown.

- ``index_build_s``: seconds this run spent making the index ready (cutting chunks, embedding the
  texts the embedding cache lacked, building or reloading the index); loading the model is not
  counted (it is the same for any index of that model).
- ``items_per_s``: items (documents or chunks) embedded per second of encoding in this run; None
  when every vector came from the cache (nothing was measured).
- ``index_bytes``: the index's folders on disk (the faiss or BM25 files, the chunk spans); not the
  embedding cache, which any index of that model shares.
- ``chunks_per_doc``: items indexed per document (1.0 for whole documents).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

#: The cost figures of one strategy, as ``show --format json`` lists them (with p50_ms and p95_ms).
COST_KEYS = ("index_build_s", "items_per_s", "index_bytes", "chunks_per_doc")


@dataclass(frozen=True)
class IndexCost:
    """What making one index ready cost in this run.

    Attributes:
        key: the index's identity (its folder): an index several strategies search is counted once.
        build_s: seconds spent making it ready, the model's load excluded.
        embedded: items embedded in this run (0 for a full-text index or a cached one).
        cache_hits: distinct items whose vectors the embedding cache already held.
        encode_s: seconds spent encoding them.
        items: items indexed (documents or chunks).
        documents: documents they come from.
        index_bytes: bytes of its folders on disk.
        reused: it was reloaded from disk, not built.
    """

    key: str
    build_s: float
    embedded: int
    cache_hits: int
    encode_s: float
    items: int
    documents: int
    index_bytes: int | None
    reused: bool


def folder_bytes(folders: Iterable[str | Path]) -> int | None:
    """Bytes of the files in ``folders`` (None when none exists)."""
    total, seen = 0, False
    for folder in folders:
        path = Path(folder)
        if not path.is_dir():
            continue
        seen = True
        for root, _dirs, files in os.walk(path):
            total += sum((Path(root) / f).stat().st_size for f in files)
    return total if seen else None


def strategy_costs(own: Mapping[str, IndexCost], inputs: Mapping[str, tuple[str, ...]],
                   strategies: Iterable[str]) -> dict[str, dict[str, Any]]:
    """Each strategy's figures (``COST_KEYS``, plus ``reused``, ``embedded`` and ``cache_hits``: the
    embedding cache's counters) from the indexes it
    and its inputs searched.

    Args:
        own: node name -> the cost of the index it searches itself (nodes without one are absent:
            a fusion, a reranker, an external system).
        inputs: node name -> the nodes it is built on.
        strategies: the strategies to report.
    """
    out: dict[str, dict[str, Any]] = {}
    for strategy in strategies:
        seen: dict[str, IndexCost] = {}
        todo = [strategy]
        visited: set[str] = set()
        while todo:
            name = todo.pop()
            if name in visited:
                continue
            visited.add(name)
            if name in own:
                seen.setdefault(own[name].key, own[name])
            todo.extend(inputs.get(name, ()))
        out[strategy] = combine(list(seen.values()))
    return out


def combine(costs: list[IndexCost]) -> dict[str, Any]:
    """One strategy's figures from the indexes it searches (all None for none: an external system)."""
    if not costs:
        return {**dict.fromkeys(COST_KEYS), "reused": None, "embedded": None, "cache_hits": None}
    embedded = sum(c.embedded for c in costs)
    encode_s = sum(c.encode_s for c in costs)
    sizes = [c.index_bytes for c in costs if c.index_bytes is not None]
    per_doc = {round(c.items / max(1, c.documents), 6) for c in costs}
    return {
        "index_build_s": round(sum(c.build_s for c in costs), 6),
        "items_per_s": embedded / encode_s if embedded and encode_s > 0 else None,
        "index_bytes": sum(sizes) if sizes else None,
        # One chunking (or whole documents) across its indexes; a fusion of two chunkings has none.
        "chunks_per_doc": per_doc.pop() if len(per_doc) == 1 else None,
        "reused": all(c.reused for c in costs),
        "embedded": embedded,
        "cache_hits": sum(c.cache_hits for c in costs),
    }


def as_json(cost: IndexCost) -> dict[str, Any]:
    return asdict(cost)
