"""A BM25 inverted index on disk: built by streaming the corpus, searched as a sparse matrix.

Scoring is rank_bm25's ``BM25Okapi`` to the last bit, so the same tokens give the same scores and
therefore the same ranking (ties included):

    idf(t)      = ln(N - n_t + 0.5) - ln(n_t + 0.5); a negative idf (a term in more than half the
                  documents) is floored at 0.25 x the mean idf over the vocabulary
    w(t, d)     = idf(t) * (tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl)))
    score(q, d) = sum of w(t, d) over the query's tokens t, repeats included, in query order

Each term is computed with the same float64 operations in the same order as rank_bm25 (the idf in
Python with ``math.log``, the mean summed over terms in first-seen order), and a query's terms are
added to each document in query order, so no rounding differs. rank_bm25 loops over every document
for every query token in Python; here a query touches only the postings of its terms.

Folder layout (arrays as ``.npy``, opened memory-mapped, so loading costs almost nothing and the
operating system shares the pages between processes):

    vocab.txt        the terms in first-seen order, one per line (a ``\\w+`` token has no newline)
    indptr.npy       postings of term t are rows indptr[t]:indptr[t + 1] of the two arrays below
    doc_rows.npy     int32, the document (row) of each posting, ascending within a term
    tf.npy           uint16 (uint32 when a count exceeds 65535), term frequency of each posting
    doc_len.npy      int32, tokens per document
    idf.npy          float64 per term, floored as above
    doc_ids.json     row -> document id
    weights-k1_<k1>-b_<b>.npy  float64 w(t, d) per posting for one (k1, b), added on first use
    manifest.json    written last: a folder without it is an interrupted build

The build streams: documents are tokenized in chunks into compact posting arrays (no token lists
are kept), and only the (doc, term, tf) arrays of the whole corpus are held until they are written.
"""

from __future__ import annotations

import json
import math
import os
import time
import uuid
from collections.abc import Iterable, Sequence
from itertools import chain
from pathlib import Path

import numpy as np

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.base import ProgressFn
from searchgrade.indexes.builtin.tokenizer import tokenize
from searchgrade.indexes.settings import BM25_FORMAT, TOKENIZER_VERSION

MANIFEST = "manifest.json"
#: rank_bm25's BM25Okapi default: negative idf values become EPSILON x the mean idf.
EPSILON = 0.25
#: Documents tokenized per chunk (and per progress update).
CHUNK_DOCS = 5_000
#: Postings per block when computing the weights of a new (k1, b).
WEIGHT_BLOCK = 8_000_000


class _Vocabulary(dict):
    """term -> id, handing out the next id to an unseen term (so ids are in first-seen order)."""

    def __missing__(self, term: str) -> int:
        term_id = self[term] = len(self)
        return term_id


def _chunk_postings(texts: Sequence[str], vocab: _Vocabulary,
                    first_row: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(doc rows, term ids, term frequencies, document lengths) of one chunk, sorted by (doc, term)."""
    token_lists = [tokenize(text) for text in texts]
    lengths = np.fromiter(map(len, token_lists), dtype=np.int64, count=len(token_lists))
    flat = list(chain.from_iterable(token_lists))
    term_ids = np.fromiter(map(vocab.__getitem__, flat), dtype=np.int64, count=len(flat))
    rows = np.repeat(np.arange(len(token_lists), dtype=np.int64), lengths)
    keys, counts = np.unique((rows << 32) | term_ids, return_counts=True)
    return ((keys >> 32) + first_row).astype(np.int32), (keys & 0xFFFFFFFF).astype(np.int32), \
        counts.astype(np.uint32), lengths.astype(np.int32)


def _idf(doc_freq: np.ndarray, n_docs: int) -> np.ndarray:
    """BM25Okapi idf per term, computed as rank_bm25 does (Python floats, first-seen order)."""
    values = []
    idf_sum = 0.0
    for freq in doc_freq.tolist():
        idf = math.log(n_docs - freq + 0.5) - math.log(freq + 0.5)
        values.append(idf)
        idf_sum += idf
    eps = EPSILON * (idf_sum / len(values))
    idf = np.asarray(values, dtype=np.float64)
    idf[idf < 0] = eps
    return idf


def _concat_and_clear(arrays: list[np.ndarray]) -> np.ndarray:
    """One array from the parts, dropping each part's reference so it can be freed."""
    out = np.concatenate(arrays)
    arrays.clear()
    return out


def _save_array(directory: Path, name: str, array: np.ndarray) -> None:
    tmp = directory / f".{name}.{uuid.uuid4().hex[:8]}.tmp"
    with open(tmp, "wb") as handle:
        np.save(handle, array, allow_pickle=False)
    os.replace(tmp, directory / name)


def build_bm25_index(
    documents: Iterable[tuple[str, str]],
    directory: Path,
    progress: ProgressFn | None = None,
    total: int | None = None,
) -> Bm25Index:
    """Tokenize ``(doc_id, text)`` pairs chunk by chunk and write the index into ``directory``.

    Args:
        documents: any iterable (a generator over a file streams it), in corpus order.
        directory: the index folder; its manifest is removed first and written last.
        progress: called as progress("bm25_build", done, total) after each chunk.
        total: number of documents, for the progress bar (None: not known in advance).

    Raises:
        SearchGradeError: no documents, or every document is empty after tokenizing.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MANIFEST).unlink(missing_ok=True)
    vocab = _Vocabulary()
    doc_ids: list[str] = []
    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    lengths: list[np.ndarray] = []
    chunk_ids: list[str] = []
    chunk_texts: list[str] = []

    def flush() -> None:
        rows, terms, counts, chunk_lengths = _chunk_postings(chunk_texts, vocab, len(doc_ids))
        parts.append((rows, terms, counts))
        lengths.append(chunk_lengths)
        doc_ids.extend(chunk_ids)
        chunk_ids.clear()
        chunk_texts.clear()
        if progress:
            progress("bm25_build", len(doc_ids), total if total is not None else len(doc_ids))

    for doc_id, text in documents:
        chunk_ids.append(doc_id)
        chunk_texts.append(text)
        if len(chunk_texts) >= CHUNK_DOCS:
            flush()
    if chunk_texts:
        flush()
    if not doc_ids:
        raise SearchGradeError("the collection has no documents: nothing to index for full-text search")
    doc_len = np.concatenate(lengths)
    total_tokens = int(doc_len.sum(dtype=np.int64))
    if total_tokens == 0:
        raise SearchGradeError("every document is empty after tokenizing: full-text search needs some text")

    # Term-major order (CSC) with each term's documents ascending: scipy's counting sort needs
    # no more memory than its output, where an argsort would need 8 bytes per posting.
    from scipy.sparse import coo_array

    columns = [_concat_and_clear([p[i] for p in parts]) for i in range(3)]
    parts.clear()
    rows, terms, counts = columns
    matrix = coo_array((counts, (rows, terms)), shape=(len(doc_ids), len(vocab))).tocsc()
    del columns, rows, terms, counts
    indptr = matrix.indptr
    tf_type = np.uint16 if matrix.data.max() <= np.iinfo(np.uint16).max else np.uint32
    _save_array(directory, "doc_rows.npy", matrix.indices.astype(np.int32, copy=False))
    _save_array(directory, "tf.npy", matrix.data.astype(tf_type))
    del matrix
    doc_freq = np.diff(indptr)
    _save_array(directory, "indptr.npy", indptr)
    _save_array(directory, "doc_len.npy", doc_len)
    _save_array(directory, "idf.npy", _idf(doc_freq, len(doc_ids)))
    tmp = directory / f".vocab.txt.{uuid.uuid4().hex[:8]}.tmp"
    tmp.write_text("\n".join(vocab), encoding="utf-8")
    os.replace(tmp, directory / "vocab.txt")
    (directory / "doc_ids.json").write_text(json.dumps(doc_ids), encoding="utf-8")
    manifest = {
        "artifact": "bm25", "format": BM25_FORMAT, "tokenizer": TOKENIZER_VERSION,
        "documents": len(doc_ids), "terms": len(vocab), "postings": int(indptr[-1]),
        "tokens": total_tokens, "created": time.strftime("%Y-%m-%dT%H:%M:%S"),
    }
    (directory / MANIFEST).write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    index = Bm25Index.load(directory)
    if index is None:  # pragma: no cover - we just wrote it
        raise SearchGradeError(f"the full-text index written to {directory} cannot be read back")
    return index


class Bm25Index:
    """An index folder opened memory-mapped; see the module docstring for the layout and formula."""

    def __init__(self, directory: Path, manifest: dict, doc_ids: list[str]) -> None:
        self.directory = Path(directory)
        self.doc_ids = doc_ids
        self.n_docs = int(manifest["documents"])
        self.total_tokens = int(manifest["tokens"])
        self.avgdl = self.total_tokens / self.n_docs  # rank_bm25: num_doc / corpus_size

        def array(name: str) -> np.ndarray:
            return np.load(directory / name, mmap_mode="r", allow_pickle=False)

        self.indptr = array("indptr.npy")
        self.doc_rows = array("doc_rows.npy")
        self.tf = array("tf.npy")
        self.doc_len = array("doc_len.npy")
        self.idf = array("idf.npy")
        terms = (directory / "vocab.txt").read_text(encoding="utf-8").split("\n")
        self.vocab = {term: i for i, term in enumerate(terms)}
        if (len(self.vocab) != int(manifest["terms"]) or len(self.idf) != len(self.vocab)
                or len(self.indptr) != len(self.vocab) + 1 or len(self.doc_len) != self.n_docs
                or len(self.doc_ids) != self.n_docs
                or len(self.doc_rows) != len(self.tf) or int(self.indptr[-1]) != len(self.tf)):
            raise ValueError("index arrays disagree with the manifest")
        self._weights: dict[tuple[float, float], np.ndarray] = {}
        self._max_weights: dict[tuple[float, float], np.ndarray] = {}
        #: Save a new (k1, b)'s weights in the folder (False: in memory only, e.g. a tuner's trials).
        self.save_weights = True

    def forget(self, k1: float, b: float) -> None:
        """Drop the weights of one (k1, b) from memory (a tuner's trial is over)."""
        key = (float(k1), float(b))
        self._weights.pop(key, None)
        self._max_weights.pop(key, None)

    @classmethod
    def load(cls, directory: Path, doc_ids: Sequence[str] | None = None) -> Bm25Index | None:
        """The index in ``directory``, or None when missing, incomplete, of another format or tokenizer,
        or (with ``doc_ids``) built for other documents."""
        directory = Path(directory)
        try:
            manifest = json.loads((directory / MANIFEST).read_text(encoding="utf-8"))
            if manifest.get("format") != BM25_FORMAT or manifest.get("tokenizer") != TOKENIZER_VERSION:
                return None
            saved_ids = json.loads((directory / "doc_ids.json").read_text(encoding="utf-8"))
            if doc_ids is not None and saved_ids != list(doc_ids):
                return None
            return cls(directory, manifest, saved_ids)
        except (OSError, ValueError, KeyError, TypeError):
            return None

    @property
    def postings(self) -> int:
        return len(self.tf)

    def length_norm(self, k1: float, b: float) -> np.ndarray:
        """k1 * (1 - b + b * |d| / avgdl) per document, as rank_bm25 computes it."""
        doc_len = np.asarray(self.doc_len, dtype=np.int64)
        return k1 * (1 - b + b * doc_len / self.avgdl)

    def weights(self, k1: float, b: float) -> np.ndarray:
        """w(t, d) of every posting for (k1, b): read from the folder, or computed and saved there."""
        key = (float(k1), float(b))
        if key in self._weights:
            return self._weights[key]
        path = self.directory / f"weights-k1_{key[0]!r}-b_{key[1]!r}.npy"
        try:
            weights = np.load(path, mmap_mode="r", allow_pickle=False)
            if weights.shape != (self.postings,) or weights.dtype != np.float64:
                raise ValueError(path)
        except (OSError, ValueError):
            weights = self._compute_weights(*key)
            try:
                if self.save_weights:
                    _save_array(self.directory, path.name, weights)
            except OSError:  # a read-only index folder: keep the weights in memory only
                pass
        self._weights[key] = weights
        return weights

    def _compute_weights(self, k1: float, b: float) -> np.ndarray:
        norm = self.length_norm(k1, b)
        out = np.empty(self.postings, dtype=np.float64)
        indptr = np.asarray(self.indptr, dtype=np.int64)
        idf = np.asarray(self.idf)
        # Blocks of whole terms, so each block repeats its terms' idf over their postings.
        bounds = np.searchsorted(indptr, np.arange(0, self.postings, WEIGHT_BLOCK), side="right") - 1
        term_starts = [*dict.fromkeys(bounds.tolist()), len(idf)]
        for first, last in zip(term_starts[:-1], term_starts[1:], strict=True):
            start, stop = indptr[first], indptr[last]
            tf = np.asarray(self.tf[start:stop], dtype=np.float64)
            rows = self.doc_rows[start:stop]
            term_idf = np.repeat(idf[first:last], np.diff(indptr[first:last + 1]))
            out[start:stop] = term_idf * (tf * (k1 + 1) / (tf + norm[rows]))
        return out

    def term_ids(self, tokens: Sequence[str]) -> list[int]:
        """Ids of the tokens in the vocabulary, in order, repeats kept, unknown tokens dropped."""
        vocab = self.vocab
        return [vocab[t] for t in tokens if t in vocab]

    def scores(self, tokens: Sequence[str], k1: float, b: float) -> np.ndarray:
        """BM25Okapi score of every document (float64, corpus order) for a tokenized query."""
        ids = self.term_ids(tokens)
        if not ids:
            return np.zeros(self.n_docs, dtype=np.float64)
        return self._dense(ids, k1, b)

    def max_weights(self, k1: float, b: float) -> np.ndarray:
        """The largest w(t, d) of each term over its postings (an upper bound per query term)."""
        key = (float(k1), float(b))
        if key not in self._max_weights:
            starts = np.asarray(self.indptr[:-1], dtype=np.int64)
            self._max_weights[key] = np.maximum.reduceat(np.asarray(self.weights(k1, b)), starts)
        return self._max_weights[key]

    def top(self, tokens: Sequence[str], k: int, k1: float, b: float) -> tuple[np.ndarray, np.ndarray]:
        """The k best documents for a tokenized query: (rows, scores), best first, equal scores in
        corpus order, documents scoring 0 left out. Scores are those of ``scores`` bit for bit.

        Rare terms decide most of a ranking, so when the weights are all >= 0 this first adds up
        the postings of the terms with the largest upper bounds ("MaxScore"), until the bound of
        the remaining terms is below the k-th best partial score: no document outside the ones
        already touched can then reach the top k. Only those candidates are scored in full (with
        the remaining terms looked up in their sorted postings), in query order as rank_bm25
        adds them. Otherwise, or when nothing can be pruned, every posting is added up.
        """
        ids = self.term_ids(tokens)
        if not ids:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
        candidates = self._candidates(ids, k, k1, b) if self.all_idf_nonnegative else None
        if candidates is None:
            scores = self._dense(ids, k1, b)
            rows = np.flatnonzero(scores)
            scores = scores[rows]
        else:
            rows = candidates
            scores = self._exact(ids, rows, k1, b)
            kept = scores != 0
            rows, scores = rows[kept], scores[kept]
        best = _top_k(scores, k)
        return rows[best], scores[best]

    def _dense(self, ids: Sequence[int], k1: float, b: float) -> np.ndarray:
        weights = self.weights(k1, b)
        spans = [(int(self.indptr[t]), int(self.indptr[t + 1])) for t in ids]
        rows = np.concatenate([self.doc_rows[s:e] for s, e in spans])
        values = np.concatenate([weights[s:e] for s, e in spans])
        # bincount adds each document's contributions in input order, i.e. query-token order,
        # starting from 0.0: the same additions, in the same order, as rank_bm25.
        return np.bincount(rows, weights=values, minlength=self.n_docs)

    def _candidates(self, ids: Sequence[int], k: int, k1: float, b: float) -> np.ndarray | None:
        """Rows that can still reach the top k without the most common terms, or None.

        The terms in at least 1/_COMMON_SHARE of the documents hold most postings of a query and
        add little to any score: the other terms' postings give partial scores, and when even
        the bound of the common terms cannot lift a document to the k-th best partial score, only
        the documents within that bound of it are candidates.
        """
        weights = self.weights(k1, b)
        terms, repeats = np.unique(np.asarray(ids, dtype=np.int64), return_counts=True)
        starts = np.asarray(self.indptr[terms], dtype=np.int64)
        stops = np.asarray(self.indptr[terms + 1], dtype=np.int64)
        common = (stops - starts) * _COMMON_SHARE >= self.n_docs
        pruned = int((stops - starts)[common].sum())
        if not common.any() or common.all() or pruned < _MIN_PRUNED:
            return None
        rest = float((repeats * self.max_weights(k1, b)[terms])[common].sum())
        rare = np.flatnonzero(~common)
        partial = np.bincount(
            np.concatenate([self.doc_rows[starts[i]:stops[i]] for i in rare]),
            weights=np.concatenate([repeats[i] * weights[starts[i]:stops[i]] for i in rare]),
            minlength=self.n_docs,
        )
        pool = np.flatnonzero(partial)
        if len(pool) < k:
            return None
        values = partial[pool]
        # Partial sums are rounded in another order than the final scores: the margin
        # (_SAFETY) keeps every document that could tie with or beat the k-th best.
        threshold = float(np.partition(values, len(pool) - k)[len(pool) - k]) * _SAFETY
        if rest >= threshold:
            return None
        keep = pool[values * (2 - _SAFETY) + rest >= threshold]
        # Scoring a candidate in full costs a lookup per query token; skip the pruning when
        # that costs more than adding up the common terms' postings.
        return keep if len(keep) * len(ids) * _LOOKUP_COST <= pruned else None

    def _exact(self, ids: Sequence[int], rows: np.ndarray, k1: float, b: float) -> np.ndarray:
        """Scores of the given rows (sorted), added term by term in query order as rank_bm25 does."""
        weights = self.weights(k1, b)
        scores = np.zeros(len(rows), dtype=np.float64)
        for term in ids:
            start, stop = int(self.indptr[term]), int(self.indptr[term + 1])
            postings = self.doc_rows[start:stop]
            at = np.searchsorted(postings, rows)
            np.minimum(at, stop - start - 1, out=at)
            hit = postings[at] == rows
            scores += np.where(hit, weights[start + at], 0.0)
        return scores

    @property
    def all_idf_nonnegative(self) -> bool:
        """True unless the floor itself is negative (tiny corpora): then no score is below 0."""
        if not hasattr(self, "_nonnegative"):
            self._nonnegative = bool(len(self.idf) == 0 or float(np.min(self.idf)) >= 0)
        return self._nonnegative


#: A term in at least 1 / _COMMON_SHARE of the documents is "common" (see Bm25Index._candidates).
_COMMON_SHARE = 20
#: Below this many postings left to skip, pruning does not pay for itself.
_MIN_PRUNED = 100_000
#: Cost of looking up one (candidate, term) in the postings, in postings added up.
_LOOKUP_COST = 32
#: 1 - a relative margin far above float64 rounding (~1e-16 per addition), below any real gap.
_SAFETY = 1 - 1e-9


def _top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Positions of the k highest scores, best first; equal scores in position order."""
    n = len(scores)
    if k < n:
        kth = np.partition(scores, n - k)[n - k]
        candidates = np.flatnonzero(scores >= kth)
    else:
        candidates = np.arange(n)
    order = np.lexsort((candidates, -scores[candidates]))
    return candidates[order][:k]
