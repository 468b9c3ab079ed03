"""The judges' report recovers what the simulated judges were built to do (grades written straight
into a real store: the same claims over HTTP and the pipeline are in test_simulated_judges.py)."""

from __future__ import annotations

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.judges.report import judge_report, metric_values
from searchgrade.engine.metrics import parse_metric
from searchgrade.engine.store import Store
from searchgrade.viewmodels.judges import judges_json
from tests.engine.judges.fixtures import write_simulated_run
from tests.engine.judges.simulated import FLIP_SHARE
from tests.pages.synthetic import tiny_spec, write_run

JUDGES = ["faithful", "faithful_big", "flip", "lenient", "random"]
CONTRACT_KEYS = {"model", "pairs", "queries", "kappa_w", "kappa_w_ci", "bias", "bias_ci", "tau", "tau_ci",
                 "decision_agreement", "decision_agreement_ci", "retest_agreement", "cost_per_1000_pairs",
                 "recommended"}


@pytest.fixture(scope="module")
def simulated_report(tmp_path_factory):
    folder = tmp_path_factory.mktemp("judges")
    store = Store(folder / "data")
    run_id, _ = write_simulated_run(store, folder / "sim", JUDGES, repeats=2)
    return store, run_id, judge_report(store, run_id, outer_resamples=100)


def test_the_faithful_judge_decides_and_grades_as_people_do(simulated_report):
    _, _, report = simulated_report
    faithful = report.judge("faithful")
    assert faithful.decision.tau == (1.0, 1.0, 1.0)
    assert faithful.decision.agreement == (1.0, 1.0, 1.0)
    assert faithful.item.kappa_linear.value == pytest.approx(1.0) and faithful.item.bias == (0.0, 0.0, 0.0)
    assert len(report.queries) == 40 and report.metric == "dcg@5"
    assert faithful.decision.compared == 6  # 4 strategies


def test_the_lenient_judge_is_biased_upwards_yet_decides_as_people(simulated_report):
    lenient = simulated_report[2].judge("lenient")
    assert lenient.item.bias.low > 0
    assert lenient.decision.agreement.value >= 5 / 6


def test_the_flipping_judge_agrees_on_about_the_share_it_keeps_and_decides_worse(simulated_report):
    flip = simulated_report[2].judge("flip")
    assert flip.item.exact.low <= 1 - FLIP_SHARE <= flip.item.exact.high
    assert flip.decision.agreement.value < 1.0 and flip.decision.differing


def test_the_random_judge_says_the_same_thing_twice_less_often_than_the_faithful_one(simulated_report):
    report = simulated_report[2]
    faithful, random_ = report.judge("faithful").stability, report.judge("random").stability
    assert faithful.retest.exact == (1.0, 1.0, 1.0)
    assert random_.retest.exact.high < faithful.retest.exact.low
    assert max(random_.movement.values()) > 0 == max(faithful.movement.values())


def test_the_rule_picks_the_cheap_faithful_judge_over_the_expensive_one_no_better(simulated_report):
    report = simulated_report[2]
    assert report.recommendation.name == "faithful"
    assert {"faithful", "faithful_big"} <= set(report.recommendation.sufficient)
    assert "flip" not in report.recommendation.sufficient
    assert report.judge("faithful_big").cost.usd_per_1000 == pytest.approx(100 * report.judge("faithful").cost.usd_per_1000)


def test_the_json_has_exactly_the_contracts_keys_the_panel_last(simulated_report):
    document = judges_json(simulated_report[2])
    assert list(document) == ["judges"]
    assert [j["model"] for j in document["judges"]] == [*JUDGES, "panel"]
    for entry in document["judges"]:
        assert set(entry) == CONTRACT_KEYS
        for key in ("kappa_w_ci", "bias_ci", "tau_ci", "decision_agreement_ci"):
            assert entry[key] is None or (len(entry[key]) == 2 and entry[key][0] <= entry[key][1])
    assert sum(j["recommended"] for j in document["judges"]) == 1


def test_a_metric_that_reads_holes_is_refused_and_ndcg_shares_peoples_ideal(simulated_report):
    store, run_id, _ = simulated_report
    with pytest.raises(SearchGradeError, match="reads which results were judged"):
        judge_report(store, run_id, "judged@5")
    spec = parse_metric("ndcg@2")
    top = {"s": {"q": ["a", "b"]}}
    pool = {"q": [3, 0]}  # people's: one relevant document
    # The judge grades both 3: its NDCG is read against people's ideal (one 3), so above 1.
    judge = metric_values(top, ["s"], ["q"], {("q", "a"): 3, ("q", "b"): 3}, pool, spec, 2)["s"][0]
    assert judge == pytest.approx((3 + 3 / 1.5849625) / 3)


def test_a_run_without_judge_grades_says_how_to_get_them(tmp_path):
    store = Store(tmp_path)
    run_id = write_run(store, tiny_spec())
    with pytest.raises(SearchGradeError, match="--judge-models"):
        judge_report(store, run_id)


def test_a_run_that_judged_only_the_qrels_pairs_says_decisions_need_every_pair(tmp_path):
    store = Store(tmp_path)
    spec = tiny_spec(stats={"agreement": {"n": 6}})
    run_id = write_run(store, spec)
    with store.transaction() as con:  # as `--qrels --llm` stores it: the judge's grade beside the human one
        con.execute("UPDATE grades SET llm_grade = grade, model = 'fake' WHERE run_id = ?", [run_id])
    report = judge_report(store, run_id, outer_resamples=10)
    assert [j.name for j in report.judges] == ["fake"]
    assert report.judges[0].decision is None and report.queries == []
    assert "--judge-models" in report.notes[0] and "graded" in report.notes[0]


def test_a_rating_given_since_the_run_counts_and_a_rescored_run_keeps_each_judges_grades(tmp_path):
    from searchgrade.engine.labels.ratings import new_rating
    from searchgrade.engine.labels.rescore import rescore_run

    store = Store(tmp_path / "data")
    run_id, sim = write_simulated_run(store, tmp_path / "sim", ["faithful", "lenient"], n_queries=12)
    before = judge_report(store, run_id, outer_resamples=0)
    assert before.judge("faithful").item.exact.value == 1.0
    # People now rate an unjudged result relevant (the qrels count it 0): the faithful judge, which
    # follows the qrels, disagrees on that pair from now on.
    q, d = next((q, d) for q, docs in sim.rankings["poor"].items() for d in docs if sim.grade(q, d) == 0)
    store.add_labels([new_rating(collection_name="simulated", query_id=q, query_text=sim.queries[q], doc_id=d,
                                 content_hash=None, grade=3, rater="ada")])
    after = judge_report(store, run_id, outer_resamples=0)
    assert after.judge("faithful").item.exact.value < 1.0 and "1 rated pair" in after.people_source
    rescored = rescore_run(store, run_id)
    assert store.judge_grade_counts(rescored) == store.judge_grade_counts(run_id)
    assert [j.name for j in judge_report(store, rescored, outer_resamples=0).judges] == ["faithful", "lenient", "panel"]


def test_the_costly_resamples_are_kept_and_a_new_rating_asks_for_them_again(tmp_path, monkeypatch):
    from searchgrade.engine.labels.ratings import new_rating
    from searchgrade.engine.statistics import decisions

    store = Store(tmp_path / "data")
    run_id, sim = write_simulated_run(store, tmp_path / "sim", ["faithful", "flip"], n_queries=12)
    first = judge_report(store, run_id, outer_resamples=30)
    assert len(store.kept_reads(run_id, ["judges_outer"])) == 1

    def not_again(*args, **kwargs):
        raise AssertionError("the outer resamples were run again")

    monkeypatch.setattr(decisions, "_outer", not_again)
    again = judge_report(store, run_id, outer_resamples=30)
    assert [j.decision.agreement for j in again.judges] == [j.decision.agreement for j in first.judges]
    monkeypatch.undo()
    q, d = next((q, d) for q, docs in sim.rankings["poor"].items() for d in docs if sim.grade(q, d) == 0)
    store.add_labels([new_rating(collection_name="simulated", query_id=q, query_text=sim.queries[q], doc_id=d,
                                 content_hash=None, grade=3, rater="ada")])
    judge_report(store, run_id, outer_resamples=30)
    assert len(store.kept_reads(run_id, ["judges_outer"])) == 2
