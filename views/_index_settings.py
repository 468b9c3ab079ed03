"""The Evaluate form's "Models and indexes": the embedding model and backend, the reranker, the ANN
index and the full-text and fusion knobs (the CLI's index options)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import streamlit as st

from searchgrade.viewmodels.evaluate import backend_choices, index_choices, index_defaults, index_settings
from searchgrade.viewmodels.reranker import trained_rerankers
from searchgrade.views._common import home, plain, public

if TYPE_CHECKING:
    from searchgrade.viewmodels.evaluate import IndexSettings


def index_options(rerank_problem: str | None) -> IndexSettings:
    """The index settings chosen (pre-filled with the defaults); the reranker's widget is
    ``evaluate_reranker``, set before this is drawn."""
    defaults = index_defaults()
    with st.expander("Models and indexes"):
        embedding = st.text_input("Embedding model (name or local path)", defaults["embedding_model"],
                                  key="evaluate_embedding")
        backends = backend_choices()
        backend = st.selectbox(
            "Embedding backend", list(backends), index=list(backends).index(defaults["embedding_backend"]),
            key="evaluate_backend", format_func=lambda name: f"{name}: {backends[name]}",
            help="onnx-int8 embeds faster on a CPU, with slightly different vectors (see the README); "
                 "torch uses a CUDA GPU when there is one")
        trained = ", ".join(plain(f"trained:{c['name']}") for c in trained_rerankers(home()))
        reranker = st.text_input(
            "Reranker model (cross-encoder name or local path)", key="evaluate_reranker",
            help="Or trained:NAME, a reranker trained on a run's grades (Results, \"Train a reranker "
                 "on these grades\")" + (f"; trained here: {trained}" if trained else ""))
        if rerank_problem:
            st.caption(public(f"Not loadable here: {rerank_problem.split('; ')[0]}."))
        ann = st.selectbox("ANN index", index_choices(),
                           index=index_choices().index(defaults["ann_index"]), key="evaluate_ann",
                           help="auto: exact search up to 200,000 documents, IVF above")
        b1, b2, b3, b4 = st.columns(4)
        knobs = {
            "bm25_k1": b1.number_input("BM25 k1", 0.0, 10.0, float(defaults["bm25_k1"]), 0.1, key="evaluate_bm25_k1",
                                       help="Term-frequency saturation of full-text search"),
            "bm25_b": b2.number_input("BM25 b", 0.0, 1.0, float(defaults["bm25_b"]), 0.05, key="evaluate_bm25_b",
                                      help="Length normalisation of full-text search (0: none, 1: full)"),
            "rrf_k": b3.number_input("RRF k", 1, 1000, int(defaults["rrf_k"]), key="evaluate_rrf_k",
                                     help="Reciprocal rank fusion (Hybrid): score = sum of 1 / (k + rank)"),
            "fusion_depth": b4.number_input("Fusion depth", 1, 1000, int(defaults["fusion_depth"]),
                                            key="evaluate_fusion_depth",
                                            help="How many results of each list Hybrid fuses"),
        }
    return index_settings({"embedding_model": embedding.strip(), "embedding_backend": backend,
                           "reranker_model": reranker.strip(), "ann_index": ann, **knobs})
