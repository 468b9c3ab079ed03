"""ANN: faiss indexes over the document embeddings, saved and reloaded from disk.

Vectors are L2-normalised, so inner product is cosine similarity. Index types (``ann_index``):

- "auto" (the default): "flat" up to ``ANN_EXACT_MAX_DOCS`` documents, "ivf" above
  (``IndexSettings.resolved``). An approximate index's recall@10 against exact search, measured
  on a sample of the run's queries (``AnnSearcher.recall_at_k``), says what the approximation costs.

- "flat": ``IndexFlatIP``, exact inner-product search (the default; what published dense
  results use).
- "hnsw": ``IndexHNSWFlat`` with the inner-product metric (``hnsw_m`` links per node at build,
  ``hnsw_ef_search`` beam width at search).
- "ivf": ``IndexIVFFlat`` with the inner-product metric, nlist = round(sqrt(n)) lists trained by
  k-means on the corpus itself, ``ivf_nprobe`` lists visited per query (capped at nlist).

An index lives in ``data_dir/indexes/<collection fingerprint>-<ann settings fingerprint>/`` as
``index.faiss`` (faiss.write_index), ``doc_ids.json`` (row -> document id) and ``manifest.json``,
written last, so a folder without a manifest is an interrupted build and is rebuilt.
"""

from __future__ import annotations

import json
import math
import os
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from searchgrade.core.checks import check_k
from searchgrade.core.records import ScoredDoc, SearchGradeError, SearchHits
from searchgrade.indexes.base import Found, Outcome, QueryBatch, answer_each, search_each
from searchgrade.indexes.embeddings.encoder import encode
from searchgrade.indexes.settings import ANN_INDEXES, IndexSettings

MANIFEST = "manifest.json"


def _faiss() -> Any:
    try:
        import faiss
    except ImportError as exc:
        raise SearchGradeError("faiss is not installed (pip install faiss-cpu)") from exc
    return faiss


def _flat(vectors: np.ndarray, settings: IndexSettings) -> Any:
    faiss = _faiss()
    index = faiss.IndexFlatIP(vectors.shape[1])
    index.add(vectors)
    return index


def _hnsw(vectors: np.ndarray, settings: IndexSettings) -> Any:
    faiss = _faiss()
    index = faiss.IndexHNSWFlat(vectors.shape[1], settings.hnsw_m, faiss.METRIC_INNER_PRODUCT)
    index.hnsw.efConstruction = max(40, 2 * settings.hnsw_m)
    index.add(vectors)
    return index


def _ivf(vectors: np.ndarray, settings: IndexSettings) -> Any:
    faiss = _faiss()
    nlist = max(1, round(math.sqrt(len(vectors))))
    quantizer = faiss.IndexFlatIP(vectors.shape[1])
    index = faiss.IndexIVFFlat(quantizer, vectors.shape[1], nlist, faiss.METRIC_INNER_PRODUCT)
    index.cp.seed = 1234  # reproducible k-means
    index.train(vectors)
    index.add(vectors)
    return index


#: ann_index value -> builder(vectors, settings) -> trained, filled faiss index.
ANN_BUILDERS: dict[str, Callable[[np.ndarray, IndexSettings], Any]] = {
    "flat": _flat,
    "hnsw": _hnsw,
    "ivf": _ivf,
}


def build_ann_index(vectors: np.ndarray, settings: IndexSettings) -> Any:
    """A faiss index of the kind ``settings.ann_index`` over ``vectors`` (n x dim, normalised)."""
    settings = settings.resolved(len(vectors))
    builder = ANN_BUILDERS.get(settings.ann_index)
    if builder is None:
        raise SearchGradeError(
            f"ann_index {settings.ann_index!r} is not known: use one of {', '.join(ANN_INDEXES)}"
        )
    vectors = np.ascontiguousarray(vectors, dtype=np.float32)
    if vectors.ndim != 2 or len(vectors) == 0:
        raise ValueError(f"vectors must be a non-empty 2-D array, got shape {vectors.shape}")
    index = builder(vectors, settings)
    apply_search_params(index, settings)
    return index


def apply_search_params(index: Any, settings: IndexSettings) -> None:
    """Set the search-time knobs, which are not part of the saved index."""
    faiss = _faiss()
    settings = settings.resolved(index.ntotal)
    if settings.ann_index == "hnsw":
        index.hnsw.efSearch = settings.hnsw_ef_search
    elif settings.ann_index == "ivf":
        ivf = faiss.extract_index_ivf(index)
        ivf.nprobe = min(settings.ivf_nprobe, ivf.nlist)


def ann_dir(data_dir: Path, collection_fingerprint: str, settings: IndexSettings) -> Path:
    """The folder of an index; ``settings`` must be resolved (no "auto")."""
    return Path(data_dir) / "indexes" / f"{collection_fingerprint}-{settings.fingerprint('ann')}"


def save_ann(directory: Path, index: Any, doc_ids: Sequence[str], settings: IndexSettings) -> None:
    """Write index, row -> doc id map and manifest (last) into ``directory``."""
    faiss = _faiss()
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MANIFEST).unlink(missing_ok=True)
    tmp = directory / f".index.faiss.{uuid.uuid4().hex[:8]}.tmp"
    faiss.write_index(index, str(tmp))
    os.replace(tmp, directory / "index.faiss")
    (directory / "doc_ids.json").write_text(json.dumps(list(doc_ids)), encoding="utf-8")
    manifest = {
        "artifact": "ann",
        "ann_index": settings.ann_index,
        "settings_fingerprint": settings.fingerprint("ann"),
        "embedding_model": settings.embedding_model,
        "documents": len(doc_ids),
        "dim": index.d,
        "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")


def load_ann(directory: Path, settings: IndexSettings,
             doc_ids: Sequence[str]) -> Any | None:
    """The saved index, or None when there is none, it is incomplete, or it is for other documents."""
    faiss = _faiss()
    try:
        manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
        saved_ids = json.loads((directory / "doc_ids.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if manifest.get("settings_fingerprint") != settings.fingerprint("ann") or saved_ids != list(doc_ids):
        return None
    try:
        index = faiss.read_index(str(directory / "index.faiss"))
    except RuntimeError:  # truncated or foreign file: rebuild it
        return None
    if index.ntotal != len(doc_ids):
        return None
    apply_search_params(index, settings)
    return index


class AnnSearcher:
    """Dense retrieval: embed the query, then search the faiss index."""

    def __init__(self, model: Any, index: Any, doc_ids: Sequence[str], name: str = "ann") -> None:
        if index.ntotal != len(doc_ids):
            raise ValueError(f"index holds {index.ntotal} vectors but {len(doc_ids)} doc ids were given")
        self.name = name
        self.model = model
        self.index = index
        self.doc_ids = list(doc_ids)
        #: Query text -> its vector, as searching embedded it (``query_vectors`` reuses them).
        self._queries: dict[str, np.ndarray] = {}

    def search_one(self, query: str, k: int) -> list[ScoredDoc]:
        check_k(k)
        vector = encode(self.model, [query], batch_size=1)
        scores, rows = self.index.search(vector, min(k, self.index.ntotal))
        kept = [(int(row), float(score)) for row, score in zip(rows[0], scores[0], strict=True) if row >= 0]
        return [ScoredDoc(self.doc_ids[row], score, rank) for rank, (row, score) in enumerate(kept, start=1)]

    def search(self, queries: Sequence[str], k: int) -> list[SearchHits]:
        return search_each(self.search_one, queries, k)

    def keep_query_vectors(self, texts: Sequence[str], vectors: np.ndarray) -> None:
        """Remember the vectors a search embedded, by query text (``query_vectors`` reads them)."""
        self._queries.update(zip(texts, vectors, strict=True))

    def query_vectors(self, texts: Sequence[str], batch_size: int = 32) -> np.ndarray:
        """The vectors of query texts, one row each: those a search here already embedded, the
        others embedded now (a run's diagnosis reads its queries' vectors after searching them)."""
        missing = list(dict.fromkeys(t for t in texts if t not in self._queries))
        if missing:
            self.keep_query_vectors(missing, encode(self.model, missing, batch_size=batch_size))
        if not texts:
            return np.zeros((0, self.index.d), dtype=np.float32)
        return np.stack([self._queries[t] for t in texts]).astype(np.float32, copy=False)

    @property
    def kind(self) -> str:
        """"flat", "hnsw" or "ivf": what the faiss index is."""
        faiss = _faiss()
        index = faiss.downcast_index(self.index)
        if isinstance(index, faiss.IndexHNSW):
            return "hnsw"
        if isinstance(index, faiss.IndexIVF):
            return "ivf"
        return "flat"

    def exact_search(self, vectors: np.ndarray, k: int) -> np.ndarray:
        """Rows of the exact top k (inner product over every vector) for each query vector."""
        faiss = _faiss()
        index = faiss.downcast_index(self.index)
        k = min(k, index.ntotal)
        if isinstance(index, faiss.IndexHNSW):
            return faiss.downcast_index(index.storage).search(vectors, k)[1]
        if isinstance(index, faiss.IndexIVF):
            # Visiting every inverted list makes an IVF search exhaustive.
            nprobe = index.nprobe
            index.nprobe = index.nlist
            try:
                return index.search(vectors, k)[1]
            finally:
                index.nprobe = nprobe
        return index.search(vectors, k)[1]

    def recall_at_k(self, queries: Sequence[str], k: int = 10, sample: int = 200,
                    seed: int = 0) -> dict[str, Any] | None:
        """Share of the exact top k that this index finds, over a seeded sample of the queries.

        Returns:
            {"index", "k", "queries", "recall"} (recall in 0..1, e.g. 0.97: "the index finds 97%
            of what exact search finds"), or None for an exact index (nothing to measure).
        """
        if self.kind == "flat" or not queries:
            return None
        check_k(k)
        chosen = list(queries)
        if len(chosen) > sample:
            import random

            chosen = random.Random(seed).sample(chosen, sample)
        vectors = encode(self.model, chosen, batch_size=32)
        k = min(k, self.index.ntotal)
        found = self.index.search(vectors, k)[1]
        exact = self.exact_search(vectors, k)
        hits = sum(len(set(f[f >= 0].tolist()) & set(e[e >= 0].tolist())) for f, e in zip(found, exact, strict=True))
        total = int((exact >= 0).sum())
        return {"index": self.kind, "k": k, "queries": len(chosen), "recall": hits / total if total else 1.0}
    def search_vectors(self, vectors: np.ndarray, k: int) -> list[list[ScoredDoc]]:
        """Top k for query vectors already embedded (one row per query)."""
        scores, rows = self.index.search(np.ascontiguousarray(vectors, dtype=np.float32),
                                         min(k, self.index.ntotal))
        out = []
        for row_ids, row_scores in zip(rows, scores, strict=True):
            kept = [(int(r), float(s)) for r, s in zip(row_ids, row_scores, strict=True) if r >= 0]
            out.append([ScoredDoc(self.doc_ids[r], s, rank) for rank, (r, s) in enumerate(kept, start=1)])
        return out


class AnnNode:
    """ANN as an executor node: the chunk's queries embedded in one batch, then one index search
    per query. A query's latency is its share of the batch's embedding time plus its own search."""

    inputs: tuple[str, ...] = ()

    def __init__(self, searcher: AnnSearcher, batch_size: int = 32, name: str = "ann") -> None:
        self.name = name
        self.searcher = searcher
        self.batch_size = batch_size

    def input_depth(self, depth: int) -> int:
        return depth

    def answer(self, batch: QueryBatch, depth: int,
               inputs: Mapping[str, Sequence[Outcome]]) -> list[Outcome]:  # noqa: ARG002 - the node contract's signature
        start = time.perf_counter()
        vectors = encode(self.searcher.model, list(batch.texts), batch_size=self.batch_size)
        share = (time.perf_counter() - start) / max(1, len(batch))
        self.searcher.keep_query_vectors(list(batch.texts), vectors)
        return answer_each(list(vectors), lambda vector: Found(self.searcher.search_vectors(vector[None, :], depth)[0]),
                           shares=[share] * len(batch))
