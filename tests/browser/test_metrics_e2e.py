"""Pages that explain every figure, in the real app in Chromium on the demo (SciFact: binary labels):
with a lower-is-better metric the tiles and the words say "lowest"; no "highly relevant" metric, and no
diagnostic, is offered; every offered metric has its definition on the page (issue 32).

The demo run is the session's (tests/conftest.py ``demo_hybrid``: ANN, full-text and hybrid over the
300 queries), its store copied into the app's data directory.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import pytest

from searchgrade.engine.metrics import REGISTRY
from searchgrade.engine.store.connection import DB_FILENAME
from tests.browser.server import environment, serve_app

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SCREENSHOT_DIR = os.environ.get("SEARCHGRADE_E2E_SCREENSHOTS")


@pytest.fixture(scope="module")
def demo_app(demo_hybrid, tmp_path_factory):
    source, run_id = demo_hybrid
    workdir = tmp_path_factory.mktemp("metrics-app")
    home = workdir / "home"
    home.mkdir()
    shutil.copy(source / DB_FILENAME, home / DB_FILENAME)
    with serve_app(workdir, env=environment(home)) as url:
        yield url, run_id


def _settled(page) -> None:
    deadline = time.time() + 90
    time.sleep(0.3)
    while page.locator('[data-testid="stStatusWidget"]').count() and time.time() < deadline:
        time.sleep(0.2)


def _options(page, label: str) -> list[str]:
    page.get_by_role("combobox", name=label, exact=True).click()
    options = [o.inner_text().strip() for o in page.get_by_role("option").all()]
    page.keyboard.press("Escape")
    return options


def _tiles(page) -> dict[str, str]:
    return {t.locator('[data-testid="stMetricLabel"]').inner_text().strip():
            t.locator('[data-testid="stMetricValue"]').inner_text().strip()
            for t in page.locator('[data-testid="stMetric"]').all()}


def _text(page) -> str:
    """Every word on the page, folded sections (the glossary) too."""
    return " ".join(page.locator('[data-testid="stMain"]').text_content().split())


def _shot(page, name: str) -> None:
    if SCREENSHOT_DIR:
        Path(SCREENSHOT_DIR).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SCREENSHOT_DIR) / f"{name}.png"), full_page=False)


def test_the_demo_offers_its_metrics_explains_each_and_says_lowest_where_lower_is_better(demo_app, browser):
    url, run_id = demo_app
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    page.set_default_timeout(90_000)
    page.goto(f"{url}/results")
    page.get_by_text("Best DCG@").first.wait_for()
    _settled(page)

    offered = _options(page, "Metric")
    labels = {record.label: key for key, record in REGISTRY.items()}
    assert "DCG" in offered and "Share not relevant" in offered
    # Binary labels: no "highly relevant" share, no ERR (graded labels); no diagnostic is ranked.
    assert not {"Share highly relevant", "ERR", "Judged share", "RBP residual", "Source found", "infAP"} & set(offered)
    # DCG is read against the queries' ideal; every offered metric is defined on the page (the glossary).
    text = _text(page)
    assert "The queries' ideal DCG@10" in text
    for option in offered:
        record = REGISTRY[labels[option]]
        assert f"{record.label}@10: {record.definition}" in text, option
    _shot(page, "results-dcg")

    # A metric where lower is better: the tile and the decision say "lowest", never "highest".
    page.get_by_role("combobox", name="Metric", exact=True).click()
    page.get_by_role("option", name="Share not relevant", exact=True).click()
    _settled(page)
    deadline = time.time() + 60
    while "Best Share not relevant@10" not in _tiles(page) and time.time() < deadline:
        time.sleep(0.3)
    tiles = _tiles(page)
    assert "Best Share not relevant@10" in tiles, tiles
    assert not any(label.startswith("Highest") for label in tiles), tiles
    assert any(label.startswith("Lowest") or label == "Recommended strategy" for label in tiles), tiles
    text = _text(page)
    decision = page.locator('[data-testid="stAlert"]').first.inner_text()
    assert "lowest" in decision and "highest" not in decision, decision
    assert "Share not relevant@10: The share of the k places without a relevant result" in text
    assert "lower is better" in text
    _shot(page, "results-share-not-relevant")
    page.close()
