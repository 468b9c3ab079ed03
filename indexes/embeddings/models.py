"""What an embedding model folder is, what names it, and the model2vec static models.

A folder is recognised by its files (``model_kind``), before anything is loaded, so a declaration
that names a folder which is no embedding model (a trained reranker's, a cross-encoder, an empty
folder) is one line before any work:

- ``model2vec``: a static model (``config.json`` with ``"model_type": "model2vec"``), as
  ``searchgrade embeddings distill`` writes it; loaded by model2vec's own ``StaticModel``.
- ``sentence-transformers``: ``modules.json`` or ``config_sentence_transformers.json``, or a plain
  transformer (``config.json`` with a tokenizer and weights: sentence-transformers mean-pools it).

A folder model is named by a digest of its content (``folder_digest``: the weight, tokenizer and
configuration files), not its path: its embedding cache, chunkings and ANN indexes follow the model
when it moves, and a folder whose weights change gets new ones.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from searchgrade.core.records import SearchGradeError, first_line

MODEL2VEC = "model2vec"
SENTENCE_TRANSFORMERS = "sentence-transformers"
#: Files that never change what a model computes (its card, git's attributes).
_IGNORED_SUFFIXES = (".md", ".txt.lock")
_IGNORED_NAMES = {".gitattributes", "README.md", "LICENSE"}
_WEIGHTS = (".safetensors", ".bin", ".pt", ".onnx", ".npy", ".npz")
#: Bytes read at a time when hashing a model's files.
_BLOCK = 1 << 20


def _config(folder: Path) -> dict[str, Any]:
    try:
        data = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def model_kind(folder: str | Path) -> str:
    """``"model2vec"`` or ``"sentence-transformers"`` for a folder holding an embedding model.

    Raises:
        SearchGradeError: the folder holds something else (a trained reranker, a cross-encoder,
            no model at all), one line naming what it found and the fix.
    """
    path = Path(folder).expanduser()
    fix = ("give --embedding-model (or embedding_model) a folder holding a sentence-transformers model or a "
           "model2vec static model (`searchgrade embeddings distill MODEL --out DIR` makes one)")
    if not path.is_dir():
        raise SearchGradeError(f"embedding model folder '{folder}' is not a folder: {fix}")
    config = _config(path)
    if (path / "card.json").is_file() and (path / "models").is_dir():
        raise SearchGradeError(f"'{folder}' is a trained reranker (searchgrade train-reranker), not an "
                               f"embedding model: use it as --reranker-model trained:NAME; for embedding_model {fix}")
    if config.get("model_type") == MODEL2VEC or "StaticModel" in (config.get("architectures") or []):
        return MODEL2VEC
    architectures = [str(a) for a in config.get("architectures") or []]
    if any(a.endswith("ForSequenceClassification") for a in architectures):
        raise SearchGradeError(f"'{folder}' holds a cross-encoder ({architectures[0]}), which scores pairs "
                               f"and makes no embeddings: use it as --reranker-model; for embedding_model {fix}")
    if (path / "modules.json").is_file() or (path / "config_sentence_transformers.json").is_file():
        return SENTENCE_TRANSFORMERS
    has_tokenizer = any((path / name).is_file() for name in ("tokenizer.json", "vocab.txt", "tokenizer_config.json"))
    has_weights = any(p.suffix in _WEIGHTS for p in path.iterdir() if p.is_file())
    if config and has_tokenizer and has_weights:
        return SENTENCE_TRANSFORMERS
    raise SearchGradeError(f"'{folder}' holds no embedding model (no config.json with a tokenizer and "
                           f"weights, no modules.json): {fix}")


def _shaping_files(folder: Path) -> list[Path]:
    """The files that decide what a model computes: everything but cards, locks and hidden files."""
    out = []
    for path in sorted(folder.rglob("*")):
        relative = path.relative_to(folder)
        if not path.is_file() or any(part.startswith(".") for part in relative.parts):
            continue
        if path.name in _IGNORED_NAMES or path.name.endswith(_IGNORED_SUFFIXES):
            continue
        out.append(path)
    return out


def folder_digest(folder: str | Path) -> str:
    """A sha256 (hex) of a model folder's content: each shaping file's relative path and bytes.

    Read once per process for the same files, sizes and modification times.
    """
    path = Path(folder).expanduser().resolve()
    files = _shaping_files(path)
    stamp = tuple((str(f.relative_to(path)), f.stat().st_size, f.stat().st_mtime_ns) for f in files)
    return _digest(str(path), stamp)


@functools.lru_cache(maxsize=64)
def _digest(folder: str, stamp: tuple[tuple[str, int, int], ...]) -> str:
    total = hashlib.sha256()
    for relative, _size, _mtime in stamp:
        total.update(relative.encode("utf-8") + b"\0")
        with open(Path(folder) / relative, "rb") as handle:
            while block := handle.read(_BLOCK):
                total.update(block)
        total.update(b"\0")
    return total.hexdigest()


def local_folder(name: str) -> Path | None:
    """The folder ``name`` points at, or None for a model-hub name (or a path that does not exist)."""
    path = Path(name).expanduser()
    return path if path.is_dir() else None


class StaticEmbedder:
    """A model2vec static model behind the interface the encoder uses (``encode(texts, ...)``).

    A token's vector is a row of a table, so a text's vector is the mean of its tokens' rows: no
    transformer runs, which is why it embeds thousands of texts a second on a CPU.
    """

    backend = "torch"  # not an ONNX export: its vectors belong to the default backend's cache folder
    device = "cpu"

    def __init__(self, model: Any, path: str) -> None:
        self.model = model
        self.path = path

    def __repr__(self) -> str:
        return f"StaticEmbedder({self.path!r}, dim={self.dim})"

    @property
    def dim(self) -> int:
        return int(self.model.dim)

    @property
    def tokenizer(self) -> Any:
        """Its ``tokenizers.Tokenizer`` (what chunking counts tokens with)."""
        return self.model.tokenizer

    def encode(self, sentences: Sequence[str], batch_size: int = 1024, normalize_embeddings: bool = False,
               **_: Any) -> np.ndarray:
        """Vectors as numpy (SentenceTransformer.encode's keywords; progress bars are never shown)."""
        # model2vec batches on its own (1,024 texts, the library's default); a smaller batch only
        # adds Python overhead. No process pool: the texts come in blocks far below its threshold.
        vectors = self.model.encode(list(sentences), show_progress_bar=False, batch_size=max(batch_size, 1024),
                                    use_multiprocessing=False)
        vectors = np.asarray(vectors, dtype=np.float32).reshape(len(sentences), -1)
        if normalize_embeddings:
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = vectors / np.where(norms > 0, norms, 1.0)
        return vectors


def load_static(folder: str | Path) -> StaticEmbedder:
    """A model2vec model from its folder (never from the hub).

    Raises:
        SearchGradeError: model2vec is not installed, or the folder cannot be read as a static model.
    """
    try:
        from model2vec import StaticModel
    except ImportError as exc:
        raise SearchGradeError("model2vec is not installed (pip install model2vec)") from exc
    path = Path(folder).expanduser()
    try:
        model = StaticModel.from_pretrained(str(path), force_download=False)
    except Exception as exc:  # any loader failure is a bad model folder for the user
        raise SearchGradeError(f"model2vec model at '{folder}' could not be loaded ({type(exc).__name__}: "
                               f"{first_line(exc)}): make it again with `searchgrade embeddings distill`") from exc
    return StaticEmbedder(model, str(path))
