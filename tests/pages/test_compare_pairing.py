"""The Compare page when two runs share no query: the reason and the fix, no table, no error."""

from __future__ import annotations

from searchgrade.core.records import Query
from tests.pages.conftest import open_page
from tests.pages.synthetic import tiny_spec, write_run


def test_compare_of_runs_without_a_shared_query_says_why_and_what_to_do(store):
    write_run(store, tiny_spec(name="run A"))
    spec = tiny_spec(name="run B")
    spec.queries = [Query("x1", "what is alpha", "natural", "d1"), Query("x2", "beta", "keyword", "d2")]
    spec.qrels = {"x1": spec.qrels["q1"], "x2": spec.qrels["q2"]}
    spec.rankings = {s: {"x1": r["q1"], "x2": r["q2"]} for s, r in spec.rankings.items()}
    write_run(store, spec)
    at = open_page("views/compare.py")
    at.selectbox(key="compare_k").set_value(3).run()
    assert not at.exception
    assert "share no query id" in at.warning[0].value
    assert not at.dataframe and not at.get("plotly_chart")
