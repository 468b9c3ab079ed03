"""The executor: every strategy once per query, the same lists as each strategy on its own."""

from __future__ import annotations

import numpy as np
import pytest

from searchgrade.core.records import ScoredDoc
from searchgrade.indexes.base import Answer, Failure, QueryBatch
from searchgrade.indexes.build import build_searchers
from searchgrade.indexes.builtin.hybrid import HybridSearcher
from searchgrade.indexes.executor import Executor
from searchgrade.indexes.rerank.cross_encoder import RerankSearcher
from searchgrade.indexes.settings import IndexSettings

from .conftest import QUERIES

TEXTS = [text for text, _ in QUERIES.values()]
IDS = list(QUERIES)


@pytest.fixture(scope="module")
def built(tmp_path_factory, tiny_cross_encoder_dir):
    from .conftest import make_collection

    settings = IndexSettings(reranker_model=str(tiny_cross_encoder_dir), rerank_depth=8, fusion_depth=12)
    return build_searchers(make_collection(), settings, tmp_path_factory.mktemp("data"))


def test_shared_candidates_give_the_lists_each_strategy_gives_on_its_own(built):
    ctx = built.context
    ann, fulltext = ctx.ann(), ctx.fulltext()
    hybrid = HybridSearcher(ann, fulltext, ctx.settings.rrf_k, ctx.settings.fusion_depth)
    model = ctx.scorer().scorer.model
    contents = ctx.contents
    alone = {"ann": ann, "fulltext": fulltext, "hybrid": hybrid,
             "ann_rerank": RerankSearcher(ann, model, contents, depth=8),
             "fulltext_rerank": RerankSearcher(fulltext, model, contents, depth=8),
             "hybrid_rerank": RerankSearcher(hybrid, model, contents, depth=8)}
    execution = Executor(built.nodes, list(alone), 5).run(QueryBatch(IDS, TEXTS))
    for name, searcher in alone.items():
        expected = [[d.doc_id for d in h.docs] for h in searcher.search(TEXTS, 5)]
        assert [[d.doc_id for d in h.docs] for h in execution.hits[name]] == expected, name
        scores = [[d.score for d in h.docs] for h in searcher.search(TEXTS, 5)]
        got = [[d.score for d in h.docs] for h in execution.hits[name]]
        assert np.allclose(np.concatenate([np.array(g) for g in got]),
                           np.concatenate([np.array(s) for s in scores]), atol=1e-5), name


def test_a_pair_two_reranked_strategies_share_is_scored_once(built):
    scores = built.context.scorer()
    before = scores.scored
    Executor(built.nodes, ["ann_rerank", "hybrid_rerank"], 5).run(QueryBatch(["x1"], ["volcano magma"]))
    scored = scores.scored - before
    # Hybrid fuses ann with fulltext: its candidates overlap ann's, and those are not scored twice.
    assert 8 <= scored < 16
    assert scores.reused > 0


class Fixed:
    """A node with fixed lists and fixed own seconds."""

    inputs: tuple[str, ...] = ()

    def __init__(self, name, seconds, fail_on=()):
        self.name, self.seconds, self.fail_on = name, seconds, set(fail_on)
        self.asked: list[int] = []

    def input_depth(self, depth):
        return depth

    def answer(self, batch, depth, inputs):
        self.asked.append(depth)
        return [Failure("down") if q in self.fail_on else
                Answer([ScoredDoc(f"d{i}", 1.0 / i, i) for i in range(1, depth + 1)], self.seconds)
                for q in batch.ids]


class Wrap:
    def __init__(self, name, base, extra, seconds):
        self.name, self.inputs, self.extra, self.seconds = name, (base,), extra, seconds

    def input_depth(self, depth):
        return max(depth, self.extra)

    def answer(self, batch, depth, inputs):
        return [Answer(o.docs[:depth], self.seconds) for o in inputs[self.inputs[0]]]


def test_latency_is_own_work_plus_what_the_inputs_cost_alone_and_inputs_run_once_at_the_deepest():
    base = Fixed("b", 0.5)
    nodes = {"b": base, "w": Wrap("w", "b", 30, 0.25)}
    execution = Executor(nodes, ["b", "w"], 10).run(QueryBatch(["q1", "q2", "q3"], ["a", "b", "c"]))
    assert base.asked == [30, 30]  # a chunk of one query first, then the rest; once each
    assert [h.latency_s for h in execution.hits["b"]] == [0.5] * 3
    assert [h.latency_s for h in execution.hits["w"]] == [0.75] * 3
    assert all(len(h.docs) == 10 for h in execution.hits["w"])


def test_a_failed_query_fails_for_the_strategies_built_on_it_and_nothing_else():
    nodes = {"b": Fixed("b", 0.1, fail_on={"q2"}), "w": Wrap("w", "b", 5, 0.1), "c": Fixed("c", 0.1)}
    execution = Executor(nodes, ["b", "w", "c"], 3).run(QueryBatch(["q1", "q2"], ["a", "b"]))
    assert execution.hits["b"][1] is None and execution.hits["w"][1] is None
    assert execution.hits["c"][1] is not None
    assert execution.failures["b"]["q2"].error == "down"
    assert execution.failures["w"]["q2"].error.startswith("b failed on this query")


def test_a_node_a_check_stops_is_not_asked_again_and_the_nodes_built_on_it_fail_with_it():
    stopped_base = Fixed("b", 0.1)
    other = Fixed("c", 0.1)
    nodes = {"b": stopped_base, "w": Wrap("w", "b", 5, 0.1), "c": other}
    seen: list[int] = []

    def check(execution):
        seen.append(len(execution.hits["b"]))
        return {"b": "none of its ids is in the collection"} if len(seen) == 1 else None

    ids = [f"q{i}" for i in range(1, 6)]
    execution = Executor(nodes, ["b", "w", "c"], 3, chunk_size=2).run(QueryBatch(ids, ids), check=check)
    assert stopped_base.asked == [5] and len(other.asked) == 3  # b: the first chunk only; c: every chunk
    assert execution.stopped == {"b": "none of its ids is in the collection"}
    assert execution.hits["b"][0] is not None and execution.hits["b"][1:] == [None] * 4
    assert execution.failures["b"]["q2"] == Failure("none of its ids is in the collection", 0)
    assert execution.failures["w"]["q5"].error == "b failed on this query: none of its ids is in the collection"
    assert all(h is not None for h in execution.hits["c"])
