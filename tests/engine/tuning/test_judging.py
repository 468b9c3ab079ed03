"""The tuner's judge of new pairs (engine/tuning/judging.py) over a scripted OpenAI-compatible server:
the budget during tuning, each pair once, the cache, no budget for the held-out comparison, and no
look at a held-out query. (The real llama.cpp server: tests/engine/llm/test_tune_llama.py.)"""

from __future__ import annotations

import pytest

from searchgrade.core.records import Document, Query
from searchgrade.engine.llm.cache import MemoryCache
from searchgrade.engine.llm.client import LLMClient
from searchgrade.engine.llm.judge import JudgeSettings
from searchgrade.engine.llm.settings import LLMSettings
from searchgrade.engine.tuning.grades import Grades, HeldOutRead
from searchgrade.engine.tuning.judging import TuneJudge
from searchgrade.engine.tuning.target import TrialLists
from tests.engine.llm.fake_server import FakeOpenAIServer
from tests.engine.llm_fakes import Recorder

DOCS = {f"d{i}": Document(f"d{i}", f"Title {i}", f"document number {i} about topic {i}") for i in range(6)}
QUERIES = {q: Query(q, f"query {q}", "natural") for q in ("q1", "q2")}


def judge_over(server, cache, budget):
    client = LLMClient(LLMSettings(model="fake", base_url=server.base_url, concurrency=2, timeout_s=10,
                                   backoff_s=0.01, output_mode="json_schema"))
    return TuneJudge(client, cache, JudgeSettings(), QUERIES, DOCS, budget)


def test_the_budget_holds_each_pair_is_judged_once_and_the_comparison_judges_everything():
    recorder = Recorder()
    cache = MemoryCache()
    with FakeOpenAIServer(recorder) as server:
        grades = Grades({"q1": {"d0": 3}, "q2": {}})
        tuning = grades.only(["q1"])
        judge = judge_over(server, cache, budget=2)
        lists = TrialLists(docs={"q1": ["d0", "d1", "d2", "d3", "d4"]})
        assert judge.fill(lists, ["q1"], tuning, heldout=False) == 2
        assert judge.sent["tuning"] == 2 and judge.report()["unjudged_over_budget"] == 2
        assert judge.report()["budget_spent"] and recorder.posts["judge"] == 2
        assert set(tuning.of("q1")) == {"d0", "d1", "d2"}  # d0 the run's grade, two new ones
        # Budget spent: the same trial again asks nothing.
        assert judge.fill(lists, ["q1"], tuning, heldout=False) == 0 and recorder.posts["judge"] == 2
        # A held-out query is neither looked at nor judged during tuning.
        with pytest.raises(HeldOutRead):
            judge.fill(TrialLists(docs={"q2": ["d5"]}), ["q2"], tuning, heldout=False)
        # The held-out comparison judges every pair it shows, over the budget.
        held = grades.only(["q2"])
        assert judge.fill(TrialLists(docs={"q2": ["d1", "d5"]}), ["q2"], held, heldout=True) == 2
        assert judge.report()["pairs_judged"] == {"tuning": 2, "heldout": 2}
        assert judge.report()["requests"]["total"] == recorder.posts["judge"] == 4
        # A new study over the same cache: the pairs judged before are free, the budget goes further.
        again = judge_over(server, cache, budget=2)
        fresh = Grades({"q1": {"d0": 3}}).only(["q1"])
        assert again.fill(lists, ["q1"], fresh, heldout=False) == 2
        assert again.cache_hits == 2 and set(fresh.of("q1")) == {"d0", "d1", "d2", "d3", "d4"}
        assert recorder.posts["judge"] == 6 and again.report()["unjudged_over_budget"] == 0
