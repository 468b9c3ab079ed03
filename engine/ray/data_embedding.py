"""Embedding a corpus on Ray Data, into the driver's embedding cache.

The texts the embedding cache lacks go through Ray Data (``map_batches`` over actors holding the
model), cut into the chunks ``encode_cached`` would encode, one block each, so the vectors are
the local run's; they land in the driver's embedding cache, so the index build that follows
embeds nothing.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from searchgrade.engine.ray.session import RaySession, import_ray, stderr_captured, worker_error

Progress = Callable[[str, int, int], None]

#: Vectors written to the embedding cache per shard while a Ray embedding runs (a failure keeps them).
EMBED_SHARD_ROWS = 16_384


class EmbedBatches:
    """A Ray Data actor holding the embedding model (``indexes.embeddings.encoder.load_embedder``).

    Each input block is one chunk of texts, cut as ``encode_cached`` cuts them locally; a chunk is
    encoded alone, in its order, so the model sees the same batches (same padding) as a local run
    and the vectors are the same.
    """

    def __init__(self, model_name: str, batch_size: int, backend: str = "torch", device: str = "auto",
                 models_dir: str | None = None) -> None:
        from searchgrade.indexes.embeddings.encoder import load_embedder

        # The run's embedding backend (an ONNX one exports into models_dir once, on first use).
        self.model = load_embedder(model_name, backend, device, models_dir)
        self.batch_size = batch_size

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        import numpy as np

        from searchgrade.indexes.embeddings.encoder import encode

        chunks = np.asarray(batch["chunk"])
        order = np.lexsort((np.asarray(batch["pos"]), chunks))
        keys, vectors = [], []
        for chunk in dict.fromkeys(chunks[order].tolist()):
            rows = order[chunks[order] == chunk]
            vectors.append(encode(self.model, [str(batch["text"][i]) for i in rows], self.batch_size))
            keys.extend(str(batch["key"][i]) for i in rows)
        return {"key": np.asarray(keys), "vector": np.concatenate(vectors)}


def _quiet_ray_data() -> None:
    """Ray Data's progress bars and execution notes off: the run shows its own progress."""
    import logging

    from ray.data import DataContext

    DataContext.get_current().enable_progress_bars = False
    logging.getLogger("ray.data").setLevel(logging.ERROR)


@dataclass(frozen=True)
class RayEmbedStats:
    """What ``embed_on_ray`` did: texts asked for, found cached, embedded on Ray, seconds."""

    texts: int
    cache_hits: int
    embedded: int
    seconds: float
    actors: int

    def to_json(self) -> dict[str, Any]:
        rate = self.embedded / self.seconds if self.embedded and self.seconds > 0 else None
        return {"texts": self.texts, "cache_hits": self.cache_hits, "embedded": self.embedded,
                "seconds": round(self.seconds, 3), "docs_per_s": rate, "actors": self.actors}


def embed_on_ray(session: RaySession, model_name: str, texts: Sequence[str], cache_dir: Path,
                 batch_size: int = 32, progress: Progress | None = None,
                 actors: int | None = None, backend: str = "torch", device: str = "auto",
                 models_dir: Path | None = None) -> RayEmbedStats:
    """Embed the texts the cache lacks with Ray Data (``map_batches`` over actors holding the
    model) and add them to the embedding cache, so the index build that follows embeds nothing.

    The texts are cut into the chunks ``encode_cached`` would encode (the same order and size),
    one Ray Data block each, so every vector is the one a local run computes.
    """
    import time

    import numpy as np
    import pyarrow as pa

    from searchgrade.indexes.embeddings.encoder import PROGRESS_CHUNK, EmbeddingCache, text_key

    ray = import_ray()
    started = time.perf_counter()
    cache = EmbeddingCache(cache_dir)
    unique: dict[bytes, str] = {}
    for text in texts:
        unique.setdefault(text_key(text), text)
    found = cache.get(list(unique))
    missing = [key for key in unique if key not in found]
    if progress is not None:
        progress("embed", len(found), len(unique))
    if not missing:
        return RayEmbedStats(len(texts), len(found), 0, 0.0, 0)
    blocks = []
    for chunk, start in enumerate(range(0, len(missing), PROGRESS_CHUNK)):
        part = missing[start:start + PROGRESS_CHUNK]
        blocks.append(pa.table({"chunk": [chunk] * len(part), "pos": list(range(len(part))),
                                "key": [key.hex() for key in part], "text": [unique[key] for key in part]}))
    n_actors = max(1, min(actors or session.cpus(), len(blocks)))
    _quiet_ray_data()
    dataset = ray.data.from_arrow(blocks).map_batches(
        EmbedBatches, fn_constructor_kwargs={"model_name": model_name, "batch_size": batch_size,
                                             "backend": backend, "device": device,
                                             "models_dir": str(models_dir) if models_dir else None},
        batch_size=None, batch_format="numpy", compute=ray.data.ActorPoolStrategy(size=n_actors),
        num_cpus=1)
    done = len(found)
    pending_keys: list[bytes] = []
    pending_vectors: list[Any] = []
    try:
        batches = iter(dataset.iter_batches(batch_size=None, batch_format="numpy"))
        # Starting the actors, Ray's core logs a note about their constructor arguments to stderr.
        with stderr_captured():
            first = next(batches, None)
        for batch in itertools.chain([first] if first is not None else [], batches):
            pending_keys.extend(bytes.fromhex(str(k)) for k in batch["key"])
            pending_vectors.append(np.asarray(batch["vector"], dtype=np.float32))
            if len(pending_keys) >= EMBED_SHARD_ROWS:
                cache.add(pending_keys, np.concatenate(pending_vectors))
                pending_keys, pending_vectors = [], []
            done += len(batch["key"])
            if progress is not None:
                progress("embed", done, len(unique))
    except ray.exceptions.RayError as exc:
        raise worker_error(exc) from None
    finally:
        if pending_keys:  # what was embedded before a failure or Ctrl-C is kept
            cache.add(pending_keys, np.concatenate(pending_vectors))
    return RayEmbedStats(len(texts), len(found), len(missing), time.perf_counter() - started, n_actors)
