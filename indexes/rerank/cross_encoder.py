"""Reranking: a cross-encoder rescores the top candidates of a base strategy (any registered one).

For each query the base searcher's top ``max(depth, k)`` documents are scored as (query, document
content) pairs by a sentence-transformers CrossEncoder and the top k by that score are returned.
The score is the model's ``predict`` output (for one-logit models such as ms-marco-MiniLM, the
sigmoid of the logit); equal scores keep the base order. Latency covers the base search and the
rescoring. Candidates beyond ``depth`` are taken only when k is larger, so the list is never
shorter than the base's.

In a run, ``RerankNode`` wraps any strategy ``X`` as ``X_rerank``. Scoring is an interface
(``PairScorer``): ``score_pairs`` gets (query id, query, doc id, content) pairs and returns one
score per pair, so a scorer may pick its model per query id (a cross-fitted trained reranker does);
an optional ``finalize(query_id, scores)`` turns the raw scores of one query's candidates, in the
base order, into the final ones (e.g. blending with the base ranking), and an optional
``max_depth`` caps how deep it rescores, whatever the run's --rerank-depth and --depth (a trained
reranker rescores as deep as its held-out figures were measured, no deeper; the rest of a deeper
list follows in the base order). Raw scores are shared
(``SharedScores``): a (query, document) pair retrieved by two strategies is scored once, in
batches over the chunk's queries, and each pair remembers the seconds it cost, so every reranked
strategy's latency still counts the scoring of all its candidates.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, Protocol, runtime_checkable

import numpy as np

from searchgrade.core.checks import check_k
from searchgrade.core.records import ScoredDoc, SearchGradeError, SearchHits
from searchgrade.indexes.base import Answer, CandidateSource, Outcome, QueryBatch, search_each
from searchgrade.indexes.hub import load_pretrained

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


class ScorePair(NamedTuple):
    """One (query, document) pair to score."""

    query_id: str
    query: str
    doc_id: str
    content: str


@runtime_checkable
class PairScorer(Protocol):
    """Relevance scores of (query, document) pairs, higher is better.

    Optionally a scorer has ``finalize(query_id, scores) -> np.ndarray``, applied to one query's
    raw scores in the base strategy's order before sorting.
    """

    #: What scores (a model name): part of the cache key of shared scores.
    name: str

    def score_pairs(self, pairs: Sequence[ScorePair]) -> np.ndarray: ...


class CrossEncoderScorer:
    """A sentence-transformers CrossEncoder's ``predict`` as a PairScorer."""

    def __init__(self, model: Any, name: str, batch_size: int = 32) -> None:
        self.model = model
        self.name = name
        self.batch_size = batch_size

    def score_pairs(self, pairs: Sequence[ScorePair]) -> np.ndarray:
        if not pairs:
            return np.zeros(0, dtype=np.float64)
        scores = self.model.predict([(p.query, p.content) for p in pairs], batch_size=self.batch_size,
                                    show_progress_bar=False, convert_to_numpy=True)
        return np.asarray(scores, dtype=np.float64).reshape(len(pairs))


class SharedScores:
    """Raw scores of (query id, doc id) pairs, each computed once and kept with its cost in seconds.

    The cost of a pair is its batch's time divided by the pairs of the batch.
    """

    def __init__(self, scorer: PairScorer) -> None:
        self.scorer = scorer
        self.scores: dict[tuple[str, str], tuple[float, float]] = {}
        self.scored = 0
        self.reused = 0

    def ensure(self, pairs: Sequence[ScorePair]) -> None:
        """Score the pairs not scored yet, in one call to the scorer."""
        missing = list({(p.query_id, p.doc_id): p for p in pairs
                        if (p.query_id, p.doc_id) not in self.scores}.values())
        self.reused += len(pairs) - len(missing)
        if not missing:
            return
        start = time.perf_counter()
        values = np.asarray(self.scorer.score_pairs(missing), dtype=np.float64).reshape(-1)
        if len(values) != len(missing):
            raise RuntimeError(f"reranker {self.scorer.name!r} returned {len(values)} scores for "
                               f"{len(missing)} pairs")
        cost = (time.perf_counter() - start) / len(missing)
        for p, value in zip(missing, values, strict=True):
            self.scores[(p.query_id, p.doc_id)] = (float(value), cost)
        self.scored += len(missing)

    def get(self, query_id: str, doc_ids: Sequence[str]) -> tuple[np.ndarray, float]:
        """Scores of one query's documents (scored already), and what scoring them cost."""
        values = [self.scores[(query_id, d)] for d in doc_ids]
        return (np.array([v for v, _ in values], dtype=np.float64),
                float(sum(c for _, c in values)))


def rerank_order(candidates: Sequence[ScoredDoc], scores: np.ndarray, k: int) -> list[ScoredDoc]:
    """The top k candidates by score; equal scores keep the base order (a stable sort)."""
    order = np.argsort(-scores, kind="stable")[:k]
    return [ScoredDoc(candidates[i].doc_id, float(scores[i]), rank) for rank, i in enumerate(order, start=1)]


def with_texts(docs: Sequence[ScoredDoc], contents: Mapping[str, str],
               described: Mapping[str, Any]) -> tuple[list[ScoredDoc], list[ScoredDoc], list[str]]:
    """``docs`` split into those a reranker can score (with their texts, from the collection's
    ``contents`` or the backend's reply ``described``) and those it cannot (no text known)."""
    candidates, unscored, texts = [], [], []
    for doc in docs:
        content = contents.get(doc.doc_id)
        if content is None and doc.doc_id in described:
            content = described[doc.doc_id].content or None
        if content is None:
            unscored.append(doc)
        else:
            candidates.append(doc)
            texts.append(content)
    return candidates, unscored, texts


def below_scored(docs: list[ScoredDoc], unscored: Sequence[ScoredDoc], depth: int) -> list[ScoredDoc]:
    """The reranked ``docs``, then the ``unscored`` ones in their base order below every scored
    one, up to ``depth`` results."""
    if unscored and len(docs) < depth:
        floor = (min(d.score for d in docs) if docs else 0.0) - 1.0
        docs += [ScoredDoc(d.doc_id, floor - i, len(docs) + i + 1)
                 for i, d in enumerate(unscored[: depth - len(docs)])]
    return docs


class RerankNode:
    """``X_rerank`` as an executor node: the top ``max(depth, k)`` of X rescored by the scorer, or
    with ``capped`` the top ``depth`` only (a trained reranker, whose blend was chosen at that
    depth): the rest of X's list then follows in its base order.

    Candidates whose text is unknown (an external id whose reply carried no text) cannot be
    scored: they keep their base order below every scored candidate.
    """

    def __init__(self, name: str, base: str, shared: SharedScores, depth: int = 50,
                 contents: Mapping[str, str] | None = None, *, capped: bool = False) -> None:
        self.name = name
        self.base = base
        self.inputs = (base,)
        self.shared = shared
        self.depth = depth
        self.capped = capped
        self.contents = contents or {}

    def input_depth(self, depth: int) -> int:
        return max(self.depth, depth)

    def answer(self, batch: QueryBatch, depth: int, inputs: Mapping[str, Sequence[Outcome]]) -> list[Outcome]:
        base = inputs[self.base]
        wanted = self.depth if self.capped else max(self.depth, depth)
        lists = []
        pairs = []
        for qid, text, outcome in zip(batch.ids, batch.texts, base, strict=True):
            candidates, unscored, texts = with_texts(outcome.docs[:wanted], self.contents, outcome.documents or {})
            pairs += [ScorePair(qid, text, d.doc_id, t) for d, t in zip(candidates, texts, strict=True)]
            unscored += outcome.docs[wanted:depth]  # beyond a capped depth: not rescored, base order
            lists.append((candidates, unscored, outcome.documents))
        self.shared.ensure(pairs)
        finalize = getattr(self.shared.scorer, "finalize", None)
        out: list[Outcome] = []
        for qid, (candidates, unscored, described) in zip(batch.ids, lists, strict=True):
            start = time.perf_counter()
            raw, cost = self.shared.get(qid, [d.doc_id for d in candidates])
            scores = np.asarray(finalize(qid, raw), dtype=np.float64) if finalize and len(raw) else raw
            docs = below_scored(rerank_order(candidates, scores, depth), unscored, depth)
            out.append(Answer(docs, cost + time.perf_counter() - start, described))
        return out


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
        return rerank_order(candidates, self.score(query, [doc.doc_id for doc in candidates]), k)

    def search(self, queries: Sequence[str], k: int) -> list[SearchHits]:
        return search_each(self.search_one, queries, k)
