"""Judging on Ray: the same grades as here within one bound on requests in flight per endpoint,
shared by every run on the cluster (engine/ray/llm_requests.py), whose permits come back when
their holder dies and whose wait ends in one line."""

from __future__ import annotations

import threading
import time

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.collections import load_collection
from searchgrade.engine.ray.session import connect
from searchgrade.engine.run.config import RunConfig
from tests.engine.ray.conftest import evaluate

pytestmark = pytest.mark.slow


class InFlight:
    """A judge server's responder that counts the requests it holds at once (each held 50 ms)."""

    def __init__(self) -> None:
        from tests.engine.llm_fakes import Recorder

        self.recorder = Recorder()
        self.lock = threading.Lock()
        self.now = self.peak = 0

    def __call__(self, body, n):
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        try:
            time.sleep(0.05)
            return self.recorder(body, n)
        finally:
            with self.lock:
                self.now -= 1


def test_judging_on_ray_gives_the_local_grades_within_the_cluster_wide_bound(local_ray, tmp_path):
    from searchgrade.engine.llm.querygen import QueryGenSettings
    from searchgrade.engine.llm.settings import LLMSettings
    from tests.conftest import write_beir
    from tests.engine.llm.fake_server import FakeOpenAIServer
    from tests.engine.llm_fakes import MIN_WORDS

    collection = load_collection(write_beir(tmp_path / "tiny"))
    runs = {}
    for where in ("local", "ray"):
        responder = InFlight()
        with FakeOpenAIServer(responder) as server:
            config = RunConfig(mode="llm", strategies=("fulltext",), n_bootstrap=200,
                               llm=LLMSettings(model="fake", base_url=server.base_url, concurrency=2, timeout_s=10),
                               querygen=QueryGenSettings(n_docs=4, n_natural=1, n_keyword=1, min_words=MIN_WORDS,
                                                         min_chars=0))
            store, outcome = evaluate(where, collection, config, tmp_path)
        assert outcome.status == "complete"
        runs[where] = (store, outcome.run_id, responder)

    (local, local_id, here), (on_ray, ray_id, there) = runs["local"], runs["ray"]
    judged = there.recorder.posts["judge"]
    assert judged == here.recorder.posts["judge"] > 8
    stats = on_ray.get_run(ray_id).stats["ray"]["judge"]
    assert stats["calls"] == judged and stats["slots"] == 2 and stats["workers"] == 2
    # Never more than --concurrency requests at the server, as the limiter saw it too.
    assert there.peak <= 2 and stats["peak_in_flight"] <= 2
    # The driver's accounting has every request the workers sent.
    assert on_ray.llm_usage(ray_id)["judge"]["requests"] == local.llm_usage(local_id)["judge"]["requests"] == judged
    def grades(store, run_id):
        return sorted((g["query_id"], g["doc_id"], g["grade"]) for g in store.grades(run_id))

    assert grades(on_ray, ray_id) == grades(local, local_id)
    ours = {(r["metric"], r["k"], r["query_id"]): r["value"] for r in on_ray.metric_values(ray_id)}
    theirs = {(r["metric"], r["k"], r["query_id"]): r["value"] for r in local.metric_values(local_id)}
    assert ours.keys() == theirs.keys() and all(ours[k] == pytest.approx(v, abs=1e-9) for k, v in theirs.items())


def test_two_runs_sharing_an_endpoint_share_one_bound_on_requests_in_flight(local_ray):
    from concurrent.futures import ThreadPoolExecutor

    from searchgrade.engine.llm.client import LLMClient, LLMSettings
    from searchgrade.engine.llm.judge import JudgeSettings, judge_prompt
    from searchgrade.engine.llm.schemas import JudgeReply, judge_schema
    from searchgrade.engine.ray.llm_requests import RayLLM
    from tests.engine.llm.fake_server import FakeOpenAIServer

    responder = InFlight()
    with FakeOpenAIServer(responder) as server:
        settings = LLMSettings(model="fake", base_url=server.base_url, concurrency=2, timeout_s=10)
        session = connect(None)
        # Two runs' clients, each with 2 workers taking 2 calls at once: 8 requests could be in
        # flight; the limiter named after the endpoint lets 2 through at a time, across both.
        runs = [RayLLM(LLMClient(settings), session), RayLLM(LLMClient(settings), session)]
        prompt = judge_prompt(JudgeSettings())

        def call(i: int):
            messages = prompt.messages(query=f"question {i}", document=f"document {i} about things")
            return runs[i % 2].complete("judge", messages, JudgeReply, judge_schema(), schema_name="judgment")

        try:
            with ThreadPoolExecutor(8) as pool:
                replies = list(pool.map(call, range(16)))
            stats = runs[0].stats()
        finally:
            for run in runs:
                run.close()
    assert all(r.value is not None for r in replies)
    assert responder.recorder.posts["judge"] == 16
    assert responder.peak == 2 and stats["peak_in_flight"] == 2
    assert runs[0].local.usage.snapshot()["judge"]["requests"] == 8  # each run counts its own


def _judge_call(run, i: int = 0):
    from searchgrade.engine.llm.judge import JudgeSettings, judge_prompt
    from searchgrade.engine.llm.schemas import JudgeReply, judge_schema

    messages = judge_prompt(JudgeSettings()).messages(query=f"question {i}", document=f"document {i} about things")
    return run.complete("judge", messages, JudgeReply, judge_schema(), schema_name="judgment")


def test_a_permit_whose_holder_died_comes_back_when_its_lease_ends(local_ray, monkeypatch):
    """The limiter outlives runs: a holder that never releases (a killed driver, a lost node)
    must cost a lease's length, not the permit. The endpoint is the driver's, from its own
    environment: the workers (started with the module's Ray) do not have OPENAI_BASE_URL."""
    from searchgrade.engine.llm.client import LLMClient, LLMSettings
    from searchgrade.engine.ray.llm_requests import LIMITER_PREFIX, RayLLM
    from tests.engine.llm.fake_server import FakeOpenAIServer

    responder = InFlight()
    with FakeOpenAIServer(responder) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        settings = LLMSettings(model="fake", concurrency=1, timeout_s=10, max_retries=0)
        run = RayLLM(LLMClient(settings), connect(None), lease_s=3, wait_s=30)
        try:
            lost = local_ray.get(run.limiter.acquire.remote(3, 1))  # taken, never given back
            assert lost is not None
            started = time.monotonic()
            reply = _judge_call(run)
            waited = time.monotonic() - started
            # Releasing an expired token, twice, frees nothing: the next call still finds one permit.
            local_ray.get([run.limiter.release.remote(lost), run.limiter.release.remote(lost)])
            assert _judge_call(run, 1).value is not None
            stats = run.stats()
        finally:
            run.close()
            local_ray.kill(run.limiter)
    assert reply.value is not None and 2 < waited < 20
    assert responder.recorder.posts["judge"] == 2 and responder.peak == 1
    assert stats["leases_reclaimed"] == 1 and stats["peak_in_flight"] == 1
    assert LIMITER_PREFIX.startswith("llm-leases")


def test_a_limiter_whose_permits_stay_held_stops_the_judging_with_one_line(local_ray):
    from searchgrade.engine.llm.client import LLMClient, LLMSettings
    from searchgrade.engine.ray.llm_requests import RayLLM
    from tests.engine.llm.fake_server import FakeOpenAIServer

    responder = InFlight()
    with FakeOpenAIServer(responder) as server:
        settings = LLMSettings(model="fake", base_url=server.base_url, concurrency=1, timeout_s=10, max_retries=0)
        run = RayLLM(LLMClient(settings), connect(None), lease_s=600, wait_s=2)
        try:
            held = local_ray.get(run.limiter.acquire.remote(600, 1))  # another run's, for long
            started = time.monotonic()
            with pytest.raises(SearchGradeError) as raised:
                _judge_call(run)
            waited = time.monotonic() - started
            local_ray.get(run.limiter.release.remote(held))
        finally:
            run.close()
            local_ray.kill(run.limiter)
    message = str(raised.value)
    assert message.startswith("no LLM request permit from the Ray actor 'llm-leases:") and "\n" not in message
    assert "in 2 s" in message and "ray.kill(ray.get_actor(" in message
    assert 1.5 < waited < 30 and responder.recorder.posts["judge"] == 0
