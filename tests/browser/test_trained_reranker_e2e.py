"""A run that used a trained reranker, in the real app and a real browser: Results titles the
comparison with the reranker's name, says it was measured on queries the reranker never saw, and
its table holds the stored figures; the form to train another reranker is there.

The run is written through the engine (tests/pages/synthetic.py), so the test needs no model: what
it checks is what the browser shows for such a run.
"""

from __future__ import annotations

import math
import re
import time

import pytest

from searchgrade.engine.store import Store
from searchgrade.viewmodels.reranker import NEVER_SAW
from tests.browser.test_e2e import _grid_text, app  # noqa: F401 - a fixture
from tests.pages.synthetic import tiny_spec, write_run

pytestmark = [pytest.mark.browser, pytest.mark.slow]

TITLE = "Baseline vs trained reranker tiny-v1"


def test_results_of_a_run_with_a_trained_reranker(app, browser):  # noqa: F811
    url, home = app
    store = Store(home)
    write_run(store, tiny_spec(stats={"reranker": {"trained": "tiny-v1", "mode": "cross-fitted", "held_out": 2,
                                                   "plain": 0, "source_run": "abc"}}))
    page = browser.new_page(viewport={"width": 1400, "height": 1600})
    page.set_default_timeout(60_000)
    page.goto(f"{url}/results")
    page.get_by_text(TITLE).wait_for()
    page.get_by_text(re.compile(rf"{NEVER_SAW}: each of the 2 queries", re.IGNORECASE)).wait_for()
    page.get_by_text("Train a reranker on these grades").wait_for()

    # DCG@3 (the headline) of ann and ann_rerank, from tiny_spec's rankings and grades.
    log3 = math.log2(3)
    base = ((3 / log3) + (2 + 3 / 2)) / 2
    reranked = (3 + (3 + 2 / log3)) / 2
    expected = [base, reranked, reranked - base]
    caption = "each of the 2 queries"  # the caption just above the table
    page.get_by_text(caption).first.scroll_into_view_if_needed()
    deadline = time.time() + 30
    while True:  # the grid draws its cells after it scrolls into view (its cells hold the stored values)
        table = _grid_text(page, caption)
        numbers = [float(x) for x in re.findall(r"[-+]?\d+\.\d+", table)]
        missing = [e for e in expected if not any(abs(n - e) < 1e-9 for n in numbers)]
        if not missing or time.time() > deadline:
            break
        time.sleep(0.5)
    assert not missing, f"{missing} not in the reranker table: {table[:500]!r}"
    assert "ANN (dense)" in table
