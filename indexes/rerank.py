"""Reranking: a cross-encoder rescores the top candidates of a base strategy.

For each query the base searcher's top ``max(depth, k)`` documents are scored as (query, document
content) pairs by a sentence-transformers CrossEncoder and the top k by that score are returned.
The score is the model's ``predict`` output (for one-logit models such as ms-marco-MiniLM, the
sigmoid of the logit); equal scores keep the base order. Latency covers the base search and the
rescoring. Candidates beyond ``depth`` are taken only when k is larger, so the list is never
shorter than the base's.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from core.checks import check_k
from core.records import ScoredDoc, SearchGradeError, SearchHits
from indexes.base import CandidateSource, search_each
from indexes.hub import load_pretrained

RERANKER_FIX = (
    "download it on a machine with access to the model hub and pass --reranker-model /path/to/model"
)


@functools.lru_cache(maxsize=2)
def load_reranker(name: str) -> Any:
    """The CrossEncoder for ``name`` (hub id or local folder), loaded once per process.

    Raises:
        SearchGradeError: it cannot be loaded (one line with the fix), or it is not a
            single-score model.
    """
    try:
        from sentence_transformers import CrossEncoder
    except ImportError as exc:
        raise SearchGradeError(
            "sentence-transformers is not installed (pip install sentence-transformers)"
        ) from exc
    model = load_pretrained(CrossEncoder, name, kind="reranker model", fix=RERANKER_FIX)
    labels = getattr(model, "num_labels", 1)
    if labels != 1:
        raise SearchGradeError(
            f"reranker model '{name}' outputs {labels} labels, a reranker needs one relevance score: "
            "pass a cross-encoder trained for ranking, e.g. cross-encoder/ms-marco-MiniLM-L6-v2"
        )
    return model


class RerankSearcher:
    """A base searcher whose top candidates are reordered by a cross-encoder."""

    def __init__(self, base: CandidateSource, model: Any, contents: Mapping[str, str],
                 depth: int = 50, batch_size: int = 32, name: str | None = None) -> None:
        self.name = name or f"{base.name}_rerank"
        self.base = base
        self.model = model
        self.contents = contents
        self.depth = depth
        self.batch_size = batch_size

    def score(self, query: str, doc_ids: Sequence[str]) -> np.ndarray:
        """Cross-encoder scores of (query, content) for each doc id, in order."""
        if not doc_ids:
            return np.zeros(0, dtype=np.float64)
        pairs = [(query, self.contents[doc_id]) for doc_id in doc_ids]
        scores = self.model.predict(pairs, batch_size=self.batch_size, show_progress_bar=False,
                                    convert_to_numpy=True)
        return np.asarray(scores, dtype=np.float64).reshape(len(pairs))

    def search_one(self, query: str, k: int) -> list[ScoredDoc]:
        check_k(k)
        candidates = self.base.search_one(query, max(self.depth, k))
        scores = self.score(query, [doc.doc_id for doc in candidates])
        order = np.argsort(-scores, kind="stable")[:k]  # stable: ties keep the base order
        return [ScoredDoc(candidates[i].doc_id, float(scores[i]), rank)
                for rank, i in enumerate(order, start=1)]

    def search(self, queries: Sequence[str], k: int) -> list[SearchHits]:
        return search_each(self.search_one, queries, k)
