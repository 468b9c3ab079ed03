from __future__ import annotations

import dataclasses

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.settings import IndexSettings


def test_defaults_match_the_design():
    s = IndexSettings()
    assert (s.embedding_model, s.ann_index, s.batch_size, s.bm25_k1, s.bm25_b, s.rrf_k,
            s.fusion_depth, s.reranker_model, s.rerank_depth) == (
        "sentence-transformers/all-MiniLM-L6-v2", "auto", 32, 1.5, 0.75, 60, 100,
        "cross-encoder/ms-marco-MiniLM-L6-v2", 50)


def test_settings_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        IndexSettings().ann_index = "hnsw"  # type: ignore[misc]


def test_unknown_ann_index_lists_the_valid_values():
    with pytest.raises(SearchGradeError, match=r"'annoy'.*auto, flat, hnsw, ivf"):
        IndexSettings(ann_index="annoy")


@pytest.mark.parametrize("field,value", [("batch_size", 0), ("fusion_depth", -1), ("rerank_depth", 2.5),
                                         ("bm25_b", 1.5), ("rrf_k", -1), ("embedding_model", " ")])
def test_out_of_range_values_are_rejected_by_name(field, value):
    with pytest.raises(SearchGradeError, match=field):
        IndexSettings(**{field: value})


def test_fingerprint_is_stable_across_instances_and_hex():
    a, b = IndexSettings(), IndexSettings()
    for artifact in ("embeddings", "ann", "bm25", "all"):
        assert a.fingerprint(artifact) == b.fingerprint(artifact)
        assert len(a.fingerprint(artifact)) == 16
        int(a.fingerprint(artifact), 16)


def test_default_fingerprints_are_pinned():
    # Changing these rebuilds every user's artifacts: do it on purpose (e.g. a new tokenizer or
    # full-text index format).
    s = IndexSettings().resolved(5183)  # "auto" is exact search at the demo's size
    assert (s.fingerprint("embeddings"), s.fingerprint("ann"), s.fingerprint("bm25")) == (
        "78ea32445e2cfd5f", "7756774bd59b77e8", "4a56df54ba5f5bda")
    assert IndexSettings(ann_index="flat").fingerprint("ann") == "7756774bd59b77e8"


def test_auto_ann_index_is_exact_up_to_the_threshold_then_ivf():
    from searchgrade.indexes.settings import ANN_EXACT_MAX_DOCS

    assert IndexSettings().resolved(ANN_EXACT_MAX_DOCS).ann_index == "flat"
    assert IndexSettings().resolved(ANN_EXACT_MAX_DOCS + 1).ann_index == "ivf"
    assert IndexSettings(ann_index="hnsw").resolved(10).ann_index == "hnsw"


def test_search_time_settings_do_not_change_artifact_fingerprints():
    base = IndexSettings()
    other = IndexSettings(rrf_k=10, fusion_depth=20, rerank_depth=5, bm25_k1=0.9, bm25_b=0.4,
                          ivf_nprobe=3, hnsw_ef_search=16, batch_size=8,
                          reranker_model="/some/where")
    for artifact in ("embeddings", "ann", "bm25"):
        assert base.fingerprint(artifact) == other.fingerprint(artifact)
    assert base.fingerprint("all") != other.fingerprint("all")


def test_ann_fingerprint_changes_with_index_type_and_model_but_bm25_does_not():
    base = IndexSettings()
    for changed in (IndexSettings(ann_index="hnsw"), IndexSettings(embedding_model="/my/model")):
        assert changed.fingerprint("ann") != base.fingerprint("ann")
        assert changed.fingerprint("bm25") == base.fingerprint("bm25")


def test_hnsw_m_matters_only_for_hnsw():
    assert IndexSettings(hnsw_m=8).fingerprint("ann") == IndexSettings().fingerprint("ann")
    assert (IndexSettings(ann_index="hnsw", hnsw_m=8).fingerprint("ann")
            != IndexSettings(ann_index="hnsw").fingerprint("ann"))


def test_short_default_model_name_shares_the_fingerprint():
    assert (IndexSettings(embedding_model="all-MiniLM-L6-v2").fingerprint("embeddings")
            == IndexSettings().fingerprint("embeddings"))


def test_unknown_artifact_name_is_a_value_error():
    with pytest.raises(ValueError, match="embeddings, ann, bm25, all"):
        IndexSettings().fingerprint("faiss")
