"""export_collection's --replace against a real Milvus Lite: the new collection is loaded aside and
swapped in whole, so a load that fails leaves the old collection as it was."""

from __future__ import annotations

import numpy as np
import pytest

from core.records import Collection, Document, SearchGradeError
from indexes.backends.milvus import STAGING_PREFIX, connect, export_collection


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
