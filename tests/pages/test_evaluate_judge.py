"""The Evaluate page's LLM judge settings: the user's judge prompt file (checked as --judge-prompt is,
recorded with the run) and the dry run's cost estimate before starting."""

from __future__ import annotations

import socket
import time

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.collections import load_collection
from searchgrade.engine.llm.prompts import MAX_JUDGE_PROMPT_BYTES, PROMPTS_DIR, read_judge_prompt
from searchgrade.engine.llm.querygen import QueryGenSettings
from searchgrade.engine.llm.settings import LLMSettings
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.estimate import estimate_cost
from searchgrade.server import jobs
from tests.conftest import write_beir
from tests.engine.llm.fake_server import FakeOpenAIServer
from tests.engine.llm_fakes import MIN_WORDS, Recorder
from tests.pages.conftest import open_page
from tests.pages.test_llm import SECRET, _text, _wait_job

PACKAGED = (PROMPTS_DIR / "judge_v1.txt").read_text(encoding="utf-8")
#: The packaged prompt with one more instruction (the fake server still recognises a judge request).
STRICT = PACKAGED.replace("Work through it:", "Be strict: grade 3 only for a complete answer. Work through it:")

pytestmark = pytest.mark.usefixtures("clean_jobs")


def _llm_form(at, folder, base_url: str, *, model: str = "fake", mode: str = "llm", docs: int = 3, queries: int = 2):
    """The form set to an LLM run of full-text search on ``folder`` against ``base_url``: in mode
    "llm" on ``docs`` sampled documents, in mode "qrels_llm" on ``queries`` of the collection's."""
    at.radio(key="evaluate_source").set_value("A path on this machine").run()
    at.text_input(key="evaluate_path").set_value(str(folder)).run()
    at.text_input(key="evaluate_llm_model").set_value(model).run()
    at.text_input(key="evaluate_llm_base_url").set_value(base_url).run()
    at.radio(key="evaluate_mode").set_value(mode).run()
    at.multiselect(key="evaluate_strategies").set_value(["fulltext"]).run()
    if mode == "llm":
        at.number_input(key="evaluate_llm_docs").set_value(docs).run()
        at.number_input(key="evaluate_llm_natural").set_value(1).run()
        at.number_input(key="evaluate_llm_min_words").set_value(MIN_WORDS).run()
    else:
        at.number_input(key="evaluate_sample").set_value(queries).run()
    return at


def _upload(at, name: str, data: bytes):
    at.file_uploader(key="evaluate_judge_prompt").set_value((name, data, "text/plain")).run()
    assert not at.exception, [e.message for e in at.exception]
    return at


@pytest.mark.parametrize(
    ("data", "fragment"),
    [
        (PACKAGED.replace("0-3 scale", "1-5 scale").encode(), "describes a scale beyond 0-3 ('1-5')"),
        (PACKAGED.replace("{{document}}", "the document").encode(), "lacks {{document}}"),
        (b"\xff\xfe\x00 not text", "is not UTF-8 text"),
        (PACKAGED.encode() + b"#" * MAX_JUDGE_PROMPT_BYTES, "is larger than 64 KB"),
    ],
)
def test_a_bad_judge_prompt_file_is_refused_in_one_line_and_nothing_starts(home, store, tmp_path, data, fragment):
    folder = write_beir(tmp_path / "tiny")
    with FakeOpenAIServer(Recorder()) as server:
        at = _llm_form(open_page("views/evaluate.py"), folder, server.base_url)
        _upload(at, "loose.txt", data)
        [error] = at.error
        assert error.value.replace("\\", "").startswith(f"The judge prompt file loose.txt {fragment}")
        assert "\n" not in error.value
        at.button(key="evaluate_start").click().run()
        at.button(key="evaluate_estimate_button").click().run()
        assert not at.exception, [e.message for e in at.exception]
    assert jobs.latest_job() is None and store.list_runs() == []
    assert "Estimated cost" not in _text(at)
    # No request reached the endpoint: neither a run nor an estimate began.
    assert server.requests == []
    # The command line says the same of the same file (one check, engine/llm/prompts/__init__.py).
    path = tmp_path / "loose.txt"
    path.write_bytes(data)
    with pytest.raises(SearchGradeError) as info:
        read_judge_prompt(path)
    assert fragment in str(info.value)


def test_the_uploaded_judge_prompt_judges_the_run_which_records_its_version(home, store, tmp_path):
    folder = write_beir(tmp_path / "tiny")
    seen: list[str] = []
    recorder = Recorder()

    def responder(body, n):
        if "search quality rater" in body["messages"][0]["content"]:
            seen.append(body["messages"][1]["content"])
        return recorder(body, n)

    prompt_file = tmp_path / "strict_judge.txt"
    prompt_file.write_text(STRICT, encoding="utf-8")
    name, text = read_judge_prompt(prompt_file)  # what --judge-prompt would record
    with FakeOpenAIServer(responder) as server:
        at = _llm_form(open_page("views/evaluate.py"), folder, server.base_url)
        _upload(at, "strict_judge.txt", STRICT.encode())
        assert not at.error
        shown = _text(at)
        assert "Judging with your prompt, version strict_judge-" in shown
        at.button(key="evaluate_start").click().run()
        assert not at.exception, [e.message for e in at.exception]
        job = _wait_job()
        at.run()
    assert job.state == "complete", job.error
    assert seen and all("Be strict" in content for content in seen)
    [run] = store.list_runs()
    assert run.config["judge"]["prompt"] == name == "strict_judge"
    assert run.config["judge"]["prompt_text"] == text == STRICT
    version = run.stats["llm"]["prompt_version"]
    assert version.startswith("strict_judge-") and version in shown
    assert {g["prompt_version"] for g in store.grades(run.run_id)} == {version}
    # Results shows it beside the judge model, as for a run of the command line.
    results = open_page("views/results.py", state={"app_open_run": run.run_id})
    assert f"{version} (a user prompt file)" in _text(results)


def test_estimate_cost_shows_the_dry_runs_calls_and_tokens_and_runs_nothing(home, store, tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    folder = write_beir(tmp_path / "tiny")
    recorder = Recorder()
    with FakeOpenAIServer(recorder) as server:
        at = _llm_form(open_page("views/evaluate.py"), folder, server.base_url)
        assert "Estimated cost" not in _text(at)
        at.button(key="evaluate_estimate_button").click().run()
        assert not at.exception, [e.message for e in at.exception]
        shown = _text(at)
        # The same function as `evaluate --dry-run`, on the run the form describes.
        config = RunConfig(mode="llm", strategies=("fulltext",), depth=10,
                           llm=LLMSettings(model="fake", base_url=server.base_url),
                           querygen=QueryGenSettings(n_docs=3, n_natural=1, n_keyword=1, min_words=MIN_WORDS,
                                                     min_chars=0))
        expected = estimate_cost(load_collection(folder), config, store).lines()
        requests = list(server.requests)
    for line in expected:
        assert line[0].upper() + line[1:] in shown
    # Hand-counted: one generation call per sampled document; the judge at most 3 documents x 2
    # queries x (min(1 strategy x depth 10, 12 documents) + the source).
    assert "Query generation: 3 calls (0 documents already in the cache), up to 6 queries" in shown
    assert "Judge: at most 66 calls (0 pairs known to be cached)" in shown
    assert "tokens" in expected[-1]
    # Nothing run or stored, no prompt sent: only GET /models (the cache fingerprint), without the
    # server's key, since the endpoint was typed in the browser.
    assert recorder.posts == {"judge": 0, "querygen": 0}
    assert requests and {method for method, _, _ in requests} == {"GET"}
    assert not [h for _, _, h in requests if SECRET in " ".join(h.values())]
    assert store.list_runs() == [] and jobs.latest_job() is None
    assert SECRET not in shown

    # A changed form hides the estimate (it was for other settings) until asked again.
    at.number_input(key="evaluate_llm_docs").set_value(2).run()
    assert "Estimated cost" not in _text(at)
    at.button(key="evaluate_estimate_button").click().run()
    assert "Query generation: 2 calls" in _text(at)


def test_estimate_waits_a_bounded_time_for_an_endpoint_that_does_not_answer(home, store, tmp_path):
    from searchgrade.viewmodels.evaluate import ESTIMATE_TIMEOUT_S

    folder = write_beir(tmp_path / "tiny")
    # A listener that accepts connections and never answers.
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        url = f"http://127.0.0.1:{silent.getsockname()[1]}/v1"
        at = _llm_form(open_page("views/evaluate.py"), folder, url)
        start = time.monotonic()
        at.button(key="evaluate_estimate_button").click().run()
        took = time.monotonic() - start
    assert not at.exception, [e.message for e in at.exception]
    assert "Query generation: 3 calls" in _text(at)
    assert took < ESTIMATE_TIMEOUT_S + 20, took


def test_an_llm_endpoint_typed_on_an_exposed_app_is_held_to_the_outbound_policy(home, monkeypatch):
    from tests.pages.conftest import bound_to

    monkeypatch.setenv("SEARCHGRADE_APP_NO_AUTH", "1")
    with bound_to("0.0.0.0"):
        at = open_page("views/evaluate.py")
        at.text_input(key="evaluate_llm_model").set_value("fake").run()
        at.text_input(key="evaluate_llm_base_url").set_value("http://127.0.0.1:9/v1").run()
        at.radio(key="evaluate_mode").set_value("qrels_llm").run()
        at.button(key="evaluate_start").click().run()
    assert not at.exception
    errors = [e.value.replace("\\", "") for e in at.error]
    assert len(errors) == 1 and errors[0].startswith("LLM endpoint base URL"), errors
    assert jobs.latest_job() is None  # nothing started


def test_a_panel_typed_in_the_form_judges_the_run_each_judge_its_own(home, store, tmp_path):
    from tests.engine.judges.judge_server import judge_server
    from tests.engine.judges.simulated import simulated

    sim = simulated(tmp_path / "sim", n_queries=3, k=2)
    server, responder = judge_server(sim, ["faithful", "lenient"])
    with server:
        at = _llm_form(open_page("views/evaluate.py"), sim.folder, server.base_url, model="faithful", mode="qrels_llm",
                       queries=3)
        at.text_input(key="evaluate_judge_models").set_value("faithful, lenient").run()
        at.text_input(key="evaluate_judge_prices").set_value("faithful=0.1").run()
        at.button(key="evaluate_start").click().run()
        assert not at.exception, [e.message for e in at.exception]
        job = _wait_job()
    assert job.state == "complete", job.error
    [run] = store.list_runs()
    assert run.config["judges"] == ["faithful", "lenient"] and run.config["judge_prices"] == {"faithful": 0.1}
    assert set(store.judge_grade_counts(run.run_id)) == {"faithful", "lenient", "panel"}
    assert set(responder.calls) == {"faithful", "lenient"}


def test_a_judge_endpoint_typed_on_an_exposed_app_is_held_to_the_outbound_policy(home, monkeypatch):
    from tests.pages.conftest import bound_to

    monkeypatch.setenv("SEARCHGRADE_APP_NO_AUTH", "1")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # the operator's endpoint: allowed
    with bound_to("0.0.0.0"):
        at = open_page("views/evaluate.py")
        at.text_input(key="evaluate_llm_model").set_value("fake").run()
        at.radio(key="evaluate_mode").set_value("qrels_llm").run()
        at.text_input(key="evaluate_judge_models").set_value("fake, other@http://169.254.169.254/v1").run()
        at.button(key="evaluate_start").click().run()
    assert not at.exception
    errors = [e.value.replace("\\", "") for e in at.error]
    assert len(errors) == 1 and errors[0].startswith("LLM endpoint base URL"), errors
    assert jobs.latest_job() is None  # nothing started
