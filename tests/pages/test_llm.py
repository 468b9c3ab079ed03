"""The app in LLM mode, on runs the real pipeline made against a local fake OpenAI-compatible server."""

from __future__ import annotations

import time

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.collections import load_collection
from searchgrade.engine.llm.querygen import QueryGenSettings
from searchgrade.engine.llm.settings import LLMSettings
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.pipeline import run_evaluation
from searchgrade.engine.store import Store
from searchgrade.server import jobs
from tests.conftest import write_beir
from tests.engine.llm.fake_server import FakeOpenAIServer
from tests.engine.llm_fakes import MIN_WORDS, Recorder
from tests.pages.conftest import LLM_ENVIRONMENT, open_page

pytestmark = pytest.mark.usefixtures("clean_jobs")

SECRET = "sk-test-never-show-this-key-0123456789"


def _llm(base_url: str, **overrides) -> LLMSettings:
    fields = {"model": "fake", "base_url": base_url, "concurrency": 3, "timeout_s": 10, "backoff_s": 0.01}
    return LLMSettings(**{**fields, **overrides})


@pytest.fixture(scope="module")
def llm_runs(tmp_path_factory):
    """An LLM run with failed judgments and a qrels + LLM run, made by the pipeline; (home, ids)."""
    home = tmp_path_factory.mktemp("llm-home")
    collection = load_collection(write_beir(home / "tiny"))
    store = Store(home)
    # Every third judge reply is cut-off JSON, never retried: some judgments fail.
    with FakeOpenAIServer(Recorder(invalid_every=3)) as server:
        llm = run_evaluation(collection, RunConfig(
            name="llm run", mode="llm", strategies=("fulltext",), n_bootstrap=200,
            llm=_llm(server.base_url, invalid_reply_retries=0),
            querygen=QueryGenSettings(n_docs=3, n_natural=1, n_keyword=1, min_words=MIN_WORDS, min_chars=0),
        ), store, home).run_id
        both = run_evaluation(collection, RunConfig(
            name="qrels and llm", strategies=("fulltext",), n_bootstrap=200, llm=_llm(server.base_url),
        ), store, home).run_id
    return home, {"llm": llm, "both": both}


@pytest.fixture
def llm_home(llm_runs, monkeypatch):
    home, ids = llm_runs
    monkeypatch.setenv("SEARCHGRADE_HOME", str(home))
    for name in LLM_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)
    return Store(home), ids


def _text(at) -> str:
    parts = [e.value for kind in ("markdown", "caption", "info", "success", "warning", "error", "subheader")
             for e in at.get(kind)]
    return "\n".join(str(p) for p in parts).replace("\\", "")


def _frame(at, key: str):
    return next(df.value for df in at.dataframe if df.proto.id and key in df.proto.id)


def _frame_with(at, column: str):
    return next(df.value for df in at.dataframe if column in df.value.columns)


def _wait_job(timeout: float = 60) -> jobs.Job:
    deadline = time.time() + timeout
    while jobs.active_job() is not None and time.time() < deadline:
        time.sleep(0.1)
    job = jobs.latest_job()
    assert job is not None and not job.active, "the job did not finish"
    return job


def test_results_of_an_llm_run_show_the_judge_calls_failures_and_source_found(llm_home):
    store, ids = llm_home
    run_id = ids["llm"]
    at = open_page("views/results.py", state={"app_open_run": run_id})
    assert at.selectbox(key="results_run").value == run_id
    text = _text(at)
    assert "LLM judge grades (0-3) (relevant = grade ≥ 2)" in text
    assert "Judge: fake, prompt judge_v1-" in text and "queries written by fake, prompt querygen_v1-" in text

    usage = _frame_with(at, "Prompt tokens").set_index("Stage")
    stored = store.llm_usage(run_id)
    assert usage.loc["Judge", "Calls"] == stored["judge"]["requests"]
    assert usage.loc["Query generation", "Calls"] == stored["querygen"]["requests"] == 3
    assert usage.loc["Judge", "Prompt tokens"] == stored["judge"]["prompt_tokens"]

    failed = [(g["query_id"], g["doc_id"]) for g in store.grades(run_id) if g["grade"] is None]
    assert failed, "the fake server should have made some judgments fail"
    assert f"Judge failures: {len(failed)}" in text
    listed = _frame_with(at, "Reason")
    assert list(zip(listed["Query id"], listed["Doc id"], strict=True)) == sorted(failed)
    assert all(r.startswith("judge failure: invalid reply") for r in listed["Reason"])
    assert "count as 0 in DCG" in text

    found = _frame_with(at, "Source found@10")
    stored_found = {r["strategy"]: r["value"] for r in store.metric_summary(run_id, 10)
                    if r["metric"] == "source_found"}
    assert found["Source found@10"].tolist() == pytest.approx([stored_found["fulltext"]])

    # Source found is a metric of the selector too, and the chart shows its stored value.
    at.selectbox(key="results_metric").set_value("source_found").run()
    assert not at.exception
    from tests.pages.conftest import chart

    assert chart(at, "strategies")["data"][0]["y"] == pytest.approx([stored_found["fulltext"]])


def test_results_of_a_qrels_and_llm_run_show_the_judge_human_agreement(llm_home):
    store, ids = llm_home
    at = open_page("views/results.py", state={"app_open_run": ids["both"]})
    agreement = store.get_run(ids["both"]).stats["agreement"]
    text = _text(at)
    assert f"Judge vs human labels** on the {agreement['n']} pairs both graded" in text
    kappas = _frame_with(at, "Reading").set_index("Measure")
    assert kappas.loc["Weighted kappa (linear)", "Value"] == pytest.approx(agreement["kappa_linear"])
    confusion = _frame_with(at, f"Human {agreement['labels'][0]}")
    assert confusion.values.tolist() == agreement["confusion"]
    assert "human labels (relevant = grade ≥ 1)" in text


def test_drilldown_of_a_generated_query_shows_its_type_source_and_the_judges_reasons(llm_home):
    store, ids = llm_home
    run_id = ids["llm"]
    query = store.queries(run_id)[0]
    at = open_page("views/drilldown.py", state={"app_open_run": run_id})
    at.selectbox(key="drilldown_query").set_value(query["query_id"]).run()
    assert any(f"Type: {query['query_type']}" in c.value.replace("\\", "") for c in at.caption)
    source = store.documents(run_id, [query["source_doc_id"]])[query["source_doc_id"]]
    assert source["text"] in [t.value for t in at.text]
    results = _frame_with(at, "Judge's reason")
    grades = {g["doc_id"]: g for g in store.grades(run_id, query["query_id"])}
    for row in results.to_dict("records"):
        grade = grades[row["Doc id"]]
        assert row["Judge's reason"] == grade["reason"]
        assert row["Grade from"] == ("judge failed" if grade["grade"] is None else "LLM judge")


def test_evaluate_offers_the_llm_modes_prefilled_from_the_environment(home, monkeypatch, tmp_path):
    monkeypatch.setenv("SEARCHGRADE_LLM_MODEL", "my-model")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    folder = write_beir(tmp_path / "tiny")
    at = open_page("views/evaluate.py")
    at.radio(key="evaluate_source").set_value("A path on this machine").run()
    at.text_input(key="evaluate_path").set_value(str(folder)).run()
    assert at.radio(key="evaluate_mode").options == [
        "Human judgments (qrels)", "LLM judge", "Human judgments + LLM agreement"]
    assert at.text_input(key="evaluate_llm_model").value == "my-model"
    assert at.text_input(key="evaluate_llm_base_url").value == "http://127.0.0.1:9/v1"
    at.radio(key="evaluate_mode").set_value("llm").run()
    assert at.number_input(key="evaluate_llm_docs").value == 12  # 50 by default, the corpus has 12
    assert at.number_input(key="evaluate_llm_concurrency").value == 4
    assert at.selectbox(key="evaluate_queries_from").options == ["Generate new queries"]
    # The key is never a widget nor shown; the page only says whether it is set.
    assert all(t.value != SECRET for t in at.text_input)
    assert SECRET not in _text(at)
    assert "OPENAI_API_KEY in the app server's environment (set)" in _text(at)
    # Emptying the model takes the LLM modes away, with the reason.
    at.text_input(key="evaluate_llm_model").set_value("").run()
    assert at.radio(key="evaluate_mode").options == ["Human judgments (qrels)"]
    assert "LLM judge and Human judgments + LLM agreement: not available yet, no LLM model" in _text(at)


def test_evaluate_starts_an_llm_run_that_finishes_in_the_background(home, store, monkeypatch, tmp_path):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    folder = write_beir(tmp_path / "tiny")
    recorder = Recorder()
    with FakeOpenAIServer(recorder) as server:
        at = open_page("views/evaluate.py")
        at.radio(key="evaluate_source").set_value("A path on this machine").run()
        at.text_input(key="evaluate_path").set_value(str(folder)).run()
        at.text_input(key="evaluate_llm_model").set_value("fake").run()
        at.text_input(key="evaluate_llm_base_url").set_value(server.base_url).run()
        assert "No API key is sent to this endpoint" in _text(at)
        at.radio(key="evaluate_mode").set_value("llm").run()
        at.multiselect(key="evaluate_strategies").set_value(["fulltext"]).run()
        at.number_input(key="evaluate_llm_docs").set_value(3).run()
        at.number_input(key="evaluate_llm_natural").set_value(1).run()
        at.number_input(key="evaluate_llm_min_words").set_value(MIN_WORDS).run()
        at.button(key="evaluate_start").click().run()
        assert not at.exception, [e.message for e in at.exception]
        job = _wait_job()
        at.run()
    assert job.state == "complete", job.error
    assert "Run complete" in at.success[0].value.replace("\\", "")
    # The live progress showed the LLM stages with their calls and tokens.
    progress = [p.proto.text for p in at.get("progress")]
    assert any(t.startswith("Grading results with the LLM judge") and "calls" in t and "tokens" in t
               for t in progress), progress
    assert job.usage["judge"]["requests"] == recorder.posts["judge"]
    [run] = store.list_runs()
    assert (run.status, run.mode, run.label_source) == ("complete", "llm", "llm")
    assert run.config["llm"]["model"] == "fake" and run.config["querygen"]["n_docs"] == 3
    assert len(store.queries(run.run_id)) == 6  # 3 documents x (1 natural + 1 keyword)
    assert store.llm_usage(run.run_id)["judge"]["requests"] == recorder.posts["judge"] > 0
    # An endpoint typed in the browser never gets the server's key (engine/llm/key_policy.py); the key is
    # not in the store nor on the page either.
    assert server.requests and not [h for _, _, h in server.requests if SECRET in " ".join(h.values())]
    assert SECRET not in (home / "searchgrade.duckdb").read_bytes().decode("latin-1")
    assert SECRET not in _text(at)

    # The next evaluation keeps the collection and endpoint, and can reuse these queries.
    at.button(key="evaluate_new").click().run()
    assert at.text_input(key="evaluate_path").value == str(folder)
    assert at.radio(key="evaluate_mode").value == "llm"
    options = at.selectbox(key="evaluate_queries_from").options
    assert len(options) == 2 and options[1].startswith("Reuse the queries of run tiny") and "6 queries" in options[1]


def test_a_stopped_llm_run_is_resumed_from_the_app_doing_only_the_missing_work(home, store, tmp_path):
    collection = load_collection(write_beir(tmp_path / "tiny"))
    broken = Recorder(fail_after=5)
    with FakeOpenAIServer(broken) as server, pytest.raises(SearchGradeError, match="401"):
        run_evaluation(collection, RunConfig(
            name="stopped", mode="llm", strategies=("fulltext",), n_bootstrap=200,
            llm=_llm(server.base_url, concurrency=1),
            querygen=QueryGenSettings(n_docs=3, n_natural=1, n_keyword=1, min_words=MIN_WORDS, min_chars=0),
        ), store, home)
    [run] = store.list_runs()
    assert run.status == "failed"
    good = Recorder()
    with FakeOpenAIServer(good) as server:
        at = open_page("views/results.py")
        assert "This run is failed" in at.error[0].value.replace("\\", "")
        at.text_input(key=f"results_resume_base_url_{run.run_id}").set_value(server.base_url).run()
        at.button(key="results_resume_button").click().run()
        assert not at.exception, [e.message for e in at.exception]
        # The button switched to Evaluate, which shows the resumed run.
        assert at.title[0].value == "Evaluate search quality"
        job = _wait_job()
        at.switch_page("views/evaluate.py").run()
    assert job.kind == "resume" and job.state == "complete", job.error
    assert "Run complete" in at.success[0].value.replace("\\", "")
    run = store.get_run(run.run_id)
    assert run.status == "complete"
    pairs = {(g["query_id"], g["doc_id"]) for g in store.grades(run.run_id)}
    # Five judgments were done before the server turned the run away: only the rest were asked.
    assert good.posts == {"judge": len(pairs) - 5, "querygen": 0}


def test_review_says_what_fill_the_holes_does_and_what_a_review_needs(store):
    import re

    from searchgrade.viewmodels import review as review_model
    from tests.engine.holes_fixtures import holey_spec
    from tests.pages.synthetic import write_run

    empty = open_page("views/review.py", state={"app_rater": "Ada"})
    assert empty.info[0].value == review_model.NEEDS
    assert [link.proto.label for link in empty.get("page_link")] == ["Evaluate: start a run"]
    spec, _ = holey_spec(n_queries=8)
    write_run(store, spec, n_bootstrap=50)
    at = open_page("views/review.py", state={"app_rater": "Ada"})
    first = re.sub(r"\\(.)", r"\1", at.caption[0].value)
    assert first == review_model.PAGE_CAPTIONS["holes"] and "judge's pairs" not in first
    at.button(key="review_new_start").click().run()
    assert re.sub(r"\\(.)", r"\1", at.caption[0].value) == review_model.PAGE_CAPTIONS["holes"]


def test_the_resume_forms_endpoint_is_held_to_the_outbound_policy_on_an_exposed_app(home, store, monkeypatch,
                                                                                     clean_jobs):
    """The Resume form was a side door: a typed endpoint went to the resumed run unchecked."""
    from tests.pages.conftest import bound_to

    run_id = store.create_run(
        name="stopped", collection_name="tiny", collection_path="/tmp/tiny", mode="llm", label_source="llm",
        grade_min=0, grade_max=3, threshold=2, k=3, depth=3,
        config={"mode": "llm", "strategies": ["fulltext"], "llm": {"model": "fake", "base_url": "http://10.9.9.9/v1"}})
    store.finish_run(run_id, "failed", "ConnectionError: the endpoint moved")
    monkeypatch.setenv("SEARCHGRADE_APP_NO_AUTH", "1")
    with FakeOpenAIServer(Recorder()) as listener, bound_to("0.0.0.0"):
        at = open_page("views/results.py")
        port = listener.httpd.server_address[1]
        for typed in (listener.base_url, f"http://[::1]:{port}/v1", f"http://[::ffff:127.0.0.1]:{port}/v1",
                      f"http://2130706433:{port}/v1", "http://169.254.169.254/v1"):
            at.text_input(key=f"results_resume_base_url_{run_id}").set_value(typed).run()
            at.button(key="results_resume_button").click().run()
            assert not at.exception, [e.message for e in at.exception]
            errors = [e.value.replace("\\", "") for e in at.error if "LLM endpoint base URL" in e.value]
            assert len(errors) == 1 and "a target typed in this app may not reach" in errors[0], (typed, errors)
            assert jobs.latest_job() is None  # nothing was resumed
    assert listener.requests == []
