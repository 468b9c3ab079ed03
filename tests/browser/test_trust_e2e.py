"""Rating in the real app in a real browser: rate three results of the drill-down with the keyboard,
re-score, and see the new run's figures move as the ratings imply; the review queue is blind.

The run is an LLM-judged one written through the engine (tests/pages/synthetic.py), so the test
needs no index and no LLM: what it checks is the app's rating, storing, re-scoring and drawing.
"""

from __future__ import annotations

import math
import os
import re
import time
from pathlib import Path

import pytest

from searchgrade.engine.run.strategies import label as strategy_label
from searchgrade.engine.store import Store
from tests.browser.test_e2e import SCREENSHOT_DIR, _wait_chart, app  # noqa: F401 - a fixture
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


def _beir_with_long_documents(folder: Path) -> Path:
    """Four documents long enough for the generator's default minimum (20 words, 100 characters)."""
    import json

    folder.mkdir(parents=True)
    topics = ("glaciers", "volcanoes", "tides", "deserts")
    with open(folder / "corpus.jsonl", "w", encoding="utf-8") as f:
        for i, topic in enumerate(topics):
            text = (f"{topic} shape the land over long periods. This note explains how {topic} form, how "
                    f"scientists measure them, and why {topic} matter for the people who live near them.")
            f.write(json.dumps({"_id": f"d{i}", "title": topic.title(), "text": text}) + "\n")
    (folder / "queries.jsonl").write_text("")
    return folder


def test_upload_a_judge_prompt_estimate_the_cost_then_run_with_it(app, browser, tmp_path):  # noqa: F811
    """The Evaluate page in Chromium: a bad prompt file is one line, a good one is used; Estimate cost
    shows the dry run's figures before anything runs, and the endpoint typed here never gets the key."""
    from searchgrade.engine.collections import load_collection
    from searchgrade.engine.llm.judge import JudgeSettings
    from searchgrade.engine.llm.querygen import QueryGenSettings
    from searchgrade.engine.llm.settings import LLMSettings
    from searchgrade.engine.run.config import RunConfig
    from searchgrade.engine.run.estimate import estimate_cost
    from tests.engine.llm.fake_server import FakeOpenAIServer
    from tests.engine.llm_fakes import Recorder
    from tests.pages.test_evaluate_judge import PACKAGED, STRICT

    url, home = app
    folder = _beir_with_long_documents(tmp_path / "notes")
    bad = tmp_path / "five_point.txt"
    bad.write_text(PACKAGED.replace("0-3 scale", "1-5 scale"), encoding="utf-8")
    good = tmp_path / "strict_judge.txt"
    good.write_text(STRICT, encoding="utf-8")
    recorder = Recorder()
    with FakeOpenAIServer(recorder) as server:
        page = browser.new_page(viewport={"width": 1400, "height": 2600})
        page.set_default_timeout(60_000)
        page.goto(url)
        page.get_by_role("button", name="Evaluate search quality").wait_for()
        page.get_by_text("A path on this machine").click()
        path = page.get_by_label("Path", exact=True)
        path.fill(str(folder))
        path.press("Enter")
        page.get_by_text("4 documents").first.wait_for()
        for label, value in (("Model", "fake"), ("Endpoint base URL", server.base_url)):
            box = page.get_by_label(label, exact=True)
            box.fill(value)
            box.press("Enter")
            _blur(page)
        page.locator('[data-testid="stRadio"]').filter(has_text="Grading").get_by_text(
            "LLM judge", exact=True).click()
        uploader = page.locator('[data-testid="stFileUploader"]').filter(has_text="Judge prompt")
        uploader.locator('input[type="file"]').set_input_files(str(bad))
        _wait_text(page, r"The judge prompt file five_point\.txt describes a scale beyond 0-3")
        # Offline the reranked strategies are not preselected (no reranker model loads here).
        for name in ("ANN (dense)", "Hybrid (RRF)"):
            page.get_by_role("button", name=f"Remove {name}").click()
        _blur(page)
        page.get_by_role("button", name="Estimate cost").click()
        _blur(page)
        assert "Estimated cost" not in _main_text(page)
        assert server.requests == []

        uploader.locator('input[type="file"]').set_input_files(str(good))
        _wait_text(page, r"Judging with your prompt, version strict_judge-")
        assert "five_point" not in _main_text(page)
        page.get_by_role("button", name="Estimate cost").click()
        _wait_text(page, "Estimated cost")
        shown = _main_text(page)
        config = RunConfig(mode="llm", strategies=("fulltext",), depth=10,
                           llm=LLMSettings(model="fake", base_url=server.base_url),
                           querygen=QueryGenSettings(n_docs=4),
                           judge=JudgeSettings(prompt="strict_judge", prompt_text=STRICT))
        for line in estimate_cost(load_collection(folder), config, Store(home)).lines():
            assert line[0].upper() + line[1:] in shown, (line, shown)
        assert "Query generation: 4 calls" in shown
        assert {method for method, _, _ in server.requests} == {"GET"} and recorder.posts == {"judge": 0, "querygen": 0}
        assert Store(home).list_runs() == []
        if SCREENSHOT_DIR:
            Path(SCREENSHOT_DIR).mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(Path(SCREENSHOT_DIR) / "estimate.png"), full_page=True)

        page.get_by_role("button", name="Evaluate search quality").click()
        page.get_by_text("Run complete").wait_for(timeout=300_000)
        page.close()
    [run] = Store(home).list_runs()
    assert run.status == "complete" and run.config["judge"]["prompt_text"] == STRICT
    assert run.stats["llm"]["prompt_version"].startswith("strict_judge-")
    assert recorder.posts["judge"] > 0
    # The server's key, if the environment has one, never went to the endpoint typed in the browser.
    key = os.environ.get("OPENAI_API_KEY")
    assert not key or not [h for _, _, h in server.requests if key in " ".join(h.values())]
