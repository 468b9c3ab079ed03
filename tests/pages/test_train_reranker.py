"""Results: "Train a reranker on these grades" runs in the background and shows the card's figures;
a run that used a trained reranker says it was measured on queries the reranker never saw."""

from __future__ import annotations

import json
import threading
import time

import pytest

from searchgrade.server import jobs
from searchgrade.viewmodels.reranker import NEVER_SAW
from tests.pages.conftest import open_page
from tests.pages.synthetic import tiny_spec, write_run

FIGURE = {"strategy": "ann", "metric": "ndcg", "k": 3, "n": 2, "base": 0.5, "reranked": 0.75,
          "diff": 0.25, "ci_low": 0.1, "ci_high": 0.4, "p_value": 0.02, "m": 2,
          "improved": 2, "hurt": 0, "judged_reranked": 1.0, "significant": True}


#: Each test waits for its background job to end, then forgets finished jobs (tests/pages/conftest.py).
pytestmark = pytest.mark.usefixtures("clean_jobs")


@pytest.fixture
def fake_training(monkeypatch):
    """train_reranker replaced by one that writes a card, held until `release` is set."""
    release = threading.Event()
    calls = []

    def train(store, run_id, data_dir, config, *, progress=None, collection=None):
        calls.append(config)
        progress("train", 3, 10)
        release.wait(30)
        folder = data_dir / "rerankers" / config.name
        folder.mkdir(parents=True)
        card = {"format": 1, "name": config.name, "created_at": "2026-01-01T00:00:00+00:00",
                "source_run": {"run_id": run_id}, "blend": True, "timings": {"train_s": 12.0},
                "heldout": {"queries": 2, "depth": 20, "scored_by": "the fold model that never saw the query",
                            "figures": [FIGURE], "cross_encoder_alone": [dict(FIGURE, diff=-0.1, reranked=0.4)]}}
        (folder / "card.json").write_text(json.dumps(card))
        progress("train", 10, 10)

    monkeypatch.setattr("searchgrade.engine.training.reranker.train_reranker", train)
    yield release, calls
    release.set()


def _text(at) -> str:
    """The page's words, without the Markdown escapes plain() adds."""
    return "\n".join(str(e.value) for kind in ("markdown", "caption", "info", "success", "error")
                     for e in at.get(kind)).replace("\\", "")


def test_training_from_results_runs_in_the_background_and_shows_the_held_out_figures(tiny_run, fake_training):
    release, calls = fake_training
    at = open_page("views/results.py")
    assert "Train a reranker on these grades" in [h.value for h in at.subheader]
    at.text_input(key="results_train_name").set_value("tiny-v1")
    at.button[[b.label for b in at.button].index("Train a reranker")].click().run()
    assert [c.name for c in calls] == ["tiny-v1"] and calls[0].folds == 5
    assert jobs.active_job() is not None and jobs.active_job().kind == "train"
    assert "Training reranker tiny-v1" in _text(at)  # the live progress, while it trains
    release.set()
    deadline = time.time() + 30
    while jobs.active_job() is not None and time.time() < deadline:
        time.sleep(0.1)
    at.run()
    assert NEVER_SAW in _text(at)
    figures = next(df.value for df in at.dataframe if "Reranked" in df.value.columns)
    assert figures.loc[0, "Strategy"] == "ANN (dense)"
    assert figures.loc[0, "Change"] == pytest.approx(0.25)
    assert figures.loc[0, "Verdict"] == "significant gain"


def test_a_bad_name_is_one_line_and_starts_nothing(tiny_run, fake_training):
    _, calls = fake_training
    at = open_page("views/results.py")
    at.text_input(key="results_train_name").set_value("Bad Name!")
    at.button[[b.label for b in at.button].index("Train a reranker")].click().run()
    assert calls == [] and jobs.active_job() is None
    assert any("is not allowed" in e.value for e in at.error)


def test_a_run_with_a_trained_reranker_says_it_was_measured_on_queries_it_never_saw(store):
    spec = tiny_spec(stats={"reranker": {"trained": "tiny-v1", "mode": "cross-fitted", "held_out": 2,
                                         "plain": 0, "source_run": "abc"}})
    write_run(store, spec)
    at = open_page("views/results.py")
    assert "Baseline vs trained reranker tiny-v1" in [h.value for h in at.subheader]
    assert "Measured on queries the reranker never saw: each of the 2 queries" in _text(at)


def test_cancelling_training_says_no_reranker_was_saved_not_resume(tiny_run, store, home):
    """A cancelled training job names training and saves nothing; it offers no resume, and the run
    it learns from stays complete (a training job has no run of its own to cancel)."""
    from searchgrade.engine.training.reranker import RerankerTrainingConfig

    release = threading.Event()

    def train(store, run_id, data_dir, config, *, progress=None, collection=None):
        progress("train", 1, 10)
        release.wait(30)
        progress("train", 2, 10)  # the worker's next step: the cancel takes effect here

    job, started = jobs.start_training(tiny_run, RerankerTrainingConfig(name="tiny-v1"), store, home,
                                       label="tiny", train=train)
    assert started
    jobs.cancel(job.job_id, store)
    release.set()
    final = jobs.wait(job.job_id, 30)
    assert final.state == "cancelled"
    assert "no reranker was saved" in final.error and "resume" not in final.error.lower()
    assert store.get_run(tiny_run).status == "complete"
    at = open_page("views/evaluate.py", state={"evaluate_job_id": job.job_id, "evaluate_form": False})
    warned = " ".join(w.value for w in at.warning).replace("\\", "")
    assert "Training reranker tiny-v1 cancelled: cancelled: no reranker was saved" in warned
    assert "Resume this run" not in [b.label for b in at.button]
    assert not (home / "rerankers" / "tiny-v1").exists()
