"""Rating in the real app in a real browser: rate three results of the drill-down with the keyboard,
re-score, and see the new run's figures move as the ratings imply; the review queue is blind.

The run is an LLM-judged one written through the engine (tests/pages/synthetic.py), so the test
needs no index and no LLM: what it checks is the app's rating, storing, re-scoring and drawing.
"""

from __future__ import annotations

import math
import re
import time
from pathlib import Path

import pytest

from engine.store import Store
from engine.strategies import label as strategy_label
from tests.browser.test_e2e import SCREENSHOT_DIR, _wait_chart, app, browser  # noqa: F401 - fixtures
from tests.pages.synthetic import llm_spec, write_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def _wait_text(page, pattern: str, timeout_s: float = 60) -> None:
    page.get_by_text(re.compile(pattern)).first.wait_for(timeout=timeout_s * 1000)


def _blur(page) -> None:
    """Wait for the script run to end, then take the focus off any text box (keys typed there are
    text, not shortcuts)."""
    deadline = time.time() + 60
    while page.locator('[data-testid="stStatusWidget"]').count() and time.time() < deadline:
        time.sleep(0.2)
    time.sleep(0.5)
    page.evaluate("() => document.activeElement && document.activeElement.blur()")


def _main_text(page) -> str:
    return page.locator('[data-testid="stMain"]').inner_text()


def test_rate_three_results_rescore_and_see_the_new_figures(app, browser, tmp_path):  # noqa: F811
    url, home = app
    store = Store(home)
    parent = write_run(store, llm_spec())
    page = browser.new_page(viewport={"width": 1400, "height": 1600})
    page.set_default_timeout(60_000)

    page.goto(f"{url}/drilldown")
    page.get_by_text("Rate these results").wait_for()
    name = page.get_by_label("Your name, to rate results")
    name.fill("Ada")
    name.press("Enter")
    _wait_text(page, r"Result 1 of \d+ · rating as Ada")
    # q1's results, one at a time: ann's d3 (judge 0), d1 (judge 3), d5 (judge failed).
    for key, step in (("3", 2), ("1", 3), ("2", 4)):
        _blur(page)
        page.keyboard.press(key)
        _wait_text(page, rf"Result {step} of \d+")
    ratings = sorted((r["doc_id"], r["grade"], r["rater"]) for r in store.labels("tiny"))
    assert ratings == [("d1", 1, "Ada"), ("d3", 3, "Ada"), ("d5", 2, "Ada")]

    page.get_by_role("button", name="Re-score with the latest labels").click()
    page.get_by_text("Best DCG@").wait_for()
    [child] = [r for r in store.list_runs() if r.parent_run_id == parent]
    _wait_text(page, re.escape(f"run {child.run_id}"))
    chart = _wait_chart(page, "strategies")
    shown = {x: y for trace in chart["data"] for x, y in zip(trace["x"], trace["y"], strict=True)}
    # ann: q1 [3, 1, 2] and q2 [2, failed = 0, 3]; fulltext: q1 [d5 2, d1 1, d2 1], q2 [failed, 3, 2]
    log3 = math.log2(3)
    expected = {strategy_label("ann"): ((3 + 1 / log3 + 1) + (2 + 1.5)) / 2,
                strategy_label("fulltext"): ((2 + 1 / log3 + 0.5) + (3 / log3 + 1)) / 2}
    assert shown == pytest.approx(expected)
    before = {r["strategy"]: r["value"] for r in store.metric_summary(parent, 3) if r["metric"] == "dcg"}
    assert before == pytest.approx({"ann": (3 / log3 + 3.5) / 2, "fulltext": ((3 / log3 + 0.5) + (3 / log3 + 1)) / 2})
    if SCREENSHOT_DIR:
        Path(SCREENSHOT_DIR).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOT_DIR) / "rescored.png"), full_page=True)

    # The blind review queue of the new run (the same browser session: the name is not asked again):
    # no judge grade, rank or strategy on the screen.
    page.get_by_role("link", name="Review").click()
    page.get_by_role("button", name="Start this review").click()
    # Pairs Ada rated in the drill-down count as done: the queue starts after them.
    _wait_text(page, r"\d+ of \d+ rated by Ada")
    done = int(re.search(r"(\d+) of \d+ rated by Ada", _main_text(page)).group(1))
    item = _main_text(page).split("rated by Ada", 1)[1]
    for hidden in (strategy_label("ann"), strategy_label("fulltext"), "judge:", "reason for"):
        assert hidden not in item
    assert not re.search(r"rank \d|judge \d|grade \d", item)
    _blur(page)
    page.keyboard.press("2")
    _wait_text(page, rf"{done + 1} of \d+ rated by Ada")
    if SCREENSHOT_DIR:
        time.sleep(1)
        page.screenshot(path=str(Path(SCREENSHOT_DIR) / "review.png"), full_page=True)
    assert [r["origin"] for r in store.labels("tiny")].count("review") == 1
