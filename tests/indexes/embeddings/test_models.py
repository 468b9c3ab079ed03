"""A model folder is recognised by its files and named by its content; model2vec folders load."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.embeddings.encoder import encode, load_embedder, model_slug, packaged_model_path
from searchgrade.indexes.embeddings.models import MODEL2VEC, SENTENCE_TRANSFORMERS, StaticEmbedder, model_kind
from searchgrade.indexes.settings import IndexSettings


def test_folders_are_recognised_by_their_files(static_model_dir, tmp_path):
    assert model_kind(static_model_dir) == MODEL2VEC
    assert model_kind(packaged_model_path()) == SENTENCE_TRANSFORMERS
    reranker = tmp_path / "reranker"
    (reranker / "models").mkdir(parents=True)
    (reranker / "card.json").write_text("{}")
    with pytest.raises(SearchGradeError, match="is a trained reranker .* not an embedding model"):
        model_kind(reranker)
    cross = tmp_path / "cross"
    cross.mkdir()
    (cross / "config.json").write_text(json.dumps({"architectures": ["BertForSequenceClassification"]}))
    with pytest.raises(SearchGradeError, match="holds a cross-encoder"):
        model_kind(cross)
    with pytest.raises(SearchGradeError, match="holds no embedding model"):
        model_kind(tmp_path)


def test_a_folder_model_is_named_by_its_content_not_its_path(static_model_dir, tmp_path):
    copy = shutil.copytree(static_model_dir, tmp_path / "elsewhere" / static_model_dir.name)
    assert model_slug(str(copy)) == model_slug(str(static_model_dir))
    original = IndexSettings(embedding_model=str(static_model_dir)).fingerprint("ann")
    assert IndexSettings(embedding_model=str(copy)).fingerprint("ann") == original
    (copy / "README.md").write_text("a card changes nothing the model computes")
    assert model_slug(str(copy)) == model_slug(str(static_model_dir))
    config = json.loads((copy / "config.json").read_text())
    (copy / "config.json").write_text(json.dumps({**config, "pooling": "mean", "note": "changed"}))
    assert model_slug(str(copy)) != model_slug(str(static_model_dir))
    assert IndexSettings(embedding_model=str(copy)).fingerprint("ann") != original


def test_a_model2vec_folder_loads_through_model2vec_and_gives_unit_vectors(static_model_dir):
    embedder = load_embedder(str(static_model_dir))
    assert isinstance(embedder, StaticEmbedder) and embedder.dim == 384
    vectors = encode(embedder, ["glaciers carve valleys", "ice rivers shape the land", "tax law"], 32)
    assert vectors.shape == (3, 384) and np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]


def test_an_onnx_backend_for_a_static_model_is_one_line(static_model_dir):
    with pytest.raises(SearchGradeError, match="is a model2vec static model: it runs no transformer"):
        load_embedder(str(static_model_dir), "onnx")


def test_a_reranker_folder_given_as_embedding_model_is_refused_not_mean_pooled(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "card.json").write_text("{}")
    with pytest.raises(SearchGradeError, match="not an embedding model"):
        load_embedder(str(tmp_path))
