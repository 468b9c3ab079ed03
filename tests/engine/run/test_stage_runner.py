"""A run's heavy stages go through the runner it is given (engine/run/stage_runner.py): the device
choice, embedding the corpus, the search and the judge's requests, and what the runner records
lands in the run's stats. (The Ray runner's equality with the local run: tests/engine/ray/.)"""

from __future__ import annotations

from contextlib import contextmanager

from searchgrade.engine.collections import load_collection
from searchgrade.engine.llm.settings import LLMSettings
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.pipeline import run_evaluation
from searchgrade.engine.run.stage_runner import LocalRunner
from searchgrade.engine.store import Store
from tests.conftest import write_beir
from tests.engine.llm.fake_server import FakeOpenAIServer
from tests.engine.llm_fakes import Recorder


class Counting:
    """A client or a search executor, with the calls the stages made through it counted."""

    def __init__(self, inner, method: str) -> None:
        self.inner, self.method, self.calls = inner, method, 0

    def __getattr__(self, name):
        attribute = getattr(self.inner, name)
        if name != self.method:
            return attribute

        def counted(*args, **kwargs):
            self.calls += 1
            return attribute(*args, **kwargs)

        return counted


class Recording(LocalRunner):
    """The local runner, recording what the stages asked of it and adding to the run's stats."""

    def __init__(self) -> None:
        self.asked: list[str] = []
        self.search: Counting | None = None
        self.client: Counting | None = None

    def device(self, config):
        self.asked.append("device")
        return config, "the runner's note"

    def embed_corpus(self, collection, settings, data_dir, fingerprint, progress, stats):
        self.asked.append("embed")
        stats["runner"] = {"documents": len(collection.documents)}

    @contextmanager
    def searching(self, job, stats):
        self.asked.append("search")
        with super().searching(job, stats) as search:
            self.search = Counting(search, "execute")
            yield self.search

    @contextmanager
    def judging(self, client, stats):
        self.asked.append("judge")
        with super().judging(client, stats) as local:
            self.client = Counting(local, "complete") if local is not None else None
            yield self.client


def test_every_heavy_stage_of_a_run_goes_through_its_runner(tmp_path):
    collection = load_collection(write_beir(tmp_path / "tiny"))
    store = Store(tmp_path / "d")
    runner = Recording()
    recorder = Recorder()
    with FakeOpenAIServer(recorder) as server:
        llm = LLMSettings(model="fake", base_url=server.base_url, concurrency=2, timeout_s=10)
        outcome = run_evaluation(collection, RunConfig(strategies=("ann", "fulltext"), n_bootstrap=200, llm=llm),
                                 store, tmp_path / "d", runner=runner)
    run = store.get_run(outcome.run_id)
    assert run.status == "complete"
    assert runner.asked == ["device", "embed", "search", "judge"]
    assert "the runner's note" in run.notes and "the runner's note" in outcome.notes
    assert run.stats["runner"] == {"documents": len(collection.documents)}
    # A fresh run searches every query with both strategies as one batch (the executor cuts it in chunks).
    assert runner.search.calls == 1
    # Every judge request the server saw was sent through the runner's client.
    assert runner.client.calls == recorder.posts["judge"] > 0


def test_a_run_whose_strategies_need_no_ann_asks_nothing_to_be_embedded(tmp_path):
    collection = load_collection(write_beir(tmp_path / "tiny"))
    runner = Recording()
    run_evaluation(collection, RunConfig(strategies=("fulltext",), n_bootstrap=200), Store(tmp_path / "d"),
                   tmp_path / "d", runner=runner)
    assert runner.asked == ["device", "search", "judge"]
    assert runner.client is None  # no judge: nothing to send
