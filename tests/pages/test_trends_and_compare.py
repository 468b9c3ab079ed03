from __future__ import annotations

import pytest

from tests.pages.conftest import chart, open_page
from tests.pages.synthetic import tiny_spec, write_run

# Run B: fulltext now ranks q2 [d2, d6, d4], grades [3, None, 2] -> DCG@3 3 + 0 + 2/2 = 4.0 (was 2.8928).
BETTER_FULLTEXT = {"q1": ["d1", "d2", "d6"], "q2": ["d2", "d6", "d4"]}


def _two_runs(store):
    a = write_run(store, tiny_spec(name="run A"))
    spec = tiny_spec(name="run B")
    spec.rankings = {**spec.rankings, "fulltext": BETTER_FULLTEXT}
    b = write_run(store, spec)
    return a, b


def test_trends_chart_has_one_point_per_run_with_ci_bands(store):
    a, b = _two_runs(store)
    write_run(store, tiny_spec(name="other collection", collection_name="other"))
    at = open_page("views/trends.py")
    at.selectbox(key="trends_k").set_value(3).run()
    at.selectbox(key="trends_collection").set_value("tiny").run()
    spec = chart(at, "trend")
    lines = {t["name"]: t for t in spec["data"] if t.get("mode") == "lines+markers"}
    bands = [t for t in spec["data"] if t.get("fill") == "tonexty"]
    assert set(lines) == {"ANN (dense)", "Full-text (BM25)", "ANN + reranker"}
    assert len(bands) == 3
    fulltext = [r for r in store.trend("dcg", 3, "tiny") if r["strategy"] == "fulltext"]
    assert lines["Full-text (BM25)"]["y"] == pytest.approx([r["value"] for r in fulltext])
    assert len(lines["Full-text (BM25)"]["y"]) == 2
    band = next(t for t in bands if t["name"] == "Full-text (BM25) CI low")
    assert band["y"] == pytest.approx([r["ci_low"] for r in fulltext])


def test_trends_defaults_to_the_latest_runs_collection_and_keeps_collections_apart(store):
    _two_runs(store)
    write_run(store, tiny_spec(name="other collection", collection_name="other"))
    at = open_page("views/trends.py")
    assert at.selectbox(key="trends_collection").value == "other"
    assert at.selectbox(key="trends_collection").options == ["other", "tiny", "All collections"]
    at.selectbox(key="trends_k").set_value(3).run()
    at.selectbox(key="trends_collection").set_value("All collections").run()
    lines = {t["name"]: t["y"] for t in chart(at, "trend")["data"] if t.get("mode") == "lines+markers"}
    # One series per collection and strategy: never a line from tiny's runs to other's.
    tiny = [r["value"] for r in store.trend("dcg", 3, "tiny") if r["strategy"] == "fulltext"]
    assert lines["Full-text (BM25) · tiny"] == pytest.approx(tiny) and len(tiny) == 2
    assert len(lines["Full-text (BM25) · other"]) == 1 and len(lines) == 6
    table = next(df.value for df in at.dataframe if "Collection" in df.value.columns)
    assert table["Collection"].tolist() == ["tiny", "tiny", "other"]


def test_a_trend_breaks_where_a_strategy_did_not_run_and_where_the_query_set_changed(store):
    from searchgrade.core.records import Query

    write_run(store, tiny_spec(name="one"))
    spec = tiny_spec(name="two")
    spec.rankings = {s: r for s, r in spec.rankings.items() if s != "ann_rerank"}
    write_run(store, spec)
    write_run(store, tiny_spec(name="three"))
    spec = tiny_spec(name="four")
    spec.queries = [Query("q1", "what is alpha, again", "natural", "d1"), spec.queries[1]]
    write_run(store, spec)
    at = open_page("views/trends.py")
    at.selectbox(key="trends_k").set_value(3).run()
    lines = {t["name"]: t["y"] for t in chart(at, "trend")["data"] if t.get("mode") == "lines+markers"}
    rerank = lines["ANN + reranker"]
    # Runs one, two (no reranker: a gap), three, a break (new query set), four.
    assert [v is None for v in rerank] == [False, True, False, True, False]
    assert [v is None for v in lines["ANN (dense)"]] == [False, False, False, True, False]
    assert "breaks where the strategy did not run and where the query set changed (1 time here)" in \
        " ".join(c.value for c in at.caption).replace("\\", "")


def test_trends_metric_dropdown_switches_the_metric(store):
    _two_runs(store)
    at = open_page("views/trends.py")
    at.selectbox(key="trends_k").set_value(3).run()
    at.selectbox(key="trends_metric").set_value("mean_relevance").run()
    assert chart(at, "trend")["layout"]["yaxis"]["title"]["text"] == "Mean relevance@3"


def test_compare_gives_paired_deltas_and_the_queries_that_changed(store):
    a, b = _two_runs(store)
    at = open_page("views/compare.py")
    at.selectbox(key="compare_k").set_value(3).run()
    assert not at.exception
    deltas = next(df.value for df in at.dataframe if "Run A" in df.value.columns and "Verdict" in df.value.columns)
    row = deltas.set_index("Strategy").loc["Full-text (BM25)"]
    assert row["Change"] == pytest.approx((4.0 - 2.8927892) / 2, abs=1e-6)
    assert deltas.set_index("Strategy").loc["ANN (dense)", "Change"] == 0
    # Two queries are too few for an interval: a dash, not "None" (so is a withheld change's).
    assert (row["CI low"], row["CI high"]) == ("–", "–"), row
    changed = next(df.value for df in at.dataframe if "Query id" in df.value.columns)
    assert changed["Query id"].tolist() == ["q2"]
    assert changed["Strategy"].tolist() == ["Full-text (BM25)"]


def test_compare_needs_two_runs(tiny_run):
    at = open_page("views/compare.py")
    assert "needs two complete runs" in at.info[0].value


def test_compare_opens_on_one_collection_lists_one_sided_strategies_and_the_settings(store):
    a, b = _two_runs(store)
    spec = tiny_spec(name="run C", collection_name="other")
    spec.rankings = {s: r for s, r in spec.rankings.items() if s != "ann_rerank"}
    c = write_run(store, spec)
    at = open_page("views/compare.py")
    # The newest run (other) has no earlier run of its collection: the next newest is A.
    assert (at.selectbox(key="compare_a").value, at.selectbox(key="compare_b").value) == (b, c)
    at.selectbox(key="compare_a").set_value(a).run()
    at.selectbox(key="compare_b").set_value(b).run()
    at.selectbox(key="compare_k").set_value(3).run()
    assert not at.exception
    spec = chart(at, "compare")
    low, high = spec["layout"]["yaxis"]["range"]
    assert low == -high and high >= 0.05 * 4.0
    assert [t["text"] for t in spec["data"]][0][1] == f"{(4.0 - 2.8927892) / 2:+.3f}"


def test_compare_of_runs_with_no_changed_query_says_so_and_shows_what_differs(store):
    a = write_run(store, tiny_spec(name="run A"))
    spec = tiny_spec(name="run B")
    spec.rankings = {s: r for s, r in spec.rankings.items() if s != "ann_rerank"}
    spec.k = 2
    b = write_run(store, spec)
    at = open_page("views/compare.py")
    assert (at.selectbox(key="compare_a").value, at.selectbox(key="compare_b").value) == (a, b)
    at.selectbox(key="compare_k").set_value(2).run()
    assert not at.exception
    assert any(i.value.startswith("No query changed") for i in at.info)
    warnings = [w.value.replace("\\", "") for w in at.warning]
    assert "Only in run A, so not compared: ANN + reranker." in warnings
    settings = next(df.value for df in at.dataframe if "Setting" in df.value.columns)
    assert settings.set_index("Setting").loc["k"].tolist() == ["3", "2"]


def test_trends_of_a_suite_draws_its_paired_series_with_the_drop_and_what_changed(store):
    from tests.pages.test_suites_page import _suite_with_a_drop

    _suite_with_a_drop(store)
    at = open_page("views/trends.py")
    assert at.selectbox(key="trends_suite").options == ["None: every run", "nightly"]
    at.selectbox(key="trends_suite").set_value("nightly").run()
    spec = chart(at, "suite_trend")
    assert spec["layout"]["meta"] == {"chart": "suite_trend", "suite": "nightly", "metric": "DCG@3"}
    lines = {t["name"]: t for t in spec["data"] if t.get("mode") == "lines+markers"}
    assert set(lines) == {"ANN (dense)", "Full-text (BM25)", "ANN + reranker"}
    drop = next(t for t in spec["data"] if t["name"] == "Full-text (BM25): significant drop")
    assert drop["marker"]["symbol"] == "triangle-down" and drop["y"] == [lines["Full-text (BM25)"]["y"][1]]
    hover = lines["Full-text (BM25)"]["text"][1]
    assert "changed: index.rerank_depth: 50 -&gt; 100" in hover and "note: synonyms v3 deployed" in hover
    # The suite's metric, said where the metric is chosen; the runs table names the change and the note.
    assert at.selectbox(key="trends_suite_metric").value == "DCG" and at.selectbox(key="trends_suite_metric").disabled
    assert at.selectbox(key="trends_suite_k").value == 3 and at.selectbox(key="trends_suite_k").disabled
    runs = next(df.value for df in at.dataframe if "what changed" in df.value.columns)
    assert runs.loc[0, "what changed"] == "index.rerank_depth: 50 -> 100" and runs.loc[0, "note"] == "synonyms v3 deployed"
    assert runs.loc[0, "significant changes"].startswith("drop: Full-text (BM25) DCG@3")
    # Back to every run of the collection: the unpaired trend, which points at the suite.
    at.selectbox(key="trends_suite").set_value("None: every run").run()
    assert chart(at, "trend")
    assert any("pick a suite (nightly)" in str(c.value).replace("\\", "") for c in at.caption)
