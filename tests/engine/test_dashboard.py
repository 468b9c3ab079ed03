from __future__ import annotations

import io
import zipfile

import pytest

from engine import dashboard
from engine.store import Store
from engine.types import SearchGradeError
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
    view = dashboard.results_view(store, run_id)
    assert view.k == 3  # the run kept 3 results, so DCG@3 stands in for DCG@10
    assert view.headline.value == pytest.approx(RERANK, abs=1e-4)
    assert view.headline.strategy == "ann_rerank"
    assert view.headline.n_queries == 2


def test_with_without_table_pairs_each_strategy_with_its_reranked_twin(store, run_id):
    table = dashboard.results_view(store, run_id).metric_table.set_index("Strategy")
    assert table.loc["ANN (dense)", dashboard.WITHOUT] == pytest.approx(ANN, abs=1e-4)
    assert table.loc["ANN (dense)", dashboard.WITH] == pytest.approx(RERANK, abs=1e-4)
    assert table.loc["ANN (dense)", "Change"] == pytest.approx(RERANK - ANN, abs=1e-4)
    assert pd_isna(table.loc["Full-text (BM25)", dashboard.WITH])
    assert "Hybrid (RRF)" not in table.index


def pd_isna(value) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


def test_relevance_by_position_is_the_mean_grade_at_each_rank(store, run_id):
    frame = dashboard.results_view(store, run_id).by_position
    ann = frame[frame["strategy"] == "ann"].set_index("rank")["mean_grade"]
    # rank 1: d3 (0) and d4 (2); rank 2: d1 (3), d6 (unjudged, 0); rank 3: d5 (-), d2 (3).
    assert ann.to_dict() == {1: 1.0, 2: 1.5, 3: 1.5}
    assert frame["strategy"].unique().tolist() == ["ann", "fulltext", "ann_rerank"]


def test_best_and_worst_queries_by_mean_relevance(store, run_id):
    view = dashboard.results_view(store, run_id)
    # q1: (1 + 4/3 + 1) / 3 = 1.111; q2: 5/3 for every strategy.
    # With two queries, each is listed once: q2 best, q1 worst.
    assert view.best_queries["query_id"].tolist() == ["q2"]
    assert view.worst_queries["query_id"].tolist() == ["q1"]
    assert view.worst_queries.iloc[0]["mean_value"] == pytest.approx(10 / 9)
    assert view.worst_queries.iloc[0]["best_strategy"] == "Full-text (BM25)"


def test_failed_queries_show_what_each_strategy_returned_instead(store, run_id):
    ann = dashboard.failed_queries(store, run_id, "ann")
    assert ann.to_dict("records") == [{
        "Query id": "q1", "Query": "what is alpha", "Type": "natural",
        "ANN (dense)": "[0] Doc 3 title (d3)", "Full-text (BM25)": "[3] Doc 1 title (d1)",
        "ANN + reranker": "[3] Doc 1 title (d1)"}]
    # An unjudged top 1 counts as 0, as in the metrics, and says so.
    fulltext = dashboard.failed_queries(store, run_id, "fulltext")
    assert fulltext["Full-text (BM25)"].tolist() == ["[unjudged] Doc 6 title (d6)"]
    counts = dashboard.failed_counts(store, store.get_run(run_id)).set_index("strategy")
    assert counts["failed"].to_dict() == {"ann": 1, "fulltext": 1, "ann_rerank": 0}


def test_relevance_distribution_is_in_percent_of_the_top_k(store, run_id):
    dist = dashboard.results_view(store, run_id).distribution.set_index("Strategy")
    # ann top 3: q1 [0, 3, -], q2 [2, -, 3]: grade 3 in 2 of 6, >= 2 in 3 of 6.
    assert dist.loc["ANN (dense)", "% highly relevant (grade 3)"] == pytest.approx(100 / 3)
    assert dist.loc["ANN (dense)", "% relevant (grade ≥ 2)"] == pytest.approx(50.0)
    assert dist.loc["ANN (dense)", "% not relevant (grade < 2)"] == pytest.approx(50.0)


def test_binary_labels_drop_the_highly_relevant_column(store):
    spec = tiny_spec(threshold=1)
    spec.qrels = {q: {d: min(g, 1) for d, g in judged.items()} for q, judged in spec.qrels.items()}
    view = dashboard.results_view(store, write_run(store, spec))
    assert "% highly relevant (grade 3)" not in view.distribution.columns


def test_reranker_table_tests_the_pair_over_the_same_queries(store, run_id):
    table = dashboard.results_view(store, run_id).reranker_table
    [row] = table.to_dict("records")
    assert row["strategy"] == "ann"
    assert row["Change"] == pytest.approx(RERANK - ANN, abs=1e-4)
    # Two queries, both improved: the exact sign-flip p-value is 2 of 4 assignments = 0.5.
    assert row["p-value"] == pytest.approx(0.5)
    assert row["Verdict"] == "not distinguishable"
    assert (row["Queries improved"], row["Queries hurt"], row["Unchanged"]) == (2, 0, 0)


def test_significance_and_recommendations_are_said_in_words(store, run_id):
    view = dashboard.results_view(store, run_id)
    assert [s.subject for s in view.significance] == ["ann", "fulltext"]
    assert all("not distinguishable" in s.text for s in view.significance)
    text = " ".join(s.text for s in view.recommendations)
    assert "Use ANN + reranker" in text
    assert "the reranker changes DCG@3 by +0.935" in text
    # q2's d5 (grade 2) is in no strategy's results.
    assert "1 of 4 relevant documents (25%), over 1 query, are never retrieved" in text
    assert "a reranker cannot fix that" in text
    # natural q1 on ANN: 1.89 vs 3.63 on full-text.
    assert "Natural queries do poorly on ANN (dense)" in text


def test_a_significant_reranker_gain_is_called_significant(store):
    spec = tiny_spec()
    n = 12
    from engine.types import Query

    spec.queries = [Query(f"q{i}", f"query {i}", "qrels", None) for i in range(n)]
    spec.qrels = {f"q{i}": {"d1": 3, "d2": 0} for i in range(n)}
    spec.rankings = {"hybrid": {f"q{i}": ["d2", "d1"] for i in range(n)},
                     "hybrid_rerank": {f"q{i}": ["d1", "d2"] for i in range(n)}}
    spec.k = 2
    view = dashboard.results_view(store, write_run(store, spec))
    text = " ".join(s.text for s in view.recommendations)
    # Every query gains 3 - 3/log2(3) = 1.1072.
    assert "On Hybrid (RRF), the reranker adds +1.107 DCG@2 (p < 0.001, significant" in text


def test_a_cut_off_the_run_did_not_store_is_recomputed_from_stored_grades(store, run_id):
    run = store.get_run(run_id)
    assert 2 not in dashboard.stored_cutoffs(store, run_id)
    values = dashboard.per_query_values(store, run, "dcg", 2).set_index(["strategy", "query_id"])["value"]
    # ann q2 top 2 [2, -] = 2.0; fulltext q1 [3, 1] = 3 + 1/1.585.
    assert values[("ann", "q2")] == pytest.approx(2.0)
    assert values[("fulltext", "q1")] == pytest.approx(3 + 1 / 1.5849625)
    stored = dashboard.per_query_values(store, run, "dcg", 3)
    recomputed = dashboard.recompute_values(store, run, ["dcg"], 3)
    assert stored.sort_values(["strategy", "query_id"])["value"].tolist() == pytest.approx(
        recomputed.sort_values(["strategy", "query_id"])["dcg"].tolist())


def test_k_above_the_depth_is_refused_with_the_fix(store, run_id):
    with pytest.raises(SearchGradeError, match="kept 3 results per query"):
        dashboard.results_view(store, run_id, "dcg", 5)


def test_compare_runs_pairs_queries_by_id(store, run_id):
    spec = tiny_spec(name="better")
    spec.rankings = {**spec.rankings, "fulltext": {"q1": ["d1", "d2", "d6"], "q2": ["d2", "d6", "d4"]}}
    other = write_run(store, spec)
    result = dashboard.compare_runs(store, run_id, other, "dcg", 3)
    deltas = result.deltas.set_index("strategy")
    assert deltas.loc["fulltext", "Change"] == pytest.approx((4.0 - 2.8928) / 2, abs=1e-4)
    assert deltas.loc["ann", "Change"] == 0 and deltas.loc["ann", "p-value"] == 1.0
    assert result.changed[["Strategy", "Query id"]].values.tolist() == [["Full-text (BM25)", "q2"]]
    assert result.n_shared == 2


def test_trend_lists_complete_runs_oldest_first(store, run_id):
    second = write_run(store, tiny_spec(name="second"))
    frame = dashboard.trend(store, "dcg", 3)
    assert frame["run_id"].unique().tolist() == [run_id, second]
    assert set(frame["label"]) == {"ANN (dense)", "Full-text (BM25)", "ANN + reranker"}


def test_downloads_are_the_exported_csv_and_trec_files(store, run_id):
    csv = dashboard.per_query_csv(store, run_id).decode()
    assert csv.splitlines()[0] == "run_id,strategy,query_id,metric,k,value"
    with zipfile.ZipFile(io.BytesIO(dashboard.trec_zip(store, run_id))) as zf:
        assert sorted(zf.namelist()) == ["ann.trec", "ann_rerank.trec", "fulltext.trec"]
        assert zf.read("ann.trec").decode().splitlines()[0] == f"q1 Q0 d3 1 1.000000 {run_id}"


def test_run_choices_are_newest_first_with_name_date_and_collection(store, run_id):
    second = write_run(store, tiny_spec(name="second"))
    choices = dashboard.run_choices(store)
    assert [c.run_id for c in choices] == [second, run_id]
    assert choices[0].label.startswith("second · ") and choices[0].label.endswith(" · tiny")


def test_llm_mode_is_unavailable_with_the_reason(tmp_path):
    overview = dashboard.CollectionOverview("c", str(tmp_path), 1, 1, 1, True, 0, 1, 1, (), False)
    human, llm = dashboard.mode_status(overview, environ={})
    assert human.available and not llm.available
    assert llm.reason


def test_an_uploaded_zip_is_unpacked_to_its_beir_folder(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("mybeir/corpus.jsonl", '{"_id": "d1", "text": "x"}\n')
        zf.writestr("mybeir/qrels.tsv", "query-id\tcorpus-id\tscore\n")
    path = dashboard.save_upload("My Data.zip", buffer.getvalue(), tmp_path)
    assert path == tmp_path / "uploads" / "My_Data" / "mybeir"
    assert (path / "corpus.jsonl").is_file()


def test_an_upload_escaping_its_folder_is_refused(tmp_path):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as zf:
        zf.writestr("../../outside/corpus.jsonl", "{}")
    with pytest.raises(SearchGradeError, match="outside"):
        dashboard.save_upload("evil.zip", buffer.getvalue(), tmp_path)
    assert not (tmp_path / "outside").exists()
