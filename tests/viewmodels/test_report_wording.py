"""Numbers that are right and said right (issue 14 item 5), and the run-level summary of Trends.

- every metric has a direction, and best / recommended / beats / improved follow it;
- the paired differences of a page are one family: each interval is a 95% CI adjusted for the m
  comparisons shown, a verdict is significant exactly when that interval excludes 0 (and the
  adjusted p-value, said beside it, is below 0.05), and a difference that is not significant is
  worded neutrally; no word of the page says "Holm";
- Compare pairs a collection's queries on id and generated queries on their text, and explains
  (never a KeyError) when two runs share no query;
- run_summary is written when a run completes and filled for runs that completed before it.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

from searchgrade.core.records import Query, SearchGradeError
from searchgrade.engine.metrics import HIGHER_IS_BETTER, METRICS, REGISTRY, higher_is_better
from searchgrade.engine.run.strategies import label, reranked_of
from searchgrade.engine.store import Store
from searchgrade.viewmodels.common import best_row
from searchgrade.viewmodels.compare import compare_runs
from searchgrade.viewmodels.results import results_view
from searchgrade.viewmodels.significance import paired_comparisons, results_pairs, significance
from searchgrade.viewmodels.trends import trend, trend_cutoffs
from tests.pages.synthetic import llm_spec, random_spec, tiny_spec, write_run


@pytest.fixture(scope="module")
def random_run(tmp_path_factory):
    """40 queries, strategies that find relevant documents at different rates."""
    store = Store(tmp_path_factory.mktemp("random"))
    return store, write_run(store, random_spec(40, n_docs=300, seed=5), n_bootstrap=200)


# -- directions


def test_every_metric_has_a_direction_and_share_not_relevant_is_lower_better():
    assert set(HIGHER_IS_BETTER) == set(REGISTRY) == {*METRICS, "source_found"}
    # The RBP residual: how much RBP could still rise were the holes relevant (less is surer).
    assert [m for m, higher in HIGHER_IS_BETTER.items() if not higher] == ["pct_not_relevant", "rbp_residual"]
    assert higher_is_better("source_found")
    with pytest.raises(SearchGradeError, match="unknown metric .dgc."):
        higher_is_better("dgc")


def test_best_row_takes_the_smallest_value_where_lower_is_better():
    rows = pd.DataFrame({"strategy": ["ann", "fulltext", "hybrid"], "value": [0.4, 0.2, 0.2]})
    assert best_row(rows, "pct_not_relevant")["strategy"] == "fulltext"  # ties: the first listed
    assert best_row(rows, "pct_relevant")["strategy"] == "ann"


def test_results_at_a_lower_better_metric_recommend_and_beat_with_the_lowest(random_run):
    store, run_id = random_run
    view = results_view(store, run_id, "pct_not_relevant", 10)
    lowest = view.metric_summary.loc[view.metric_summary["value"].idxmin(), "strategy"]
    first = view.recommendations[0].text
    assert view.headline.label == label(lowest) and f"{label(lowest)}" in first and "the lowest" in first
    compared = [s for s in view.significance if s.subject]
    assert compared and all(s.text.startswith(label(lowest)) for s in compared)
    assert all("lower is better" in s.text for s in compared)
    beaten = [s for s in compared if " beats " in s.text]
    assert beaten  # the strategies differ a lot on 40 queries
    values = view.metric_summary.set_index("strategy")["value"]
    assert all(values[s.subject] > values[lowest] for s in beaten)


def test_a_reranker_that_lowers_share_not_relevant_improves_queries(random_run):
    store, run_id = random_run
    view = results_view(store, run_id, "pct_not_relevant", 10)
    table = view.reranker_table.set_index("strategy")
    # Every retrieval strategy of the run has its reranked twin there: one row each to check.
    assert sorted(table.index) == ["ann", "fulltext", "hybrid"]
    wide = (pd.DataFrame(store.metric_values(run_id, metric="pct_not_relevant", k=10))
            .pivot(index="query_id", columns="strategy", values="value"))
    for base, row in table.iterrows():
        change = wide[reranked_of(base)] - wide[base]
        assert row["Queries improved"] == (change < -1e-12).sum() > 0
        assert row["Queries hurt"] == (change > 1e-12).sum()


# -- one family per page, and wording


def _rows(values: dict[str, float]) -> pd.DataFrame:
    return pd.DataFrame([{"strategy": s, "label": label(s), "value": v, "ci_low": v, "ci_high": v, "n": 12}
                         for s, v in values.items()])


#: hybrid - ann on 12 queries: significant alone (95% CI +0.025 to +0.500), not once adjusted for
#: two comparisons (the interval at level 1 - 0.05/2 reaches below 0).
SHIFT = [0.3, 0.2, 0.6, 0.3, -0.1, 0.5, 1.0, 0.8, -0.2, -0.5, -0.1, 0.3]


def test_a_difference_significant_alone_is_not_once_adjusted_over_the_page():
    wide = pd.DataFrame({"hybrid": SHIFT, "ann": [0.0] * 12, "fulltext": SHIFT},
                        index=pd.Index([f"q{i}" for i in range(12)], name="query_id"))
    alone = paired_comparisons(wide, [("hybrid", "ann")])[("hybrid", "ann")]
    tested = paired_comparisons(wide, [("hybrid", "ann"), ("hybrid", "fulltext")])
    paired = tested[("hybrid", "ann")]
    assert alone.significant and alone.ci_low > 0 and alone.p_value < 0.05 and alone.m == 1
    assert not paired.significant and paired.ci_low < 0 < paired.ci_high and paired.p_value >= 0.05
    assert paired.m == 2 and paired.p_value == pytest.approx(min(1.0, 2 * alone.p_value))
    sentences = significance(_rows({"hybrid": 0.26, "ann": 0.0, "fulltext": 0.26}), "ndcg", 10, tested)
    about_ann = next(s for s in sentences if s.subject == "ann")
    assert about_ann.kind == "info" and "not distinguishable" in about_ann.text
    assert (f"(95% CI {paired.ci_low:+.3f} to {paired.ci_high:+.3f}, adjusted for 2 comparisons; "
            f"p = {paired.p_value:.3f}; 12 queries)") in about_ann.text
    said_alone = significance(_rows({"hybrid": 0.26, "ann": 0.0}), "ndcg", 10,
                              paired_comparisons(wide, [("hybrid", "ann")]))[0].text
    assert said_alone.startswith("Hybrid (RRF) beats ANN (dense) by +0.258 NDCG@10 (95% CI +0.0")
    assert "adjusted" not in said_alone


def test_a_pair_and_its_reverse_are_one_comparison():
    rng = np.random.default_rng(0)
    wide = pd.DataFrame(rng.random((30, 3)), columns=["ann", "fulltext", "hybrid"])
    tested = paired_comparisons(wide, [("ann", "fulltext"), ("fulltext", "ann"), ("ann", "hybrid")])
    assert {t.m for t in tested.values()} == {2}
    there, back = tested[("ann", "fulltext")], tested[("fulltext", "ann")]
    assert (back.ci_low, back.ci_high) == pytest.approx((-there.ci_high, -there.ci_low), abs=1e-12)
    assert back.p_value == there.p_value


def test_the_results_page_adjusts_over_every_comparison_it_shows(random_run):
    store, run_id = random_run
    view = results_view(store, run_id, "ndcg", 10)
    table = view.reranker_table
    excludes = (table["CI low"] > 0) | (table["CI high"] < 0)
    assert (table["Verdict"] == np.where(excludes, "significant", "not distinguishable")).all()
    assert ((table["p-value"] < 0.05) == excludes).all()
    # The best against the 5 others, and each of the 3 reranked pairs not already among them.
    family = {frozenset(p) for p in results_pairs(view.metric_summary, "ndcg", view.strategies)}
    assert len(family) in (7, 8) and len(table) == 3
    assert view.comparisons == len(family) and (table["Comparisons"] == len(family)).all()
    assert all(f"adjusted for {len(family)} comparisons" in s.text for s in view.significance if s.subject)
    assert f"adjusted for {len(family)} comparisons" in view.significance_note
    words = " ".join([view.significance_note, *(s.text for s in [*view.significance, *view.recommendations])])
    assert "Holm" not in words and "95% CI" in words


def test_a_difference_that_is_not_significant_is_worded_neutrally(tmp_path):
    store = Store(tmp_path)
    view = results_view(store, write_run(store, tiny_spec()))  # 2 queries: nothing is significant
    words = " ".join(s.text for s in [*view.significance, *view.recommendations])
    assert "not distinguishable" in words
    assert "worth" not in words and "latency" not in words


# -- Compare: pairing and runs without shared queries


def test_runs_of_a_collection_without_a_shared_query_id_are_explained(tmp_path):
    store = Store(tmp_path)
    a = write_run(store, tiny_spec(name="A"))
    spec = tiny_spec(name="B")
    spec.queries = [Query("x1", "what is alpha", "natural", "d1"), Query("x2", "beta", "keyword", "d2")]
    spec.qrels = {"x1": spec.qrels["q1"], "x2": spec.qrels["q2"]}
    spec.rankings = {s: {"x1": r["q1"], "x2": r["q2"]} for s, r in spec.rankings.items()}
    b = write_run(store, spec)
    result = compare_runs(store, a, b, "dcg", 3)
    assert result.paired_on == "query_id" and result.n_shared == 0
    assert result.deltas.empty and result.changed.empty
    assert "share no query id" in result.refusal


def _llm_run(store, name, ids, texts, fulltext_q2=None) -> str:
    spec = llm_spec(name=name)
    old = ["q1", "q2"]
    spec.queries = [Query(i, t, q.query_type, q.source_doc_id)
                    for i, t, q in zip(ids, texts, spec.queries, strict=True)]
    spec.qrels = {i: spec.qrels[o] for i, o in zip(ids, old, strict=True)}
    spec.failed = {i: spec.failed[o] for i, o in zip(ids, old, strict=True)}
    rankings = {s: dict(r) for s, r in spec.rankings.items()}
    if fulltext_q2 is not None:
        rankings["fulltext"]["q2"] = fulltext_q2
    spec.rankings = {s: {i: r[o] for i, o in zip(ids, old, strict=True)} for s, r in rankings.items()}
    return write_run(store, spec)


def test_llm_runs_are_paired_on_query_text_not_on_generated_ids(tmp_path):
    store = Store(tmp_path)
    a = _llm_run(store, "A", ["g-d1-n1", "g-d2-n1"], ["what is alpha", "beta"])
    # Run B asked the same questions under other ids, and the same ids name other questions.
    b = _llm_run(store, "B", ["g-d2-n1", "g-d9-n1"], ["what is alpha", "beta"], ["d2", "d4", "d6"])
    result = compare_runs(store, a, b, "dcg", 3)
    assert result.paired_on == "text" and result.refusal is None and result.n_shared == 2
    # Full-text's "beta" went from [failed, 3, 2] to [3, 2, failed]: only that query changed.
    assert result.changed[["Strategy", "Query id", "Query"]].values.tolist() == [
        ["Full-text (BM25)", "g-d2-n1", "beta"]]
    assert result.deltas.set_index("strategy").loc["ann", "Change"] == 0


def test_llm_runs_sharing_ids_but_no_question_are_refused_with_queries_from(tmp_path):
    store = Store(tmp_path)
    a = _llm_run(store, "A", ["g-d1-n1", "g-d2-n1"], ["what is alpha", "beta"])
    b = _llm_run(store, "B", ["g-d1-n1", "g-d2-n1"], ["alpha, what is it?", "tell me about beta"])
    result = compare_runs(store, a, b, "dcg", 3)
    assert result.paired_on == "text" and result.n_shared == 0 and result.deltas.empty
    assert f"--queries-from {a}" in result.refusal


def test_a_question_asked_twice_in_one_run_is_left_out_of_the_pairing(tmp_path):
    store = Store(tmp_path)
    a = _llm_run(store, "A", ["g-d1-n1", "g-d2-n1"], ["same", "same"])
    b = _llm_run(store, "B", ["g-d1-n1", "g-d2-n1"], ["same", "other"])
    result = compare_runs(store, a, b, "dcg", 3)
    assert result.n_shared == 0 and result.refusal is not None
    assert any("2 queries are left out" in note for note in result.notes)


# -- run_summary and the page's one open database


def test_trends_read_run_summary_written_when_a_run_completes(tmp_path):
    store = Store(tmp_path)
    first = write_run(store, tiny_spec(name="first"))
    running = store.create_run(name="still running", collection_name="tiny", collection_path="/tmp/tiny",
                               mode="qrels", label_source="human", grade_min=0, grade_max=3, threshold=2,
                               k=3, depth=3, config={})
    with store.connect() as con:
        assert con.execute("SELECT count(*) FROM run_summary WHERE run_id = ?", [running]).fetchone()[0] == 0
        stored = con.execute("SELECT count(*) FROM metric_summary WHERE run_id = ?", [first]).fetchone()[0]
        assert con.execute("SELECT count(*) FROM run_summary WHERE run_id = ?", [first]).fetchone()[0] == stored
    assert trend(store, "dcg", 3)["run_id"].unique().tolist() == [first]
    assert trend_cutoffs(store) == [1, 3]


def test_the_migration_fills_run_summary_for_runs_completed_before_it(tmp_path):
    store = Store(tmp_path)
    run_id = write_run(store, tiny_spec())
    before = trend(store, "dcg", 3)
    with store.connect() as con:  # the database as it was before migration 5
        con.execute("DROP TABLE run_summary")
        con.execute("DELETE FROM schema_version WHERE version = 5")
    migrated = Store(tmp_path)
    assert migrated.schema_version() >= 5
    after = trend(migrated, "dcg", 3)
    assert after["run_id"].unique().tolist() == [run_id]
    pd.testing.assert_frame_equal(after, before)


def test_a_page_keeps_the_database_open_for_its_reads_and_frees_the_file_after(tmp_path, monkeypatch):
    store = Store(tmp_path)
    run_id = write_run(store, tiny_spec())
    held = []
    real_open = store._open
    monkeypatch.setattr(store, "_open", lambda: held.append(store._keeper is not None) or real_open())
    results_view(store, run_id)
    # The first open is the page's; every read after it finds the database already open.
    assert len(held) > 5 and held[0] is False and all(held[1:])
    assert store._keeper is None
    # After the page, another process can write to the file (the CLI running an evaluation).
    code = ("import duckdb, sys; con = duckdb.connect(sys.argv[1]); "
            "con.execute('CREATE TABLE IF NOT EXISTS other_process (x INTEGER)'); con.close()")
    subprocess.run([sys.executable, "-c", code, str(store.path)], check=True, timeout=60)
