from __future__ import annotations

import json
import threading
import time

import pytest

from searchgrade.core.records import Collection
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.pipeline import RunOutcome
from searchgrade.indexes.rerank.cross_encoder import RERANKER_FIX
from searchgrade.server import jobs
from tests.pages.conftest import open_page
from tests.pages.synthetic import tiny_spec, write_run
from tests.pages.test_traffic_sections import clicks_run  # noqa: F401 - fixture

SKIP_REASON = f"reranker model 'x' could not be loaded (no network access to the model hub?): {RERANKER_FIX}"


pytestmark = pytest.mark.usefixtures("clean_jobs")


@pytest.fixture
def fake_pipeline(monkeypatch):
    """run_evaluation replaced by one that stores the tiny run, held until `release` is set."""
    release = threading.Event()
    calls = []

    def run(collection, config, store, data_dir, *, progress=None, on_run_created=None, on_usage=None,
            on_complete=None):
        calls.append(config)
        progress("embed", 1, 4)
        release.wait(30)
        run_id = write_run(store, tiny_spec(skipped={"hybrid_rerank": SKIP_REASON}))
        on_run_created(run_id)
        progress("embed", 4, 4)
        return RunOutcome(run_id, "complete", skipped={"hybrid_rerank": SKIP_REASON})

    monkeypatch.setattr("searchgrade.engine.run.pipeline.run_evaluation", run)
    yield release, calls
    release.set()


def _beir(folder, with_qrels=True):
    folder.mkdir()
    docs = [{"_id": f"d{i}", "title": f"Doc {i}", "text": f"text about topic {i}"} for i in range(6)]
    (folder / "corpus.jsonl").write_text("\n".join(json.dumps(d) for d in docs) + "\n")
    (folder / "queries.jsonl").write_text(
        "\n".join(json.dumps({"_id": f"q{i}", "text": f"topic {i}"}) for i in range(3)) + "\n")
    if with_qrels:
        (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" +
                                          "".join(f"q{i}\td{i}\t1\n" for i in range(3)))
    return folder


def _collection():
    return Collection("tiny", "/tmp/tiny", tiny_spec().documents)


def _wait_done(at, timeout=30):
    deadline = time.time() + timeout
    while jobs.active_job() is not None and time.time() < deadline:
        time.sleep(0.1)
    at.run()


def test_demo_is_there_on_first_start_with_defaults_from_the_collection(home):
    at = open_page("views/evaluate.py")
    assert at.radio(key="evaluate_source").value.startswith("The bundled demo")
    text = " ".join(m.value for m in at.markdown)
    assert "5,183 documents" in text and "300 queries with human judgments" in text
    assert at.radio(key="evaluate_mode").options == ["Human judgments (qrels)"]
    captions = [c.value.replace("\\", "") for c in at.caption]
    # A qrels collection: one line for the LLM modes, not an "unavailable" line each, and the LLM box shut.
    assert not any("unavailable" in c for c in captions)
    [llm] = [c for c in captions if "LLM judge" in c]
    assert llm.startswith("LLM judge and Human judgments + LLM agreement: not available yet, no LLM model")
    assert not [e for e in at.expander if e.label.startswith("LLM endpoint") and e.proto.expanded]
    # Offline no reranker model loads: only the strategies that can run are preselected, and the
    # fix is the page's own field.
    assert at.multiselect(key="evaluate_strategies").value == ["ann", "fulltext", "hybrid"]
    assert len(at.multiselect(key="evaluate_strategies").options) == 6
    [why] = [c for c in captions if c.startswith("Reranked strategies are not preselected")]
    assert "Reranker model" in why and "Models and indexes" in why and "--reranker-model" not in why
    assert at.number_input(key="evaluate_k").value == 10
    assert at.button(key="evaluate_start").label == "Evaluate search quality"
    # Picked anyway: a warning that they will be skipped; a missing trained reranker names no server path.
    at.text_input(key="evaluate_reranker").set_value("trained:nope").run()
    at.multiselect(key="evaluate_strategies").select("fulltext_rerank").run()
    [warning] = [w.value.replace("\\", "") for w in at.warning]
    assert warning.startswith("Full-text + reranker will be skipped: no trained reranker 'nope'")
    assert str(home) not in warning


def test_collection_without_qrels_says_which_mode_is_missing_and_why(home, tmp_path):
    folder = _beir(tmp_path / "noqrels", with_qrels=False)
    at = open_page("views/evaluate.py")
    at.radio(key="evaluate_source").set_value("A path on this machine").run()
    at.text_input(key="evaluate_path").set_value(str(folder)).run()
    assert any("no qrels.tsv" in c.value.replace("\\", "") for c in at.caption)
    # Judgments can still be attached right above: the page says so, and no error yet.
    assert not at.error
    assert "add a queries file and a judgments file" in at.info[0].value


def test_evaluate_runs_in_the_background_then_offers_view_results(home, tmp_path, fake_pipeline):
    release, calls = fake_pipeline
    folder = _beir(tmp_path / "beir")
    at = open_page("views/evaluate.py")
    at.radio(key="evaluate_source").set_value("A path on this machine").run()
    at.text_input(key="evaluate_path").set_value(str(folder)).run()
    at.number_input(key="evaluate_k").set_value(5).run()
    at.number_input(key="evaluate_bm25_k1").set_value(1.2).run()
    at.number_input(key="evaluate_rrf_k").set_value(30).run()
    at.button(key="evaluate_start").click().run()
    assert not at.exception
    assert jobs.active_job() is not None  # the page returned while the run goes on
    deadline = time.time() + 10
    while "embed" not in jobs.active_job().stages and time.time() < deadline:
        time.sleep(0.05)
    at.run()
    assert any("Running" in m.value for m in at.markdown)
    assert any(p.proto.text.replace("\\", "").startswith("Embedding documents and queries: 1 of 4 done, about") for p in at.get("progress")), [p.proto.text for p in at.get("progress")]

    # A refresh (a new session) shows the same run, not the form.
    other = open_page("views/evaluate.py")
    assert any("Running" in m.value for m in other.markdown)
    assert not [b for b in other.button if b.label == "Evaluate search quality"]

    release.set()
    _wait_done(at)
    assert len(calls) == 1 and calls[0].k == 5
    assert (calls[0].index.bm25_k1, calls[0].index.rrf_k, calls[0].index.bm25_b) == (1.2, 30, 0.75)
    assert "Run complete" in at.success[0].value.replace("\\", "")
    skipped = at.warning[0].value.replace("\\", "")
    # The fix is the page's own field, not the command line's flag.
    assert "Hybrid + reranker was skipped" in skipped and "\"Reranker model\" under Models and indexes" in skipped
    assert "--reranker-model" not in skipped
    labels = [b.label for b in at.button]
    assert "View results" in labels and "Start new evaluation" in labels
    at.button(key="evaluate_new").click().run()
    assert at.button(key="evaluate_start").label == "Evaluate search quality"


def test_a_second_start_while_a_run_is_active_returns_the_same_job(home, store, fake_pipeline):
    release, calls = fake_pipeline
    from searchgrade.engine.run.pipeline import run_evaluation

    first, started = jobs.start_job(_collection, RunConfig(), store, home, label="tiny",
                                    run=run_evaluation)
    second, started_again = jobs.start_job(_collection, RunConfig(), store, home, label="tiny",
                                           run=run_evaluation)
    assert started and not started_again
    assert second.job_id == first.job_id
    release.set()
    final = jobs.wait(first.job_id, 30)
    assert final.state == "complete" and len(calls) == 1
    assert [r.status for r in store.list_runs()] == ["complete"]


def test_a_failed_run_shows_its_error(home, store):
    def broken(collection, config, store, data_dir, **_reporting):
        raise RuntimeError("index exploded")

    job, _ = jobs.start_job(_collection, RunConfig(), store, home, label="tiny", run=broken)
    final = jobs.wait(job.job_id, 30)
    assert final.state == "failed" and final.error == "RuntimeError: index exploded"
    at = open_page("views/evaluate.py", state={"evaluate_job_id": job.job_id})
    assert "index exploded" in at.error[0].value.replace("\\", "")


@pytest.mark.slow
def test_a_real_evaluation_from_the_page_completes_and_is_stored(home, tmp_path, store):
    folder = _beir(tmp_path / "beir")
    at = open_page("views/evaluate.py")
    at.radio(key="evaluate_source").set_value("A path on this machine").run()
    at.text_input(key="evaluate_path").set_value(str(folder)).run()
    at.multiselect(key="evaluate_strategies").set_value(["ann", "fulltext", "hybrid"]).run()
    at.button(key="evaluate_start").click().run()
    _wait_done(at, timeout=300)
    assert not at.exception
    assert "Run complete" in at.success[0].value.replace("\\", ""), [e.value for e in at.error]
    [run] = store.list_runs()
    assert run.status == "complete" and run.collection_name == "beir"


def test_a_collection_with_click_judgments_offers_grading_by_clicks(clicks_run, tmp_path, fake_pipeline):  # noqa: F811
    release, calls = fake_pipeline
    release.set()
    at = open_page("views/evaluate.py")
    at.radio(key="evaluate_source").set_value("A path on this machine").run()
    at.text_input(key="evaluate_path").set_value(str(tmp_path / "tiny")).run()
    assert at.radio(key="evaluate_mode").options == ["Human judgments (qrels)", "Clicks (a click model over a query log)"]
    at.radio(key="evaluate_mode").set_value("clicks").run()
    assert at.checkbox(key="evaluate_log_by_clicks").value
    at.multiselect(key="evaluate_strategies").set_value(["fulltext"]).run()
    at.button(key="evaluate_start").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    _wait_done(at)
    [config] = calls
    assert (config.mode, config.query_set, config.click_model, config.llm) == ("clicks", "s5", "pbm", None)


def test_the_strategy_choice_is_kept_across_page_switches(home):
    at = open_page("views/evaluate.py")
    at.multiselect(key="evaluate_strategies").set_value(["fulltext", "hybrid"]).run()
    at.switch_page("views/results.py").run()
    at.switch_page("views/evaluate.py").run()
    assert not at.exception
    assert at.multiselect(key="evaluate_strategies").value == ["fulltext", "hybrid"]


def test_whether_the_reranker_loads_is_checked_once_per_model(monkeypatch, tmp_path):
    from searchgrade.viewmodels import reranker

    calls = []
    monkeypatch.setattr(reranker, "_LOADS", {})
    monkeypatch.setattr(reranker, "_load_problem", lambda model, data_dir: calls.append(model) or "no")
    for _ in range(3):
        assert reranker.reranker_problem("some/model", tmp_path) == "no"
    assert reranker.reranker_problem(" other/model ", tmp_path) == "no"
    assert calls == ["some/model", "other/model"]


def test_offline_a_hub_model_is_known_not_to_load_without_importing_the_model_libraries(monkeypatch, tmp_path):
    import sys

    from searchgrade.viewmodels.reranker import _load_problem

    monkeypatch.setattr("searchgrade.indexes.hub.hub_reachable", lambda *a, **k: False)
    monkeypatch.delitem(sys.modules, "sentence_transformers", raising=False)
    why = _load_problem("nobody/no-such-reranker", tmp_path)
    assert why.startswith("reranker model 'nobody/no-such-reranker' could not be loaded")
    assert why.endswith('as "Reranker model" under Models and indexes')
    assert "sentence_transformers" not in sys.modules
    trained = _load_problem("trained:nope", tmp_path)
    assert trained.startswith("no trained reranker 'nope'") and trained.endswith("under Models and indexes")
