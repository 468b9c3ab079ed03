"""A built-in strategy is one entry of the registry: its factory builds its node, nothing else does."""

from __future__ import annotations

from types import SimpleNamespace

from searchgrade.indexes.builtin.ann import AnnNode
from searchgrade.indexes.builtin.fulltext import FulltextNode
from searchgrade.indexes.builtin.hybrid import HybridNode
from searchgrade.indexes.registry import BUILTIN, builtin_registry, known_strategies, needs
from searchgrade.indexes.rerank.cross_encoder import RerankNode, SharedScores
from searchgrade.indexes.settings import IndexSettings


class Scorer:
    name = "fake"


def context():
    settings = IndexSettings()
    return SimpleNamespace(settings=settings, ann=lambda: "the ann searcher", fulltext=lambda: "the bm25 searcher",
                           scorer=lambda: SharedScores(Scorer()), contents={"d1": "text"})


def test_each_builtin_entry_builds_its_own_node():
    ctx = context()
    built = {name: builtin_registry()[name](ctx) for name in known_strategies()}
    assert isinstance(built["ann"], AnnNode) and built["ann"].searcher == "the ann searcher"
    assert isinstance(built["fulltext"], FulltextNode) and built["fulltext"].searcher == "the bm25 searcher"
    assert isinstance(built["hybrid"], HybridNode) and built["hybrid"].inputs == ("ann", "fulltext")
    for base in ("ann", "fulltext", "hybrid"):
        twin = built[f"{base}_rerank"]
        assert isinstance(twin, RerankNode) and twin.inputs == (base,) and twin.depth == ctx.settings.rerank_depth


def test_the_builtins_are_six_entries_in_display_order_with_what_they_need():
    assert known_strategies() == ("ann", "fulltext", "hybrid", "ann_rerank", "fulltext_rerank", "hybrid_rerank")
    assert needs("hybrid_rerank") == {"ann", "fulltext", "reranker"} and needs("fulltext") == {"fulltext"}
    assert [BUILTIN[n].reranks for n in known_strategies()] == [None, None, None, "ann", "fulltext", "hybrid"]
    assert [BUILTIN[n].label for n in known_strategies()] == [
        "ANN (dense)", "Full-text (BM25)", "Hybrid (RRF)", "ANN + reranker", "Full-text + reranker",
        "Hybrid + reranker"]
