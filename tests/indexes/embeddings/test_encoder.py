from __future__ import annotations

import time
from pathlib import Path

import numpy as np
import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.embeddings import encoder as embeddings
from searchgrade.indexes.embeddings.encoder import (
    EmbeddingCache,
    encode_cached,
    load_embedder,
    model_slug,
    packaged_model_path,
    resolve_model,
    text_key,
)
from tests.indexes.conftest import DOCS, CountingModel

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
TEXTS = [f"{title} {text}" for title, text in DOCS.values()]

@pytest.fixture
def counting_model() -> CountingModel:
    return CountingModel(load_embedder(MODEL))


@pytest.mark.parametrize("name", [MODEL, "all-MiniLM-L6-v2"])
def test_default_model_names_resolve_to_the_packaged_folder(name):
    path = Path(resolve_model(name))
    assert path == packaged_model_path()
    assert (path / "config.json").exists()


def test_other_names_are_passed_through():
    assert resolve_model("BAAI/bge-small-en-v1.5") == "BAAI/bge-small-en-v1.5"


def test_model_slug_is_filesystem_safe_and_shared_by_aliases(tmp_path):
    assert model_slug(MODEL) == model_slug("all-MiniLM-L6-v2") == "sentence-transformers_all-MiniLM-L6-v2"
    # Two folders called "model": named by their content (indexes/embeddings/models.py), not their path.
    for folder, weights in (("a", b"one"), ("b", b"two"), ("c", b"one")):
        (tmp_path / folder / "model").mkdir(parents=True)
        (tmp_path / folder / "model" / "model.safetensors").write_bytes(weights)
    slug_a, slug_b, slug_c = (model_slug(str(tmp_path / f / "model")) for f in "abc")
    assert slug_a.startswith("local-model-") and slug_a != slug_b and slug_a == slug_c
    assert "/" not in slug_a


def test_unloadable_model_name_fails_fast_with_one_line_naming_model_and_fix():
    start = time.perf_counter()
    with pytest.raises(SearchGradeError) as info:
        load_embedder("searchgrade-tests/no-such-embedding-model")
    message = str(info.value)
    assert time.perf_counter() - start < 15
    assert "\n" not in message
    assert "'searchgrade-tests/no-such-embedding-model'" in message
    assert "--embedding-model" in message and MODEL in message


def test_missing_local_path_says_it_does_not_exist(tmp_path):
    with pytest.raises(SearchGradeError, match="does not exist"):
        load_embedder(str(tmp_path / "nothing-here"))


def test_a_folder_that_is_not_a_model_is_reported(tmp_path):
    (tmp_path / "junk.txt").write_text("x")
    with pytest.raises(SearchGradeError, match=r"holds no embedding model .*--embedding-model"):
        load_embedder(str(tmp_path))


def test_vectors_are_normalised_float32_rows_in_input_order(tmp_path, counting_model):
    vectors, stats = encode_cached(MODEL, TEXTS[:5], tmp_path, batch_size=2, model=counting_model)
    assert vectors.dtype == np.float32 and vectors.shape == (5, 384)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    direct = embeddings.encode(counting_model.model, TEXTS[:5], batch_size=5)
    np.testing.assert_allclose(vectors, direct, atol=1e-5)
    assert (stats.texts, stats.embedded, stats.cache_hits) == (5, 5, 0)
    assert stats.docs_per_s is not None and stats.docs_per_s > 0


def test_second_encode_of_the_same_texts_encodes_nothing(tmp_path, counting_model):
    first, _ = encode_cached(MODEL, TEXTS, tmp_path, model=counting_model)
    assert len(counting_model.encoded) == len(TEXTS)
    shards = EmbeddingCache(tmp_path).shards()
    assert len(shards) == 1

    again, stats = encode_cached(MODEL, TEXTS, tmp_path, model=counting_model)
    assert len(counting_model.encoded) == len(TEXTS)  # no new encode calls
    assert (stats.embedded, stats.cache_hits, stats.docs_per_s) == (0, len(TEXTS), None)
    assert EmbeddingCache(tmp_path).shards() == shards  # no empty shard written
    np.testing.assert_array_equal(first, again)


def test_only_new_texts_are_encoded_and_appended_as_a_shard(tmp_path, counting_model):
    encode_cached(MODEL, TEXTS[:10], tmp_path, model=counting_model)
    vectors, stats = encode_cached(MODEL, TEXTS[5:15], tmp_path, model=counting_model)
    assert counting_model.encoded == TEXTS[:10] + TEXTS[10:15]
    assert (stats.embedded, stats.cache_hits) == (5, 5)
    assert len(EmbeddingCache(tmp_path).shards()) == 2
    assert vectors.shape == (10, 384)


def test_duplicate_texts_are_encoded_once(tmp_path, counting_model):
    vectors, stats = encode_cached(MODEL, ["same", "other", "same"], tmp_path, model=counting_model)
    assert counting_model.encoded == ["same", "other"]
    np.testing.assert_array_equal(vectors[0], vectors[2])
    assert stats.embedded == 2


def test_progress_reports_cache_hits_then_encoded_texts(tmp_path, counting_model, monkeypatch):
    monkeypatch.setattr(embeddings, "PROGRESS_CHUNK", 4)
    encode_cached(MODEL, TEXTS[:3], tmp_path, model=counting_model)
    calls = []
    encode_cached(MODEL, TEXTS[:10], tmp_path, model=counting_model,
                  progress=lambda *args: calls.append(args))
    assert calls == [("embed", 3, 10), ("embed", 7, 10), ("embed", 10, 10)]


def test_exported_shard_imported_elsewhere_serves_every_text(tmp_path):
    rng = np.random.default_rng(0)
    source = EmbeddingCache(tmp_path / "src")
    keys = [text_key(t) for t in TEXTS]
    source.add(keys, rng.normal(size=(len(keys), 8)).astype(np.float32))
    assert source.export_shard(tmp_path / "demo.npz") == len(keys)

    target = EmbeddingCache(tmp_path / "dst")
    assert target.import_shard(tmp_path / "demo.npz") == len(keys)
    assert target.import_shard(tmp_path / "demo.npz") == 0  # nothing new the second time

    class NoModel:
        def encode(self, texts, **kwargs):
            raise AssertionError(f"encoded {len(texts)} texts despite the imported shard")

    vectors, stats = encode_cached("any-model", TEXTS, tmp_path / "dst", model=NoModel())
    assert (stats.cache_hits, stats.embedded) == (len(TEXTS), 0)
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-6)


def test_keys_ending_in_a_zero_byte_survive_the_round_trip_to_disk(tmp_path):
    # numpy's "S32" type drops trailing zero bytes; such keys were once never found again.
    key = text_key("text 405")
    assert key.endswith(b"\x00")
    EmbeddingCache(tmp_path).add([key, text_key("b")], np.eye(2, dtype=np.float32))
    assert list(EmbeddingCache(tmp_path).get([key])) == [key]


def test_imported_shard_may_use_hex_keys_and_unnormalised_vectors(tmp_path):
    np.savez(tmp_path / "hex.npz", keys=np.array([text_key("a").hex(), text_key("b").hex()]),
             vectors=np.array([[3.0, 4.0], [0.0, 2.0]]))
    cache = EmbeddingCache(tmp_path / "cache")
    assert cache.import_shard(tmp_path / "hex.npz") == 2
    got = EmbeddingCache(tmp_path / "cache").get([text_key("a"), text_key("c")])
    assert list(got) == [text_key("a")]
    np.testing.assert_allclose(got[text_key("a")], [0.6, 0.8])


@pytest.mark.parametrize("arrays,message", [
    ({"vectors": np.ones((2, 3))}, "cannot be read"),
    ({"keys": np.zeros((1, 32), np.uint8), "vectors": np.ones((2, 3))}, "1 keys but vectors of shape"),
    ({"keys": np.array([1, 2]), "vectors": np.ones((2, 3))}, "not sha256"),
    ({"keys": np.array(["abc"]), "vectors": np.ones((1, 3))}, "not sha256"),
    ({"keys": np.zeros((1, 32), np.uint8), "vectors": np.array([[np.nan]])}, "NaN"),
])
def test_malformed_shards_are_refused_with_the_file_name(tmp_path, arrays, message):
    np.savez(tmp_path / "bad.npz", **arrays)
    with pytest.raises(SearchGradeError, match=message) as info:
        EmbeddingCache(tmp_path / "cache").import_shard(tmp_path / "bad.npz")
    assert "bad.npz" in str(info.value)


def test_a_shard_of_another_dimension_is_refused(tmp_path):
    cache = EmbeddingCache(tmp_path / "cache")
    cache.add([text_key("a")], np.ones((1, 4), np.float32))
    np.savez(tmp_path / "other.npz", keys=np.array([text_key("b").hex()]), vectors=np.ones((1, 5)))
    with pytest.raises(SearchGradeError, match="5-dimensional .* 4-dimensional"):
        cache.import_shard(tmp_path / "other.npz")


def test_a_corrupt_shard_in_the_cache_names_the_file_to_delete(tmp_path):
    (tmp_path / "shard-broken.npz").write_bytes(b"not a zip")
    with pytest.raises(SearchGradeError, match=r"shard-broken.npz cannot be read .*delete it"):
        EmbeddingCache(tmp_path).get([text_key("a")])


def test_missing_shard_file_is_reported(tmp_path):
    with pytest.raises(SearchGradeError, match="does not exist"):
        EmbeddingCache(tmp_path).import_shard(tmp_path / "nope.npz")
