"""The real app in a real browser: evaluate the demo by clicking, then check what the pages show.

Starts the app as users do (`searchgrade app`) on a free port with its data directory in tmp_path,
drives Debian's Chromium through Playwright, and compares the charts and tables with the run stored in DuckDB.

Collection: the bundled demo (as a user would), when its precomputed vectors are shipped
(demo/scifact/embeddings/); otherwise a small BEIR folder cut from it, entered through the app's
path input, so the test stays within minutes. SEARCHGRADE_E2E_COLLECTION=demo|small forces one.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from searchgrade.engine.paths import DEMO_DIR
from searchgrade.engine.store import Store
from tests.browser.server import environment, serve_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]

#: Where a screenshot of the results page is written, besides tmp_path, when set.
SCREENSHOT_DIR = os.environ.get("SEARCHGRADE_E2E_SCREENSHOTS")


def _collection_choice() -> str:
    forced = os.environ.get("SEARCHGRADE_E2E_COLLECTION")
    if forced:
        return forced
    return "demo" if (DEMO_DIR / "embeddings").is_dir() else "small"


def small_beir(target: Path, n_queries: int = 12, n_other_docs: int = 60) -> Path:
    """A BEIR folder cut from the demo: some judged queries, their relevant documents, some others."""
    target.mkdir(parents=True)
    qrels = [line.split("\t") for line in (DEMO_DIR / "qrels.tsv").read_text().splitlines()[1:]]
    queries = {json.loads(line)["_id"]: line for line in (DEMO_DIR / "queries.jsonl").read_text().splitlines()}
    chosen = sorted({q for q, _, _ in qrels if q in queries}, key=int)[:n_queries]
    kept_qrels = [r for r in qrels if r[0] in chosen]
    wanted = {d for _, d, _ in kept_qrels}
    docs = []
    for line in (DEMO_DIR / "corpus.jsonl").read_text().splitlines():
        doc_id = json.loads(line)["_id"]
        if doc_id in wanted or len(docs) < len(wanted) + n_other_docs:
            docs.append(line)
    (target / "corpus.jsonl").write_text("\n".join(docs) + "\n")
    (target / "queries.jsonl").write_text("\n".join(queries[q] for q in chosen) + "\n")
    (target / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" +
                                      "".join("\t".join(r) + "\n" for r in kept_qrels))
    return target


@pytest.fixture
def app(tmp_path):
    home = tmp_path / "home"
    with serve_app(tmp_path, env=environment(home)) as url:
        yield url, home


def _charts(page) -> dict[str, dict]:
    """Every Plotly chart on the page, by layout.meta.chart: its traces as Plotly.js holds them, and
    the y range it drew."""
    return page.evaluate("""() => {
        const out = {};
        for (const gd of document.querySelectorAll('.js-plotly-plot')) {
            const name = gd.layout && gd.layout.meta && gd.layout.meta.chart;
            if (name) out[name] = {data: gd.data.map(t => ({name: t.name, x: t.x, y: t.y, fill: t.fill || null,
                                                           mode: t.mode || null})),
                                   layout: {meta: gd.layout.meta},
                                   yrange: gd._fullLayout.yaxis.range.slice()};
        }
        return out;
    }""")


def _wait_chart(page, name: str, timeout_s: float = 60) -> dict:
    deadline = time.time() + timeout_s
    while time.time() < deadline:
        charts = _charts(page)
        if name in charts:
            return charts[name]
        time.sleep(0.5)
    raise AssertionError(f"no {name!r} chart on {page.url}")


def _grid_text(page, heading: str) -> str:
    """The cell text of the first data grid after a heading (st.dataframe keeps cells in an ARIA table)."""
    return page.evaluate("""(heading) => {
        const marks = [...document.querySelectorAll(
            '[data-testid="stMarkdownContainer"], [data-testid="stCaptionContainer"]')];
        const mark = marks.find(m => m.innerText.includes(heading));
        if (!mark) return '';
        const all = [...document.querySelectorAll('[data-testid="stDataFrame"]')];
        const grid = all.find(g => mark.compareDocumentPosition(g) & Node.DOCUMENT_POSITION_FOLLOWING);
        return grid ? grid.innerText + '\\n' + [...grid.querySelectorAll('td, [role=gridcell]')]
            .map(c => c.innerText || c.textContent).join('\\n') : '';
    }""", heading)


def test_evaluate_the_demo_by_clicking_then_the_dashboard_shows_the_stored_run(app, browser, tmp_path):
    url, home = app
    choice = _collection_choice()
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    page.set_default_timeout(60_000)
    # A bookmarked page URL on a fresh server goes through the app's navigation too (a folder
    # named pages/ would make Streamlit serve the bare file, with its own sidebar).
    page.goto(f"{url}/trends")
    page.get_by_role("link", name="Query drill-down").wait_for()
    assert page.get_by_role("link", name="common").count() == 0
    page.goto(url)
    page.get_by_role("button", name="Evaluate search quality").wait_for()
    if choice == "small":
        folder = small_beir(tmp_path / "small-scifact")
        page.get_by_text("A path on this machine").click()
        path_box = page.get_by_label("Path", exact=True)
        path_box.fill(str(folder))
        path_box.press("Enter")
        page.get_by_text("queries with human judgments").wait_for()
    else:
        page.get_by_text("5,183 documents").wait_for()
    page.get_by_role("button", name="Evaluate search quality").click()
    page.get_by_text("Running").first.wait_for()
    if SCREENSHOT_DIR:
        Path(SCREENSHOT_DIR).mkdir(parents=True, exist_ok=True)
        time.sleep(3)
        page.screenshot(path=str(Path(SCREENSHOT_DIR) / "evaluate.png"))
    # The run happens in the server's worker; the page polls it.
    page.get_by_role("button", name="View results").wait_for(timeout=(900 if choice == "demo" else 300) * 1000)

    store = Store(home)
    [run] = store.list_runs()
    assert run.status == "complete", run.error
    k = min(10, run.depth)
    dcg = {r["strategy"]: r["value"] for r in store.metric_summary(run.run_id, k) if r["metric"] == "dcg"}
    assert dcg, "the run stored no DCG"

    # The results page, with the run picked in the run dropdown.
    page.get_by_role("link", name="Results").click()
    page.get_by_text("Best DCG@").wait_for()
    dropdown = page.get_by_role("combobox").first
    dropdown.click()
    page.get_by_role("option", name=run.name).first.click()
    strategies = _wait_chart(page, "strategies")
    shown = {}
    from searchgrade.engine.run.strategies import base_strategies, reranked_of
    from searchgrade.engine.run.strategies import label as strategy_label
    from searchgrade.viewmodels.common import WITHOUT

    labels = {strategy_label(s): s for s in base_strategies()}
    for trace in strategies["data"]:
        for x, y in zip(trace["x"], trace["y"], strict=True):
            base = labels[x]
            strategy = base if trace["name"] == WITHOUT else reranked_of(base)
            shown[strategy] = y
    assert shown == pytest.approx(dcg)

    # The failed-queries table: the stored failures of the strategy that fails most (the picker's start).
    from searchgrade.viewmodels.failures import failure_summary

    worst = failure_summary(store, run.run_id).default
    failed = store.failed_top1(run.run_id, worst, run.threshold)
    failed_ids = sorted({r["query_id"] for r in failed})
    heading = f"{len(failed_ids)} failed quer{'y' if len(failed_ids) == 1 else 'ies'} of {strategy_label(worst)}"
    page.get_by_text(heading).first.wait_for()
    page.get_by_text(heading).first.scroll_into_view_if_needed()
    # Each failed query's row shows that strategy's top-1 document as "... (doc id)".
    expected = [f"({r['doc_id']})" for r in failed if r["strategy"] == worst][:3]
    deadline = time.time() + 30
    while True:  # the grid draws its cells after it scrolls into view
        grid = _grid_text(page, heading)
        missing = [e for e in expected if e not in grid]
        if not missing or time.time() > deadline:
            break
        time.sleep(0.5)
    assert not missing, f"failed-query rows {missing} not in the table: {grid[:500]!r}"
    # Streamlit scrolls inside its own container: a tall viewport shows the whole page at once.
    page.set_viewport_size({"width": 1500, "height": 5200})
    time.sleep(2)
    page.screenshot(path=str(tmp_path / "results.png"))
    if SCREENSHOT_DIR:
        Path(SCREENSHOT_DIR).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOT_DIR) / "results.png"))
    page.set_viewport_size({"width": 1500, "height": 1100})

    # The trends chart: one point per strategy for this run, at the stored value.
    page.get_by_role("link", name="Trends").click()
    trend = _wait_chart(page, "trend")
    lines = {t["name"]: t["y"] for t in trend["data"] if t["mode"] == "lines+markers"}
    assert {name: len(y) for name, y in lines.items()} == {strategy_label(s): 1 for s in dcg}
    assert {name: y[0] for name, y in lines.items()} == pytest.approx(
        {strategy_label(s): v for s, v in dcg.items()})
    if SCREENSHOT_DIR:
        page.screenshot(path=str(Path(SCREENSHOT_DIR) / "trends.png"))

    # The drill-down opens on the run's first query, its text shown as text.
    page.get_by_role("link", name="Query drill-down").click()
    page.get_by_text("Results per strategy").wait_for()
    first = store.queries(run.run_id)[0]
    assert page.locator('[data-testid="stText"]').filter(has_text=first["text"]).count() >= 1
    if SCREENSHOT_DIR:
        page.set_viewport_size({"width": 1500, "height": 2400})
        time.sleep(2)
        page.screenshot(path=str(Path(SCREENSHOT_DIR) / "drilldown.png"))
