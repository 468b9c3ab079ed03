from __future__ import annotations

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.collections import load_collection
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.pipeline import resume_run, run_evaluation
from searchgrade.engine.run.strategies import known_strategies
from searchgrade.engine.store import Store
from searchgrade.indexes.settings import IndexSettings

STRATEGIES = known_strategies()

BASE = ("ann", "fulltext", "hybrid")


def _config(tmp_path, **overrides) -> RunConfig:
    fields = dict(name="tiny", strategies=STRATEGIES, n_bootstrap=500,
                  index=IndexSettings(reranker_model=str(tmp_path / "no-such-reranker")))
    fields.update(overrides)
    return RunConfig(**fields)


def test_run_completes_with_every_metric_and_records_skipped_rerankers(tmp_path, tiny_beir):
    store = Store(tmp_path / "data")
    collection = load_collection(tiny_beir)
    outcome = run_evaluation(collection, _config(tmp_path, k=3, depth=5), store, tmp_path / "data")
    run = store.get_run(outcome.run_id)
    assert run.status == "complete"
    assert set(run.skipped) == {"ann_rerank", "fulltext_rerank", "hybrid_rerank"}
    assert all("--reranker-model" in reason for reason in run.skipped.values())
    assert (run.threshold, run.grade_max, run.label_source) == (1, 2, "human")
    assert run.stats["queries"] == 5
    assert set(run.timings) == {"index", "search", "grade", "diagnose", "metrics"}
    summary = store.metric_summary(run.run_id)
    assert {r["strategy"] for r in summary} == set(BASE)
    assert {r["k"] for r in summary} == {1, 3, 5}
    for r in summary:
        assert r["ci_low"] <= r["value"] <= r["ci_high"]
        assert r["n"] == 5
    # Five results kept per query (the depth), so metrics at k <= 5 come from stored results.
    rows = store.results_with_grades(run.run_id, "ann", "q1")
    assert [r["rank"] for r in rows] == [1, 2, 3, 4, 5]


def test_every_strategy_finds_the_obvious_document(tmp_path, tiny_beir):
    store = Store(tmp_path / "data")
    outcome = run_evaluation(load_collection(tiny_beir), _config(tmp_path, strategies=BASE),
                             store, tmp_path / "data")
    found = {r["strategy"]: r["value"] for r in store.metric_summary(outcome.run_id, 10)
             if r["metric"] == "recall_single_hit"}
    assert found == dict.fromkeys(BASE, 1.0)


def test_the_run_records_what_its_ann_index_loses_against_exact_search(tmp_path, tiny_beir):
    store = Store(tmp_path / "data")
    exact = run_evaluation(load_collection(tiny_beir), _config(tmp_path, strategies=("hybrid",)),
                           store, tmp_path / "data")
    assert store.get_run(exact.run_id).stats["ann_recall"] == {"index": "flat", "exact": True}
    # 12 documents: 3 IVF lists, all visited (nprobe is capped at nlist), so nothing is missed.
    ivf = run_evaluation(load_collection(tiny_beir),
                         _config(tmp_path, strategies=("ann",),
                                 index=IndexSettings(ann_index="ivf", reranker_model="none")),
                         store, tmp_path / "data")
    run = store.get_run(ivf.run_id)
    assert run.stats["ann_recall"] == {"index": "ivf", "k": 10, "queries": 5, "recall": 1.0}
    assert "ann_recall" in run.stats["index_timings"]
    fulltext = run_evaluation(load_collection(tiny_beir), _config(tmp_path, strategies=("fulltext",)),
                              store, tmp_path / "data")
    assert "ann_recall" not in store.get_run(fulltext.run_id).stats


def test_unjudged_results_count_as_zero_and_show_in_judged(tmp_path, tiny_beir):
    store = Store(tmp_path / "data")
    outcome = run_evaluation(load_collection(tiny_beir), _config(tmp_path, strategies=("ann",)),
                             store, tmp_path / "data")
    judged = {r["query_id"]: r["value"] for r in store.metric_values(outcome.run_id, "judged", 10)}
    # 12 documents, 2 judged per query, 10 retrieved: at most 2 of the top 10 are judged.
    assert all(value <= 0.2 + 1e-9 for value in judged.values())


def test_failure_mid_run_marks_the_run_failed_and_stores_no_results(tmp_path, tiny_beir, monkeypatch):
    from searchgrade.indexes.builtin import fulltext

    def broken(self, query, k):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(fulltext.FulltextSearcher, "search_one", broken)
    store = Store(tmp_path / "data")
    with pytest.raises(RuntimeError):
        run_evaluation(load_collection(tiny_beir), _config(tmp_path, strategies=("fulltext",)),
                       store, tmp_path / "data")
    (run,) = store.list_runs()
    assert run.status == "failed" and "disk on fire" in run.error
    assert "index" in run.timings
    assert store.results_with_grades(run.run_id) == []
    assert store.metric_summary(run.run_id) == []


def test_ctrl_c_marks_the_run_cancelled_and_resume_finishes_it(tmp_path, tiny_beir, monkeypatch):
    from searchgrade.indexes.builtin import fulltext

    search = fulltext.FulltextSearcher.search_one

    def interrupted(self, query, k):
        raise KeyboardInterrupt

    monkeypatch.setattr(fulltext.FulltextSearcher, "search_one", interrupted)
    store = Store(tmp_path / "data")
    collection = load_collection(tiny_beir)
    with pytest.raises(KeyboardInterrupt):
        run_evaluation(collection, _config(tmp_path, strategies=("fulltext",)), store, tmp_path / "data")
    (run,) = store.list_runs()
    assert run.status == "cancelled" and "Ctrl-C" in run.error and "search" in run.error
    assert "index" in run.timings  # what was done is kept
    monkeypatch.setattr(fulltext.FulltextSearcher, "search_one", search)
    outcome = resume_run(run.run_id, store, tmp_path / "data", collection=collection)
    assert outcome.status == "complete" == store.get_run(run.run_id).status
    assert store.metric_summary(run.run_id)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"k": 0}, "--k of 0"),
        ({"k": 10, "depth": 5}, "--depth of 5 is smaller than --k of 10"),
        ({"strategies": ("ann", "bm42")}, "unknown strategies"),
        ({"threshold": 0}, "--threshold of 0"),
        ({"threshold": 3}, "above the highest grade"),
        ({"max_queries": 0}, "--max-queries of 0"),
    ],
)
def test_bad_run_options_fail_before_anything_is_stored(tmp_path, tiny_beir, overrides, message):
    store = Store(tmp_path / "data")
    with pytest.raises(SearchGradeError, match=message):
        run_evaluation(load_collection(tiny_beir), _config(tmp_path, **overrides), store, tmp_path / "data")
    assert store.list_runs() == []


def test_collection_without_qrels_says_how_to_add_them(tmp_path, tiny_beir):
    (tiny_beir / "qrels.tsv").unlink()
    store = Store(tmp_path / "data")
    with pytest.raises(SearchGradeError, match="qrels"):
        run_evaluation(load_collection(tiny_beir), _config(tmp_path), store, tmp_path / "data")


def test_query_sample_is_seeded(tmp_path, tiny_beir):
    store = Store(tmp_path / "data")
    collection = load_collection(tiny_beir)
    ids = []
    for _ in range(2):
        outcome = run_evaluation(collection, _config(tmp_path, strategies=("fulltext",), max_queries=3),
                                 store, tmp_path / "data")
        ids.append([q["query_id"] for q in store.queries(outcome.run_id)])
    assert len(ids[0]) == 3 and ids[0] == ids[1]
