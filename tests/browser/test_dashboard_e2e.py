"""A dashboard that cannot mislead (issue 22), in the real app in Chromium: Results, Compare and Trends
agree with their selectors and with themselves.

One app server for the module (runs are written into its data directory through the engine,
tests/pages/synthetic.py, so no index and no LLM are needed); each test opens its own page, which
starts on the newest run. What each test checks, and what the page showed before:

- the tiles follow the Metric and k selectors (they stayed "Best DCG@10");
- a 30-document upload-like collection whose full-text returns one document per query: its short
  lists are flagged and the position curve counts every query (it jumped where few queries had a
  result);
- Trends over two collections draws a series per collection (one line joined them);
- every interval shown beside a verdict excludes 0 exactly when the verdict is "significant", and
  "Recommended" appears only when the best beats every other strategy;
- Compare of a -0.002 change draws it small on a symmetric axis (the axis zoomed to +-0.006);
- Trends of a suite (issue 23): its paired series with the regression marker, the changed setting
  and the note named on the point (Trends had no suite to pick).
"""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest

from searchgrade.core.records import Document, Query
from searchgrade.engine.store import Store
from tests.browser.server import environment, serve_app
from tests.browser.test_e2e import _wait_chart
from tests.pages.synthetic import RunSpec, write_run
from tests.pages.test_suites_page import _suite_with_a_drop

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SCREENSHOT_DIR = os.environ.get("SEARCHGRADE_E2E_SCREENSHOTS")
VIEWPORT = {"width": 1500, "height": 1100}


@pytest.fixture(scope="module")
def dashboard(tmp_path_factory):
    """One app server for every test of the module, and its run store."""
    workdir = tmp_path_factory.mktemp("dashboard")
    home = workdir / "home"
    home.mkdir()
    with serve_app(workdir, env=environment(home)) as url:
        yield url, Store(home)


def spec(collection: str, name: str, n_queries: int = 12, *, fulltext_short: bool = False,
         hybrid_like_ann: bool = False, late: int = 0, n_docs: int = 30) -> RunSpec:
    """A small upload-like collection: ``n_docs`` documents, a relevant one (grade 3) per query and a
    partly relevant one (grade 1).

    ANN ranks the relevant document first, the grade-1 one ninth (tenth on the first ``late``
    queries: DCG@10 lower by 1/log2(10) - 1/log2(11) = 0.0120 on each). Full-text ranks the relevant
    document third, or (``fulltext_short``) returns only it, on half of the queries, and only an
    unrelated one on the others. Hybrid, when ``hybrid_like_ann``, returns what ANN returns.
    """
    documents = [Document(f"d{i}", f"Document {i}", f"Text of document {i}.") for i in range(n_docs)]
    queries = [Query(f"q{i}", f"query about topic {i}", "natural", f"d{i}") for i in range(n_queries)]
    qrels = {f"q{i}": {f"d{i}": 3, f"d{(i + 1) % n_queries}": 1} for i in range(n_queries)}
    filler = [f"d{j}" for j in range(n_queries, n_docs)]
    ann = {}
    for i in range(n_queries):
        ranking = [f"d{i}", *filler[:7]]
        ranking += [filler[7], f"d{(i + 1) % n_queries}"] if i < late else [f"d{(i + 1) % n_queries}", filler[7]]
        ann[f"q{i}"] = ranking
    if fulltext_short:
        fulltext = {f"q{i}": [f"d{i}"] if i % 2 == 0 else [filler[0]] for i in range(n_queries)}
    else:
        fulltext = {f"q{i}": [*filler[:2], f"d{i}", *filler[2:9]] for i in range(n_queries)}
    rankings = {"ann": ann, "fulltext": fulltext}
    if hybrid_like_ann:
        rankings["hybrid"] = dict(ann)
    return RunSpec(documents, queries, qrels, rankings, k=10, name=name, collection_name=collection)


def _open(browser, url: str, page_name: str):
    page = browser.new_page(viewport=VIEWPORT)
    page.set_default_timeout(60_000)
    page.goto(f"{url}/{page_name}")
    return page


def _settled(page) -> None:
    """Wait until the script run ends (Streamlit's status widget goes)."""
    deadline = time.time() + 60
    time.sleep(0.3)
    while page.locator('[data-testid="stStatusWidget"]').count() and time.time() < deadline:
        time.sleep(0.2)


def _choose(page, label: str, option: str) -> None:
    page.get_by_role("combobox", name=label).click()
    page.get_by_role("option", name=option, exact=True).click()
    _settled(page)


def _until(read, done, timeout_s: float = 15):
    """``read()`` once ``done`` holds of it (or, after the timeout, as it is then)."""
    deadline = time.time() + timeout_s
    value = read()
    while not done(value) and time.time() < deadline:
        time.sleep(0.3)
        value = read()
    return value


def _tiles(page) -> dict[str, str]:
    tiles = {}
    for tile in page.locator('[data-testid="stMetric"]').all():
        label = tile.locator('[data-testid="stMetricLabel"]').inner_text().strip()
        tiles[label] = tile.locator('[data-testid="stMetricValue"]').inner_text().strip()
    return tiles


def _text(page) -> str:
    """Every word on the page, folded sections too."""
    return page.locator('[data-testid="stMain"]').text_content()


def _shot(page, name: str) -> None:
    if SCREENSHOT_DIR:
        Path(SCREENSHOT_DIR).mkdir(parents=True, exist_ok=True)
        time.sleep(1)
        page.screenshot(path=str(Path(SCREENSHOT_DIR) / f"{name}.png"))


VERDICT = re.compile(r"(beats .*?: a real difference|are not distinguishable|a real change|not distinguishable "
                     r"from no change|, significant;|, not distinguishable from no reranker)")
INTERVAL = re.compile(r"95% CI ([+-]\d+\.\d+) to ([+-]\d+\.\d+)")


def _verdicts(page) -> list[tuple[float, float, bool]]:
    """Each sentence on the page (folded sections too) with a paired interval and a verdict:
    (low, high, said significant)."""
    out = []
    for sentence in page.locator('[data-testid="stMarkdownContainer"]').all_text_contents():
        interval, verdict = INTERVAL.search(sentence), VERDICT.search(sentence)
        if interval and verdict:
            words = verdict.group(1)
            out.append((float(interval.group(1)), float(interval.group(2)),
                        "real" in words or words == ", significant;"))
    return out


def test_the_tiles_change_with_the_metric_and_k(dashboard, browser):
    url, store = dashboard
    write_run(store, spec("tiles", "tiles run"))
    page = _open(browser, url, "results")
    page.get_by_text("Best DCG@10").wait_for()
    assert float(_tiles(page)["Best DCG@10"]) == pytest.approx(3 + 1 / 3.321928, abs=0.005)  # ranks 1, 9
    _choose(page, "Metric", "NDCG")
    _choose(page, "k", "5")
    tiles = _until(lambda: _tiles(page), lambda t: "Best NDCG@5" in t)
    assert "Best DCG@10" not in tiles and "Best NDCG@5" in tiles, tiles
    # NDCG@5 of ANN: DCG@5 3 over the ideal 3 + 1/log2(3) = 3.631.
    assert tiles["Best NDCG@5"] == f"{3 / (3 + 1 / 1.584963):.3f}"
    text = _text(page)
    assert "top-5 overlap per pair" in text and "NDCG@5 per strategy" in text
    _shot(page, "results")


def test_a_one_result_strategy_is_not_rewarded_and_is_flagged(dashboard, browser):
    url, store = dashboard
    write_run(store, spec("upload", "upload run", fulltext_short=True))
    page = _open(browser, url, "results")
    page.get_by_text("Best DCG@10").wait_for()
    text = " ".join(_text(page).split())
    assert "Full-text (BM25) returned fewer than 10 results on 12 of 12 queries (100%)" in text
    curves = {t["name"]: t["y"] for t in _wait_chart(page, "position")["data"]}
    # Full-text: grade 3 at rank 1 on half of the queries, nothing below: 1.5, then 0 at every rank.
    assert curves["Full-text (BM25)"] == pytest.approx([1.5] + [0.0] * 9)
    assert "Queries with a result at rank 1 / 10: ANN (dense) 12 / 12 of 12; Full-text (BM25) 12 / 0 of 12" in text
    relevance = {r["strategy"]: r["value"] for r in store.metric_summary(store.list_runs()[0].run_id, 10)
                 if r["metric"] == "mean_relevance"}
    assert relevance["ann"] > relevance["fulltext"]  # 0.4 against 0.15: divided by k


def test_trends_over_two_collections_draws_a_series_for_each(dashboard, browser):
    url, store = dashboard
    write_run(store, spec("alpha", "alpha run"))
    write_run(store, spec("beta", "beta run", n_queries=10))
    page = _open(browser, url, "trends")
    trend = _wait_chart(page, "trend")
    lines = {t["name"]: t["y"] for t in trend["data"] if t["mode"] == "lines+markers"}
    # The latest run's collection by default: beta's strategies only.
    assert set(lines) == {"ANN (dense)", "Full-text (BM25)"}
    _choose(page, "Collection", "All collections")
    lines = _until(lambda: {t["name"]: t["y"] for t in _wait_chart(page, "trend")["data"] if t["mode"] == "lines+markers"},
                   lambda shown: "ANN (dense) · alpha" in shown)
    for collection in ("alpha", "beta"):
        assert len(lines[f"ANN (dense) · {collection}"]) == 1
        assert len(lines[f"Full-text (BM25) · {collection}"]) == 1
    _choose(page, "Collection", "beta")
    _shot(page, "trends")


def test_every_interval_and_its_verdict_agree_and_recommended_means_a_winner(dashboard, browser):
    url, store = dashboard
    write_run(store, spec("verdicts", "verdicts run", hybrid_like_ann=True))
    page = _open(browser, url, "results")
    page.get_by_text("Best DCG@10").wait_for()
    # The tiles come first; the sentences with their intervals are drawn further down the same run.
    verdicts = _until(lambda: _verdicts(page), lambda v: len(v) >= 2, timeout_s=30)
    text = _text(page)
    # ANN against hybrid (equal on every query) and against full-text (beaten on every query).
    assert len(verdicts) >= 2 and {significant for *_, significant in verdicts} == {True, False}
    for low, high, significant in verdicts:
        assert (low > 0 or high < 0) == significant, (low, high, significant)
    # Hybrid ties ANN: no recommendation, the highest is named as such.
    tiles = _tiles(page)
    assert "Recommended strategy" not in tiles and tiles["Highest, no clear winner"] == "ANN (dense)"
    assert "No clear winner on DCG@10" in text


def test_compare_draws_a_small_change_small(dashboard, browser):
    url, store = dashboard
    write_run(store, spec("drift", "drift before"))
    write_run(store, spec("drift", "drift after", late=2))
    page = _open(browser, url, "compare")
    page.get_by_text("Change in DCG@10").wait_for()
    chart = _wait_chart(page, "compare")
    [bars] = chart["data"]
    change = dict(zip(bars["x"], bars["y"], strict=True))["ANN (dense)"]
    assert change == pytest.approx(-2 * (1 / 3.321928 - 1 / 3.459432) / 12, abs=1e-6)  # -0.002
    low, high = chart["yrange"]
    assert low == pytest.approx(-high) and abs(change) / high < 0.1
    text = _text(page)
    assert f"{change:+.3f}" in text
    assert _verdicts(page)
    for low_ci, high_ci, significant in _verdicts(page):
        assert (low_ci > 0 or high_ci < 0) == significant
    _shot(page, "compare")


def test_trends_of_a_suite_marks_the_regression_and_names_what_changed(dashboard, browser):
    url, store = dashboard
    _suite_with_a_drop(store)  # two runs of collection "tiny", the second's full-text a stored drop
    page = _open(browser, url, "trends")
    page.get_by_role("combobox", name="Suite").wait_for()
    _choose(page, "Suite", "nightly")
    trend = _wait_chart(page, "suite_trend")
    names = [t["name"] for t in trend["data"]]
    assert "Full-text (BM25): significant drop" in names and "Full-text (BM25)" in names
    hover = page.evaluate("""() => {
        const gd = [...document.querySelectorAll('.js-plotly-plot')].find(
            g => g.layout && g.layout.meta && g.layout.meta.chart === 'suite_trend');
        return gd.data.find(t => t.name === 'Full-text (BM25)').text;
    }""")
    assert "changed: index.rerank_depth: 50 -&gt; 100" in hover[1] and "note: synonyms v3 deployed" in hover[1]
    assert "Suite nightly: tiny, 2 frozen queries" in " ".join(_text(page).split()).replace("\\", "")
    _shot(page, "trends-suite")
