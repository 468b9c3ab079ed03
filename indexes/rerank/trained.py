"""Trained rerankers on disk, and the cross-fitted scorer that uses them without leakage.

A reranker trained by ``searchgrade train-reranker`` lives in ``<data dir>/rerankers/<name>/``::

    card.json        what it was trained on and how, and its held-out figures (the model card)
    README.md        the same, for people
    models/fold-N/   the model trained on every fold but N (cross-fitting), one per fold
    models/full/     the model trained on every training query (for queries it never saw)
    scores.parquet   the held-out scores it gave while training, reused by a later evaluation

``--reranker-model trained:NAME`` names it. Each query is scored by the one model that never saw it
nor any query leaking into it (same source document or same text, the grouping of the folds):
a training query by its fold's model, any other query by the full model (or, when none was
trained, by fold 1's). A query that matches training queries of two folds has no clean model and
is refused.

This module is what searching with a trained reranker needs (loading its models, scoring, the
choice of model); training one is engine/training/'s.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from searchgrade.core.records import SearchGradeError, first_line

#: The prefix of --reranker-model values that name a trained reranker.
TRAINED_PREFIX = "trained:"
#: Version of card.json's layout.
CARD_FORMAT = 1
#: Reranker names: what is safe as a folder name everywhere.
NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9_.-]{0,63}")
FULL = "full"


def rerankers_dir(data_dir: Path) -> Path:
    return Path(data_dir) / "rerankers"


def check_name(name: str) -> str:
    if not NAME_PATTERN.fullmatch(name or ""):
        raise SearchGradeError(
            f"reranker name {name!r} is not allowed: use lower-case letters, digits, '.', '_' or '-' "
            "(up to 64, starting with a letter or digit), e.g. scifact-v1"
        )
    return name


def trained_name(model: str) -> str | None:
    """NAME for a --reranker-model value 'trained:NAME', else None."""
    return model[len(TRAINED_PREFIX):] if model.startswith(TRAINED_PREFIX) else None


def text_key(text: str) -> str:
    """A query's text as compared for leakage: lower case, word characters, single spaces."""
    return " ".join(re.findall(r"\w+", text.lower()))


def leakage_keys(text: str, source_doc_id: str | None) -> list[str]:
    """The keys under which two queries count as the same: the text, and the source document."""
    keys = [f"text:{text_key(text)}"]
    if source_doc_id:
        keys.append(f"doc:{source_doc_id}")
    return keys


def digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def model_key(fold: int | None) -> str:
    return FULL if fold is None else f"fold-{fold}"


def blend(scores: Sequence[float], weight: float | None) -> np.ndarray:
    """The reranker's final scores: the cross-encoder's, blended with the base ranking.

    ``scores`` are the cross-encoder's logits for the candidates in the base strategy's order
    (rank 1 first). The result is z_i - weight * log2(1 + rank_i), where z is the logits
    standardised over the candidates (all equal -> 0): weight 0 is the cross-encoder alone,
    larger weights trust the base ranking more, and None keeps the base order (the reranker adds
    nothing the base does not already know).
    """
    values = np.asarray(scores, dtype=np.float64)
    ranks = np.log2(2 + np.arange(len(values)))
    if weight is None:
        return -ranks
    spread = values.std()
    z = (values - values.mean()) / spread if spread > 0 else np.zeros_like(values)
    return z - weight * ranks


def load_cross_encoder(path: str | Path, max_length: int | None = None) -> Any:
    """A trained reranker folder as a CrossEncoder on the CPU.

    Raises:
        SearchGradeError: sentence-transformers is missing, or the folder is missing or not a
            one-logit cross-encoder.
    """
    try:
        from sentence_transformers.cross_encoder import CrossEncoder
    except ImportError as exc:
        raise SearchGradeError("a trained reranker needs sentence-transformers "
                               "(pip install sentence-transformers)") from exc

    folder = Path(path)
    if not (folder / "config.json").is_file():
        raise SearchGradeError(f"trained reranker folder '{folder}' is missing or incomplete: "
                               "train it again with `searchgrade train-reranker`")
    try:
        model = CrossEncoder(str(folder), max_length=max_length, device="cpu", local_files_only=True)
    except Exception as exc:
        first = first_line(exc)
        raise SearchGradeError(f"trained reranker '{folder}' could not be loaded ({first}): "
                               "train it again with `searchgrade train-reranker`") from exc
    if getattr(model, "num_labels", 1) != 1:
        raise SearchGradeError(f"'{folder}' outputs {model.num_labels} labels, not one relevance score")
    return model


def predict(model: Any, query: str, documents: Sequence[str], batch_size: int = 32) -> list[float]:
    """The model's raw scores (logits) of (query, document) for each document, in order."""
    if not documents:
        return []
    scores = model.predict([(query, d) for d in documents], batch_size=batch_size,
                           show_progress_bar=False, convert_to_numpy=True, activation_fn=_identity())
    return [float(s) for s in scores.reshape(len(documents))]


def _identity() -> Callable[[Any], Any]:
    import torch

    return torch.nn.Identity()


class TrainedReranker:
    """A trained reranker folder: its card, its models (loaded on first use), its score cache."""

    def __init__(self, folder: Path, card: dict[str, Any]) -> None:
        self.folder = Path(folder)
        self.card = card
        self.name = str(card.get("name", self.folder.name))
        self._models: dict[str, Any] = {}
        self._fold_by_key: dict[str, int] = {}
        for q in card.get("queries", []):
            for key in leakage_keys(q["text"], q.get("source_doc_id")):
                self._fold_by_key[key] = int(q["fold"]) if q.get("fold") is not None else 0
        self._cache: dict[tuple[str, str, str, str], float] | None = None

    @classmethod
    def load(cls, data_dir: Path, name: str) -> TrainedReranker:
        """The reranker NAME in the data directory.

        Raises:
            SearchGradeError: no such reranker (the fix lists those there), or a broken card.
        """
        check_name(name)
        folder = rerankers_dir(data_dir) / name
        card_path = folder / "card.json"
        if not card_path.is_file():
            present = sorted(p.name for p in rerankers_dir(data_dir).glob("*") if (p / "card.json").is_file())
            where = f"trained ones here: {', '.join(present)}" if present else "none is trained here yet"
            raise SearchGradeError(
                f"no trained reranker {name!r} in {rerankers_dir(data_dir)} ({where}); train one with "
                f"`searchgrade train-reranker RUN --name {name}`"
            )
        try:
            card = json.loads(card_path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise SearchGradeError(f"cannot read {card_path} ({exc}); train the reranker again") from None
        if card.get("format") != CARD_FORMAT:
            raise SearchGradeError(f"{card_path} has format {card.get('format')!r}, this version reads "
                                   f"{CARD_FORMAT}; train the reranker again")
        return cls(folder, card)

    @property
    def folds(self) -> int:
        return int(self.card.get("folds") or 0)

    @property
    def max_length(self) -> int | None:
        return self.card.get("training", {}).get("max_length")

    @property
    def depth(self) -> int | None:
        """The candidates of each strategy it rescored in its held-out figures (its blend weights
        were chosen at that depth)."""
        depth = self.card.get("heldout", {}).get("depth")
        return int(depth) if depth else None

    def fold_for(self, text: str, source_doc_id: str | None = None) -> int | None:
        """The fold whose model never saw this query, or None when no training query matches it.

        Raises:
            SearchGradeError: it matches training queries of two folds, or it was a training
                query of a reranker without fold models (trained on a separate split).
        """
        folds = {self._fold_by_key[k] for k in leakage_keys(text, source_doc_id) if k in self._fold_by_key}
        if not folds:
            return None
        if 0 in folds:
            raise SearchGradeError(
                f"query {text[:60]!r} was a training query of reranker {self.name!r}, which has no "
                "fold models to score it fairly; evaluate on other queries or train with --folds"
            )
        if len(folds) > 1:
            raise SearchGradeError(
                f"query {text[:60]!r} matches training queries of folds {sorted(folds)} of reranker "
                f"{self.name!r} (same text as one, same source document as another): no model of it "
                "is clean for this query; train the reranker on this run"
            )
        return folds.pop()

    def blend_weight(self, key: str) -> float | None:
        """The weight of the base ranking in this model's final score (see :func:`blend`)."""
        model = self.card.get("models", {}).get(key)
        if model is None:
            raise SearchGradeError(f"reranker {self.name!r} has no model {key}; train it again")
        weight = model.get("blend_weight", 0.0)
        return None if weight is None else float(weight)

    def has_model(self, key: str) -> bool:
        return (self.folder / "models" / key / "config.json").is_file()

    def model(self, key: str) -> Any:
        """A model by key ("fold-N" or "full"), loaded once."""
        if key not in self._models:
            path = self.folder / "models" / key
            if not path.is_dir():
                raise SearchGradeError(
                    f"reranker {self.name!r} has no model {key} in {self.folder / 'models'}; "
                    + ("it was trained without one: train it again with --full-model"
                       if key == FULL else "train it again")
                )
            self._models[key] = load_cross_encoder(path, self.max_length)
        return self._models[key]

    def cached_scores(self) -> dict[tuple[str, str, str, str], float]:
        """(model key, query digest, doc id, content digest) -> score, from scores.parquet."""
        if self._cache is None:
            self._cache = {}
            path = self.folder / "scores.parquet"
            if path.is_file():
                import pyarrow.parquet as pq

                table = pq.read_table(path).to_pydict()
                for m, q, d, c, s in zip(table["model"], table["query_digest"], table["doc_id"],
                                         table["content_digest"], table["score"], strict=True):
                    self._cache[(m, q, d, c)] = float(s)
        return self._cache


def write_scores(path: Path, rows: Sequence[tuple[str, str, str, str, float]]) -> None:
    """Save held-out scores: rows of (model key, query digest, doc id, content digest, score)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = list(zip(*rows, strict=True)) if rows else [[], [], [], [], []]
    table = pa.table({
        "model": pa.array(columns[0], pa.string()), "query_digest": pa.array(columns[1], pa.string()),
        "doc_id": pa.array(columns[2], pa.string()), "content_digest": pa.array(columns[3], pa.string()),
        "score": pa.array(columns[4], pa.float64()),
    })
    pq.write_table(table, path)


class Assignment(NamedTuple):
    """Which model scores a query, and whether that query was a training query held out from it."""

    model: str
    #: True: the query (or one leaking into it) was trained on, by the other folds' models only.
    #: False: no training query matches it; any model is fair ("plain").
    held_out: bool


class CrossFittedScorer:
    """Scores (query, document) pairs with the model of the reranker that never saw the query.

    A pair scorer for the reranked strategies (indexes/rerank/cross_encoder.py): ``score_pairs`` takes pairs
    with ``query_id``, ``query``, ``doc_id`` and ``content`` and returns the models' logits, each
    query's from the model ``assign`` picks; ``finalize(query_id, scores)`` blends one query's
    logits, given in the base strategy's order, with that order (:func:`blend`, the weight of the
    query's model). Which model scored each query is kept in ``used`` (query id -> Assignment),
    for the run's record and for tests. Scores the reranker gave while training are reused when
    the model, the query text and the document content are the same.
    """

    def __init__(self, reranker: TrainedReranker, source_docs: Mapping[str, str | None] | None = None,
                 batch_size: int = 32) -> None:
        self.reranker = reranker
        self.name = f"{TRAINED_PREFIX}{reranker.name}"
        #: A reranked strategy rescores at most this many candidates (indexes/registry.py): the
        #: depth of the held-out figures, so an evaluation reranks as the card measured (and
        #: reuses its scores) instead of rescoring deeper candidates its blend was not fit on.
        self.max_depth = reranker.depth
        self.source_docs = dict(source_docs or {})
        self.batch_size = batch_size
        self.used: dict[str, Assignment] = {}
        self._aliases: dict[str, list[str]] = {}
        self.cache_hits = 0
        self.scored = 0

    def assign(self, query_id: str, query: str) -> Assignment:
        """The model that scores this query: its fold's if it was a training query, else the
        full model (or, without one, fold 1's: trained on all but one fold)."""
        fold = self.reranker.fold_for(query, self.source_docs.get(query_id))
        if fold is not None:
            return Assignment(model_key(fold), True)
        return Assignment(FULL if self.reranker.has_model(FULL) else model_key(1), False)

    def bind_queries(self, queries: Sequence[Any]) -> None:
        """The run's queries (``query_id``, ``text``, ``source_doc_id``): their source documents
        join the leakage check, and queries sharing a text (scored once, under the first id) are
        recorded as scored by the same model.

        Raises:
            SearchGradeError: two queries share a text but no one model is clean for both.
        """
        self.source_docs.update({q.query_id: q.source_doc_id for q in queries})
        by_text: dict[str, list[str]] = {}
        for q in queries:
            by_text.setdefault(q.text, []).append(q.query_id)
        self._aliases = {}
        for text, ids in by_text.items():
            if len(ids) > 1:
                models = {self.assign(qid, text) for qid in ids}
                if len(models) > 1:
                    raise SearchGradeError(
                        f"queries {', '.join(ids)} share the text {text[:60]!r} but come from source "
                        f"documents in different folds of reranker {self.name!r}: no model of it is "
                        "clean for all of them; give them distinct texts or train on this run"
                    )
                self._aliases[ids[0]] = ids[1:]

    def score_pairs(self, pairs: Sequence[Any]) -> np.ndarray:
        scores = np.zeros(len(pairs), dtype=np.float64)
        cache = self.reranker.cached_scores()
        missing: dict[tuple[str, str], list[int]] = {}
        for i, pair in enumerate(pairs):
            if pair.query_id not in self.used:
                self.used[pair.query_id] = self.assign(pair.query_id, pair.query)
                for alias in self._aliases.get(pair.query_id, ()):
                    self.used[alias] = self.used[pair.query_id]
            key = self.used[pair.query_id].model
            hit = cache.get((key, digest(pair.query), pair.doc_id, digest(pair.content)))
            if hit is None:
                missing.setdefault((key, pair.query_id), []).append(i)
            else:
                scores[i] = hit
                self.cache_hits += 1
        for (key, _), rows in missing.items():
            query = pairs[rows[0]].query
            scores[rows] = predict(self.reranker.model(key), query, [pairs[i].content for i in rows],
                                   batch_size=self.batch_size)
            self.scored += len(rows)
        return scores

    def finalize(self, query_id: str, scores: np.ndarray) -> np.ndarray:
        """One query's logits, in the base order, blended with that order."""
        assignment = self.used.get(query_id)
        if assignment is None:
            raise SearchGradeError(f"query {query_id!r} was never scored by reranker {self.name!r}")
        return blend(scores, self.reranker.blend_weight(assignment.model))

    def summary(self) -> dict[str, Any]:
        """What a run records about its use of the reranker."""
        return _record(self.reranker.name, self.reranker.card.get("source_run", {}).get("run_id"),
                       {q: a.model for q, a in self.used.items()},
                       {q for q, a in self.used.items() if not a.held_out}, self.cache_hits, self.scored,
                       self.max_depth)


def _record(name: str, source_run: str | None, models: Mapping[str, str], plain: set[str],
            cache_hits: int, scored: int, depth: int | None = None) -> dict[str, Any]:
    held_out = len(models) - len(plain)
    mode = "cross-fitted" if not plain else "plain" if held_out == 0 else "mixed"
    return {"trained": name, "mode": mode, "held_out": held_out, "plain": len(plain),
            "source_run": source_run, "models": dict(sorted(models.items())),
            "plain_queries": sorted(plain), "cache_hits": cache_hits, "scored": scored,
            "max_depth": depth}


def merge_records(previous: Mapping[str, Any] | None, current: Mapping[str, Any]) -> dict[str, Any]:
    """A run's record of its trained reranker after a resume searched some queries again: the
    queries scored before and those scored now (now wins for a query in both)."""
    if not previous or previous.get("trained") != current.get("trained"):
        return dict(current)
    models = {**previous.get("models", {}), **current["models"]}
    plain = (set(previous.get("plain_queries", [])) - set(current["models"])) | set(current["plain_queries"])
    return _record(current["trained"], current.get("source_run"), models, plain,
                   int(previous.get("cache_hits", 0)) + current["cache_hits"],
                   int(previous.get("scored", 0)) + current["scored"], current.get("max_depth"))
