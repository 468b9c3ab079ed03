"""The LLM reranker (``kind = "llm"``) through `searchgrade evaluate` against the real llama.cpp
server (a 270M model: its scores are meaningless, only the protocol, the cache and the accounting
are checked), and the self-grading warning."""

from __future__ import annotations

import json

import pytest

from searchgrade.cli import main
from searchgrade.engine.llm.reranker import RerankScore, self_graded
from searchgrade.engine.run.stages import search_notes
from searchgrade.engine.store import Store
from tests.conftest import write_beir

DOCS = {
    "rust": ("Rust", "Rust is iron oxide. It forms when iron reacts with oxygen and water over time."),
    "bread": ("Bread", "Bread is made from flour, water and yeast; the yeast makes the dough rise."),
    "tides": ("Tides", "Tides are the rise and fall of sea levels caused by the gravity of the moon."),
}
QUERIES = {"q1": "why does iron rust in water"}
QRELS = [("q1", "rust", 2), ("q1", "bread", 0)]


def _run_json(capsys, run_id: str, data_dir) -> dict:
    assert main(["show", run_id, "--format", "json", "--data-dir", str(data_dir)]) == 0
    return json.loads(capsys.readouterr().out)["run"]


@pytest.mark.llm_server
@pytest.mark.slow
def test_llm_reranker_over_a_real_server_is_cached_and_counted(counting_proxy, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    collection = write_beir(tmp_path / "mini", docs=DOCS, queries=QUERIES, qrels=QRELS)
    strategies = tmp_path / "s.toml"
    strategies.write_text('[reranker.llm]\nkind = "llm"\ndepth = 2\n\n'
                          '[reranker.lw]\nkind = "llm"\nmode = "listwise"\ndepth = 2\nwindow = 2\nstep = 1\n',
                          encoding="utf-8")
    data_dir = tmp_path / "d"
    args = ["evaluate", str(collection), "--qrels", "--llm", "--model", "gemma-3-270m", "--base-url",
            counting_proxy.base_url, "--concurrency", "2", "--timeout", "120", "--strategies", "fulltext",
            "--rerankers", "llm,lw", "--k", "2", "--strategies-file", str(strategies), "--data-dir", str(data_dir)]
    assert main(args) == 0, capsys.readouterr().err
    capsys.readouterr()
    store = Store(data_dir)
    (run,) = store.list_runs()
    hits = store.stored_hits(run.run_id)
    failed = {f["query_id"] for f in store.failed_queries(run.run_id, "fulltext_llm")}
    failed_lw = {f["query_id"] for f in store.failed_queries(run.run_id, "fulltext_lw")}
    for qid in QUERIES:  # listwise: one window of the two candidates, its ranking a permutation of them
        if qid not in failed_lw:
            listed = hits[("fulltext_lw", qid)].docs
            assert sorted(d.doc_id for d in listed) == sorted(d.doc_id for d in hits[("fulltext", qid)].docs)
    pairs = 0
    for qid in QUERIES:
        base = [d.doc_id for d in hits[("fulltext", qid)].docs]
        pairs += len(base)
        if qid in failed:  # a reply the 270M model got wrong after its retries: the query failed, recorded
            continue
        reranked = hits[("fulltext_llm", qid)]
        assert sorted(d.doc_id for d in reranked.docs) == sorted(base)
        assert all(0 <= d.score <= 10 and float(d.score).is_integer() for d in reranked.docs)
        assert reranked.latency_s > 0
    shown = _run_json(capsys, run.run_id, data_dir)
    # Every HTTP request the server received is in the run's accounting, the reranker's under "rerank".
    assert shown["llm_calls"]["rerank"] >= pairs - len(failed) and shown["llm_calls"]["rerank"] >= 1
    assert shown["llm_calls"]["judge"] + shown["llm_calls"]["rerank"] == counting_proxy.posts
    assert shown["tokens"]["rerank"]["prompt"] > 0
    assert run.stats["declared_rerankers"]["llm"]["kind"] == "llm"
    if not failed and not failed_lw:  # the same evaluation again: every score and grade from the cache, no call
        posts = counting_proxy.posts
        assert main(args) == 0, capsys.readouterr().err
        capsys.readouterr()
        assert counting_proxy.posts == posts
        second = max(store.list_runs(), key=lambda r: r.created_at)
        assert _run_json(capsys, second.run_id, data_dir)["cache_hits"]["rerank"] == pairs + len(QUERIES)


def test_a_reranker_judged_by_its_own_model_is_a_warning_and_a_field():
    found = self_graded({"llm": "gpt-4o-mini", "other": "qwen"}, "gpt-4o-mini")
    assert found["rerankers"] == ["llm"] and found["model"] == "gpt-4o-mini"
    assert self_graded({"llm": "qwen"}, "gpt-4o-mini") is None
    [note] = search_notes({"self_graded": found})
    assert note.startswith("warning: reranker llm and the judge are the same model (gpt-4o-mini)")


@pytest.mark.parametrize("value", [True, "7", 11, -1, 3.5])
def test_a_score_that_is_no_whole_number_0_to_10_is_invalid(value):
    with pytest.raises(ValueError):
        RerankScore(score=value)


def test_the_dry_run_estimate_counts_the_llm_rerankers_calls(tiny_beir):
    from searchgrade.engine.collections import load_collection
    from searchgrade.engine.llm.settings import LLMSettings
    from searchgrade.engine.run.config import RunConfig
    from searchgrade.engine.run.estimate import estimate_cost
    from searchgrade.indexes.declared.spec import parse_reranker
    from searchgrade.indexes.settings import IndexSettings

    collection = load_collection(tiny_beir)
    spec = parse_reranker("llm", {"kind": "llm", "depth": 3})
    config = RunConfig(mode="qrels", k=2, strategies=("fulltext", "fulltext_llm"), rerankers={"llm": spec.to_json()},
                       llm=LLMSettings(model="m", base_url="http://127.0.0.1:9/v1"), index=IndexSettings())
    estimate = estimate_cost(collection, config)
    assert estimate.rerank.calls == len(collection.queries) * 3  # queries x max(depth 3, run depth 2)
    assert estimate.rerank.prompt_tokens > estimate.rerank.calls * 100  # the prompt alone is ~250 tokens
    assert estimate.calls == estimate.judge.calls + estimate.rerank.calls
    assert any(line.startswith("LLM reranker: at most 15 calls (one per query and candidate") for line in estimate.lines())
    without = RunConfig(mode="qrels", k=2, strategies=("fulltext",), llm=config.llm, index=IndexSettings())
    assert estimate_cost(collection, without).rerank is None


def _listwise(respond, window=4, step=2):
    from searchgrade.engine.llm.cache import MemoryCache
    from searchgrade.engine.llm.client import LLMClient
    from searchgrade.engine.llm.reranker import ListwiseReranker
    from searchgrade.engine.llm.settings import LLMSettings
    from tests.engine.llm.stub import StubOpenAI

    stub = StubOpenAI(respond)
    client = LLMClient(LLMSettings(model="stub", base_url="http://stub.invalid/v1", backoff_s=0.0), client=stub)
    client._identity = "stub|test"  # no GET /models to a stub
    return ListwiseReranker("lw", client, MemoryCache(), window=window, step=step), stub


def _by_length(kwargs, n):
    """A window ranked by the passages' length, longest first (a known function of the text)."""
    import re as _re

    text = kwargs["messages"][-1]["content"]
    passages = _re.findall(r"\[(\d+)\] <passage>\n(.*?)\n</passage>", text, _re.S)
    ranked = sorted(passages, key=lambda p: -len(p[1]))
    return json.dumps({"ranking": [int(i) for i, _ in ranked]})


def test_listwise_slides_windows_from_the_bottom_caches_each_window_and_counts_its_calls():
    from searchgrade.engine.llm.reranker import windows

    assert windows(6, 4, 2) == [(2, 6), (0, 4)] and windows(3, 4, 2) == [(0, 3)]
    texts = ["a" * 5, "b" * 1, "c" * 3, "d" * 9, "e" * 2, "f" * 7]
    reranker, stub = _listwise(_by_length)
    scores = reranker.rerank("q", texts)
    order = sorted(range(len(texts)), key=lambda i: -scores[i])
    # Bottom window (c, d, e, f) -> d, f, c, e; then the top window (a, b, d, f) -> d, f, a, b.
    assert [texts[i][0] for i in order] == ["d", "f", "a", "b", "c", "e"]
    assert len(stub.requests) == 2 and reranker.client.usage.snapshot()["rerank"]["ok"] == 2
    assert reranker.rerank("q", texts) == scores and len(stub.requests) == 2  # both windows from the cache
    assert reranker.client.usage.snapshot()["rerank"]["cache_hits"] == 2


def test_a_ranking_that_is_no_permutation_of_the_window_fails_the_query_after_its_retries():
    from searchgrade.indexes.rerank.service import RerankFailed

    reranker, stub = _listwise(lambda kwargs, n: json.dumps({"ranking": [1, 1, 2]}))
    with pytest.raises(RerankFailed, match="no valid ranking of a window of 3 documents.*each of the numbers 1 to 3"):
        reranker.rerank("q", ["x", "yy", "zzz"])
    assert len(stub.requests) == 1 + reranker.client.settings.invalid_reply_retries


def test_the_dry_run_counts_one_call_per_listwise_window(tiny_beir):
    from searchgrade.engine.collections import load_collection
    from searchgrade.engine.llm.settings import LLMSettings
    from searchgrade.engine.run.config import RunConfig
    from searchgrade.engine.run.estimate import estimate_cost
    from searchgrade.indexes.declared.spec import parse_reranker
    from searchgrade.indexes.settings import IndexSettings

    collection = load_collection(tiny_beir)
    spec = parse_reranker("lw", {"kind": "llm", "mode": "listwise", "depth": 6, "window": 4, "step": 2})
    config = RunConfig(mode="qrels", k=2, strategies=("fulltext", "fulltext_lw"), rerankers={"lw": spec.to_json()},
                       llm=LLMSettings(model="m", base_url="http://127.0.0.1:9/v1"), index=IndexSettings())
    estimate = estimate_cost(collection, config)
    assert estimate.rerank.calls == len(collection.queries) * 2  # windows (2, 6) and (0, 4) per query
    assert estimate.rerank.prompt_tokens > estimate.rerank.calls * 150  # ten passages per prompt
