"""Full-text: BM25 (Okapi, as rank_bm25 scores it) over a memory-mapped inverted index.

Tokenizer: lowercase Unicode ``\\w+`` tokens, no stemming, no stopword removal
(indexes/builtin/tokenizer.py). On scifact (text = title + " " + text) this gives nDCG@10 0.652 with
k1 = 1.5, b = 0.75, as the dataset README reports for rank_bm25.

Scores equal rank_bm25's ``BM25Okapi.get_scores`` bit for bit on the same tokens and parameters
(idf floor included; indexes/builtin/bm25.py says how), and the ranking is by score, equal scores in corpus
order. A document that shares no term with the query scores 0 and is not returned, as in any
full-text engine, so a query may get fewer than k results (none when it has no tokens).

The index lives in ``data_dir/indexes/<collection fingerprint>-<bm25 fingerprint>/``. k1 and b are
search-time settings: a new pair adds one weights file to the folder (a pass over the postings), and
the tokenized corpus is reused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np

from searchgrade.core.checks import check_k
from searchgrade.core.records import ScoredDoc, SearchHits
from searchgrade.indexes.base import Found, Outcome, ProgressFn, QueryBatch, answer_each, ranked, search_each
from searchgrade.indexes.builtin.bm25 import Bm25Index, build_bm25_index
from searchgrade.indexes.builtin.tokenizer import tokenize
from searchgrade.indexes.settings import IndexSettings

__all__ = ["FulltextSearcher", "bm25_dir", "build_bm25_index", "load_index", "tokenize"]


def bm25_dir(data_dir: Path, collection_fingerprint: str, settings: IndexSettings) -> Path:
    return Path(data_dir) / "indexes" / f"{collection_fingerprint}-{settings.fingerprint('bm25')}"


def load_index(directory: Path, doc_ids: Sequence[str]) -> Bm25Index | None:
    """The saved index for exactly these documents, or None (missing, interrupted, outdated)."""
    return Bm25Index.load(directory, doc_ids)


def build_index(directory: Path, doc_ids: Sequence[str], texts: Iterable[str],
                progress: ProgressFn | None = None) -> Bm25Index:
    """Index ``texts`` (one per doc id, in order) into ``directory``."""
    return build_bm25_index(zip(doc_ids, texts, strict=True), directory, progress, total=len(doc_ids))


class FulltextSearcher:
    """BM25 over a saved index; see the module docstring for the tokenizer and the ranking."""

    def __init__(self, index: Bm25Index, k1: float = 1.5, b: float = 0.75, name: str = "fulltext") -> None:
        self.name = name
        self.index = index
        self.k1 = k1
        self.b = b
        self.doc_ids = index.doc_ids
        index.weights(k1, b)  # computed (or read) now, not inside the first query's latency

    @classmethod
    def from_settings(cls, index: Bm25Index, settings: IndexSettings, name: str = "fulltext") -> FulltextSearcher:
        return cls(index, settings.bm25_k1, settings.bm25_b, name)

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every document for ``query``, in corpus order."""
        return self.index.scores(tokenize(query), self.k1, self.b)

    def search_one(self, query: str, k: int) -> list[ScoredDoc]:
        check_k(k)
        rows, scores = self.index.top(tokenize(query), k, self.k1, self.b)
        return ranked(self.doc_ids, rows, scores)

    def search(self, queries: Sequence[str], k: int) -> list[SearchHits]:
        return search_each(self.search_one, queries, k)


class FulltextNode:
    """Full-text as an executor node: one BM25 search per query, each timed on its own."""

    inputs: tuple[str, ...] = ()

    def __init__(self, searcher: FulltextSearcher, name: str = "fulltext") -> None:
        self.name = name
        self.searcher = searcher

    def input_depth(self, depth: int) -> int:
        return depth

    def answer(self, batch: QueryBatch, depth: int,
               inputs: Mapping[str, Sequence[Outcome]]) -> list[Outcome]:  # noqa: ARG002 - the node contract's signature
        return answer_each(list(batch.texts), lambda text: Found(self.searcher.search_one(text, depth)))
