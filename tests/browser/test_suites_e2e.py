"""The Suites page in the real app in Chromium: the suite's series with the regression marker, and
the changed setting and the note named on the point."""

from __future__ import annotations

import pytest

from searchgrade.engine.store import Store
from tests.browser.test_e2e import _wait_chart, app  # noqa: F401 - a fixture
from tests.pages.test_suites_page import _suite_with_a_drop

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_the_suites_page_marks_the_drop_and_names_what_changed(app, browser):  # noqa: F811
    url, home = app
    _suite_with_a_drop(Store(home))
    page = browser.new_page(viewport={"width": 1400, "height": 1400})
    page.set_default_timeout(60_000)
    page.goto(f"{url}/suites")
    chart = _wait_chart(page, "suite_trend")
    names = [t["name"] for t in chart["data"]]
    assert "Full-text (BM25): significant drop" in names
    texts = page.evaluate("""() => {
        const gd = [...document.querySelectorAll('.js-plotly-plot')].find(
            g => g.layout && g.layout.meta && g.layout.meta.chart === 'suite_trend');
        return gd.data.filter(t => t.name === 'Full-text (BM25)').map(t => t.text)[0];
    }""")
    assert "index.rerank_depth: 50 -&gt; 100" in texts[1] and "synonyms v3 deployed" in texts[1]
    main = page.locator('[data-testid="stMain"]').inner_text()
    assert "Run now" in main and "SECRET-TOKEN" not in page.content()
