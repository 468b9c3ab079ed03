from __future__ import annotations

import re

import pytest

from tests.pages.conftest import chart, open_page
from tests.pages.synthetic import tiny_spec, write_run


def _all_text(at) -> str:
    parts = [e.value for kind in ("markdown", "caption", "info", "success", "warning", "error")
             for e in at.get(kind)]
    return "\n".join(str(p) for p in parts)


def test_results_page_shows_the_headline_of_the_stored_run(tiny_run):
    at = open_page("views/results.py")
    metrics = {m.label: m.value.replace("\\", "") for m in at.metric}  # values are escaped Markdown
    # Hand-computed DCG@3 of the tiny run: ann_rerank (3 + 4.2619) / 2 = 3.6309.
    assert metrics["Best DCG@3"] == "3.63"
    assert metrics["Recommended strategy"] == "ANN + reranker"
    assert metrics["Queries evaluated"] == "2"


def test_strategy_chart_shows_stored_values_with_ci_error_bars(tiny_run, store):
    at = open_page("views/results.py")
    spec = chart(at, "strategies")
    stored = {r["strategy"]: r for r in store.metric_summary(tiny_run, 3) if r["metric"] == "dcg"}
    without, with_ = spec["data"]
    assert without["name"] == "Without reranker" and with_["name"] == "With reranker"
    assert without["y"] == pytest.approx([stored["ann"]["value"], stored["fulltext"]["value"]])
    assert with_["y"] == pytest.approx([stored["ann_rerank"]["value"]])
    assert without["error_y"]["array"][0] == pytest.approx(stored["ann"]["ci_high"] - stored["ann"]["value"])
    assert without["error_y"]["arrayminus"][0] == pytest.approx(stored["ann"]["value"] - stored["ann"]["ci_low"])


def test_tables_failed_queries_and_recommendations_are_there(tiny_run):
    at = open_page("views/results.py")
    frames = [df.value for df in at.dataframe]
    table = frames[0]
    assert table.loc[0, "Strategy"] == "ANN (dense)"
    assert table.loc[0, "Without reranker"] == pytest.approx(2.6964, abs=1e-4)
    assert table.loc[0, "With reranker"] == pytest.approx(3.6309, abs=1e-4)
    failed = [f for f in frames if "Query id" in f.columns and "ANN (dense)" in f.columns]
    # The recommended strategy (ann_rerank) fails on no query; pick ann: q1's top 1 is d3, grade 0.
    assert failed and failed[0].empty
    at.selectbox(key="results_failed_strategy").set_value("ann").run()
    failed = [df.value for df in at.dataframe if "Query id" in df.value.columns and "ANN (dense)" in df.value.columns]
    assert failed[0]["Query id"].tolist() == ["q1"]
    assert failed[0].loc[0, "ANN (dense)"] == "[0] Doc 3 title (d3)"
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
    assert box.options[0].startswith("newer run · 20") and box.options[0].endswith(" · tiny")
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
