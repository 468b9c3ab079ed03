"""The Evaluate page's judge prompt upload and cost estimate against a real llama.cpp server (the 270M
Gemma GGUF): a protocol check (GET /models, chat completions, the cache they key), never a grading
quality claim."""

from __future__ import annotations

import pytest

from searchgrade.engine.collections import load_collection
from searchgrade.engine.llm.judge import JudgeSettings
from searchgrade.engine.llm.settings import LLMSettings
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.estimate import estimate_cost
from tests.conftest import write_beir
from tests.engine.llm.conftest import llama_server  # noqa: F401 - the session's real server
from tests.pages.conftest import open_page
from tests.pages.test_evaluate_judge import STRICT, _llm_form, _upload
from tests.pages.test_llm import _text, _wait_job

pytestmark = [pytest.mark.llm_server, pytest.mark.slow, pytest.mark.usefixtures("clean_jobs")]


def _shown_estimate(at) -> str:
    at.button(key="evaluate_estimate_button").click().run()
    assert not at.exception, [e.message for e in at.exception]
    return _text(at)


def test_the_app_judges_with_the_uploaded_prompt_and_estimates_what_is_cached(home, store, tmp_path,
                                                                                llama_server):  # noqa: F811
    folder = write_beir(tmp_path / "tiny")
    at = _llm_form(open_page("views/evaluate.py", timeout=180), folder, llama_server, model="gemma3",
                   mode="qrels_llm", queries=2)
    _upload(at, "strict_judge.txt", STRICT.encode())
    config = RunConfig(mode="qrels", strategies=("fulltext",), depth=10, max_queries=2,
                       llm=LLMSettings(model="gemma3", base_url=llama_server),
                       judge=JudgeSettings(prompt="strict_judge", prompt_text=STRICT))
    collection = load_collection(folder)
    before = estimate_cost(collection, config, store)
    shown = _shown_estimate(at)
    assert before.judge.cached == 0 and before.judge.calls > 0
    for line in before.lines():
        assert line[0].upper() + line[1:] in shown

    at.button(key="evaluate_start").click().run()
    job = _wait_job(timeout=600)
    assert job.state == "complete", job.error
    [run] = store.list_runs()
    version = run.stats["llm"]["prompt_version"]
    assert version.startswith("strict_judge-") and run.config["judge"]["prompt_text"] == STRICT

    # The judge's valid replies are cached under the server's GET /models fingerprint and the prompt's
    # version: the page's estimate (the same function) now counts them and asks only for the rest.
    at.button(key="evaluate_new").click().run()
    at.multiselect(key="evaluate_strategies").set_value(["fulltext"]).run()
    at.number_input(key="evaluate_sample").set_value(2).run()
    _upload(at, "strict_judge.txt", STRICT.encode())
    after = estimate_cost(collection, config, store)
    shown = _shown_estimate(at)
    for line in after.lines():
        assert line[0].upper() + line[1:] in shown
    assert after.judge.cached > 0, (after, run.stats["llm"])
    assert after.judge.calls == before.judge.calls - after.judge.cached
