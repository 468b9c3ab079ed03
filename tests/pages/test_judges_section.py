""""Can I trust the judge?" on Results and Review: the real pages through Streamlit's AppTest, on a
simulated run with a panel of two judges graded straight into the store."""

from __future__ import annotations

import re

import pytest

from tests.engine.judges.fixtures import write_simulated_run
from tests.pages.conftest import open_page

pytestmark = pytest.mark.slow


def _texts(elements) -> list[str]:
    return [re.sub(r"\\(.)", r"\1", e.value) for e in elements]


def test_results_says_first_whether_the_judge_picks_the_winners_people_pick(store, tmp_path):
    run_id, _ = write_simulated_run(store, tmp_path / "sim", ["faithful", "lenient"], repeats=1, n_queries=24)
    at = open_page("views/results.py")
    assert not at.exception
    headers = [h.value for h in at.subheader]
    assert "Can I trust the judge?" in headers
    said = _texts(at.success) + _texts(at.info) + _texts(at.warning)
    decision = next(s for s in said if "picks the same winner as people" in s)
    assert decision.startswith("The panel picks the same winner as people in 6 of 6 comparisons on DCG@5")
    assert "over 24 queries" in decision
    # Stability before item agreement, the lenient judge's upward bias said in words.
    assert any("asked again on" in s and "The judge lenient" in s for s in said)
    assert any("The judge lenient: weighted kappa" in s and "grades higher than people" in s for s in said)
    table = next(d.value for d in at.dataframe if "Decisions agree" in d.value.columns)
    assert list(table["Judge"]) == ["faithful", "lenient", "panel"]
    assert table.loc[table["Judge"] == "faithful", "Queries"].item() == 24
    assert any(s.startswith("Which judge to use: ") for s in said)
    # The section's figures are the CLI's and the MCP tool's: one computation (viewmodels/judges.py).
    from searchgrade.viewmodels.judges import judges_json, judges_view

    document = judges_json(judges_view(store, run_id, "dcg@5").report)
    faithful = next(j for j in document["judges"] if j["model"] == "faithful")
    assert faithful["decision_agreement"] == 1.0 and faithful["tau"] == 1.0


def test_review_offers_the_same_section_for_the_run_being_rated(store, tmp_path):
    write_simulated_run(store, tmp_path / "sim", ["faithful", "lenient"], n_queries=24)
    at = open_page("views/review.py")
    assert not at.exception
    expander = next(e for e in at.expander if e.label.startswith("Can I trust the judge?"))
    said = _texts(expander.success) + _texts(expander.info)
    assert any("picks the same winner as people in 6 of 6 comparisons" in s for s in said)
