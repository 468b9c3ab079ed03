"""The query-log section of Evaluate and the traffic section of Results, in Streamlit's AppTest, on
a run graded by clicks (wired into the pages with one line each)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from searchgrade.cli import main
from tests.conftest import write_beir
from tests.engine.traffic.test_traffic_cli import write_log
from tests.pages.conftest import APPTEST_TIMEOUT_S

pytestmark = pytest.mark.slow


@pytest.fixture
def clicks_run(home, tmp_path):
    collection = write_beir(tmp_path / "tiny")
    log, events = write_log(tmp_path)
    common = ["--data-dir", str(home)]
    assert main(["queries", "import", str(log), "--collection", "tiny", *common]) == 0
    assert main(["queries", "sample", "ubi_queries", "--method", "stratified", "--size", "5", "--name", "s5",
                 *common]) == 0
    assert main(["clicks", "import", str(events), *common]) == 0
    assert main(["evaluate", str(collection), "--clicks", "--query-set", "s5", "--strategies", "fulltext",
                 "--min-impressions", "5", *common]) == 0
    return home


def _evaluate_part():
    import streamlit as st

    from searchgrade.views._query_log import query_log_section

    st.session_state["evaluate_log_use"] = True
    st.session_state["picked"] = query_log_section("tiny")


def _results_part():
    from searchgrade.views._common import get_store
    from searchgrade.views._traffic import traffic_section

    traffic_section(get_store().list_runs()[0], "dcg", 10)


def test_evaluate_shows_the_head_and_tail_and_offers_grading_by_clicks(clicks_run):
    at = AppTest.from_function(_evaluate_part, default_timeout=APPTEST_TIMEOUT_S).run()
    assert not at.exception
    head, tail = [d.value for d in at.dataframe if "Share of searches" in d.value.columns]
    assert head["Searches"].tolist() == [40, 20, 13] and tail["Searches"].tolist() == [10, 8, 1]
    assert at.session_state["picked"] == {"query_set": "s5"}
    at.checkbox(key="evaluate_log_by_clicks").check().run()
    assert at.session_state["picked"] == {"query_set": "s5", "mode": "clicks", "click_model": "pbm",
                                          "min_impressions": 10}


def test_results_shows_the_traffic_weighted_means_and_the_bands(clicks_run):
    from searchgrade.engine.store import Store
    from searchgrade.viewmodels.traffic import traffic_view

    store = Store(clicks_run)
    view = traffic_view(store, store.list_runs()[0], "dcg", 10)
    at = AppTest.from_function(_results_part, default_timeout=APPTEST_TIMEOUT_S).run()
    assert not at.exception
    table, bands = [d.value for d in at.dataframe if "Traffic-weighted" in d.value.columns]
    assert table["Traffic-weighted"].tolist() == pytest.approx(view.table["Traffic-weighted"].tolist())
    assert set(bands["Band"]) == {"head", "torso", "tail"}
    assert any("weighted by traffic" in s.value for s in at.subheader)


def _coverage_part():
    from searchgrade.views._common import get_store
    from searchgrade.views._traffic import coverage_section, runs_coverage

    runs = get_store().list_runs()
    coverage_section(runs[0], 3)
    runs_coverage(tuple(r.run_id for r in runs), 3, "test_runs_coverage")


def test_results_compare_and_trends_show_each_strategys_coverage(home, tmp_path):
    from searchgrade.engine.store import Store
    from searchgrade.viewmodels.clicks import coverage

    collection = write_beir(tmp_path / "tiny")
    log, events = write_log(tmp_path)
    common = ["--data-dir", str(home)]
    assert main(["queries", "import", str(log), "--collection", "tiny", *common]) == 0
    assert main(["queries", "sample", "ubi_queries", "--method", "top", "--size", "5", "--name", "top5", *common]) == 0
    assert main(["clicks", "import", str(events), *common]) == 0
    for strategies in ("fulltext,ann", "fulltext"):
        assert main(["evaluate", str(collection), "--clicks", "--query-set", "top5", "--strategies", strategies,
                     "--min-impressions", "5", "--k", "3", *common]) == 0
    store = Store(home)
    newest, oldest = store.list_runs()
    at = AppTest.from_function(_coverage_part, default_timeout=APPTEST_TIMEOUT_S).run()
    assert not at.exception
    (table,) = [d.value for d in at.dataframe if "Coverage@3" in d.value.columns]
    expected = coverage(store, newest, 3)
    assert dict(zip(table["Strategy"], table["Coverage@3"], strict=True)) == pytest.approx(
        {"Full-text (BM25)": expected["fulltext"]})
    captions = " ".join(c.value for c in at.caption).replace("\\", "")  # unescape the markdown
    assert "Cut-points:" in captions and "Position bias" in captions and "the default 1/p" in captions
    (across,) = [d.value for d in at.dataframe if "Run" in d.value.columns]
    assert len(across) == 2 and set(across.columns) >= {"Full-text (BM25)", "ANN (dense)"}
    older = coverage(store, oldest, 3)
    # Three decimals, as Results shows coverage; a strategy a run did not have is a dash.
    assert sorted(across["ANN (dense)"]) == ["-", f"{older['ann']:.3f}"]
