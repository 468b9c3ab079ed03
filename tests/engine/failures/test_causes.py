"""Each cause of a failed query, from a stored run built so that every cause holds for one query
(engine/failures/causes.py): the first that holds wins, a cause needs the evidence its definition
names, and the kinds and causes each add up to the failed queries."""

from __future__ import annotations

import pytest

from searchgrade.core.records import Document, Query
from searchgrade.engine.failures.causes import CAUSES, KINDS, RULES
from searchgrade.engine.failures.diagnosis import diagnose_run
from searchgrade.engine.store import Store
from tests.pages.synthetic import RunSpec, write_run

# Threshold 2, three results each. Grades: qa d1 1, d2 0 (nothing relevant); qb d4 3; qc d10 2;
# qd d13 3; qe d17 0 by people (3 by the judge), d18 2; qf d23 2; qg d27 2.
QRELS = {"qa": {"d1": 1, "d2": 0}, "qb": {"d4": 3}, "qc": {"d10": 2}, "qd": {"d13": 3},
         "qe": {"d17": 0, "d18": 2}, "qf": {"d23": 2}, "qg": {"d27": 2}}
RANKINGS = {
    "ann": {"qa": ["d1", "d2", "d3"], "qb": ["d5", "d6", "d7"], "qc": ["d11", "d10", "d12"],
            "qd": ["d14", "d15", "d16"], "qe": ["d17", "d19", "d20"], "qf": ["d24", "d25", "d26"],
            "qg": ["d28", "d29", "d30"]},
    "fulltext": {"qa": ["d2", "d1", "d3"], "qb": ["d8", "d4", "d9"], "qc": ["d10", "d11", "d12"],
                 "qd": ["d13", "d14", "d15"], "qe": ["d17", "d21", "d22"], "qf": ["d25", "d24", "d26"],
                 "qg": ["d29", "d27", "d30"]},
}
#: (strategy, query) -> (kind, cause), counted by hand from the grades and rankings above.
EXPECTED = {
    ("ann", "qa"): ("judged_not_relevant", "no_relevant_known"),   # d1 graded 1 < 2; nothing relevant known
    ("ann", "qb"): ("unjudged", "lost_by_index"),                   # exact search ranks d4 first; ann lacks it
    ("ann", "qc"): ("unjudged", "ranked_too_low"),                  # d10 at rank 2 (and full-text's first)
    ("ann", "qd"): ("unjudged", "one_strategy_only"),               # full-text has d13 first
    ("ann", "qe"): ("judged_not_relevant", "judge_disagrees"),      # people 0, the judge 3
    ("ann", "qf"): ("unjudged", "not_retrieved"),                   # d23 in nobody's list
    ("ann", "qg"): ("unjudged", "unexplained"),                     # d27 only at full-text's rank 2
    ("fulltext", "qa"): ("judged_not_relevant", "no_relevant_known"),
    ("fulltext", "qb"): ("unjudged", "ranked_too_low"),             # lost_by_index is ann's: the index's user
    ("fulltext", "qe"): ("judged_not_relevant", "judge_disagrees"),
    ("fulltext", "qf"): ("unjudged", "not_retrieved"),
    ("fulltext", "qg"): ("unjudged", "ranked_too_low"),
}


def every_cause_run(store: Store) -> str:
    documents = [Document(f"d{i}", f"Doc {i}", f"Text {i}.") for i in range(1, 31)]
    queries = [Query(q, f"query {q}", "keyword" if q == "qd" else "natural") for q in QRELS]
    run_id = write_run(store, RunSpec(documents, queries, QRELS, RANKINGS, k=3, name="every cause"))
    with store.transaction() as con:
        con.execute("UPDATE grades SET llm_grade = 3 WHERE run_id = ? AND query_id = 'qe' AND doc_id = 'd17'",
                    [run_id])
        # The exact search the run made for qb (ann failed it): d4 first, which the index's top 3 lacks;
        # d5 second, which it holds.
        store.write_exact_search(con, run_id, [("qb", 1, "d4", False), ("qb", 2, "d5", True),
                                               ("qb", 3, "d31", False)])
        con.execute("DELETE FROM kept_reads WHERE run_id = ?", [run_id])
    store.update_run(run_id, stats={"queries": len(queries), "exact_search": {
        "index": "ivf", "strategies": ["ann"], "depth": 3, "queries": 1}})
    return run_id


@pytest.fixture
def diagnosis(tmp_path):
    store = Store(tmp_path)
    run_id = every_cause_run(store)
    return store, run_id, diagnose_run(store, store.get_run(run_id))


def test_every_failed_query_gets_its_kind_and_the_first_cause_that_holds(diagnosis):
    _, _, d = diagnosis
    found = {(r["strategy"], r["query_id"]): (r["kind"], r["cause"]) for r in d.rows.to_dict("records")}
    assert found == EXPECTED


def test_the_evidence_is_said_in_words(diagnosis):
    _, _, d = diagnosis
    detail = {(r["strategy"], r["query_id"]): r["detail"] for r in d.rows.to_dict("records")}
    assert detail[("ann", "qb")] == "exact search of the same vectors ranks d4 (relevant) 1; the ivf index misses it"
    assert detail[("ann", "qc")] == "its best relevant document, d10, is at rank 2"
    assert detail[("ann", "qd")] == "Full-text (BM25) ranks a relevant document first (keyword query, 2 words)"
    assert detail[("ann", "qe")] == "people grade the top result 0, the judge 3"
    assert detail[("ann", "qf")] == "1 relevant document known, none in any strategy's top 3"
    assert detail[("ann", "qa")] == "no document is known to be relevant to this query (2 judged)"
    assert detail[("ann", "qg")] == ("none of the causes holds (another strategy has a relevant document "
                                     "at rank 2)")


def test_kinds_and_causes_each_add_up_to_the_failed_queries(diagnosis):
    _, _, d = diagnosis
    counts = d.counts()
    for strategy, failed in (("ann", 7), ("fulltext", 5)):
        for kind in ("top1", "cause"):
            rows = [r for r in counts if r["strategy"] == strategy and r["kind"] == kind]
            assert len(rows) == (len(KINDS) if kind == "top1" else len(CAUSES))  # zero counts included
            assert sum(r["count"] for r in rows) == failed
    assert d.most_failed() == "ann"


def test_lost_by_index_needs_exact_search_evidence_never_a_guess(tmp_path):
    store = Store(tmp_path)
    run_id = every_cause_run(store)
    # The same run without the exact search: ann's qb falls to the next cause whose evidence holds
    # (full-text has d4 at rank 2, not first; people and the judge agree; it is retrieved: unexplained).
    with store.transaction() as con:
        con.execute("DELETE FROM exact_search WHERE run_id = ?", [run_id])
    d = diagnose_run(store, store.get_run(run_id))
    assert d.rows.set_index(["strategy", "query_id"]).loc[("ann", "qb"), "cause"] == "unexplained"


def test_a_document_the_strategy_retrieved_anyway_is_not_lost_by_its_index(tmp_path):
    store = Store(tmp_path)
    run_id = every_cause_run(store)
    with store.transaction() as con:  # exact search finds d10 for qc, which ann has at rank 2 anyway
        store.write_exact_search(con, run_id, [("qc", 1, "d10", False)])
    d = diagnose_run(store, store.get_run(run_id))
    assert d.rows.set_index(["strategy", "query_id"]).loc[("ann", "qc"), "cause"] == "ranked_too_low"


def test_every_cause_but_the_last_has_a_rule_in_order():
    assert [*RULES, "unexplained"] == list(CAUSES)


def test_the_metrics_guide_defines_every_kind_and_cause_once():
    from tests.conftest import REPO

    section = (REPO / "docs" / "metrics.md").read_text().split("## Why queries fail")[1].split("\n## ")[0]
    for key in [*KINDS, *CAUSES]:
        assert section.count(f"| `{key}` |") == 1, key
