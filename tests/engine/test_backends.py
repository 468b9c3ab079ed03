"""Declared strategies through a whole run, against a real local search server process."""

from __future__ import annotations

import io
from dataclasses import replace

import pytest

from searchgrade.cli.show import print_table
from searchgrade.core.records import SearchGradeError
from searchgrade.engine.collections import load_collection
from searchgrade.engine.llm.querygen import QueryGenSettings
from searchgrade.engine.llm.settings import LLMSettings
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.pipeline import resume_run, run_evaluation
from searchgrade.engine.store import Store
from searchgrade.viewmodels.failures import failure_summary
from searchgrade.viewmodels.recompute import Figures, recompute_values
from searchgrade.viewmodels.results import keep_first_view, results_view
from tests.conftest import DEMO, write_beir
from tests.engine.llm.fake_server import FakeOpenAIServer
from tests.engine.llm_fakes import MIN_WORDS, Recorder
from tests.indexes.conftest import tiny_cross_encoder_dir  # noqa: F401 - a fixture
from tests.indexes.declared.conftest import SearchServer


@pytest.fixture(scope="module")
def tiny_folder(tmp_path_factory):
    return write_beir(tmp_path_factory.mktemp("beir") / "tiny")


@pytest.fixture(scope="module")
def server(tiny_folder, tmp_path_factory):
    server = SearchServer(tiny_folder, tmp_path_factory.mktemp("server-data"))
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def healthy(server):
    server.control()
    yield


def declared(server, **keys):
    return {"es": {"kind": "elasticsearch", "host": server.url, "index": "tiny",
                   "query": '{"match": {"text": {{query}}}}', "retries": 0, "concurrency": 1,
                   "backoff_s": 0.01, **keys}}


def config(server, strategies=("fulltext", "es"), **keys):
    from searchgrade.indexes.declared.spec import parse_spec

    decl = {name: parse_spec(name, table).to_json() for name, table in declared(server, **keys).items()}
    return RunConfig(name="t", strategies=strategies, n_bootstrap=200, declared=decl)


def test_failed_queries_are_recorded_for_their_strategy_and_resume_retries_only_them(tmp_path, tiny_folder, server):
    store = Store(tmp_path / "d")
    server.control(close_every=2)
    outcome = run_evaluation(load_collection(tiny_folder), config(server), store, tmp_path / "d",
                             on_complete=keep_first_view)
    run = store.get_run(outcome.run_id)
    assert run.status == "complete"
    assert store.failed_query_counts(run.run_id) == {"es": 2}
    assert run.stats["failed_queries"] == {"es": 2}
    shown = io.StringIO()
    print_table(store, run.run_id, None, shown)
    (line,) = [x for x in shown.getvalue().splitlines() if x.startswith("  es failed on ")]
    assert line.startswith("  es failed on 2 of 5 queries: ")
    assert line.endswith(f"`searchgrade resume {run.run_id}` retries only what failed")
    assert "  es: figures over the 3 of 5 queries it answered" in shown.getvalue()
    summary = {(r["strategy"], r["metric"]): r for r in store.metric_summary(run.run_id, 10)}
    assert summary[("es", "dcg")]["n"] == 3 and summary[("fulltext", "dcg")]["n"] == 5
    answered = {r["query_id"] for r in store.results_with_grades(run.run_id, "es")}
    failed = {r["query_id"] for r in store.failed_queries(run.run_id)}
    assert len(answered) == 3 and answered.isdisjoint(failed)
    _recomputed_cutoffs_leave_failed_queries_out(store, run, answered, failed)
    trend = {r["strategy"]: r["n"] for r in store.trend("dcg", 10) if r["run_id"] == run.run_id}
    assert trend == {"es": 3, "fulltext": 5}
    # The complete run's Results reads were kept when it completed (viewmodels/results_cache.py).
    assert store.kept_reads(run.run_id)
    assert failure_summary(store, run.run_id).table.set_index("strategy")["queries"].to_dict() == {
        "fulltext": 5, "es": 3}

    server.control()
    resume_run(run.run_id, store, tmp_path / "d")
    assert server.stats()["requests"] == 2  # only the two failed queries were asked again
    run = store.get_run(run.run_id)
    assert run.status == "complete" and store.failed_query_counts(run.run_id) == {}
    summary = {(r["strategy"], r["metric"]): r for r in store.metric_summary(run.run_id, 10)}
    assert summary[("es", "dcg")]["n"] == 5
    fulltext = {(r["query_id"], r["rank"]): r["doc_id"] for r in store.results_with_grades(run.run_id, "fulltext")}
    es = {(r["query_id"], r["rank"]): r["doc_id"] for r in store.results_with_grades(run.run_id, "es")}
    assert es == fulltext  # the server is our full-text search
    # The re-graded run replaced its Trends rows (not kept beside them, not left stale).
    trend = {r["strategy"]: r["n"] for r in store.trend("dcg", 10) if r["run_id"] == run.run_id}
    assert trend == {"es": 5, "fulltext": 5}
    # ... and so were its Results reads: kept again from the new contents, not the first ones.
    view = results_view(store, run.run_id)
    assert failure_summary(store, run.run_id).table.set_index("strategy")["queries"].to_dict() == {
        "fulltext": 5, "es": 5}
    assert view.latency.set_index("strategy")["n"].to_dict() == {"fulltext": 5, "es": 5}


def _recomputed_cutoffs_leave_failed_queries_out(store, run, answered, failed):
    """A cut-off the run did not store is recomputed from its grades: a query a strategy failed on
    has no value there either (not the metrics of an empty ranking), as at the stored cut-offs."""
    figures = Figures(store, run, 7)
    assert not figures.stored
    per_query = figures.per_query("dcg")
    assert set(per_query.loc[per_query["strategy"] == "es", "query_id"]) == answered
    assert len(per_query[per_query["strategy"] == "fulltext"]) == 5
    n = figures.summary().query("metric == 'dcg'").set_index("strategy")["n"].to_dict()
    assert n == {"es": 3, "fulltext": 5}
    wide = figures.wide("dcg")
    assert wide.loc[sorted(failed), "es"].isna().all() and wide["fulltext"].notna().all()
    # Recomputed at a stored cut-off, the same rows and values as the stored ones.
    recomputed = recompute_values(store, run, ["ndcg"], 10).set_index(["strategy", "query_id"])["ndcg"]
    stored = store.metric_frame(run.run_id, "ndcg", 10).set_index(["strategy", "query_id"])["value"]
    assert sorted(recomputed.index) == sorted(stored.index)
    assert recomputed.loc[stored.index].to_numpy() == pytest.approx(stored.to_numpy())


def test_an_llm_run_with_failed_queries_resumes_to_one_set_of_graded_rows(tmp_path, tiny_folder, server):
    # Re-grading on resume replaces what grading wrote (query overlap, Trends rows): an LLM run has
    # source documents, so its query overlap rows exist and would clash if kept.
    store = Store(tmp_path / "d")
    server.control(close_every=2)
    with FakeOpenAIServer(Recorder()) as llm:
        run_config = replace(config(server), mode="llm", llm=LLMSettings(
            model="fake", base_url=llm.base_url, concurrency=2, timeout_s=10, backoff_s=0.01),
            querygen=QueryGenSettings(n_docs=3, n_natural=1, n_keyword=1, min_words=MIN_WORDS, min_chars=0))
        run_id = run_evaluation(load_collection(tiny_folder), run_config, store, tmp_path / "d").run_id
        assert store.failed_query_counts(run_id) == {"es": 3}
        overlap = store.query_overlap(run_id)
        assert len(overlap) == 6
        server.control()
        resume_run(run_id, store, tmp_path / "d")
    run = store.get_run(run_id)
    assert run.status == "complete" and store.failed_query_counts(run_id) == {}
    assert store.query_overlap(run_id) == overlap
    trend = {r["strategy"]: r["n"] for r in store.trend("dcg", 10) if r["run_id"] == run_id}
    assert trend == {"es": 6, "fulltext": 6}


def test_500s_on_every_third_request_complete_the_run_with_those_failed(tmp_path, tiny_folder, server):
    store = Store(tmp_path / "d")
    server.control(fail_every=3)
    run_id = run_evaluation(load_collection(tiny_folder), config(server), store, tmp_path / "d").run_id
    (failed,) = store.failed_queries(run_id)
    assert failed["strategy"] == "es" and "HTTP 500" in failed["error"]


def test_ids_none_of_which_is_in_the_collection_fail_that_strategy_alone_after_its_first_answer(
        tmp_path, tiny_folder, server):
    store = Store(tmp_path / "d")
    server.control(prefix="doc-")
    outcome = run_evaluation(load_collection(tiny_folder), config(server), store, tmp_path / "d")
    assert server.stats()["requests"] == 1  # not asked again after its first answer
    run = store.get_run(outcome.run_id)
    assert run.status == "complete" and store.result_strategies(run.run_id) == ["fulltext"]
    failed = store.failed_queries(run.run_id)
    assert {f["strategy"] for f in failed} == {"es"} and len(failed) == 5  # every query, the first too
    assert all(f["error"].startswith("none of the 2 ids es returned for the first query ('doc-d1', 'doc-d2'")
               and "check the id mapping" in f["error"] for f in failed)
    assert [f["attempts"] for f in sorted(failed, key=lambda f: f["attempts"])] == [0, 0, 0, 0, 1]
    (reason,) = failure_summary(store, run.run_id).strategy_failures
    assert reason["queries_failed"] == 5 and reason["reason"] == failed[0]["error"]


def test_an_unreachable_server_fails_its_strategy_after_three_refusals_and_the_run_goes_on(tmp_path, tiny_folder):
    from searchgrade.indexes.declared.spec import parse_spec

    decl = {"es": parse_spec("es", {"kind": "elasticsearch", "host": "http://127.0.0.1:9", "index": "x",
                                    "query": '{"match": {"text": {{query}}}}', "retries": 2,
                                    "backoff_s": 0.01}).to_json()}
    store = Store(tmp_path / "d")
    outcome = run_evaluation(load_collection(tiny_folder), RunConfig(strategies=("fulltext", "es"), declared=decl,
                                                                     n_bootstrap=200), store, tmp_path / "d")
    assert store.get_run(outcome.run_id).status == "complete"
    failed = sorted(store.failed_queries(outcome.run_id), key=lambda f: f["query_id"])
    # The first query spends its three attempts on three refusals; the server then counts as down
    # and no other query is asked.
    assert [f["attempts"] for f in failed] == [3, 0, 0, 0, 0]
    assert failed[0]["error"].startswith("cannot connect to http://127.0.0.1:9/x/_search (connection refused)")
    assert "3 connections refused in a row" in failed[0]["error"]
    assert all(f["error"].startswith("not asked: 3 connections in a row were refused") for f in failed[1:])
    # Nothing to show at all is a failed run, with the reason in one line.
    with pytest.raises(SearchGradeError) as error:
        run_evaluation(load_collection(tiny_folder), RunConfig(strategies=("es",), declared=decl),
                       Store(tmp_path / "e"), tmp_path / "e")
    assert "every strategy failed on every query (es: cannot connect" in str(error.value)
    assert "\n" not in str(error.value)


def test_results_outside_the_collection_are_counted_and_named(tmp_path, tiny_folder, server):
    store = Store(tmp_path / "d")
    server.control(extra=["outside-1"])
    outcome = run_evaluation(load_collection(tiny_folder), config(server), store, tmp_path / "d")
    counts = store.get_run(outcome.run_id).stats["not_in_collection"]["es"]
    assert counts["not_in_collection"] == 5 and counts["described"] == 5
    assert any(n.startswith(f"{5 / counts['results']:.0%} of es results are not in the collection: "
                            "check the id mapping") for n in outcome.notes)
    assert store.documents(outcome.run_id, ["outside-1"])["outside-1"]["origin"] == "es"


def test_a_declared_strategy_with_rerank_has_its_twin_or_a_reason(tmp_path, tiny_folder, server,
                                                                  tiny_cross_encoder_dir):  # noqa: F811 - a pytest fixture imported above
    from searchgrade.indexes.settings import IndexSettings

    store = Store(tmp_path / "d")
    cfg = config(server, strategies=("es", "es_rerank"), rerank=True)
    skipped = RunConfig(**{**cfg.__dict__, "index": IndexSettings(reranker_model="no/such-reranker")})
    outcome = run_evaluation(load_collection(tiny_folder), skipped, store, tmp_path / "d")
    assert "es_rerank" in outcome.skipped and "reranker model" in outcome.skipped["es_rerank"]
    with_model = RunConfig(**{**cfg.__dict__, "index": IndexSettings(reranker_model=str(tiny_cross_encoder_dir))})
    outcome = run_evaluation(load_collection(tiny_folder), with_model, store, tmp_path / "d")
    assert set(store.result_strategies(outcome.run_id)) == {"es", "es_rerank"}


@pytest.mark.slow
def test_http_in_front_of_the_builtin_fulltext_gives_its_top_10_and_metrics_on_scifact(tmp_path_factory):
    server = SearchServer(DEMO, tmp_path_factory.mktemp("scifact-server"))
    try:
        data = tmp_path_factory.mktemp("d")
        store = Store(data)
        cfg = RunConfig(name="scifact", strategies=("fulltext", "es"), max_queries=100, n_bootstrap=200,
                        declared={"es": {"kind": "elasticsearch", "host": server.url, "index": "scifact",
                                         "query": '{"match": {"text": {{query}}}}', "concurrency": 4}})
        from searchgrade.indexes.declared.spec import parse_spec

        cfg = RunConfig(**{**cfg.__dict__, "declared": {"es": parse_spec("es", cfg.declared["es"]).to_json()}})
        run_id = run_evaluation(load_collection(DEMO), cfg, store, data).run_id
    finally:
        server.stop()
    results = store.results_with_grades(run_id)
    lists = {}
    for r in results:
        lists.setdefault(r["strategy"], {}).setdefault(r["query_id"], []).append(r["doc_id"])
    assert len(lists["es"]) == 100 and lists["es"] == lists["fulltext"]
    values = {}
    for r in store.metric_values(run_id):
        values.setdefault(r["strategy"], {})[(r["query_id"], r["metric"], r["k"])] = r["value"]
    assert values["es"].keys() == values["fulltext"].keys()
    assert all(values["es"][key] == pytest.approx(value, abs=1e-12) for key, value in values["fulltext"].items())
