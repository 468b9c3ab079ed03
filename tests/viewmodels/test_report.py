from __future__ import annotations

import io
import zipfile

import numpy as np
import pandas as pd
import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.store import Store
from searchgrade.viewmodels.ann_index import ann_index_text
from searchgrade.viewmodels.common import WITH, WITHOUT, metric_names, stored_cutoffs
from searchgrade.viewmodels.compare import compare_runs
from searchgrade.viewmodels.downloads import per_query_csv, results_csv, trec_zip
from searchgrade.viewmodels.drilldown import query_detail
from searchgrade.viewmodels.evaluate import CollectionOverview, mode_status
from searchgrade.viewmodels.llm_panel import kappa_reading
from searchgrade.viewmodels.recompute import per_query_values, recompute_values
from searchgrade.viewmodels.results import relevance_by_position, results_view
from searchgrade.viewmodels.runs import run_choices
from searchgrade.viewmodels.trends import trend
from tests.pages.synthetic import tiny_spec, write_run

# DCG@3 of the tiny run (linear gain, 1/log2(rank + 1)):
# ann        q1 [0, 3, -] = 3/1.585 = 1.8928   q2 [2, -, 3] = 2 + 3/2 = 3.5
# fulltext   q1 [3, 1, -] = 3.6309             q2 [-, 3, 2] = 1.8928 + 1 = 2.8928
# ann_rerank q1 [3, 0, -] = 3.0                q2 [3, 2, -] = 3 + 2/1.585 = 4.2619
ANN, FULLTEXT, RERANK = (1.8928 + 3.5) / 2, (3.6309 + 2.8928) / 2, (3.0 + 4.2619) / 2


@pytest.fixture
def store(tmp_path) -> Store:
    return Store(tmp_path)


@pytest.fixture
def run_id(store) -> str:
    return write_run(store, tiny_spec())


def test_headline_is_the_best_dcg_its_strategy_and_the_number_of_queries(store, run_id):
    view = results_view(store, run_id)
    assert view.k == 3  # the run kept 3 results, so DCG@3 stands in for DCG@10
    assert view.headline.value == pytest.approx(RERANK, abs=1e-4)
    assert view.headline.strategy == "ann_rerank"
    assert view.headline.n_queries == 2


def test_with_without_table_pairs_each_strategy_with_its_reranked_twin(store, run_id):
    table = results_view(store, run_id).metric_table.set_index("Strategy")
    assert table.loc["ANN (dense)", WITHOUT] == pytest.approx(ANN, abs=1e-4)
    assert table.loc["ANN (dense)", WITH] == pytest.approx(RERANK, abs=1e-4)
    assert table.loc["ANN (dense)", "Change"] == pytest.approx(RERANK - ANN, abs=1e-4)
    assert pd_isna(table.loc["Full-text (BM25)", WITH])
    assert "Hybrid (RRF)" not in table.index


def pd_isna(value) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


def test_relevance_by_position_is_the_mean_grade_at_each_rank(store, run_id):
    frame = results_view(store, run_id).by_position
    ann = frame[frame["strategy"] == "ann"].set_index("rank")["mean_grade"]
    # rank 1: d3 (0) and d4 (2); rank 2: d1 (3), d6 (unjudged, 0); rank 3: d5 (-), d2 (3).
    assert ann.to_dict() == {1: 1.0, 2: 1.5, 3: 1.5}
    assert frame["strategy"].unique().tolist() == ["ann", "fulltext", "ann_rerank"]


def test_best_and_worst_queries_by_mean_relevance(store, run_id):
    view = results_view(store, run_id)
    # q1: (1 + 4/3 + 1) / 3 = 1.111; q2: 5/3 for every strategy.
    # With two queries, each is listed once: q2 best, q1 worst.
    assert view.best_queries["query_id"].tolist() == ["q2"]
    assert view.worst_queries["query_id"].tolist() == ["q1"]
    assert view.worst_queries.iloc[0]["mean_value"] == pytest.approx(10 / 9)
    assert view.worst_queries.iloc[0]["best_strategy"] == "Full-text (BM25)"


def test_relevance_distribution_is_in_percent_of_the_top_k(store, run_id):
    dist = results_view(store, run_id).distribution.set_index("Strategy")
    # ann top 3: q1 [0, 3, -], q2 [2, -, 3]: grade 3 in 2 of 6, >= 2 in 3 of 6.
    assert dist.loc["ANN (dense)", "% highly relevant (grade 3)"] == pytest.approx(100 / 3)
    assert dist.loc["ANN (dense)", "% relevant (grade ≥ 2)"] == pytest.approx(50.0)
    assert dist.loc["ANN (dense)", "% not relevant (grade < 2)"] == pytest.approx(50.0)


def test_binary_labels_drop_the_highly_relevant_column(store):
    spec = tiny_spec(threshold=1)
    spec.qrels = {q: {d: min(g, 1) for d, g in judged.items()} for q, judged in spec.qrels.items()}
    view = results_view(store, write_run(store, spec))
    assert "% highly relevant (grade 3)" not in view.distribution.columns


def test_reranker_table_tests_the_pair_over_the_same_queries(store, run_id):
    table = results_view(store, run_id).reranker_table
    [row] = table.to_dict("records")
    assert row["strategy"] == "ann"
    assert row["Change"] == pytest.approx(RERANK - ANN, abs=1e-4)
    # Two queries, both improved: too few for any verdict over the page's 2 comparisons (no test of
    # two queries can reach 0.05 / 2), so no interval and p = 1.
    assert row["Comparisons"] == 2 and np.isnan(row["CI low"]) and np.isnan(row["CI high"])
    assert row["p-value"] == 1.0
    assert row["Verdict"] == "not distinguishable"
    assert (row["Queries improved"], row["Queries hurt"], row["Unchanged"]) == (2, 0, 0)


def test_significance_and_recommendations_are_said_in_words(store, run_id):
    view = results_view(store, run_id)
    assert [s.subject for s in view.significance] == ["ann", "fulltext"]
    assert all("cannot be told apart on so few queries" in s.text
               and "no 95% CI from 2 queries: a verdict over 2 comparisons needs at least 7" in s.text
               for s in view.significance)
    text = " ".join(s.text for s in view.recommendations)
    assert "No clear winner on DCG@3: ANN + reranker is the highest (3.631" in text
    assert "the reranker changes DCG@3 by +0.935" in text
    # q2's d5 (grade 2) is in no strategy's results.
    assert "1 of 4 relevant documents (25%), over 1 query, are never retrieved" in text
    assert "a reranker cannot fix that" in text
    # natural q1 on ANN: 1.89 vs 3.63 on full-text.
    assert "Natural queries do poorly on ANN (dense)" in text


def test_a_significant_reranker_gain_is_called_significant(store):
    spec = tiny_spec()
    n = 12
    from searchgrade.core.records import Query

    spec.queries = [Query(f"q{i}", f"query {i}", "qrels", None) for i in range(n)]
    spec.qrels = {f"q{i}": {"d1": 3, "d2": 0} for i in range(n)}
    spec.rankings = {"hybrid": {f"q{i}": ["d2", "d1"] for i in range(n)},
                     "hybrid_rerank": {f"q{i}": ["d1", "d2"] for i in range(n)}}
    spec.k = 2
    view = results_view(store, write_run(store, spec))
    text = " ".join(s.text for s in view.recommendations)
    # Every query gains 3 - 3/log2(3) = 1.1072.
    # One comparison, every difference equal: a zero-width interval that excludes 0.
    assert ("On Hybrid (RRF), the reranker adds +1.107 DCG@2 (95% CI +1.107 to +1.107; p < 0.001, significant"
            in text)


def test_a_cut_off_the_run_did_not_store_is_recomputed_from_stored_grades(store, run_id):
    run = store.get_run(run_id)
    assert 2 not in stored_cutoffs(store, run_id)
    values = per_query_values(store, run, "dcg", 2).set_index(["strategy", "query_id"])["value"]
    # ann q2 top 2 [2, -] = 2.0; fulltext q1 [3, 1] = 3 + 1/1.585.
    assert values[("ann", "q2")] == pytest.approx(2.0)
    assert values[("fulltext", "q1")] == pytest.approx(3 + 1 / 1.5849625)
    stored = per_query_values(store, run, "dcg", 3)
    recomputed = recompute_values(store, run, ["dcg"], 3)
    assert stored.sort_values(["strategy", "query_id"])["value"].tolist() == pytest.approx(
        recomputed.sort_values(["strategy", "query_id"])["dcg"].tolist())


def test_k_above_the_depth_is_refused_with_the_fix(store, run_id):
    with pytest.raises(SearchGradeError, match="kept 3 results per query"):
        results_view(store, run_id, "dcg", 5)


def test_compare_runs_pairs_queries_by_id(store, run_id):
    spec = tiny_spec(name="better")
    spec.rankings = {**spec.rankings, "fulltext": {"q1": ["d1", "d2", "d6"], "q2": ["d2", "d6", "d4"]}}
    other = write_run(store, spec)
    result = compare_runs(store, run_id, other, "dcg", 3)
    deltas = result.deltas.set_index("strategy")
    assert deltas.loc["fulltext", "Change"] == pytest.approx((4.0 - 2.8928) / 2, abs=1e-4)
    assert deltas.loc["ann", "Change"] == 0 and deltas.loc["ann", "p-value"] == 1.0
    assert result.changed[["Strategy", "Query id"]].values.tolist() == [["Full-text (BM25)", "q2"]]
    assert result.n_shared == 2


def test_trend_lists_complete_runs_oldest_first(store, run_id):
    second = write_run(store, tiny_spec(name="second"))
    frame = trend(store, "dcg", 3)
    assert frame["run_id"].unique().tolist() == [run_id, second]
    assert set(frame["label"]) == {"ANN (dense)", "Full-text (BM25)", "ANN + reranker"}


def test_downloads_are_the_exported_csv_and_trec_files(store, run_id):
    csv = per_query_csv(store, run_id).decode()
    # The metric's ir_measures name beside each value ("" where ir_measures has none), then what the
    # strategy's top 1 for the query is and, for a failed query, its cause.
    assert csv.splitlines()[0] == "run_id,strategy,query_id,metric,k,value,measure,top1,cause"
    rows = [line.split(",") for line in csv.splitlines()[1:]]
    assert {r[6] for r in rows if r[3:5] == ["ndcg", "3"]} == {"nDCG@3"}
    assert {r[6] for r in rows if r[3:5] == ["precision", "3"]} == {"P(rel=2)@3"}
    # ann's q1: its top 1 (d3) graded 0, d1 (grade 3) at rank 2; q2's top 1 relevant.
    ann_dcg3 = {r[2]: (round(float(r[5]), 4), r[7], r[8]) for r in rows if r[1] == "ann" and r[3:5] == ["dcg", "3"]}
    assert ann_dcg3 == {"q1": (1.8928, "judged_not_relevant", "ranked_too_low"), "q2": (3.5, "relevant", "")}
    results = results_csv(store, run_id).decode().splitlines()
    assert results[:2] == ["run_id,strategy,query_id,rank,doc_id,score,grade", f"{run_id},ann,q1,1,d3,1.0,0"]
    with zipfile.ZipFile(io.BytesIO(trec_zip(store, run_id))) as zf:
        assert sorted(zf.namelist()) == ["ann.trec", "ann_rerank.trec", "fulltext.trec"]
        assert zf.read("ann.trec").decode().splitlines()[0] == f"q1 Q0 d3 1 1.0 {run_id}"


def test_run_choices_are_newest_first_with_name_date_and_collection(store, run_id):
    second = write_run(store, tiny_spec(name="second"))
    choices = run_choices(store)
    assert [c.run_id for c in choices] == [second, run_id]
    assert choices[0].label.startswith("second · tiny · 20")


def test_llm_mode_is_unavailable_with_the_reason(tmp_path):
    overview = CollectionOverview("c", str(tmp_path), 1, 1, 1, True, 0, 1, 1, (), False)
    human, llm, both = mode_status(overview, environ={})
    assert human.available and not llm.available and not both.available
    assert "SEARCHGRADE_LLM_MODEL" in llm.reason


# -- LLM runs: failed judgments (grade NULL), source found, agreement, the LLM endpoint ----------

AGREEMENT = {"n": 7, "labels": [0, 1, 2, 3], "confusion": [[1, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 0],
                                                         [0, 2, 2, 0]],
             "exact": 1 / 7, "kappa": 0.045, "kappa_linear": 0.2, "kappa_quadratic": 0.354,
             "kappa_binary": 0.364}


@pytest.fixture
def llm_run(store) -> str:
    from tests.pages.synthetic import llm_spec

    run_id = write_run(store, llm_spec(stats={"llm": {"pairs": 8, "judge_failures": 2, "model": "fake",
                                                      "prompt_version": "judge_v1-test"}}))
    store.add_llm_usage(run_id, "judge", {"requests": 9, "ok": 6, "failures": 2, "invalid_replies": 3,
                                          "prompt_tokens": 180, "completion_tokens": 72})
    store.add_llm_usage(run_id, "querygen", {"requests": 2, "ok": 2, "cache_hits": 1})
    return run_id


def test_mean_relevance_by_position_leaves_failed_judgments_out(store, llm_run):
    frame = results_view(store, llm_run).by_position.set_index(["strategy", "rank"])
    # ann rank 2: d1 (3) and d6 (failed): 3.0 over one graded result, not (3 + 0) / 2.
    assert frame.loc[("ann", 1), "mean_grade"] == pytest.approx(1.0)
    assert frame.loc[("ann", 2), ["mean_grade", "n", "judge_failed"]].tolist() == [3.0, 1, 1]
    # fulltext rank 1: both judgments failed, so there is no mean grade at all (not 0).
    assert pd_isna(frame.loc[("fulltext", 1), "mean_grade"])
    assert frame.loc[("fulltext", 1), "judge_failed"] == 2
    assert frame.loc[("fulltext", 3), "mean_grade"] == pytest.approx(1.5)


def test_unjudged_results_still_count_as_zero_by_position(store, run_id):
    frame = relevance_by_position(store, store.get_run(run_id), 3).set_index(["strategy", "rank"])
    # Qrels run: fulltext rank 1 holds d1 (3) and d6 (no judgment, 0).
    assert frame.loc[("fulltext", 1), "mean_grade"] == pytest.approx(1.5)
    assert frame["judge_failed"].sum() == 0


def test_recomputed_metrics_treat_failed_judgments_as_the_stored_ones_do(store, llm_run):
    run = store.get_run(llm_run)
    metrics = ["dcg", "mean_relevance", "judged", "pct_relevant", "pct_highly_relevant"]
    stored = pd.DataFrame(store.metric_values(llm_run, k=3)).pivot(
        index=["strategy", "query_id"], columns="metric", values="value")[metrics]
    recomputed = recompute_values(store, run, metrics, 3).set_index(["strategy", "query_id"])
    assert recomputed.loc[stored.index, metrics].to_numpy() == pytest.approx(stored.to_numpy())
    # ann q1 top 3 [0, 3, failed]: mean relevance over the graded two, 1.5; judged 2 of 3.
    assert recomputed.loc[("ann", "q1"), "mean_relevance"] == pytest.approx(1.5)
    assert recomputed.loc[("ann", "q1"), "judged"] == pytest.approx(2 / 3)


def test_distribution_at_a_cut_off_not_stored_leaves_failed_judgments_out(store, llm_run):
    view = results_view(store, llm_run, "dcg", 2)
    assert 2 not in stored_cutoffs(store, llm_run)
    relevance = view.relevance_table.set_index("Strategy")[WITHOUT]
    # mean relevance@2: ann q1 [0, 3] 1.5, q2 [2, failed] 2.0; fulltext q1 [failed, 3], q2 [failed, 3].
    assert relevance["ANN (dense)"] == pytest.approx(1.75)
    assert relevance["Full-text (BM25)"] == pytest.approx(3.0)
    dist = view.distribution.set_index("Strategy")
    # ann grade 3: q1 1 of 2 graded, q2 0 of 1 graded -> 25%.
    assert dist.loc["ANN (dense)", "% highly relevant (grade 3)"] == pytest.approx(25.0)
    assert dist.loc["Full-text (BM25)", "% judged"] == pytest.approx(50.0)
    # The failed top 1 still counts as 0 in DCG@2: fulltext q1 [0, 3] = 3 / log2(3).
    dcg = per_query_values(store, store.get_run(llm_run), "dcg", 2).set_index(
        ["strategy", "query_id"])["value"]
    assert dcg[("fulltext", "q1")] == pytest.approx(3 / 1.5849625)


def test_source_found_is_read_where_stored_and_recomputed_elsewhere(store, llm_run):
    at3 = results_view(store, llm_run, "dcg", 3).llm.source_found.set_index("strategy")
    assert at3["value"].to_dict() == {"ann": 1.0, "fulltext": 1.0}
    # k = 2 was not stored: ann finds q1's source (d1) at rank 2 but q2's (d2) only at rank 3.
    at2 = results_view(store, llm_run, "dcg", 2).llm.source_found.set_index("strategy")
    assert at2["value"].to_dict() == {"ann": 0.5, "fulltext": 1.0}
    assert "source_found" in metric_names(store.get_run(llm_run))


def test_llm_panel_shows_model_calls_tokens_and_each_judge_failure(store, llm_run):
    view = results_view(store, llm_run)
    panel = view.llm
    assert (panel.judge_model, panel.judge_prompt) == ("fake", "judge_v1-test")
    usage = panel.usage.set_index("Stage")
    assert usage.index.tolist() == ["Query generation", "Judge"]
    assert usage.loc["Judge", ["Calls", "Failed", "Prompt tokens", "Completion tokens"]].tolist() == [9, 2, 180, 72]
    assert usage.loc["Query generation", "Cache hits"] == 1
    assert panel.judge_failures == 2 and panel.failures_in_metrics
    assert panel.failures[["Query id", "Doc id", "Reason"]].values.tolist() == [
        ["q1", "d5", "judge failure: invalid reply for d5"], ["q2", "d6", "judge failure: invalid reply for d6"]]
    text = " ".join(s.text for s in view.recommendations)
    assert "2 judgments failed (25% of 8 pairs): they count as 0 in DCG" in text
    assert panel.agreement is None


def test_drilldown_shows_the_judges_reason_and_a_failed_judgment_as_such(store, llm_run):
    detail = query_detail(store, llm_run, "q1")
    fulltext = detail.results["fulltext"]
    assert pd_isna(fulltext.loc[0, "Grade"])
    assert fulltext.loc[0, ["Grade from", "Judge's reason"]].tolist() == [
        "judge failed", "judge failure: invalid reply for d5"]
    assert fulltext.loc[1, ["Grade", "Grade from", "Judge's reason"]].tolist() == [3, "LLM judge", "reason for d1"]
    assert detail.source["doc_id"] == "d1" and detail.query_type == "natural"
    assert detail.source_ranks == {"ann": 2, "fulltext": 2}


def test_judge_vs_human_agreement_is_read_from_the_run_with_kappas_in_words(store):
    run_id = write_run(store, tiny_spec(stats={"agreement": AGREEMENT}))
    view = results_view(store, run_id)
    agreement = view.llm.agreement
    assert agreement.n == 7
    kappas = agreement.kappas.set_index("Measure")
    assert kappas.loc["Weighted kappa (linear)", "Value"] == pytest.approx(0.2)
    assert kappas.loc["Weighted kappa (linear)", "Reading"] == "slight"
    assert kappas.loc["Cohen's kappa", "Reading"] == "slight"
    assert agreement.confusion.loc["Judge 3", "Human 1"] == 2
    assert agreement.confusion.shape == (4, 4)
    text = " ".join(s.text for s in view.recommendations)
    assert "agreement with the human labels is slight (linear weighted kappa 0.20 over 7 pairs" in text
    assert kappa_reading(0.7) == "substantial" and kappa_reading(None).startswith("undefined")


def test_keyword_queries_failing_on_ann_recommend_hybrid(store):
    from searchgrade.core.records import Document, Query
    from tests.pages.synthetic import RunSpec

    docs = [Document(f"d{i}", f"Doc {i}", "text") for i in range(8)]
    queries = [Query("n1", "what is one", "natural", "d0"), Query("n2", "what is two", "natural", "d1"),
               Query("k1", "one", "keyword", "d2"), Query("k2", "two", "keyword", "d3")]
    qrels = {q.query_id: {q.source_doc_id: 3} for q in queries}
    hit = {q.query_id: [q.source_doc_id, "d6"] for q in queries}
    miss = {q.query_id: ["d6", "d7"] for q in queries}
    rankings = {
        "ann": {q: (hit if q.startswith("n") else miss)[q] for q in hit},
        "fulltext": {q: (hit if q.startswith("k") else miss)[q] for q in hit},
        "hybrid": hit,
    }
    run_id = write_run(store, RunSpec(docs, queries, qrels, rankings, k=2, mode="llm"))
    text = [s.text for s in results_view(store, run_id).recommendations]
    keyword = next(t for t in text if t.startswith("Keyword queries"))
    assert keyword.startswith("Keyword queries do poorly on ANN (dense) (DCG@2 0.00 against 3.00")
    assert "use hybrid" in keyword


def test_llm_modes_need_a_model_and_an_endpoint(tmp_path):
    overview = CollectionOverview("c", str(tmp_path), 1, 1, 1, True, 0, 1, 1, (), False)

    def available(**kwargs):
        return {m.mode: m.available for m in mode_status(overview, **kwargs)}

    assert available(environ={}) == {"qrels": True, "llm": False, "qrels_llm": False}
    # SEARCHGRADE_LLM_BASE_URL is read by nothing: it does not make an endpoint.
    assert not available(environ={"SEARCHGRADE_LLM_MODEL": "m", "SEARCHGRADE_LLM_BASE_URL": "http://x/v1"})["llm"]
    assert available(environ={"SEARCHGRADE_LLM_MODEL": "m", "OPENAI_BASE_URL": "http://x/v1"})["qrels_llm"]
    assert available(environ={"SEARCHGRADE_LLM_MODEL": "m", "OPENAI_API_KEY": "sk-secret-123"})["llm"]
    # A model and a base URL typed in the form are enough; an emptied model field is not.
    assert available(environ={}, model="m", base_url="http://127.0.0.1:9/v1")["llm"]
    assert not available(environ={"SEARCHGRADE_LLM_MODEL": "m", "OPENAI_BASE_URL": "http://x/v1"}, model="")["llm"]
    reasons = " ".join(m.reason for m in mode_status(
        overview, environ={"SEARCHGRADE_LLM_MODEL": "m", "OPENAI_API_KEY": "sk-secret-123"}))
    assert "sk-secret-123" not in reasons
    no_qrels = CollectionOverview("c", str(tmp_path), 1, 0, 0, False, None, None, None, (), False)
    modes = {m.mode: m for m in mode_status(no_qrels, environ={}, model="m", base_url="http://x/v1")}
    assert modes["llm"].available and not modes["qrels_llm"].available
    assert "no qrels.tsv" in modes["qrels_llm"].reason


@pytest.mark.parametrize("measured, expected", [
    ({"index": "flat", "exact": True},
     "ANN index: exact search (every document vector compared): nothing lost to approximation"),
    ({"index": "ivf", "k": 10, "queries": 200, "recall": 0.97},
     "ANN index: inverted-file (IVF), approximate: it finds 97.0% of what exact search finds "
     "(recall@10 on 200 sampled queries)"),
    # 1,999 of 2,000 neighbours found: not rounded up to a perfect 100%.
    ({"index": "hnsw", "k": 10, "queries": 200, "recall": 0.9995},
     "ANN index: HNSW graph, approximate: it finds 99.9% of what exact search finds "
     "(recall@10 on 200 sampled queries)"),
])
def test_the_ann_index_cost_is_said_in_words(measured, expected):
    assert ann_index_text({"ann_recall": measured}) == expected


def test_a_run_without_ann_says_nothing_about_an_ann_index():
    assert ann_index_text({"queries": 3}) is None


def test_judge_corrected_estimates_leave_a_strategys_failed_queries_out(store):
    from searchgrade.core.records import Query
    from searchgrade.engine.labels.ratings import new_rating, run_labels
    from searchgrade.viewmodels.trust import corrected_estimates
    from tests.pages.synthetic import llm_spec

    spec = llm_spec()
    spec.queries = [*spec.queries, Query("q3", "gamma", "keyword", "d3")]
    spec.qrels["q3"] = {"d3": 2, "d4": 0, "d5": 1}
    for strategy in ("ann", "fulltext"):
        spec.rankings[strategy]["q3"] = ["d3", "d4", "d5"]
    run_id = write_run(store, spec)
    # Full-text failed on q3 (a backend error): no results, no metric values, a failed query.
    with store.transaction() as con:
        for table in ("results", "metric_values"):
            con.execute(f"DELETE FROM {table} WHERE run_id = ? AND strategy = 'fulltext' AND query_id = 'q3'",  # noqa: S608 - the test's own table names
                        [run_id])
        con.execute("INSERT INTO failed_queries VALUES (?, 'fulltext', 'q3', 'HTTP 500', 3)", [run_id])
    store.add_labels([new_rating(collection_name="tiny", query_id=q.query_id, query_text=q.text, doc_id=f"d{d}",
                                 content_hash=None, grade=1, rater="Ada")
                      for q in spec.queries for d in range(1, 7)])
    run = store.get_run(run_id)
    frame = corrected_estimates(store, run, run_labels(store, run), 3).set_index(["strategy", "metric"])
    assert frame.loc[("ann", "dcg"), ["n_rated", "n_all"]].tolist() == [3, 3]
    # Not the 0 of an empty ranking on q3: full-text has two queries, the ones it answered.
    assert frame.loc[("fulltext", "dcg"), ["n_rated", "n_all"]].tolist() == [2, 2]
    llm_dcg = store.metric_frame(run_id, "dcg", 3).query("strategy == 'fulltext'")["value"]
    assert frame.loc[("fulltext", "dcg"), "llm"] == pytest.approx(llm_dcg.mean())
