"""Variants in the real app and a real browser: a run of a chunked and a whole-document variant beside
the built-in full-text shows the variants on Results (the bars and the quality-vs-cost chart, with
its cost figures), and the drill-down shows the chunk each result of the chunked one matched by."""

from __future__ import annotations

import time

import pytest

from searchgrade.cli import main
from searchgrade.engine.store import Store
from tests.browser.test_e2e import _charts, app  # noqa: F401 - a fixture
from tests.engine.test_variants_run import small_scifact

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_variants_on_results_the_quality_cost_view_and_the_matched_chunk(app, browser, tmp_path, capsys,  # noqa: F811
                                                                         static_model_dir):
    url, home = app
    collection = small_scifact(tmp_path / "scifact-small", n_queries=20, n_docs=150)
    strategies = tmp_path / "variants.toml"
    strategies.write_text(f'[strategy.static]\nkind = "ann"\nembedding_model = "{static_model_dir}"\n\n'
                          f'[strategy.static-chunks]\nkind = "ann"\nembedding_model = "{static_model_dir}"\n'
                          'chunking = { method = "tokens", size = 64, overlap = 8 }\n', encoding="utf-8")
    assert main(["evaluate", str(collection), "--qrels", "--strategies-file", str(strategies), "--strategies",
                 "fulltext,static,static-chunks", "--data-dir", str(home)]) == 0
    capsys.readouterr()
    run = Store(home).list_runs()[0]
    assert run.status == "complete"

    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    page.set_default_timeout(60_000)
    page.goto(f"{url}/results")
    page.get_by_text("Quality and cost: DCG@10 against what each strategy costs").wait_for()
    deadline = time.time() + 60
    while not {"strategies", "quality_cost"} <= set(charts := _charts(page)) and time.time() < deadline:
        time.sleep(0.5)  # Plotly draws each chart once it is on the page
    bars = {name for trace in charts["strategies"]["data"] for name in (trace["x"] or [])}
    assert {"static", "static-chunks", "Full-text (BM25)"} <= bars
    quality = charts["quality_cost"]
    assert quality["layout"]["meta"]["axis"] == "p50_ms"
    points = {t["name"] for t in quality["data"] if t["mode"] == "markers"}
    assert points == {"static", "static-chunks", "Full-text (BM25)"}
    page.get_by_text("Every cost figure per strategy").click()
    # What the chunked variant is, in its row (the grid keeps its cells in a hidden ARIA table).
    page.get_by_text("tokens 64/8, max").first.wait_for(state="attached")

    page.goto(f"{url}/drilldown")
    page.get_by_role("tab", name="static-chunks").click()
    chunk = page.get_by_text("The chunk each result was matched by").locator("visible=true").first
    chunk.wait_for()
    page.get_by_text("matched chunk").locator("visible=true").first.wait_for()
    page.screenshot(path=str(tmp_path / "drilldown.png"))
