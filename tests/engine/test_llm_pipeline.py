"""LLM mode through the pipeline, against a local scripted OpenAI-compatible server."""

from __future__ import annotations

import pytest

from searchgrade.core.records import Query, ScoredDoc, SearchGradeError, SearchHits
from searchgrade.engine.collections import load_collection
from searchgrade.engine.llm.querygen import QueryGenSettings
from searchgrade.engine.llm.settings import LLMSettings
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.pipeline import resume_run, run_evaluation
from searchgrade.engine.run.scoring import SOURCE_FOUND, per_query_metrics, source_found_metrics
from searchgrade.engine.store import Store
from tests.conftest import write_beir
from tests.engine.llm.fake_server import FakeOpenAIServer
from tests.engine.llm_fakes import MIN_WORDS, Recorder


def llm_config(base_url: str, **overrides) -> RunConfig:
    fields = {
        "name": "llm", "mode": "llm", "strategies": ("fulltext",), "n_bootstrap": 200,
        "llm": LLMSettings(model="fake", base_url=base_url, concurrency=3, timeout_s=10, backoff_s=0.01),
        "querygen": QueryGenSettings(n_docs=3, n_natural=1, n_keyword=1, min_words=MIN_WORDS,
                                     min_chars=0),
    }
    fields.update(overrides)
    return RunConfig(**fields)


def expected_pairs(store: Store, run_id: str) -> set[tuple[str, str]]:
    """Every unique (query, result) over strategies, plus (query, source document)."""
    pairs = {(r["query_id"], r["doc_id"]) for r in store.results_with_grades(run_id)}
    pairs |= {(q["query_id"], q["source_doc_id"]) for q in store.queries(run_id)}
    return pairs


@pytest.fixture
def tiny(tmp_path):
    return load_collection(write_beir(tmp_path / "tiny"))


def test_judge_calls_equal_unique_pairs_and_the_requests_the_server_received(tmp_path, tiny):
    store = Store(tmp_path / "d")
    recorder = Recorder()
    with FakeOpenAIServer(recorder) as server:
        config = llm_config(server.base_url, strategies=("ann", "fulltext", "hybrid"))
        run_id = run_evaluation(tiny, config, store, tmp_path / "d").run_id
    run = store.get_run(run_id)
    assert (run.status, run.mode, run.label_source, run.threshold) == ("complete", "llm", "llm", 2)
    pairs = expected_pairs(store, run_id)
    grades = store.grades(run_id)
    assert {(g["query_id"], g["doc_id"]) for g in grades} == pairs
    usage = store.llm_usage(run_id)
    # Three strategies return mostly the same documents: each pair is judged once.
    assert usage["judge"]["requests"] == recorder.posts["judge"] == len(pairs)
    assert len(set(recorder.judged_pairs)) == len(recorder.judged_pairs)
    assert usage["querygen"]["requests"] == recorder.posts["querygen"] == 3
    assert server.posts == 3 + len(pairs)
    assert usage["judge"]["prompt_tokens"] == 20 * len(pairs)
    assert run.stats["llm"]["judge_failures"] == 0
    assert {q["query_type"] for q in store.queries(run_id)} == {"natural", "keyword"}
    assert all(g["source"] == "llm" and g["model"] == "fake" and g["prompt_version"].startswith("judge_v1-")
               for g in grades)


def test_a_second_identical_run_makes_no_llm_calls(tmp_path, tiny):
    store = Store(tmp_path / "d")
    recorder = Recorder()
    with FakeOpenAIServer(recorder) as server:
        first = run_evaluation(tiny, llm_config(server.base_url), store, tmp_path / "d").run_id
        posts = server.posts
        second = run_evaluation(tiny, llm_config(server.base_url), store, tmp_path / "d").run_id
        assert server.posts == posts
    usage = store.llm_usage(second)
    assert usage["querygen"]["requests"] == usage["judge"]["requests"] == 0
    assert usage["querygen"]["cache_hits"] == 3
    assert usage["judge"]["cache_hits"] == len(expected_pairs(store, second))
    strip = [{k: g[k] for k in ("query_id", "doc_id", "grade", "reason")} for g in store.grades(first)]
    assert [{k: g[k] for k in ("query_id", "doc_id", "grade", "reason")} for g in store.grades(second)] == strip


def test_invalid_json_to_a_third_of_calls_completes_with_failures_counted_never_graded(tmp_path, tiny):
    store = Store(tmp_path / "d")
    # Every third judge request is cut-off JSON, and the pairs of one query always get it (chosen
    # by text, so there are always some: a hash-based choice could pick none of the 20 pairs).
    recorder = Recorder(invalid_every=3, always_invalid=lambda q, d: q == "tennis basics")
    with FakeOpenAIServer(recorder) as server:
        config = llm_config(server.base_url)
        run_id = run_evaluation(tiny, config, store, tmp_path / "d").run_id
        judge_posts = recorder.posts["judge"]
    run = store.get_run(run_id)
    assert run.status == "complete"
    grades = store.grades(run_id)
    failed = [g for g in grades if g["grade"] is None]
    assert failed and len(failed) == run.stats["llm"]["judge_failures"]
    assert all(g["reason"].startswith("judge failure: invalid reply") for g in failed)
    # Every stored grade is the one a valid reply carried (its reason names that reply).
    for g in grades:
        if g["grade"] is not None:
            assert recorder.valid_replies[g["reason"]] == g["grade"]
    usage = store.llm_usage(run_id)["judge"]
    assert usage["requests"] == judge_posts
    assert usage["failures"] == len(failed) and usage["invalid_replies"] >= judge_posts // 3
    # A failed pair is no 0: mean relevance is over the k places whose grade is known (a failed
    # judgment's place left out; a place no result holds counts 0).
    ranked = [r for r in store.results_with_grades(run_id, "fulltext") if r["rank"] <= 10]
    by_query: dict[str, list] = {}
    for r in ranked:
        by_query.setdefault(r["query_id"], []).append(r["grade"])
    means = {r["query_id"]: r["value"] for r in store.metric_values(run_id, "mean_relevance", 10)}
    judged = {r["query_id"]: r["value"] for r in store.metric_values(run_id, "judged", 10)}
    for qid, top in by_query.items():
        valid = [g for g in top if g is not None]
        n_failed = len(top) - len(valid)
        if n_failed < 10:
            assert means[qid] == pytest.approx(sum(valid) / (10 - n_failed))
        assert judged[qid] == pytest.approx(len(valid) / 10)  # over the k places, as P@k
    # Failures are not cached: an unchanged rerun asks again for exactly those pairs.
    again = Recorder()
    with FakeOpenAIServer(again) as server:
        rerun = run_evaluation(tiny, llm_config(server.base_url), store, tmp_path / "d").run_id
    assert again.posts == {"judge": len(failed), "querygen": 0}
    assert all(g["grade"] is not None for g in store.grades(rerun))


def test_queries_from_reuses_the_queries_exactly_without_generating(tmp_path, tiny):
    store = Store(tmp_path / "d")
    with FakeOpenAIServer(Recorder()) as server:
        first = run_evaluation(tiny, llm_config(server.base_url), store, tmp_path / "d").run_id
    recorder = Recorder()
    with FakeOpenAIServer(recorder) as server:
        # Another configuration (a different query-generation seed would give other queries).
        config = llm_config(server.base_url, queries_from=first[:12], strategies=("ann",),
                            querygen=QueryGenSettings(n_docs=5, seed=7, min_words=MIN_WORDS, min_chars=0))
        second = run_evaluation(tiny, config, store, tmp_path / "d").run_id
    assert store.queries(second) == store.queries(first)
    assert recorder.posts["querygen"] == 0
    assert store.get_run(second).stats["queries_from"] == first
    assert store.llm_usage(second).get("querygen") is None


def test_a_server_that_turns_us_away_fails_the_run_and_resume_does_only_the_missing_work(tmp_path, tiny):
    store = Store(tmp_path / "d")
    broken = Recorder(fail_after=5)
    with FakeOpenAIServer(broken) as server, pytest.raises(SearchGradeError, match="401"):
        run_evaluation(tiny, llm_config(server.base_url, llm=LLMSettings(
            model="fake", base_url=server.base_url, concurrency=1, timeout_s=10)), store, tmp_path / "d")
    (run,) = store.list_runs()
    assert run.status == "failed" and "401" in run.error
    assert len(store.queries(run.run_id)) == 6  # kept: a resume evaluates these
    assert _cached_judgments(store) == 5
    good = Recorder()
    with FakeOpenAIServer(good) as server:
        outcome = resume_run(run.run_id, store, tmp_path / "d", collection=tiny, base_url=server.base_url)
    assert outcome.status == "complete" and store.get_run(run.run_id).status == "complete"
    pairs = expected_pairs(store, run.run_id)
    assert good.posts == {"judge": len(pairs) - 5, "querygen": 0}
    grades = store.grades(run.run_id)
    assert len(grades) == len(pairs) and all(g["grade"] is not None for g in grades)
    # The accounting adds up over both attempts: what the first server got, then the rest.
    assert store.llm_usage(run.run_id)["judge"]["requests"] == broken.posts["judge"] + len(pairs) - 5


def _cached_judgments(store: Store) -> int:
    with store.connect() as con:
        return con.execute("SELECT count(*) FROM llm_cache WHERE kind = 'judge'").fetchone()[0]


def test_resuming_a_complete_run_is_refused(tmp_path, tiny):
    store = Store(tmp_path / "d")
    with FakeOpenAIServer(Recorder()) as server:
        run_id = run_evaluation(tiny, llm_config(server.base_url), store, tmp_path / "d").run_id
    with pytest.raises(SearchGradeError, match="already complete"):
        resume_run(run_id, store, tmp_path / "d", collection=tiny)


def test_qrels_with_llm_keeps_human_grades_and_reports_agreement(tmp_path):
    # Binary qrels: judge grades >= 2 count as 1 when they fill in unjudged results.
    qrels = [("q1", "d1", 1), ("q1", "d2", 0), ("q2", "d3", 1), ("q3", "d6", 1), ("q4", "d10", 1),
             ("q5", "d11", 1)]
    collection = load_collection(write_beir(tmp_path / "tiny", qrels=qrels))
    store = Store(tmp_path / "d")
    recorder = Recorder()
    with FakeOpenAIServer(recorder) as server:
        llm = LLMSettings(model="fake", base_url=server.base_url, concurrency=3, timeout_s=10)
        agree_only = run_evaluation(collection, RunConfig(strategies=("fulltext",), n_bootstrap=200, llm=llm),
                                    store, tmp_path / "d").run_id
        asked = recorder.posts["judge"]
        filled = run_evaluation(collection, RunConfig(strategies=("fulltext",), n_bootstrap=200, llm=llm,
                                                      judge_unjudged=True), store, tmp_path / "d").run_id
    run = store.get_run(agree_only)
    assert run.label_source == "human" and run.mode == "qrels"
    # Only the retrieved pairs the humans graded are judged (for agreement).
    retrieved = {(r["query_id"], r["doc_id"]) for r in store.results_with_grades(agree_only)}
    human = {(q, d): g for q, d, g in qrels}
    shared = retrieved & set(human)
    assert asked == len(shared)
    agreement = run.stats["agreement"]
    assert agreement["n"] == len(shared)
    assert sum(map(sum, agreement["confusion"])) == len(shared)
    assert set(agreement) >= {"kappa", "kappa_linear", "kappa_quadratic", "labels"}
    assert all(g["source"] == "human" for g in store.grades(agree_only))

    run = store.get_run(filled)
    assert run.label_source == "human+llm"
    grades = {(g["query_id"], g["doc_id"]): g for g in store.grades(filled)}
    for pair, grade in human.items():
        assert grades[pair]["grade"] == grade and grades[pair]["source"] == "human"
    llm_grades = [g for g in grades.values() if g["source"] == "llm"]
    assert {(g["query_id"], g["doc_id"]) for g in llm_grades} == retrieved - set(human)
    assert {g["grade"] for g in llm_grades} <= {0, 1}
    # Every result returned is judged: judged@10 is what each strategy returned, over the 10 places.
    returned: dict[tuple[str, str], int] = {}
    for r in store.results_with_grades(filled):
        if r["rank"] <= 10:
            returned[(r["strategy"], r["query_id"])] = returned.get((r["strategy"], r["query_id"]), 0) + 1
    judged = store.metric_values(filled, "judged", 10)
    assert judged and all(r["value"] == returned.get((r["strategy"], r["query_id"]), 0) / 10 for r in judged)


def test_a_judge_whose_endpoint_refuses_every_connection_stops_after_a_few_and_resume_finishes(tmp_path):
    import socket

    from searchgrade.engine.llm.client import REFUSALS_TO_STOP

    qrels = [("q1", "d1", 1), ("q2", "d3", 1), ("q3", "d6", 1), ("q4", "d10", 1), ("q5", "d11", 1)]
    collection = load_collection(write_beir(tmp_path / "tiny", qrels=qrels))
    store = Store(tmp_path / "d")
    with socket.socket() as s:  # a port where nothing listens
        s.bind(("127.0.0.1", 0))
        down = f"http://127.0.0.1:{s.getsockname()[1]}/v1"
    llm = LLMSettings(model="fake", base_url=down, concurrency=2, timeout_s=10, backoff_s=0.01)
    config = RunConfig(strategies=("fulltext",), n_bootstrap=200, llm=llm, judge_unjudged=True)
    with pytest.raises(SearchGradeError, match=f"refused {REFUSALS_TO_STOP} connections in a row"):
        run_evaluation(collection, config, store, tmp_path / "d")
    (run,) = store.list_runs()
    assert run.status == "failed" and "refused" in run.error
    # The judge grades every retrieved pair: the unjudged ones, and the others for its agreement.
    retrieved = {(r["query_id"], r["doc_id"]) for r in store.results_with_grades(run.run_id)}
    assert len(retrieved) >= 10  # every one would have spent five requests and their waits
    # A few requests in all (the third refusal, and those in flight on the other thread), not five
    # per pair: none is sent once the endpoint counts as down.
    assert store.llm_usage(run.run_id)["judge"]["requests"] <= REFUSALS_TO_STOP + llm.concurrency - 1
    recorder = Recorder()
    with FakeOpenAIServer(recorder) as server:
        outcome = resume_run(run.run_id, store, tmp_path / "d", collection=collection, base_url=server.base_url)
    assert outcome.status == "complete" and recorder.posts["judge"] == len(retrieved)


def test_judge_unjudged_refuses_qrels_on_another_scale(tmp_path, tiny):
    with pytest.raises(SearchGradeError, match="--judge-unjudged"):
        run_evaluation(tiny, RunConfig(strategies=("fulltext",), judge_unjudged=True,
                                       llm=LLMSettings(model="fake", base_url="http://127.0.0.1:9/v1")),
                       Store(tmp_path / "d"), tmp_path / "d")


def test_llm_mode_without_a_model_fails_before_any_run(tmp_path, tiny, monkeypatch):
    monkeypatch.delenv("SEARCHGRADE_LLM_MODEL", raising=False)
    store = Store(tmp_path / "d")
    with pytest.raises(SearchGradeError, match="--model"):
        run_evaluation(tiny, RunConfig(mode="llm", strategies=("fulltext",)), store, tmp_path / "d")
    assert store.list_runs() == []


def test_a_judge_that_never_answers_validly_fails_the_run(tmp_path, tiny):
    store = Store(tmp_path / "d")
    with FakeOpenAIServer(Recorder(always_invalid=lambda q, d: True)) as server:
        config = llm_config(server.base_url, llm=LLMSettings(model="fake", base_url=server.base_url,
                                                             invalid_reply_retries=0))
        with pytest.raises(SearchGradeError, match="the judge failed on all"):
            run_evaluation(tiny, config, store, tmp_path / "d")
    (run,) = store.list_runs()
    assert run.status == "failed" and run.stats["llm"]["judge_failures"] > 0


# -- metrics with failed judgments (hand-computed) ------------------------------------------


def _hits(*doc_ids: str) -> SearchHits:
    return SearchHits([ScoredDoc(d, 1.0 / r, r) for r, d in enumerate(doc_ids, 1)], 0.01)


def test_a_failed_judgment_counts_as_zero_in_dcg_but_is_left_out_of_mean_relevance():
    hits = {"ann": [_hits("a", "b", "c")]}
    rows = per_query_metrics(hits, ["q"], {"q": {"a": 3, "c": 1}}, 2, [3], failed={"q": {"b"}})
    values = {metric: value for _s, _q, metric, _k, value in rows}
    # DCG: 3/log2(2) + 0 + 1/log2(4) = 3.5; mean relevance over the places of a and c: (3 + 1) / 2.
    assert values["dcg"] == pytest.approx(3.5)
    assert values["mean_relevance"] == pytest.approx(2.0)
    assert values["pct_relevant"] == pytest.approx(0.5)
    # At k = 5 the two places no result holds count 0: (3 + 1) / (5 - 1 failed place).
    at_5 = {metric: value for _s, _q, metric, _k, value in
            per_query_metrics(hits, ["q"], {"q": {"a": 3, "c": 1}}, 2, [5], failed={"q": {"b"}})}
    assert at_5["mean_relevance"] == pytest.approx(1.0) and at_5["pct_not_relevant"] == pytest.approx(0.75)
    assert values["judged"] == pytest.approx(2 / 3)


def test_a_query_whose_results_all_failed_has_no_mean_relevance():
    rows = per_query_metrics({"ann": [_hits("a")]}, ["q"], {}, 2, [1], failed={"q": {"a"}})
    metrics = {metric for _s, _q, metric, _k, _v in rows}
    assert "mean_relevance" not in metrics and "dcg" in metrics


def test_source_found_is_one_when_the_source_document_is_in_the_top_k():
    hits = {"ann": [_hits("x", "src", "y"), _hits("x", "y")]}
    queries = [Query("q1", "t", "natural", "src"), Query("q2", "t", "keyword", "src")]
    rows = source_found_metrics(hits, queries, [1, 3])
    values = {(q, k): v for _s, q, metric, k, v in rows if metric == SOURCE_FOUND}
    assert values == {("q1", 1): 0.0, ("q1", 3): 1.0, ("q2", 1): 0.0, ("q2", 3): 0.0}
