"""Why queries fail as Results, `show` and MCP show it (viewmodels/failures.py), on the tiny runs
whose every figure is counted by hand (tests/pages/synthetic.py)."""

from __future__ import annotations

import pytest

from searchgrade.engine.store import Store
from searchgrade.viewmodels.failures import (
    ALL,
    failure_groups,
    failure_summary,
    failure_table,
    failures_json,
)
from searchgrade.viewmodels.result_overlap import search_problems
from tests.pages.synthetic import llm_spec, tiny_spec, write_run

# The tiny run (threshold 2), every strategy's top 1:
# ann        q1 d3 (0: judged not relevant; d1, grade 3, at rank 2)   q2 d4 (2: relevant)
# fulltext   q1 d1 (3: relevant)   q2 d6 (unjudged; d2, grade 3, at rank 2)
# ann_rerank q1 d1 (3)             q2 d2 (3)


@pytest.fixture
def store(tmp_path) -> Store:
    return Store(tmp_path)


@pytest.fixture
def run_id(store) -> str:
    return write_run(store, tiny_spec())


def test_failed_queries_say_their_kind_cause_and_what_each_strategy_returned_instead(store, run_id):
    ann = failure_table(store, run_id, "ann")
    assert ann.drop(columns=["kind", "cause"]).to_dict("records") == [{
        "Query id": "q1", "Query": "what is alpha", "Type": "natural", "Kind": "Top result judged not relevant",
        "Cause": "Ranked too low", "Evidence": "its best relevant document, d1, is at rank 2",
        "ANN (dense)": "[0] Doc 3 title (d3)", "Full-text (BM25)": "[3] Doc 1 title (d1)",
        "ANN + reranker": "[3] Doc 1 title (d1)"}]
    # An unjudged top 1 is a failed query of the other kind, and says so.
    fulltext = failure_table(store, run_id, "fulltext")
    assert fulltext[["Query id", "kind", "cause"]].to_dict("records") == [
        {"Query id": "q2", "kind": "unjudged", "cause": "ranked_too_low"}]
    assert fulltext["Full-text (BM25)"].tolist() == ["[unjudged] Doc 6 title (d6)"]
    assert failure_table(store, run_id, "ann_rerank").empty
    every = failure_table(store, run_id, ALL)
    assert every[["Strategy", "Query id"]].values.tolist() == [["ANN (dense)", "q1"], ["Full-text (BM25)", "q2"]]


def test_the_counts_split_each_strategys_failed_queries_by_kind_and_by_cause(store, run_id):
    summary = failure_summary(store, run_id)
    table = summary.table.set_index("strategy")
    assert table["failed"].to_dict() == {"ann": 1, "fulltext": 1, "ann_rerank": 0}
    assert table.loc["ann", ["judged_not_relevant", "unjudged", "ranked_too_low"]].tolist() == [1, 0, 1]
    assert table.loc["fulltext", ["judged_not_relevant", "unjudged", "ranked_too_low"]].tolist() == [0, 1, 1]
    assert summary.default == "ann"  # the most failed queries; the first in display order on a tie
    assert summary.strategy_failures == []


def test_show_json_lists_every_kind_and_cause_of_every_strategy_zeros_included(store, run_id):
    out = failures_json(store, store.get_run(run_id))
    assert set(out) == {"failures", "strategy_failures"} and out["strategy_failures"] == []
    rows = out["failures"]
    assert all(set(r) == {"strategy", "kind", "category", "count", "query_ids"} for r in rows)
    assert len(rows) == 3 * (2 + 7)  # three strategies, two kinds, seven causes
    by = {(r["strategy"], r["kind"], r["category"]): r for r in rows}
    assert by[("ann", "top1", "judged_not_relevant")]["query_ids"] == ["q1"]
    assert by[("fulltext", "top1", "unjudged")]["query_ids"] == ["q2"]
    assert by[("ann_rerank", "cause", "unexplained")]["count"] == 0
    for strategy in ("ann", "fulltext", "ann_rerank"):
        for kind in ("top1", "cause"):
            assert sum(r["count"] for r in rows if r["strategy"] == strategy and r["kind"] == kind) == (
                0 if strategy == "ann_rerank" else 1)


def test_a_failed_top1_judgment_is_neither_kind_and_never_a_failed_query(store):
    run_id = write_run(store, llm_spec())
    ann = failure_table(store, run_id, "ann")
    assert ann.drop(columns=["kind", "cause", "Evidence"]).to_dict("records") == [{
        "Query id": "q1", "Query": "what is alpha", "Type": "natural", "Kind": "Top result judged not relevant",
        "Cause": "Ranked too low", "ANN (dense)": "[0] Doc 3 title (d3)",
        "Full-text (BM25)": "[judge failed] Doc 5 title (d5)"}]
    # Full-text's top 1 failed judging on both queries: no failed query, two failed judgments.
    assert failure_table(store, run_id, "fulltext").empty
    table = failure_summary(store, run_id).table.set_index("strategy")
    assert table[["failed", "unjudged", "judge_failed"]].to_dict("index") == {
        "ann": {"failed": 1, "unjudged": 0, "judge_failed": 0},
        "fulltext": {"failed": 0, "unjudged": 0, "judge_failed": 2}}


def test_a_strategy_that_could_not_answer_is_said_with_its_reason_and_count(store, run_id):
    with store.transaction() as con:
        con.execute("INSERT INTO failed_queries VALUES (?, 'my-http', 'q1', 'connection refused', 3), "
                    "(?, 'my-http', 'q2', 'connection refused', 3)", [run_id, run_id])
        con.execute("DELETE FROM kept_reads")  # as the search stage's write does (write_search)
    summary = failure_summary(store, run_id)
    assert [f["text"] for f in summary.strategy_failures] == [
        "my-http failed on 2 of 2 queries: connection refused"]
    problems = search_problems(store, store.get_run(run_id))  # the top of the Results page
    assert problems[0].startswith("my-http failed on 2 of 2 queries: connection refused. ")
    assert f"`searchgrade resume {run_id}`" in problems[0]
    assert failures_json(store, store.get_run(run_id))["strategy_failures"] == [
        {"strategy": "my-http", "reason": "connection refused", "queries_failed": 2}]


def test_too_few_failed_queries_are_listed_not_grouped(store, run_id):
    groups = failure_groups(store, run_id, "ann")
    assert groups.failed == 1 and groups.groups == []
    assert groups.vectors == "words"  # the synthetic run stored no query vectors
    assert groups.status == {"q1": "judged_not_relevant", "q2": "relevant"}
    # Every strategy at once: q1 and q2 each have a strategy whose top 1 is relevant.
    assert set(failure_groups(store, run_id, ALL).status.values()) == {"relevant"}
