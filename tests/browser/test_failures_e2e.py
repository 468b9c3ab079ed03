"""Why queries fail, in the real app in Chromium (issue 34): a Cranfield run (graded labels, BM25)
whose failed queries are of both kinds; the Results section shows them apart, and its kinds and its
causes each add up to the failed queries, as the run store says; a cause's queries are a pick away;
the failed queries are grouped and the map drawn on request."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from searchgrade.cli import main
from searchgrade.engine.failures.causes import CAUSES, KINDS
from searchgrade.engine.store import Store
from searchgrade.viewmodels.failures import failure_summary
from tests.browser.server import environment, pick, serve_app
from tests.browser.test_e2e import _wait_chart
from tests.conftest import CRANFIELD

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SCREENSHOT_DIR = os.environ.get("SEARCHGRADE_E2E_SCREENSHOTS")


@pytest.fixture(scope="module")
def cranfield(tmp_path_factory):
    """A BM25 run on Cranfield in the app's data directory, and the app."""
    workdir = tmp_path_factory.mktemp("failures")
    home = workdir / "home"
    assert main(["evaluate", str(CRANFIELD), "--qrels", "--strategies", "fulltext", "--max-queries", "80",
                 "--data-dir", str(home)]) == 0
    with serve_app(workdir, env=environment(home)) as url:
        yield url, Store(home)


def _grid_rows(page, anchor: str) -> list[list[str]]:
    """The rows (header first) of the first data grid after the text ``anchor``."""
    return page.evaluate("""(anchor) => {
        const marks = [...document.querySelectorAll(
            '[data-testid="stMarkdownContainer"], [data-testid="stCaptionContainer"]')];
        const mark = marks.find(m => m.innerText.includes(anchor));
        if (!mark) return [];
        const grids = [...document.querySelectorAll('[data-testid="stDataFrame"]')];
        const grid = grids.find(g => mark.compareDocumentPosition(g) & Node.DOCUMENT_POSITION_FOLLOWING);
        if (!grid) return [];
        return [...grid.querySelectorAll('[role=row]')].map(r =>
            [...r.querySelectorAll('[role=columnheader], [role=gridcell]')].map(c => c.innerText.trim()));
    }""", anchor)


def test_the_failed_queries_section_separates_the_two_kinds_and_the_causes_add_up(cranfield, browser):
    url, store = cranfield
    (run,) = store.list_runs()
    stored = failure_summary(store, run.run_id).table.set_index("strategy").loc["fulltext"]
    assert stored["judged_not_relevant"] > 0 and stored["unjudged"] > 0  # Cranfield: both kinds
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    page.set_default_timeout(120_000)
    page.goto(f"{url}/results")
    _wait_chart(page, "strategies")
    anchor = "A query fails for a strategy when its top result is not relevant"
    page.get_by_text(anchor).first.scroll_into_view_if_needed()
    deadline = time.time() + 30
    rows: list[list[str]] = []
    while time.time() < deadline:  # the grid draws its cells after it scrolls into view
        rows = _grid_rows(page, anchor)
        if len(rows) >= 2 + len(KINDS) + len(CAUSES):
            break
        time.sleep(0.5)
    counts = {r[0]: int(r[1].replace(",", "")) for r in rows[1:] if len(r) == 2}
    failed = counts["Failed"]
    kinds = {k: counts[f"Kind · {c.title}"] for k, c in KINDS.items()}
    causes = {k: counts[f"Cause · {c.title}"] for k, c in CAUSES.items()}
    assert kinds["judged_not_relevant"] > 0 and kinds["unjudged"] > 0, kinds
    assert sum(kinds.values()) == failed == sum(causes.values()), counts
    assert failed == stored["failed"] and kinds == {k: stored[k] for k in KINDS}
    assert causes == {k: stored[k] for k in CAUSES}
    # The picker opens on the strategy with the most failed queries; one cause's queries a pick away.
    page.get_by_text(f"{failed} failed queries of Full-text (BM25)").first.wait_for()
    cause = max(causes, key=causes.get)
    pick(page, "Show", f"Cause: {CAUSES[cause].title} ({causes[cause]})")
    heading = f"{causes[cause]} failed quer{'y' if causes[cause] == 1 else 'ies'} of Full-text (BM25)"
    page.get_by_text(heading).first.wait_for()
    page.get_by_text(f"{CAUSES[cause].title}: {CAUSES[cause].meaning}").first.wait_for()
    # Grouped by meaning; the map on request.
    page.get_by_text("Failed queries grouped by meaning").first.scroll_into_view_if_needed()
    page.get_by_text("Show the map of the queries").click()
    figure = _wait_chart(page, "failure_map")
    drawn = sum(1 for trace in figure["data"] if trace.get("mode") == "markers" for x in trace["x"] if x is not None)
    assert drawn == store.query_count(run.run_id)  # every query of the run, once
    names = [trace["name"] for trace in figure["data"]]
    assert "Top result judged not relevant" in names and "Top result unjudged" in names  # the fills, keyed
    if SCREENSHOT_DIR:  # the whole page, for a person to look at
        page.set_viewport_size({"width": 1500, "height": 5200})
        Path(SCREENSHOT_DIR).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOT_DIR) / "failures.png"))
    page.close()
