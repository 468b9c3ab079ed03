from __future__ import annotations

import re

import pytest

from searchgrade.core.records import Document, Query
from tests.pages.conftest import chart, open_page
from tests.pages.synthetic import RunSpec, tiny_spec, write_run


def _all_text(at) -> str:
    parts = [e.value for kind in ("markdown", "caption", "info", "success", "warning", "error")
             for e in at.get(kind)]
    return "\n".join(str(p) for p in parts)


def test_results_page_shows_the_headline_of_the_stored_run(tiny_run):
    at = open_page("views/results.py")
    metrics = {m.label: m.value.replace("\\", "") for m in at.metric}  # values are escaped Markdown
    # Hand-computed DCG@3 of the tiny run: ann_rerank (3 + 4.2619) / 2 = 3.6309.
    assert metrics["Best DCG@3"] == "3.631"
    # Two queries decide nothing (a paired verdict needs 6 or more): the highest, not a recommendation.
    assert metrics["Highest, no clear winner"] == "ANN + reranker"
    assert "Recommended strategy" not in metrics
    assert metrics["Queries evaluated"] == "2"


def test_strategy_chart_shows_stored_values_with_ci_error_bars(tiny_run, store):
    at = open_page("views/results.py")
    spec = chart(at, "strategies")
    stored = {r["strategy"]: r for r in store.metric_summary(tiny_run, 3) if r["metric"] == "dcg"}
    without, with_, *legend = spec["data"]
    assert without["name"] == "Without reranker" and with_["name"] == "With reranker"
    # The legend: one entry per strategy, in the colour its bars have.
    assert [t["name"] for t in legend] == ["ANN (dense)", "Full-text (BM25)", "ANN + reranker"]
    assert without["marker"]["color"] == [legend[0]["marker"]["color"], legend[1]["marker"]["color"]]
    assert without["y"] == pytest.approx([stored["ann"]["value"], stored["fulltext"]["value"]])
    assert with_["y"] == pytest.approx([stored["ann_rerank"]["value"]])
    assert without["error_y"]["array"][0] == pytest.approx(stored["ann"]["ci_high"] - stored["ann"]["value"])
    assert without["error_y"]["arrayminus"][0] == pytest.approx(stored["ann"]["value"] - stored["ann"]["ci_low"])


def test_two_rerankers_on_one_base_each_have_a_bar_series_a_colour_and_a_table_row(store):
    # ANN reranked by two declared rerankers (issue 27): tei puts d1 / d2 first, cohere only on q2.
    spec = tiny_spec(config={"rerankers": ["tei", "cohere"]})
    spec.rankings = {"ann": spec.rankings["ann"], "fulltext": spec.rankings["fulltext"],
                     "ann_tei": spec.rankings["ann_rerank"],
                     "ann_cohere": {"q1": ["d3", "d1", "d5"], "q2": ["d2", "d4", "d6"]}}
    run_id = write_run(store, spec)
    at = open_page("views/results.py")
    data = chart(at, "strategies")["data"]
    series = {t["name"]: t for t in data if t["x"]}
    assert list(series) == ["Without reranker", "With cohere", "With tei"]
    # Each reranked bar stands at its base's place and is named by its own label in the hover.
    assert series["With tei"]["x"] == ["ANN (dense)"] and series["With cohere"]["x"] == ["ANN (dense)"]
    assert series["With tei"]["customdata"][0][2] == "ANN (dense) + tei"
    assert series["With cohere"]["customdata"][0][2] == "ANN (dense) + cohere"
    assert series["Without reranker"]["x"] == ["ANN (dense)", "Full-text (BM25)"]  # ANN once, not once per reranker
    stored = {r["strategy"]: r["value"] for r in store.metric_summary(run_id, 3) if r["metric"] == "dcg"}
    assert series["With tei"]["y"] == pytest.approx([stored["ann_tei"]])
    assert series["With cohere"]["y"] == pytest.approx([stored["ann_cohere"]])
    legend = {t["name"]: t["marker"]["color"] for t in data if not t["x"]}
    assert set(legend) == {"ANN (dense)", "Full-text (BM25)", "ANN (dense) + tei", "ANN (dense) + cohere"}
    assert len(set(legend.values())) == 4  # a colour per series
    assert series["With tei"]["marker"]["color"] == [legend["ANN (dense) + tei"]]
    # The key under the chart names each strategy in its colour (Plotly draws no legend for the empty traces).
    [key] = chart(at, "strategies")["layout"]["annotations"]
    for name, color in legend.items():
        assert f'<span style="color:{color}">■</span> {name}' in key["text"]
    table = at.dataframe[0].value
    rows = table.set_index("Strategy")
    assert list(rows.index) == ["ANN (dense) + cohere", "ANN (dense) + tei", "Full-text (BM25)"]
    assert rows.loc["ANN (dense) + tei", "With reranker"] == pytest.approx(stored["ann_tei"])
    assert rows.loc["ANN (dense) + tei", "Without reranker"] == pytest.approx(stored["ann"])
    assert rows.loc["ANN (dense) + cohere", "Change"] == pytest.approx(stored["ann_cohere"] - stored["ann"])
    # The baseline-vs-reranker table: a row per reranker, each named by its twin.
    [paired] = [df.value for df in at.dataframe if "Queries improved" in df.value.columns]
    assert sorted(paired["Strategy"]) == ["ANN (dense) + cohere", "ANN (dense) + tei"]


def test_tables_failed_queries_and_recommendations_are_there(tiny_run):
    at = open_page("views/results.py")
    frames = [df.value for df in at.dataframe]
    table = frames[0]
    assert table.loc[0, "Strategy"] == "ANN (dense)"
    assert table.loc[0, "Without reranker"] == pytest.approx(2.6964, abs=1e-4)
    assert table.loc[0, "With reranker"] == pytest.approx(3.6309, abs=1e-4)
    # The picker opens on the strategy with the most failed queries (ann and fulltext fail once each:
    # ann, listed first): q1's top 1 is d3, grade 0, with d1 (grade 3) at rank 2.
    assert at.selectbox(key="results_failed_strategy").value == "ann"
    failed = [f for f in frames if "Query id" in f.columns and "ANN (dense)" in f.columns]
    assert failed[0]["Query id"].tolist() == ["q1"]
    assert failed[0].loc[0, "ANN (dense)"] == "[0] Doc 3 title (d3)"
    assert failed[0].loc[0, ["Kind", "Cause"]].tolist() == ["Top result judged not relevant", "Ranked too low"]
    at.selectbox(key="results_failed_strategy").set_value("ann_rerank").run()
    failed = [df.value for df in at.dataframe if "Query id" in df.value.columns and "ANN (dense)" in df.value.columns]
    assert failed and failed[0].empty  # the reranked strategy fails on no query
    text = _all_text(at)
    assert "never retrieved by any strategy" in text
    assert "a reranker cannot fix that" in text
    assert "not distinguishable" in text


def test_the_ann_index_and_its_recall_are_stated_with_the_run(store):
    stats = {"ann_recall": {"index": "ivf", "k": 10, "queries": 200, "recall": 0.9724}}
    write_run(store, tiny_spec(stats=stats))
    # Captions escape Markdown: read them back as plain text.
    text = re.sub(r"\\(.)", r"\1", _all_text(open_page("views/results.py")))
    assert ("ANN index: inverted-file (IVF), approximate: it finds 97.2% of what exact search finds "
            "(recall@10 on 200 sampled queries)") in text


def test_metric_and_k_selectors_recompute_from_stored_results(tiny_run):
    at = open_page("views/results.py")
    at.selectbox(key="results_metric").set_value("precision").run()
    at.selectbox(key="results_k").set_value(2).run()
    assert not at.exception
    spec = chart(at, "strategies")
    # precision@2, relevant = grade >= 2: ann q1 [0,3] -> 0.5, q2 [2,None] -> 0.5; fulltext 0.5, 0.5;
    # ann_rerank q1 [3,0] -> 0.5, q2 [3,2] -> 1.0.
    assert spec["data"][0]["y"] == pytest.approx([0.5, 0.5])
    assert spec["data"][1]["y"] == pytest.approx([0.75])
    assert spec["layout"]["yaxis"]["title"]["text"] == "Precision@2"


def test_run_dropdown_lists_runs_newest_first_with_name_date_and_collection(home, store):
    first = write_run(store, tiny_spec(name="older run"))
    second = write_run(store, tiny_spec(name="newer run"))
    at = open_page("views/results.py")
    box = at.selectbox(key="results_run")
    assert box.options[0].startswith("newer run · tiny · 20")
    assert box.value == second
    box.set_value(first).run()
    assert not at.exception


def test_results_page_without_runs_points_to_evaluate(home):
    at = open_page("views/results.py")
    assert "No runs yet" in at.info[0].value


def test_skipped_strategies_are_explained_with_the_fix(store):
    write_run(store, tiny_spec(skipped={"hybrid_rerank": "no reranker model offline: pass --reranker-model PATH"}))
    at = open_page("views/results.py")
    warnings = " ".join(w.value for w in at.warning).replace("\\", "")
    assert "Hybrid + reranker was skipped: no reranker model offline: pass --reranker-model PATH" in warnings


def clear_spec(n_queries: int = 12, *, short: bool = False, **overrides) -> RunSpec:
    """n_queries queries: ANN puts the relevant document (grade 3) first with nine unjudged after it;
    full-text puts it third. With ``short``, full-text returns only the relevant document, once, at
    rank 1: a one-result list (the upload case of issue 22)."""
    documents = [Document(f"d{i}", f"Doc {i}", f"Text {i}.") for i in range(40)]
    queries = [Query(f"q{i}", f"query {i}", "natural", f"d{i}") for i in range(n_queries)]
    qrels = {q.query_id: {f"d{i}": 3} for i, q in enumerate(queries)}
    filler = [f"d{j}" for j in range(20, 40)]
    ann = {f"q{i}": [f"d{i}", *filler[:9]] for i in range(n_queries)}
    fulltext = ({f"q{i}": [f"d{i}"] for i in range(n_queries)} if short else
                {f"q{i}": [*filler[:2], f"d{i}", *filler[2:9]] for i in range(n_queries)})
    spec = RunSpec(documents, queries, qrels, {"ann": ann, "fulltext": fulltext}, k=10, name="clear run",
                   collection_name="clear")
    for key, value in overrides.items():
        setattr(spec, key, value)
    return spec


def _tiles(at) -> dict[str, str]:
    return {m.label: m.value.replace("\\", "") for m in at.metric}


def test_the_tiles_follow_the_metric_and_k_selectors(tiny_run):
    at = open_page("views/results.py")
    at.selectbox(key="results_metric").set_value("precision").run()
    at.selectbox(key="results_k").set_value(2).run()
    tiles = _tiles(at)
    # precision@2: ann 0.5, fulltext 0.5, ann_rerank 0.75 (test_metric_and_k_selectors_recompute_...).
    assert tiles["Best Precision@2"] == "0.750" and tiles["Highest, no clear winner"] == "ANN + reranker"
    assert "Best DCG@3" not in tiles


def test_recommended_only_when_the_best_beats_every_other_and_there_was_a_choice(store):
    write_run(store, clear_spec())
    at = open_page("views/results.py")
    tiles = _tiles(at)
    assert tiles["Recommended strategy"] == "ANN (dense)"
    assert at.success[0].value.replace("\\", "").startswith("Use ANN (dense): the highest DCG@10")
    single = clear_spec(name="alone")
    single.rankings = {"ann": single.rankings["ann"]}
    write_run(store, single)
    at = open_page("views/results.py")
    assert _tiles(at)["Strategy evaluated"] == "ANN (dense)"
    assert "Recommended strategy" not in _tiles(at)


def test_a_short_list_is_flagged_and_the_position_curve_counts_every_query(store):
    write_run(store, clear_spec(short=True))
    at = open_page("views/results.py")
    text = re.sub(r"\\(.)", r"\1", _all_text(at))
    assert "Full-text (BM25) returned fewer than 10 results on 12 of 12 queries (100%)" in text
    position = chart(at, "position")
    curves = {t["name"]: t["y"] for t in position["data"]}
    # Full-text: grade 3 at rank 1 on every query, nothing below: 3, then 0 (not the mean of no query).
    assert curves["Full-text (BM25)"] == pytest.approx([3.0] + [0.0] * 9)
    relevance = at.dataframe[1].value  # after DCG@10's table
    assert relevance.set_index("Strategy")["Without reranker"].to_dict() == pytest.approx(
        {"ANN (dense)": 0.3, "Full-text (BM25)": 0.3})
    assert "Queries with a result at rank 1 / 10: ANN (dense) 12 / 12 of 12; Full-text (BM25) 12 / 0 of 12" in text


def test_never_retrieved_and_the_overlap_follow_k(tiny_run):
    at = open_page("views/results.py")
    at.selectbox(key="results_k").set_value(1).run()
    text = re.sub(r"\\(.)", r"\1", _all_text(at))
    # Relevant (>= 2): q1 d1, q2 d2 d4 d5. Top 1: ann d3, d4; fulltext d1, d6; ann_rerank d1, d2 -> d5 missed.
    assert "1 of 4 relevant documents (25%), over 1 query, are never retrieved by any strategy in its top 1" in text
    overlap = next(df.value for df in at.dataframe if "Jaccard@1" in df.value.columns)
    assert "RBO@1" in overlap.columns


def test_the_titles_say_no_reranker_ran_and_why(store):
    spec = tiny_spec(skipped={"ann_rerank": "no reranker model offline: set the reranker model on the "
                              "Evaluate page"})
    spec.rankings = {s: r for s, r in spec.rankings.items() if s != "ann_rerank"}
    write_run(store, spec)
    at = open_page("views/results.py")
    headers = [h.value for h in at.subheader]
    assert "DCG@3 per strategy (no reranker ran)" in headers
    text = re.sub(r"\\(.)", r"\1", _all_text(at))
    assert ("No strategy ran both without and with the reranker (this run ran ANN (dense), Full-text (BM25)): "
            "ANN + reranker was skipped: no reranker model offline") in text


def test_a_run_offers_save_as_suite_tuning_and_warns_when_the_reranker_is_the_judge(store):
    """Issue 23's "Save as suite" and issue 25's Tune section on Results, and issue 27's warning that a system reranked by the
    judge's own model is graded by itself."""
    note = "The LLM reranker llmr is the judge's model (gemma): the system is graded by itself."
    write_run(store, tiny_spec(stats={"self_graded": {"rerankers": ["llmr"], "model": "gemma", "note": note}}))
    at = open_page("views/results.py")
    assert note in " ".join(w.value for w in at.warning).replace("\\", "")
    assert any(b.label == "Save" for b in at.button)
    assert "Tune a strategy" in [h.value for h in at.subheader]  # issue 25's section
