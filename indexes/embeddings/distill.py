"""A model2vec static model distilled from a sentence-transformers model on disk.

Distillation runs the transformer once over every token of its vocabulary and keeps each token's
output vector (reduced by PCA to ``dims`` dimensions and weighted by token frequency, model2vec's
recipe): a text's vector is then the mean of its tokens' vectors, a table look-up instead of a
transformer pass. The packaged all-MiniLM-L6-v2 distilled in 167 s on our 2-core VM at load 7-9
(bench/RESULTS.md; about 15 s is quoted for idle cores).

The base model is resolved as ``--embedding-model`` resolves it (``load_embedder``: the packaged
all-MiniLM-L6-v2, a local folder, the local Hugging Face cache, and the hub only when it answers),
and the result is written whole or not at all: into a temporary folder beside ``out``, renamed into
place at the end.
"""

from __future__ import annotations

import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.embeddings.models import MODEL2VEC, StaticEmbedder, model_kind

#: The default of --dims: model2vec's own default PCA size.
DEFAULT_DIMS = 256


@dataclass(frozen=True)
class Distilled:
    """What ``distill_model`` made: where, from what, its size and how long it took."""

    out: Path
    base: str
    dims: int
    vocabulary: int
    seconds: float


def _check_out(out: Path) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise SearchGradeError(f"--out {out} exists and is not an empty folder: give a new folder "
                               "(a distilled model is never written over another one)")
    if not out.parent.exists():
        raise SearchGradeError(f"--out {out}: its parent folder {out.parent} does not exist: create it first")


def distill_model(base: str, out: str | Path, dims: int | None = DEFAULT_DIMS) -> Distilled:
    """Distil ``base`` into a model2vec static model in the folder ``out``.

    Args:
        base: a sentence-transformers model, as ``--embedding-model`` takes it.
        out: a folder that does not exist yet (or is empty).
        dims: the static model's dimensions (PCA); None keeps the base model's.

    Raises:
        SearchGradeError: a bad ``out`` or ``dims``, a base that cannot be loaded or is a static
            model already, or a distillation that fails (one line each; nothing is left in ``out``).
    """
    from searchgrade.indexes.embeddings.encoder import load_embedder

    out = Path(out).expanduser()
    _check_out(out)
    if dims is not None and (isinstance(dims, bool) or not isinstance(dims, int) or dims < 2):
        raise SearchGradeError(f"--dims of {dims!r} must be a whole number >= 2 (e.g. 256)")
    folder = Path(base).expanduser()
    if folder.is_dir() and model_kind(folder) == MODEL2VEC:
        raise SearchGradeError(f"'{base}' is a model2vec static model already: distil the "
                               "sentence-transformers model it was made from")
    started = time.perf_counter()
    st_model = load_embedder(base, "torch", "cpu")
    if isinstance(st_model, StaticEmbedder):  # a hub name that resolved to a static model
        raise SearchGradeError(f"'{base}' is a model2vec static model already: nothing to distil")
    width = st_model.get_embedding_dimension()
    if dims is not None and width is not None and dims > width:
        raise SearchGradeError(f"--dims of {dims} is more than {base}'s own {width} dimensions: use at most {width}")
    try:
        from model2vec.distill import distill_from_model
    except ImportError as exc:
        raise SearchGradeError("model2vec's distillation is not installed (pip install model2vec skeletoken)") from exc
    transformer, tokenizer = st_model[0].auto_model, st_model.tokenizer
    if not getattr(tokenizer, "is_fast", False):
        raise SearchGradeError(f"'{base}' has no fast (Rust) tokenizer, which distillation needs: use a model "
                               "with a tokenizer.json")
    tmp = out.with_name(f".{out.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        static = distill_from_model(model=transformer, tokenizer=tokenizer, device="cpu",
                                    pca_dims=dims if dims is not None else "auto")
        static.save_pretrained(str(tmp))
        if out.exists():
            out.rmdir()  # empty (checked): replaced by the finished folder
        tmp.rename(out)
    except SearchGradeError:
        raise
    except Exception as exc:  # any failure of the library is one line; nothing is left behind
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        raise SearchGradeError(f"distilling {base} failed ({type(exc).__name__}: {first}): check that it is a "
                               "sentence-transformers model with a fast tokenizer") from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return Distilled(out, base, int(static.dim), len(static.tokens), time.perf_counter() - started)
