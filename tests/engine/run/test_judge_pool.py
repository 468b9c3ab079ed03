"""Holes shown where decisions are made, and pooled judging that settles them.

The run: qrels made by judging only fulltext's top 10, so ann's better results are mostly unjudged.
The standard metrics rank fulltext first; the warning says the comparison favours it, the
condensed NDCG and the RBP residual tell why; ``judge-pool`` asks the judge (a fake server that
knows the truth) about each unjudged pair of the pool once, and the new run puts ann first.
"""

from __future__ import annotations

import pytest

from searchgrade.cli import main
from searchgrade.core.records import SearchGradeError
from searchgrade.engine.run.judge_pool import pool_holes
from searchgrade.engine.run.pool import PoolDepth, parse_pool_depth
from searchgrade.engine.store import Store
from searchgrade.viewmodels.holes import compare_holes, holes_panel
from tests.engine.holes_fixtures import K, Oracle, holey_spec
from tests.engine.llm.fake_server import FakeOpenAIServer
from tests.pages.synthetic import tiny_spec, write_run


@pytest.fixture(autouse=True)
def _no_llm_environment(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SEARCHGRADE_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(scope="module")
def holey(tmp_path_factory):
    data = tmp_path_factory.mktemp("holey")
    spec, truth = holey_spec()
    store = Store(data)
    run_id = write_run(store, spec, n_bootstrap=200)
    # A run derived from it (judge-pool) bootstraps as its parent says: few resamples keep this quick.
    store.update_run(run_id, config={**store.get_run(run_id).config, "n_bootstrap": 200})
    return store, run_id, spec, truth, data


def _means(store, run_id, k=K):
    return {(r["strategy"], r["metric"]): r["value"] for r in store.metric_summary(run_id, k)}


def test_the_warning_appears_when_one_strategy_is_judged_far_less(holey):
    store, run_id, *_ = holey
    panel = holes_panel(store, run_id, "ndcg", K)
    judged = {r.strategy: r.judged for r in panel.rows}
    assert judged["fulltext"] == 1.0 and judged["ann"] == pytest.approx(0.3)
    means = _means(store, run_id)
    assert means[("fulltext", "ndcg")] > means[("ann", "ndcg")]  # the standard metric picks fulltext
    assert panel.warning is not None and "favours the better-judged Full-text (BM25)" in panel.warning
    # What tells worse from unjudged: ann leads on its judged results, and its RBP could rise most.
    rows = {r.strategy: r for r in panel.rows}
    assert rows["ann"].condensed.value > rows["fulltext"].condensed.value
    assert rows["ann"].residual > 0.4 > rows["fulltext"].residual
    assert panel.reversals == ["ann"] and "judge-pool" in panel.warning


def test_no_warning_when_the_strategies_are_judged_alike(tmp_path):
    store = Store(tmp_path)
    run_id = write_run(store, tiny_spec())
    assert holes_panel(store, run_id, "ndcg", 3).warning is None


def test_show_prints_judged_beside_the_metric_and_the_warning(holey, capsys):
    store, run_id, _, _, data = holey
    assert main(["show", run_id, "--data-dir", str(data)]) == 0
    out = capsys.readouterr().out
    assert "holes @10" in out and "NDCG, judged only@10" in out and "RBP + residual" in out
    assert "warning: judged@10 ranges from 0.30 (ANN (dense)) to 1.00 (Full-text (BM25))" in out


def test_the_pool_is_the_union_of_every_strategys_top_d_each_pair_once(holey):
    store, run_id, spec, *_ = holey
    run = store.get_run(run_id)
    found = pool_holes(store, run, PoolDepth(K))
    union = {(q, d) for ranking in spec.rankings.values() for q, docs in ranking.items() for d in docs[:K]}
    assert found.pairs == len(union)
    assert set(found.holes) == {(q, d) for q, d in union if d not in spec.qrels[q]}
    assert len(found.holes) == 7 * len(spec.queries)  # ann's 7 results outside fulltext's top 10
    shallow = pool_holes(store, run, parse_pool_depth("3,ann=1", ["ann", "fulltext"]))
    assert len(shallow.holes) == len(spec.queries)  # ann's top 1 only: one hole per query


def test_pooled_judging_settles_it_with_one_judge_call_per_unjudged_pair_in_the_pool(holey, capsys):
    store, run_id, spec, truth, data = holey
    holes = pool_holes(store, store.get_run(run_id), PoolDepth(K)).holes
    oracle = Oracle(spec.queries, spec.documents, truth)
    with FakeOpenAIServer(oracle) as server:
        assert main(["judge-pool", run_id, "--pool-depth", str(K), "--model", "fake", "--base-url",
                     server.base_url, "--data-dir", str(data)]) == 0
        assert server.posts == len(holes) == len(oracle.judged)
    assert sorted(oracle.judged) == sorted(holes)  # each unjudged pair of the pool, once
    out, err = capsys.readouterr()
    new_id = out.strip().splitlines()[-1]
    new = store.get_run(new_id)
    assert new.parent_run_id == run_id and new.label_source == "human+llm"
    assert new.stats["pool"] | {"depth": None} == {"parent": run_id, "depth": None, "pairs": len(holes) + 10 * 30,
                                                   "holes": len(holes), "judged": len(holes), "cache_hits": 0,
                                                   "failures": 0, "requests": len(holes)}
    assert f"{len(holes):,} sent to the judge" in err
    means = _means(store, new_id)
    assert means[("ann", "judged")] == means[("fulltext", "judged")] == 1.0
    assert means[("ann", "ndcg")] > means[("fulltext", "ndcg")]  # settled: ann is the better search
    assert holes_panel(store, new_id, "ndcg", K).warning is None
    # fulltext's results were all judged: its DCG stays, its NDCG falls (the ideal now knows ann's finds).
    before = _means(store, run_id)
    assert means[("fulltext", "dcg")] == pytest.approx(before[("fulltext", "dcg")])
    assert means[("fulltext", "ndcg")] < before[("fulltext", "ndcg")]
    # Compare flags ann: judging its holes raised its NDCG@10 but lowered its condensed NDCG@10 (its few
    # judged results were all relevant; the ideal now knows every relevant document the pool found).
    flips = compare_holes(store, run_id, new_id, K)
    assert {r.strategy for r in flips.rows} == {"ann", "fulltext"}
    assert [r.strategy for r in flips.flips] == ["ann"]
    [sentence] = flips.sentences()
    assert sentence.startswith("ANN (dense): NDCG@10 changes by +") and "judged@10 0.30 -> 1.00" in sentence


def test_judge_pool_dry_run_counts_the_holes_without_a_call(holey, capsys):
    store, run_id, _, _, data = holey
    assert main(["judge-pool", run_id, "--pool-depth", "10", "--dry-run", "--data-dir", str(data)]) == 0
    out = capsys.readouterr().out
    assert "holds 510 (query, document) pairs, 210 of them unjudged" in out


@pytest.mark.parametrize(("depth", "says"), [("0", "not a positive depth"), ("ten", "not a positive depth"),
                                             ("10,bm25=5", "'bm25' is not a strategy of the run"),
                                             (",", "names no depth")])
def test_a_bad_pool_depth_is_one_line_naming_the_fix(holey, capsys, depth, says):
    store, run_id, _, _, data = holey
    assert main(["judge-pool", run_id, "--pool-depth", depth, "--dry-run", "--data-dir", str(data)]) == 1
    err = capsys.readouterr().err
    assert says in err and "--pool-depth" in err and len(err.strip().splitlines()) == 1


def test_judge_pool_refuses_a_scale_the_judge_does_not_grade(tmp_path):
    spec = tiny_spec()
    spec.qrels = {"q1": {"d1": 4, "d2": 1, "d3": 0}, "q2": {"d2": 3, "d4": 2, "d5": 2}}
    store = Store(tmp_path)
    run_id = write_run(store, spec)
    from searchgrade.engine.llm.settings import LLMSettings
    from searchgrade.engine.run.judge_pool import judge_pool_run

    with pytest.raises(SearchGradeError, match="labels go from 0 to 4: the judge grades 0-3"):
        judge_pool_run(store, run_id, PoolDepth(3), LLMSettings(model="fake", base_url="http://127.0.0.1:9/v1"))


def test_an_llm_run_with_a_pool_depth_judges_only_the_pool_and_the_sources(tmp_path, tiny_beir, capsys):
    from tests.engine.llm_fakes import MIN_WORDS, Recorder

    recorder = Recorder()
    with FakeOpenAIServer(recorder) as server:
        assert main(["evaluate", str(tiny_beir), "--llm", "--model", "fake", "--base-url", server.base_url,
                     "--docs", "3", "--queries-per-doc", "1", "--keyword-per-doc", "1", "--min-doc-words",
                     str(MIN_WORDS), "--strategies", "fulltext", "--k", "5", "--pool-depth", "2",
                     "--data-dir", str(tmp_path)]) == 0
    run_id = capsys.readouterr().out.strip().splitlines()[-1]
    store = Store(tmp_path)
    run = store.get_run(run_id)
    top2 = {(r["query_id"], r["doc_id"]) for r in store.results_with_grades(run_id) if r["rank"] <= 2}
    sources = {(q["query_id"], q["source_doc_id"]) for q in store.queries(run_id)}
    query_of = {q["text"]: q["query_id"] for q in store.queries(run_id)}
    docs = store.documents(run_id, sorted({d for _, d in top2 | sources}))
    doc_of = {f"{d['title']} {d['text']}": doc_id for doc_id, d in docs.items()}
    judged_ids = [(query_of[q], doc_of[d]) for q, d in recorder.judged_pairs]
    assert len(judged_ids) == len(set(judged_ids)) and set(judged_ids) == top2 | sources
    assert run.config["pool_depth"] == {"default": 2, "per_strategy": {}}
    assert run.stats["pool"]["pairs"] == len(top2)
    [judged] = [r["value"] for r in store.metric_summary(run_id, 5) if r["metric"] == "judged"]
    assert judged < 1.0  # ranks 3-5 are unjudged unless they are a query's source


def test_a_pool_depth_without_a_judge_is_refused_in_one_line(tmp_path, tiny_beir, capsys):
    assert main(["evaluate", str(tiny_beir), "--qrels", "--pool-depth", "5", "--data-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip()
    assert "--pool-depth goes with --llm" in err and "judge-pool RUN" in err and len(err.splitlines()) == 1


def test_the_cost_estimate_counts_the_pool_not_every_kept_result(tiny_beir):
    from dataclasses import replace

    from searchgrade.engine.collections import load_collection
    from searchgrade.engine.llm.settings import LLMSettings
    from searchgrade.engine.run.config import RunConfig
    from searchgrade.engine.run.estimate import estimate_cost

    collection = load_collection(tiny_beir)
    config = RunConfig(mode="qrels", k=5, strategies=("fulltext", "ann"), judge_unjudged=True,
                       llm=LLMSettings(model="fake", base_url="http://127.0.0.1:9/v1"))
    everything = estimate_cost(collection, config, None).judge.calls
    pooled = estimate_cost(collection, replace(config, pool_depth=PoolDepth(2, {"ann": 1}).to_json()), None)
    assert everything == 5 * 10 and pooled.judge.calls == 5 * 3  # 5 queries x (2 + 1) places
