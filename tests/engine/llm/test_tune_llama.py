"""`searchgrade tune` on an LLM-judged run, the new pairs judged by a real llama.cpp server (270M).

The model's grades are meaningless (no quality claim): the test checks the judging path, the
judge's requests the report and the run's accounting count against the POSTs the server received,
the budget during tuning, and the cache on a second call.
"""

from __future__ import annotations

import json

import pytest

from searchgrade.cli import main
from searchgrade.engine.store import Store
from tests.conftest import write_beir
from tests.engine.llm.fake_server import FakeOpenAIServer
from tests.engine.llm_fakes import Recorder

pytestmark = [pytest.mark.llm_server, pytest.mark.slow]

_TAIL = " What should a beginner know about it? People care about this for many practical reasons every day."
DOCS = {
    "rust": ("Rust", "Rust is iron oxide. It forms when iron reacts with oxygen and water over time." + _TAIL),
    "bread": ("Bread", "Bread is made from flour, water and yeast; the yeast makes the dough rise." + _TAIL),
}


def test_new_pairs_are_judged_within_the_budget_counted_and_cached(counting_proxy, tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    collection = write_beir(tmp_path / "mini", docs=DOCS, queries={}, qrels=[])
    data = tmp_path / "d"
    # Queries written by a scripted server, then judged by the real one: the run's judge.
    with FakeOpenAIServer(Recorder()) as fake:
        assert main(["evaluate", str(collection), "--llm", "--model", "fake", "--base-url", fake.base_url,
                     "--docs", "2", "--queries-per-doc", "1", "--keyword-per-doc", "0",
                     "--strategies", "fulltext", "--data-dir", str(data)]) == 0
    source = capsys.readouterr().out.strip().splitlines()[-1]
    assert main(["evaluate", str(collection), "--llm", "--queries-from", source, "--model", "gemma-3-270m",
                 "--base-url", counting_proxy.base_url, "--concurrency", "2", "--timeout", "120",
                 "--strategies", "fulltext", "--k", "1", "--data-dir", str(data)]) == 0
    run_id = capsys.readouterr().out.strip().splitlines()[-1]
    store = Store(data)
    graded = {(g["query_id"], g["doc_id"]) for g in store.grades(run_id)}

    argv = ["tune", run_id, "--strategy", "fulltext", "--metric", "ndcg@2", "--trials", "1", "--judge-budget", "1",
            "--format", "json", "--data-dir", str(data)]
    posts = counting_proxy.posts
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out)
    judge = report["judge"]
    assert judge["requests"]["total"] == counting_proxy.posts - posts > 0
    assert judge["pairs_judged"]["tuning"] <= 1 == judge["budget"]
    # The run judged each query's top 1; trials and the comparison show the top 2: new pairs.
    assert judge["pairs_judged"]["tuning"] + judge["pairs_judged"]["heldout"] + judge["cache_hits"] > 0
    assert judge["budget_spent"] == (judge["pairs_judged"]["tuning"] == 1)
    if judge["unjudged_over_budget"]:
        assert judge["budget_spent"]
    usage = store.llm_usage(run_id)
    assert usage["tune-judge"]["requests"] == judge["requests"]["total"]
    assert {(g["query_id"], g["doc_id"]) for g in store.grades(run_id)} == graded  # the run's grades stay its own

    # The same tuning again: the study resumes, every judged pair comes from the cache; only pairs
    # whose judging failed (the 270M model's invalid replies) are asked again, each at most 3 requests.
    posts = counting_proxy.posts
    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["resumed_trials"] == report["trials"]
    assert again["judge"]["requests"]["total"] == counting_proxy.posts - posts <= 3 * judge["failures"]
    if judge["failures"] == 0:
        assert counting_proxy.posts == posts
    assert again["judge"]["cache_hits"] >= judge["pairs_judged"]["heldout"] - judge["failures"]
    assert store.llm_usage(run_id)["tune-judge"]["requests"] == (judge["requests"]["total"]
                                                                 + again["judge"]["requests"]["total"])
