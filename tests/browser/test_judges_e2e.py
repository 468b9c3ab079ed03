""""Can I trust the judge?" in the real app in Chromium: a run with a panel of simulated judges
(written into the store through the engine: tests/engine/judges/fixtures.py), the section opened on
Results at 1500x1100 and photographed (under the test's tmp_path, or SEARCHGRADE_E2E_SCREENSHOTS).
What is checked: the section draws, its decision sentence and the judges' table agree with the
store's report, and the judge recommended is the one the report recommends."""

from __future__ import annotations

from pathlib import Path

import pytest

from searchgrade.engine.store import Store
from searchgrade.viewmodels.judges import judges_view
from tests.browser.test_e2e import SCREENSHOT_DIR, app  # noqa: F401 - a fixture
from tests.engine.judges.fixtures import write_simulated_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_the_section_shows_the_panels_decisions_first_and_every_judge(app, browser, tmp_path):  # noqa: F811
    url, home = app
    store = Store(home)
    run_id, _ = write_simulated_run(store, tmp_path / "sim", ["faithful", "faithful_big", "flip", "lenient"],
                                    repeats=1, n_queries=30)
    expected = judges_view(store, run_id, "dcg@5")
    page = browser.new_page(viewport={"width": 1500, "height": 1100})
    page.set_default_timeout(180_000)
    page.goto(f"{url}/results")
    heading = page.get_by_role("heading", name="Can I trust the judge?")
    heading.wait_for()
    page.get_by_text("Which judge to use:").first.wait_for()
    heading.scroll_into_view_if_needed()
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert expected.decisions[0].text in main.replace("\n", " ")
    assert expected.recommendation.text.split(":")[1].strip() in main.replace("\n", " ")
    section = main[main.index("Can I trust the judge?"):]
    # Decisions before stability before item agreement.
    assert (section.index("picks the same winner as people") < section.index("Does it say the same thing twice?")
            < section.index("Does it grade each result as people do?") < section.index("Every judge, and which"))
    table = page.get_by_text("Every judge, and which one to use")
    table.scroll_into_view_if_needed()
    folder = Path(SCREENSHOT_DIR) if SCREENSHOT_DIR else tmp_path
    folder.mkdir(parents=True, exist_ok=True)
    heading.evaluate("element => element.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(500)
    page.screenshot(path=str(folder / "judges.png"))
    assert (folder / "judges.png").stat().st_size > 10_000
