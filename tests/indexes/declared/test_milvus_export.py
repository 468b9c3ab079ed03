"""export_collection's --replace against a real Milvus Lite: the new collection is loaded aside and
swapped in whole, so a load that fails leaves the old collection as it was."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from searchgrade.core.records import Collection, Document, SearchGradeError
from searchgrade.indexes.declared.declaration import embedded_by
from searchgrade.indexes.declared.milvus import (
    STAGING_PREFIX,
    build_node,
    connect,
    export_collection,
)
from searchgrade.indexes.declared.spec import parse_spec
from searchgrade.indexes.settings import IndexSettings


def collection(prefix: str, n: int = 6) -> Collection:
    docs = [Document(f"{prefix}{i}", f"title {i}", f"text about topic {i} and more") for i in range(n)]
    return Collection(name="small", path="/tmp/small", documents=docs)


def unit_vectors(n: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(n, 8)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def ids_in(uri: str, name: str) -> set[str]:
    client = connect(uri)
    return {r["doc_id"] for r in client.query(name, filter='doc_id != ""', output_fields=["doc_id"], limit=100)}


def test_replace_swaps_in_a_complete_collection_and_a_failed_load_keeps_the_old_one(tmp_path):
    uri = str(tmp_path / "milvus.db")
    export_collection(collection("old"), unit_vectors(6, 0), uri, "docs")
    assert ids_in(uri, "docs") == {f"old{i}" for i in range(6)}

    with pytest.raises(SearchGradeError, match="already has a collection 'docs'.*--replace"):
        export_collection(collection("new"), unit_vectors(6, 1), uri, "docs")

    def interrupted(stage, done, total):
        raise RuntimeError("connection lost")

    with pytest.raises(SearchGradeError, match="connection lost.*the existing 'docs' is unchanged"):
        export_collection(collection("new"), unit_vectors(6, 1), uri, "docs", replace=True, progress=interrupted)
    assert ids_in(uri, "docs") == {f"old{i}" for i in range(6)}

    export_collection(collection("new", 4), unit_vectors(4, 2), uri, "docs", replace=True)
    assert ids_in(uri, "docs") == {f"new{i}" for i in range(4)}
    assert not [c for c in connect(uri).list_collections() if c.startswith(STAGING_PREFIX)]


def _ctx(backend: str, model: str = "sentence-transformers/all-MiniLM-L6-v2"):
    """A build context whose embedder is a stand-in: what is tested is the check before it loads."""
    return SimpleNamespace(settings=IndexSettings(embedding_model=model, embedding_backend=backend),
                           embedder=lambda name: ("embedder of", name))


def test_dense_search_refuses_queries_embedded_by_another_backend_than_the_documents(tmp_path):
    uri = str(tmp_path / "milvus.db")
    model = "sentence-transformers/all-MiniLM-L6-v2"
    export_collection(collection("d"), unit_vectors(6, 0), uri, "int8",
                      embedding=embedded_by(model, "onnx-int8"))
    export_collection(collection("d"), unit_vectors(6, 0), uri, "unrecorded")  # made elsewhere
    spec = parse_spec("mv", {"kind": "milvus", "uri": uri, "collection": "int8", "search": "dense"})
    with pytest.raises(SearchGradeError) as info:
        build_node(spec, _ctx("torch"))
    message = str(info.value)
    assert "\n" not in message and "holds vectors of" in message
    assert "onnx-int8.v" in message and "by torch" in message
    assert "--embedding-backend torch`" in message and "--replace" in message
    # the same backend (under the short model name) is accepted, and so is any bm25 search
    short = build_node(spec, _ctx("onnx-int8", "all-MiniLM-L6-v2"))
    assert short.embedder == ("embedder of", "all-MiniLM-L6-v2")
    bm25 = parse_spec("mv", {"kind": "milvus", "uri": uri, "collection": "int8", "search": "bm25"})
    assert build_node(bm25, _ctx("torch")).embedder is None
    with pytest.raises(SearchGradeError, match="holds vectors of"):  # another model: refused too
        build_node(spec, _ctx("onnx-int8", "some/other-model"))
    # the fix the message names: loaded again (swapped in by a rename) with the run's backend
    export_collection(collection("d"), unit_vectors(6, 0), uri, "int8", replace=True,
                      embedding=embedded_by(model, "torch"))
    assert build_node(spec, _ctx("torch")).embedder == ("embedder of", model)
    unrecorded = parse_spec("mv", {"kind": "milvus", "uri": uri, "collection": "unrecorded", "search": "dense"})
    assert build_node(unrecorded, _ctx("torch")).embedder == ("embedder of", model)
