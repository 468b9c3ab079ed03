"""Vectors made elsewhere: read from Parquet or NPZ, checked, filed in the embedding cache."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.build import build_searchers
from searchgrade.indexes.embeddings.encoder import EmbeddingCache, cache_dir_for, encode, load_embedder
from searchgrade.indexes.embeddings.vector_files import import_vectors, model_for, read_vector_file
from searchgrade.indexes.settings import IndexSettings
from tests.indexes.conftest import DOCS, make_collection

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
IDS = list(DOCS)


@pytest.fixture(scope="module")
def model():
    return load_embedder(MODEL)


@pytest.fixture(scope="module")
def vectors(model) -> np.ndarray:
    """The model's own vectors of the tiny collection, scaled: a pipeline need not normalise."""
    collection = make_collection()
    return 3.0 * encode(model, [doc.content for doc in collection.documents], batch_size=32)


def write_parquet(path, ids, vectors, metadata=None, id_name="doc_id", vector_name="vector"):
    table = pa.table({id_name: ids, vector_name: [list(map(float, v)) for v in vectors]})
    if metadata:
        table = table.replace_schema_metadata(metadata)
    pq.write_table(table, path)
    return path


def test_imported_vectors_are_used_instead_of_embedding(tmp_path, vectors, model):
    path = write_parquet(tmp_path / "v.parquet", IDS, vectors, {"model": MODEL})
    file = read_vector_file(path)
    assert file.model == MODEL and file.dim == 384 and file.ids == IDS
    collection = make_collection()
    report = import_vectors(collection, file, model_for(file, None), tmp_path / "data", embedder=model)
    assert (report.matched, report.new, report.covered, report.unknown) == (20, 20, 20, 0)
    assert report.agreement == pytest.approx(1.0, abs=1e-4)
    built = build_searchers(collection, IndexSettings(), tmp_path / "data", strategies=("ann",))
    assert (built.stats["embedded"], built.stats["cache_hits"]) == (0, 20)
    # Stored normalised: the index answers as if the documents had been embedded here.
    cache = EmbeddingCache(cache_dir_for(tmp_path / "data", MODEL))
    assert len(cache) == 20 and (cache_dir_for(tmp_path / "data", MODEL) / "imports.jsonl").is_file()
    hits = built.searchers["ann"].search(["birds that cannot fly in the antarctic"], 1)
    assert hits[0].docs[0].doc_id == "d01"


def test_npz_with_integer_ids_and_a_model_name(tmp_path, vectors):
    docs = {str(i): DOCS[doc_id] for i, doc_id in enumerate(IDS)}
    np.savez(tmp_path / "v.npz", ids=np.arange(20), vectors=vectors, model=np.array(MODEL))
    file = read_vector_file(tmp_path / "v.npz")
    assert file.ids == [str(i) for i in range(20)] and file.model == MODEL
    report = import_vectors(make_collection(docs), file, MODEL, tmp_path / "data")
    assert report.new == 20 and report.agreement is None
    # Importing again adds nothing: the texts are cached.
    assert import_vectors(make_collection(docs), file, MODEL, tmp_path / "data").new == 0


def test_unknown_ids_stop_the_import_unless_ignored(tmp_path, vectors):
    path = write_parquet(tmp_path / "v.parquet", [*IDS[:19], "elsewhere"], vectors)
    file = read_vector_file(path)
    with pytest.raises(SearchGradeError, match=r"1 of the 20 ids .* \(first: 'elsewhere'\).*--ignore-unknown-ids"):
        import_vectors(make_collection(), file, MODEL, tmp_path / "data")
    assert not (tmp_path / "data").exists()
    report = import_vectors(make_collection(), file, MODEL, tmp_path / "data", ignore_unknown_ids=True)
    assert (report.matched, report.unknown, report.covered) == (19, 1, 19)


def test_ids_of_another_collection_match_nothing(tmp_path, vectors):
    file = read_vector_file(write_parquet(tmp_path / "v.parquet", [f"x{i}" for i in range(20)], vectors))
    with pytest.raises(SearchGradeError, match=r"none of the 20 ids .* \(first: 'x0'; the collection's first: 'd01'\)"):
        import_vectors(make_collection(), file, MODEL, tmp_path / "data", ignore_unknown_ids=True)


def test_shifted_ids_are_caught_by_comparing_with_the_model(tmp_path, vectors, model):
    shifted = IDS[1:] + IDS[:1]  # every vector filed under the next document
    file = read_vector_file(write_parquet(tmp_path / "v.parquet", shifted, vectors))
    with pytest.raises(SearchGradeError, match=r"does not match .* mean cosine 0\.\d\d .*--no-check"):
        import_vectors(make_collection(), file, MODEL, tmp_path / "data", embedder=model)
    assert not (tmp_path / "data").exists()


def test_another_dimension_than_the_model_or_the_cache_is_refused(tmp_path, vectors, model):
    file = read_vector_file(write_parquet(tmp_path / "v.parquet", IDS, vectors[:, :128]))
    with pytest.raises(SearchGradeError, match="128-dimensional vectors but .* makes 384-dimensional"):
        import_vectors(make_collection(), file, MODEL, tmp_path / "data", embedder=model)
    import_vectors(make_collection(), read_vector_file(write_parquet(tmp_path / "w.parquet", IDS, vectors)),
                   MODEL, tmp_path / "data")
    with pytest.raises(SearchGradeError, match="128-dimensional vectors but the cache .* holds 384"):
        import_vectors(make_collection(), file, MODEL, tmp_path / "data")


def test_the_model_is_named_once(tmp_path, vectors):
    file = read_vector_file(write_parquet(tmp_path / "v.parquet", IDS, vectors, {"model": "BAAI/bge-small-en-v1.5"}))
    with pytest.raises(SearchGradeError, match="says its vectors are from 'BAAI/bge-small-en-v1.5'"):
        model_for(file, MODEL)
    assert model_for(file, None) == "BAAI/bge-small-en-v1.5"
    unnamed = read_vector_file(write_parquet(tmp_path / "w.parquet", IDS, vectors))
    with pytest.raises(SearchGradeError, match="does not say which model .* --embedding-model"):
        model_for(unnamed, None)
    assert model_for(unnamed, "all-MiniLM-L6-v2") == MODEL


def _npz(tmp_path, **arrays):
    np.savez(tmp_path / "bad.npz", **arrays)
    return tmp_path / "bad.npz"


@pytest.mark.parametrize("make, fragment", [
    (lambda t, v: t / "missing.parquet", "does not exist"),
    (lambda t, v: (t / "v.csv").write_text("id,vector\n") and t / "v.csv", "is not .parquet or .npz"),
    (lambda t, v: (t / "v.parquet").write_text("not parquet") and t / "v.parquet", "cannot be read as Parquet"),
    (lambda t, v: (t / "v.npz").write_bytes(b"junk") and t / "v.npz", "cannot be read as .npz"),
    (lambda t, v: write_parquet(t / "v.parquet", IDS, v, id_name="key"),
     "no id column 'doc_id' or 'id' or '_id' or 'corpus-id' \\(it has: key, vector\\); name it with --id-column"),
    (lambda t, v: write_parquet(t / "v.parquet", IDS, v, vector_name="emb"), "no vector column"),
    (lambda t, v: pq.write_table(pa.table({"id": IDS, "vector": [[1.0] * (3 if i else 4) for i in range(20)]}),
                                 t / "v.parquet") or t / "v.parquet",
     "row 2 has 3 dimensions but row 1 has 4"),
    (lambda t, v: pq.write_table(pa.table({"id": IDS, "vector": ["x"] * 20}), t / "v.parquet") or t / "v.parquet",
     "column 'vector' holds string, not lists of floats"),
    (lambda t, v: write_parquet(t / "v.parquet", IDS, np.where(np.arange(20)[:, None] == 4, np.nan, v)),
     "the vector of id 'd05' \\(row 5\\) holds NaN"),
    (lambda t, v: write_parquet(t / "v.parquet", IDS, np.where(np.arange(20)[:, None] == 2, 0.0, v)),
     "the vector of id 'd03' \\(row 3\\) is all zeros"),
    (lambda t, v: write_parquet(t / "v.parquet", [*IDS[:19], "d01"], v), "id 'd01' appears twice \\(again at row 20\\)"),
    (lambda t, v: _npz(t, ids=np.array(IDS), vectors=v[:10]), "has 20 ids but 10 vectors"),
    (lambda t, v: _npz(t, ids=np.array(IDS), vectors=v[:, 0]), "not n x dim numbers"),
    (lambda t, v: _npz(t, ids=np.array(IDS, dtype=object), vectors=v), "stores Python objects"),
    (lambda t, v: _npz(t, keys=np.array(IDS), vectors=v), "no id column 'ids' or 'doc_ids'"),
    (lambda t, v: _npz(t, ids=np.array([], dtype=str), vectors=np.zeros((0, 4))), "holds no vectors"),
])
def test_bad_files_give_one_line_naming_the_file_and_the_fix(tmp_path, vectors, make, fragment):
    path = make(tmp_path, vectors)
    with pytest.raises(SearchGradeError, match=fragment) as caught:
        read_vector_file(path)
    assert "\n" not in str(caught.value) and str(path) in str(caught.value)
