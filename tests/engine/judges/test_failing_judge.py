"""A judge whose endpoint fails part-way: what was judged is kept, a failure is never a grade, and
the report says what is missing (the run, its report and --repeat)."""

from __future__ import annotations

import json

import pytest

from searchgrade.engine.store import Store
from tests.engine.judges.judge_server import JudgeResponder
from tests.engine.judges.simulated import simulated, strategies_file
from tests.engine.judges.test_simulated_judges import cli
from tests.engine.llm.fake_server import FakeOpenAIServer

pytestmark = pytest.mark.slow

#: The flaky judge answers this many calls, then refuses every request.
ANSWERED = 10


def test_a_judge_that_fails_part_way_keeps_what_it_judged_and_the_report_says_what_is_missing(tmp_path):
    sim = simulated(tmp_path / "sim", n_queries=8, k=3)
    responder = JudgeResponder(sim)

    def respond(body, n):
        if body["model"] == "flaky":
            if responder.calls["flaky"] >= ANSWERED:
                return 422, {"error": {"message": "model overloaded, request refused"}}, {}
            body = {**body, "model": "faithful"}
            responder.calls["flaky"] += 1
        return responder(body, n)

    data = str(tmp_path / "data")
    with FakeOpenAIServer(respond) as server:
        server.models = [{"id": m, "object": "model"} for m in ("faithful", "flaky")]
        run_id = cli(["evaluate", str(sim.folder), "--qrels", "--llm", "--judge-models", "faithful,flaky",
                      "--base-url", server.base_url, "--strategies-file", str(strategies_file(sim, tmp_path / "s.toml")),
                      "--strategies", "best,poor", "--k", "3", "--data-dir", data])[0].strip().splitlines()[-1]
        store = Store(data)
        flaky = {(g["query_id"], g["doc_id"]): g for g in store.judge_grades(run_id, ["flaky"])}
        graded = [g for g in flaky.values() if g["grade"] is not None]
        failed = [g for g in flaky.values() if g["grade"] is None]
        assert len(graded) == ANSWERED and failed
        assert all(g["reason"].startswith("judge failure: request rejected (422") for g in failed)
        # The panel's grade stands on the judge that answered: no pair lost.
        assert all(g["grade"] is not None for g in store.judge_grades(run_id, ["panel"]))
        out, _ = cli(["judges", run_id, "--data-dir", data])
        assert f"{len(failed)} judgments failed" in out
        report = {j["model"]: j for j in json.loads(cli(["judges", run_id, "--format", "json",
                                                         "--data-dir", data])[0])["judges"]}
        assert report["flaky"]["pairs"] == ANSWERED and report["faithful"]["pairs"] == len(flaky)
        # Asked again (the pairs every judge graded: the flaky one's 10): the faithful judge's repeats
        # are stored, the flaky one's failures are not, and the next --repeat asks only for those.
        _, err = cli(["judges", run_id, "--repeat", "1", "--sample", "12", "--data-dir", data])
        assert f"--repeat 1: {ANSWERED} pairs" in err
        assert f"flaky: {ANSWERED} failed" in err and "asked again by the next --repeat" in err
        stored = {r["judge"] for r in store.judge_repeats(run_id)}
        assert stored == {"faithful"} and len(store.judge_repeats(run_id)) == ANSWERED
        _, err = cli(["judges", run_id, "--repeat", "1", "--sample", "12", "--data-dir", data])
        assert "  faithful: 0 calls" in err and f"  flaky: {ANSWERED} calls" in err
