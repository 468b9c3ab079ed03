"""`evaluate --dry-run`: the LLM calls and tokens a run would use, before it runs."""

from __future__ import annotations

import pytest

from searchgrade.cli import main
from searchgrade.engine.collections import load_collection
from searchgrade.engine.llm.prompts import load_prompt
from searchgrade.engine.llm.querygen import QueryGenSettings
from searchgrade.engine.run.estimate import estimate_cost, estimate_tokens
from searchgrade.engine.run.pipeline import run_evaluation
from searchgrade.engine.store import Store
from tests.cli.test_llm_cli import _no_llm_environment, llm_args  # noqa: F401
from tests.conftest import CRANFIELD
from tests.engine.llm.fake_server import FakeOpenAIServer
from tests.engine.llm_fakes import Recorder
from tests.engine.test_llm_pipeline import llm_config


def test_the_estimate_matches_the_calls_a_run_then_makes_and_the_cache_is_counted(tmp_path, tiny_beir):
    collection = load_collection(tiny_beir)
    store = Store(tmp_path / "d")
    recorder = Recorder()
    with FakeOpenAIServer(recorder) as server:
        config = llm_config(server.base_url)
        before = estimate_cost(collection, config, store)
        assert server.posts == 0
        run_id = run_evaluation(collection, config, store, tmp_path / "d").run_id
        after = estimate_cost(collection, config, store)
    assert before.generation.calls == recorder.posts["querygen"] == 3
    assert before.queries == 3 * 2
    # The judge's count is an upper bound: queries x (strategies x depth, at most the corpus) + source.
    assert recorder.posts["judge"] <= before.judge.calls == 6 * (min(10, len(collection.documents)) + 1)
    assert before.judge.upper_bound
    # Every query-generation reply is now cached.
    assert (after.generation.calls, after.generation.cached) == (0, 3)
    assert store.get_run(run_id).status == "complete"


def test_tokens_are_measured_on_the_real_prompts(tiny_beir):
    collection = load_collection(tiny_beir)
    config = llm_config("http://127.0.0.1:9/v1")
    estimate = estimate_cost(collection, config)
    prompt = load_prompt("querygen_v1")
    docs = [d for d in collection.documents if len(d.content.split()) >= config.querygen.min_words]
    # Three sampled documents, one prompt each.
    sizes = []
    for d in docs:
        messages = prompt.messages(document=d.content, n_natural="1", n_keyword="1")
        sizes.append(estimate_tokens(messages))
    per_call = estimate.generation.prompt_tokens / estimate.generation.calls
    assert min(sizes) - 1 <= per_call <= max(sizes) + 1
    assert estimate.judge.prompt_tokens > estimate.judge.calls * 100  # the judge prompt alone is ~250 tokens


def test_without_query_generation_settings_the_estimate_uses_the_runs_defaults():
    collection = load_collection(CRANFIELD)
    bare = estimate_cost(collection, llm_config("http://127.0.0.1:9/v1", querygen=None, seed=3))
    explicit = estimate_cost(collection, llm_config("http://127.0.0.1:9/v1", querygen=QueryGenSettings(seed=3),
                                                    seed=3))
    assert bare.lines() == explicit.lines() and bare.generation.calls == QueryGenSettings().n_docs


def test_qrels_with_the_judge_counts_at_most_the_graded_pairs(tiny_beir):
    collection = load_collection(tiny_beir)
    config = llm_config("http://127.0.0.1:9/v1", mode="qrels", querygen=None)
    estimate = estimate_cost(collection, config)
    assert estimate.generation is None
    assert estimate.judge.calls == sum(min(len(j), 10) for j in collection.qrels.values())
    unjudged = estimate_cost(collection, llm_config("http://127.0.0.1:9/v1", mode="qrels", querygen=None,
                                                    judge_unjudged=True))
    assert unjudged.judge.calls == len(collection.queries) * min(10, len(collection.documents))


def test_dry_run_prints_the_estimate_and_stores_nothing(tmp_path, tiny_beir, capsys):
    with FakeOpenAIServer(Recorder()) as server:
        assert main(llm_args(tiny_beir, tmp_path / "d", server.base_url, "--dry-run")) == 0
        assert server.posts == 0
    out = capsys.readouterr().out
    assert "query generation: 3 calls" in out and "judge: at most" in out and "tokens" in out
    assert not (tmp_path / "d" / "searchgrade.duckdb").exists()


@pytest.mark.parametrize("extra", [["--qrels"], []])
def test_dry_run_without_an_llm_says_so_or_asks_how_to_grade(tmp_path, tiny_beir, capsys, extra):
    code = main(["evaluate", str(tiny_beir), *extra, "--dry-run", "--data-dir", str(tmp_path / "d")])
    out, err = capsys.readouterr()
    if extra:
        assert code == 0 and "no LLM call" in out
    else:
        assert code != 0 and "say how to grade" in err
