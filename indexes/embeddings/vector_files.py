"""Vectors made elsewhere: reading a file of (document id, vector) and filling the embedding cache.

A user who embedded the corpus on a GPU, on a cluster or with their own pipeline hands us a Parquet
or NPZ file; each vector is stored in the cache of its model under the key of its document's text
(indexes/embeddings/encoder.py), so a build uses it exactly as if it had been embedded here.

File layouts:

- Parquet: an id column (``doc_id``, ``id``, ``_id`` or ``corpus-id``; ``id_field`` names another)
  and a vector column of lists of floats (``vector``, ``embedding``, ``vectors`` or ``embeddings``;
  ``vector_field``). The model may be named in the file's key-value metadata as ``model``.
- NPZ: arrays ``ids`` (strings or integers; or ``doc_ids``, ``id``, ``doc_id``) and ``vectors``
  (n x dim floats; or ``embeddings``), and optionally ``model`` (a string).

What is checked, each failure one line naming the file and the fix: the columns, one dimension for
every row, finite non-zero vectors, unique ids, ids the collection has (``ignore_unknown_ids``
imports the rest), the dimension of the cache and of the model, and, when the model loads here,
that the file's vectors agree with what the model computes for a sample of the documents (a wrong
model name or shifted ids give unrelated vectors).
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from searchgrade.core.records import Collection, SearchGradeError
from searchgrade.indexes.embeddings.encoder import EmbeddingCache, cache_dir_for, encode, text_key
from searchgrade.indexes.settings import canonical_model_name

ID_FIELDS = ("doc_id", "id", "_id", "corpus-id")
VECTOR_FIELDS = ("vector", "embedding", "vectors", "embeddings")
NPZ_ID_KEYS = ("ids", "doc_ids", "id", "doc_id")
NPZ_VECTOR_KEYS = ("vectors", "embeddings")
#: Documents embedded here to compare with the file's vectors, and the least mean cosine accepted.
#: Re-embedding with the same model on other hardware or precision gives > 0.99; another model,
#: or ids pointing at the wrong documents, gives far less (~0.1-0.5 for unrelated texts).
CHECK_SAMPLE = 16
MIN_AGREEMENT = 0.9
#: Where the cache folder records what was imported into it.
IMPORT_LOG = "imports.jsonl"


@dataclass
class VectorFile:
    """A file's vectors: ``ids[i]`` is the document of row i; ``model`` as the file names it."""

    path: Path
    ids: list[str]
    vectors: np.ndarray
    model: str | None

    @property
    def dim(self) -> int:
        return int(self.vectors.shape[1])


@dataclass
class ImportReport:
    """What import_vectors did.

    Attributes:
        model: the model the vectors are filed under.
        vectors: rows in the file.
        matched: rows whose id is a document of the collection (imported).
        unknown: rows whose id the collection lacks (left out).
        new: imported vectors the cache did not hold yet.
        documents: documents in the collection; covered: how many of them now have a vector.
        agreement: mean cosine between the file's vectors and the model's own on a sample, or None
            when not checked (the model could not be loaded, or the check was turned off).
        check_note: why the agreement was not checked, if it was not.
    """

    model: str
    vectors: int
    dim: int
    matched: int
    unknown: int
    new: int
    documents: int
    covered: int
    agreement: float | None
    check_note: str | None
    cache_dir: Path


def read_vector_file(path: str | Path, id_field: str | None = None,
                     vector_field: str | None = None) -> VectorFile:
    """The ids, vectors (float32, n x dim, as stored) and model name of a .parquet or .npz file.

    Raises:
        SearchGradeError: a missing or unreadable file, missing columns, ragged or non-numeric
            vectors, NaN/infinite or all-zero vectors, duplicate or empty ids.
    """
    path = Path(path)
    if not path.is_file():
        raise SearchGradeError(f"vector file {path} does not exist: check the path")
    suffix = path.suffix.lower()
    if suffix == ".parquet":
        ids, vectors, model = _read_parquet(path, id_field, vector_field)
    elif suffix == ".npz":
        ids, vectors, model = _read_npz(path, id_field, vector_field)
    else:
        raise SearchGradeError(f"vector file {path} is not .parquet or .npz: convert it to one of those "
                               "(doc id + vector per row)")
    _check_vectors(path, ids, vectors)
    return VectorFile(path, ids, vectors, model)


def _pick(path: Path, available: Sequence[str], wanted: str | None, defaults: Sequence[str],
          what: str, option: str) -> str:
    candidates = [wanted] if wanted else list(defaults)
    for name in candidates:
        if name in available:
            return name
    shown = ", ".join(map(str, available)) or "none"
    expected = repr(wanted) if wanted else " or ".join(repr(d) for d in defaults)
    raise SearchGradeError(f"vector file {path} has no {what} column {expected} (it has: {shown}); "
                           f"name it with {option}")


def _read_parquet(path: Path, id_field: str | None,
                  vector_field: str | None) -> tuple[list[str], np.ndarray, str | None]:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise SearchGradeError("pyarrow is not installed (pip install pyarrow)") from exc
    try:
        schema = pq.read_schema(path)
    except Exception as exc:  # pyarrow raises several types for a file that is not Parquet
        raise SearchGradeError(f"vector file {path} cannot be read as Parquet ({type(exc).__name__}): "
                               "check that it is a Parquet file") from exc
    id_col = _pick(path, schema.names, id_field, ID_FIELDS, "id", "--id-column")
    vec_col = _pick(path, schema.names, vector_field, VECTOR_FIELDS, "vector", "--vector-column")
    metadata = {k.decode(): v.decode(errors="replace") for k, v in (schema.metadata or {}).items()}
    model = metadata.get("model") or metadata.get("embedding_model")
    kind = schema.field(vec_col).type
    if not (pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)) \
            or not pa.types.is_floating(kind.value_type):
        raise SearchGradeError(f"vector file {path}: column {vec_col!r} holds {kind}, not lists of floats: "
                               "store each vector as a list of float32 or float64")
    table = pq.read_table(path, columns=[id_col, vec_col])
    column = table.column(vec_col).combine_chunks()
    if column.null_count:
        row = column.is_null().to_numpy(zero_copy_only=False).argmax()
        raise SearchGradeError(f"vector file {path}: row {row + 1} has no vector: give every id a vector")
    lengths = column.value_lengths().to_numpy(zero_copy_only=False)
    if len(lengths) and (lengths != lengths[0]).any():
        row = int(np.flatnonzero(lengths != lengths[0])[0])
        raise SearchGradeError(f"vector file {path}: row {row + 1} has {lengths[row]} dimensions but row 1 "
                               f"has {lengths[0]}: every vector must have the same dimension")
    dim = int(lengths[0]) if len(lengths) else 0
    flat = column.flatten().to_numpy(zero_copy_only=False)
    vectors = np.asarray(flat, dtype=np.float32).reshape(len(column), dim)
    ids = table.column(id_col).to_pylist()
    return [_id_text(path, i, row) for row, i in enumerate(ids)], vectors, model


def _read_npz(path: Path, id_field: str | None,
              vector_field: str | None) -> tuple[list[str], np.ndarray, str | None]:
    try:
        data = np.load(path, allow_pickle=False)
        names = list(data.files)
    except Exception as exc:  # zip and format errors: a file we cannot use
        raise SearchGradeError(f"vector file {path} cannot be read as .npz ({type(exc).__name__}): "
                               "write it with numpy.savez(path, ids=..., vectors=...)") from exc
    with data:
        id_key = _pick(path, names, id_field, NPZ_ID_KEYS, "id", "--id-column")
        vec_key = _pick(path, names, vector_field, NPZ_VECTOR_KEYS, "vector", "--vector-column")
        try:
            raw_ids, vectors = data[id_key], data[vec_key]
            model = str(data["model"]) if "model" in names else None
        except ValueError as exc:  # object arrays need pickle, which we never load
            raise SearchGradeError(f"vector file {path} stores Python objects (pickled): save ids as a "
                                   "string or integer array and vectors as a float array") from exc
    if vectors.dtype.kind not in "fiu" or vectors.ndim != 2:
        raise SearchGradeError(f"vector file {path}: {vec_key!r} is a {vectors.dtype} array of shape "
                               f"{vectors.shape}, not n x dim numbers: save one vector per row")
    if raw_ids.ndim != 1 or raw_ids.dtype.kind not in "USiu":
        raise SearchGradeError(f"vector file {path}: {id_key!r} is a {raw_ids.dtype} array of shape "
                               f"{raw_ids.shape}: save the ids as a 1-D string or integer array")
    if len(raw_ids) != len(vectors):
        raise SearchGradeError(f"vector file {path} has {len(raw_ids)} ids but {len(vectors)} vectors: "
                               "give one id per vector row")
    if raw_ids.dtype.kind == "S":
        raw_ids = np.char.decode(raw_ids, "utf-8")
    ids = [_id_text(path, i, row) for row, i in enumerate(raw_ids.tolist())]
    return ids, np.asarray(vectors, dtype=np.float32), model


def _id_text(path: Path, value: Any, row: int) -> str:
    if isinstance(value, bool) or value is None or not isinstance(value, str | int):
        raise SearchGradeError(f"vector file {path}: row {row + 1} has id {value!r}: ids must be "
                               "strings or integers")
    text = str(value)
    if not text.strip():
        raise SearchGradeError(f"vector file {path}: row {row + 1} has an empty id")
    return text


def _check_vectors(path: Path, ids: list[str], vectors: np.ndarray) -> None:
    if not ids:
        raise SearchGradeError(f"vector file {path} holds no vectors")
    if vectors.shape[1] == 0:
        raise SearchGradeError(f"vector file {path} holds vectors of dimension 0")
    bad = ~np.isfinite(vectors).all(axis=1)
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        raise SearchGradeError(f"vector file {path}: the vector of id {ids[row]!r} (row {row + 1}) holds "
                               "NaN or infinite values: recompute it")
    zero = ~vectors.any(axis=1)
    if zero.any():
        row = int(np.flatnonzero(zero)[0])
        raise SearchGradeError(f"vector file {path}: the vector of id {ids[row]!r} (row {row + 1}) is all "
                               "zeros, which has no direction to compare: recompute it")
    seen: set[str] = set()
    for row, doc_id in enumerate(ids):
        if doc_id in seen:
            raise SearchGradeError(f"vector file {path}: id {doc_id!r} appears twice (again at row "
                                   f"{row + 1}): give each document one vector")
        seen.add(doc_id)


def model_for(file: VectorFile, model_name: str | None) -> str:
    """The model the vectors are filed under: the option, else the file's own, and never two."""
    named = canonical_model_name(model_name) if model_name else None
    stated = canonical_model_name(file.model) if file.model else None
    if named and stated and named != stated:
        raise SearchGradeError(f"vector file {file.path} says its vectors are from {file.model!r}, not "
                               f"{model_name!r}: pass --embedding-model {file.model} (or fix the file)")
    model = named or stated
    if model is None:
        raise SearchGradeError(f"vector file {file.path} does not say which model made its vectors: pass "
                               "--embedding-model NAME, the model that will embed the queries")
    return model


def import_vectors(collection: Collection, file: VectorFile, model_name: str, data_dir: str | Path,
                   *, ignore_unknown_ids: bool = False, embedder: Any = None,
                   check_note: str | None = None) -> ImportReport:
    """File the vectors of ``file`` in the embedding cache of ``model_name`` for ``collection``.

    Args:
        collection: the documents the ids refer to; a vector is stored under the key of its
            document's text, so a later build of this collection uses it instead of encoding.
        file: read_vector_file's result.
        model_name: the model that made the vectors (and will embed queries at search time).
        data_dir: the data directory whose ``embeddings/`` cache is filled.
        ignore_unknown_ids: import the rows whose id is a document and leave the others out
            (otherwise any unknown id stops the import, before anything is written).
        embedder: the loaded model, to check the file's dimension and a sample of its vectors
            against it; None skips those checks (``check_note`` says why).

    Raises:
        SearchGradeError: no or unknown ids, another dimension than the cache or the model, or
            vectors that do not agree with the model's; nothing is written then.
    """
    documents = {doc.doc_id: doc for doc in collection.documents}
    rows = [row for row, doc_id in enumerate(file.ids) if doc_id in documents]
    unknown = len(file.ids) - len(rows)
    if not rows:
        raise SearchGradeError(
            f"none of the {len(file.ids):,} ids in {file.path} is a document of {collection.name!r} "
            f"(first: {file.ids[0]!r}; the collection's first: {collection.documents[0].doc_id!r}): "
            "check the id column")
    if unknown and not ignore_unknown_ids:
        first = next(doc_id for doc_id in file.ids if doc_id not in documents)
        raise SearchGradeError(
            f"{unknown:,} of the {len(file.ids):,} ids in {file.path} are not documents of "
            f"{collection.name!r} (first: {first!r}): check the id column, or pass "
            "--ignore-unknown-ids to import the others")
    cache_dir = cache_dir_for(data_dir, model_name, "torch")  # fp32 vectors: the torch backend's
    cache = EmbeddingCache(cache_dir)
    if len(cache) and cache.dim is not None and cache.dim != file.dim:
        raise SearchGradeError(
            f"vector file {file.path} has {file.dim}-dimensional vectors but the cache of {model_name!r} "
            f"holds {cache.dim}-dimensional ones: the vectors are from another model; pass its name "
            "with --embedding-model")
    agreement = None
    if embedder is not None:
        agreement = _agreement(file, rows, documents, model_name, embedder)
    keys = [text_key(documents[file.ids[row]].content) for row in rows]
    vectors = file.vectors[rows] if unknown else file.vectors
    new = cache.add_imported(keys, vectors)
    covered = sum(1 for doc in collection.documents if text_key(doc.content) in cache)
    report = ImportReport(model_name, len(file.ids), file.dim, len(rows), unknown, new,
                          len(collection.documents), covered, agreement, check_note, cache_dir)
    _log_import(cache_dir, file, collection, report)
    return report


def _agreement(file: VectorFile, rows: list[int], documents: dict[str, Any], model_name: str,
               embedder: Any) -> float:
    # sentence-transformers 5.x renamed the method; 4.x has only the old name.
    get_dim = getattr(embedder, "get_embedding_dimension", None) or embedder.get_sentence_embedding_dimension
    dim = get_dim()
    if dim is not None and dim != file.dim:
        raise SearchGradeError(
            f"vector file {file.path} has {file.dim}-dimensional vectors but {model_name!r} makes "
            f"{dim}-dimensional ones: pass the model that made them with --embedding-model")
    sample = sorted(random.Random(0).sample(rows, min(CHECK_SAMPLE, len(rows))))
    ours = encode(embedder, [documents[file.ids[row]].content for row in sample], batch_size=CHECK_SAMPLE)
    theirs = file.vectors[sample]
    theirs = theirs / np.linalg.norm(theirs, axis=1, keepdims=True)
    cosines = (ours * theirs).sum(axis=1)
    mean = float(cosines.mean())
    if mean < MIN_AGREEMENT:
        worst = sample[int(cosines.argmin())]
        raise SearchGradeError(
            f"vector file {file.path} does not match {model_name!r}: on {len(sample)} documents its vectors "
            f"have mean cosine {mean:.2f} with the model's own (id {file.ids[worst]!r}: "
            f"{float(cosines.min()):.2f}); check that the ids point at the right documents and the model "
            "name is the one that made them (--no-check skips this)")
    return mean


def _log_import(cache_dir: Path, file: VectorFile, collection: Collection, report: ImportReport) -> None:
    entry = {"imported_at": time.strftime("%Y-%m-%dT%H:%M:%S"), "file": str(file.path.resolve()),
             "model": report.model, "collection": collection.name, "vectors": report.vectors,
             "imported": report.matched, "new": report.new, "dim": report.dim,
             "agreement": report.agreement}
    with open(Path(cache_dir) / IMPORT_LOG, "a", encoding="utf-8") as log:
        log.write(json.dumps(entry) + "\n")
