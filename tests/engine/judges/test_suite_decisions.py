"""Across the runs of a suite: does the judge see the same regressions people see?"""

from __future__ import annotations

from searchgrade.engine.judges.suite import SEPARATOR, suite_decisions
from searchgrade.engine.store import Store
from searchgrade.engine.suites.definition import suite_from_run
from searchgrade.viewmodels.judges import judges_view
from tests.engine.judges.fixtures import write_simulated_run
from tests.engine.judges.simulated import SKILLS


def test_the_faithful_judge_sees_the_drop_people_see_and_no_change_where_there_is_none(tmp_path):
    store = Store(tmp_path / "data")
    before, _ = write_simulated_run(store, tmp_path / "a", ["faithful", "flip"], n_queries=30)
    # The next run of the suite: the best strategy broke, the others as they were.
    after, _ = write_simulated_run(store, tmp_path / "b", ["faithful", "flip"], n_queries=30, seed=1,
                                   skills={**SKILLS, "best": 0.1})
    suite_from_run(store, "nightly", before)
    entry = store.start_suite_entry("nightly", "manual")
    store.update_suite_entry(entry, run_id=after, status="complete", baseline_run_id=before)
    decided = suite_decisions(store, "nightly", outer_resamples=20)
    assert decided.runs == [before, after] and decided.queries == 30
    faithful = decided.judges["faithful"]
    assert faithful.compared == 4  # each strategy's change from one run to the next
    change = {v.a.split(SEPARATOR)[1]: v for v in faithful.verdicts}
    assert change["best"].people_winner == f"{before}{SEPARATOR}best" and change["best"].kind == "same winner"
    assert faithful.agreement.value == 1.0 and faithful.tau.value == 1.0
    assert list(decided.judges) == ["faithful", "flip", "panel"]
    # A run of the suite shows it in its section's words.
    view = judges_view(store, after, "dcg@5")
    assert view.suite_sentences[0].text.startswith("Across the 2 runs of suite nightly: The judge faithful picks")
