"""`searchgrade embeddings distill`: a real model2vec distillation of the packaged model, offline."""

from __future__ import annotations

import numpy as np
import pytest

from searchgrade.cli import main
from searchgrade.indexes.embeddings.encoder import encode, load_embedder
from searchgrade.indexes.embeddings.models import MODEL2VEC, StaticEmbedder, model_kind


@pytest.mark.slow
def test_the_packaged_model_distils_offline_into_a_static_model_usable_as_embedding_model(tmp_path, capsys):
    out = tmp_path / "minilm-static"
    assert main(["embeddings", "distill", "all-MiniLM-L6-v2", "--out", str(out), "--dims", "64"]) == 0
    printed = capsys.readouterr().out
    assert "token vectors of 64 dimensions" in printed and f'embedding_model = "{out}"' in printed
    assert model_kind(out) == MODEL2VEC and not list(tmp_path.glob(".*.tmp"))
    embedder = load_embedder(str(out))
    assert isinstance(embedder, StaticEmbedder) and embedder.dim == 64
    vectors = encode(embedder, ["how glaciers carve valleys", "ice sheets erode the land", "tax returns"], 32)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    assert vectors[0] @ vectors[1] > vectors[0] @ vectors[2]
    # Never written over, and a static model is not distilled again: one line each.
    assert main(["embeddings", "distill", "all-MiniLM-L6-v2", "--out", str(out)]) == 1
    assert "exists and is not an empty folder" in capsys.readouterr().err
    assert main(["embeddings", "distill", str(out), "--out", str(tmp_path / "again")]) == 1
    assert "is a model2vec static model already" in capsys.readouterr().err


@pytest.mark.parametrize(("args", "words"), [
    (["--dims", "1000"], "is more than all-MiniLM-L6-v2's own 384 dimensions"),
    (["--dims", "1"], "--dims of 1 must be a whole number >= 2"),
])
def test_bad_dims_are_one_line_and_leave_nothing(tmp_path, capsys, args, words):
    out = tmp_path / "model"
    assert main(["embeddings", "distill", "all-MiniLM-L6-v2", "--out", str(out), *args]) == 1
    err = capsys.readouterr().err
    assert words in err and err.count("\n") == 1
    assert list(tmp_path.iterdir()) == []


def test_an_out_folder_whose_parent_is_missing_is_one_line(tmp_path, capsys):
    assert main(["embeddings", "distill", "all-MiniLM-L6-v2", "--out", str(tmp_path / "no" / "model")]) == 1
    assert "its parent folder" in capsys.readouterr().err
