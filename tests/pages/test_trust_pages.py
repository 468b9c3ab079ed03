"""Rating in the app (drill-down, failed queries), re-scoring, the blind review queue, and the
judge's trust panel on Results: the real pages through Streamlit's AppTest."""

from __future__ import annotations

import math
import re

from searchgrade.engine.labels.ratings import new_rating
from searchgrade.engine.run.strategies import label
from searchgrade.viewmodels import review as review_model
from searchgrade.viewmodels.rating import save_rating
from tests.pages.conftest import open_page
from tests.pages.synthetic import llm_spec, tiny_spec, write_run


def _unescaped(elements) -> list[str]:
    """Element texts without the Markdown escapes searchgrade.views._common.plain adds."""
    return [re.sub(r"\\(.)", r"\1", e.value) for e in elements]


def _named(state: dict | None = None) -> dict:
    return {"app_rater": "Ada", **(state or {})}


def test_the_drilldown_asks_the_raters_name_once_then_rates_one_result_at_a_time(store):
    run = write_run(store, llm_spec())
    at = open_page("views/drilldown.py")
    assert not [b for b in at.button if b.key == "drilldown_rate_grade_2"]
    at.text_input(key="drilldown_rate_rater_input").input("Ada").run()
    assert at.session_state["app_rater"] == "Ada"
    # q1's first result is ann's rank 1, d3, which the judge graded 0.
    assert any("d3 · ANN (dense) rank 1 · judge: 0" in c for c in _unescaped(at.caption))
    at.text_input(key="drilldown_rate_note_q1_d3").input("answers it after all").run()
    at.button(key="drilldown_rate_grade_3").click().run()
    [row] = store.labels("tiny")
    assert (row["query_id"], row["doc_id"], row["grade"], row["rater"], row["note"], row["origin"]) == (
        "q1", "d3", 3, "Ada", "answers it after all", "app")
    assert row["content_hash"] and row["run_id"] == run
    assert at.session_state["drilldown_rate_cursor"] == 1  # on to the next result
    at.button(key="drilldown_rate_Left").click().run()
    assert any("rated by Ada 3" in c for c in _unescaped(at.caption))


def test_rescoring_from_the_results_page_opens_the_new_run(store):
    parent = write_run(store, llm_spec())
    save_rating(store, parent, "q1", "d3", 3, "Ada")
    at = open_page("views/results.py", state=_named())
    assert any("1 of the 1 pairs people rated" in i for i in _unescaped(at.info))
    at.button(key="results_rescore").click().run()
    [child] = [r for r in store.list_runs() if r.parent_run_id == parent]
    assert at.session_state["results_run"] == child.run_id
    assert not [b for b in at.button if b.key == "results_rescore"]  # nothing left to apply
    assert any("All 1 rated pairs are already in this run's figures" in c.value for c in at.caption)
    # The new run links to its parent: Compare opens with the parent before and it after.
    at.button(key="results_compare_parent").click().run()
    assert not at.exception and at.title[0].value.startswith("Compare")
    assert (at.selectbox(key="compare_a").value, at.selectbox(key="compare_b").value) == (parent, child.run_id)


def test_failed_queries_can_be_rated_from_results(store):
    write_run(store, llm_spec())
    at = open_page("views/results.py", state=_named())
    # ann's top 1 of q1 is d3, graded 0: a failed query; its row is rated first.
    assert any(c.startswith("d3 · ANN (dense) rank 1") for c in _unescaped(at.caption))
    at.button(key="results_failed_rate_grade_1").click().run()
    assert [(r["query_id"], r["doc_id"], r["grade"]) for r in store.labels("tiny")] == [("q1", "d3", 1)]


def test_the_review_queue_is_blind_counts_progress_skips_and_resumes(store):
    run = write_run(store, llm_spec())
    at = open_page("views/review.py", state=_named())
    at.radio(key="review_new_mode").set_value("queries").run()
    at.number_input(key="review_new_size_queries").set_value(2).run()
    at.button(key="review_new_start").click().run()
    shown = " ".join([t.value for t in at.text] + _unescaped(at.markdown) + _unescaped(at.caption))
    # No judge grade, rank or strategy on the screen.
    for hidden in ("judge:", "reason for", *(label(s) for s in ("ann", "fulltext"))):
        assert hidden not in shown, hidden
    assert not re.search(r"rank \d|judge \d|grade \d", shown)
    assert "0 of 7 rated by Ada" in at.get("progress")[0].proto.text
    at.button(key="review_grade_2").click().run()
    at.button(key="review_S").click().run()
    assert "1 of 7 rated by Ada · 1 skipped" in at.get("progress")[0].proto.text
    [queue] = store.review_queues(run)
    # Another browser session, the same person: it resumes after the rated and skipped items.
    again = open_page("views/review.py", state=_named({"review_queue": queue["queue_id"]}))
    assert "1 of 7 rated by Ada · 1 skipped" in again.get("progress")[0].proto.text
    progress = review_model.progress(store, queue["queue_id"], "Ada")
    assert progress.next.position == 2
    assert [r["origin"] for r in store.labels("tiny")] == ["review"]


def test_qrels_only_runs_can_only_fill_their_holes(store):
    write_run(store, tiny_spec())
    at = open_page("views/review.py", state=_named())
    assert at.radio(key="review_new_mode").options == [review_model.MODE_LABELS["holes"]]


def test_runs_whose_scale_ratings_cannot_take_cannot_be_reviewed(store):
    spec = tiny_spec()
    spec.qrels = {"q1": {"d1": 4, "d2": 1, "d3": 0}, "q2": {"d2": 3, "d4": 2, "d5": 2}}
    write_run(store, spec)
    at = open_page("views/review.py", state=_named())
    assert any("human judgments only" in i for i in _unescaped(at.info))


def test_results_show_how_far_to_trust_the_judge(store):
    run = write_run(store, llm_spec())
    at = open_page("views/results.py", state=_named())
    assert any("Nobody has rated this run's results yet" in i.value for i in at.info)
    # Every top-3 result of both queries rated: corrected estimates for both strategies.
    grades = {("q1", "d3"): 1, ("q1", "d1"): 3, ("q1", "d5"): 2, ("q1", "d2"): 1,
              ("q2", "d4"): 1, ("q2", "d6"): 0, ("q2", "d2"): 3}
    for (q, d), g in grades.items():
        save_rating(store, run, q, d, g, "Ada")
    store.add_labels([new_rating(collection_name="tiny", query_id="q1", query_text="what is alpha", doc_id="d1",
                                 content_hash=None, grade=2, rater="Grace")])
    at = open_page("views/results.py", state=_named())
    assert any("Too few ratings to say how far to trust the judge" in w for w in _unescaped(at.warning))
    corrected = next(df.value for df in at.dataframe if "Judge-corrected" in df.value.columns)
    assert corrected["Strategy"].tolist() == ["ANN (dense)", "Full-text (BM25)"]
    assert corrected["Rated queries"].tolist() == [2, 2]
    # ann: q1 [d3 1, d1 2 (Ada 3, Grace 2: lower median), d5 2] and q2 [d4 1, d6 0, d2 3]
    expected = ((1 + 2 / math.log2(3) + 1) + (1 + 0 + 1.5)) / 2
    assert abs(corrected["Judge-corrected"][0] - expected) < 1e-9
    assert any("Krippendorff" in s for s in _unescaped(at.success) + _unescaped(at.info))


def test_results_shows_the_metric_by_query_type_and_overlap_band(store):
    from searchgrade.engine.run.lexical_overlap import query_overlaps

    spec = llm_spec()
    run = write_run(store, spec)
    docs = {d.doc_id: d for d in spec.documents}
    with store.transaction() as con:
        store.write_query_overlap(con, run, query_overlaps(spec.queries, docs))
    at = open_page("views/results.py")
    assert any("by kind of generated query" in s.value for s in at.subheader)
    table = next(df.value for df in at.dataframe if "Slice" in df.value.columns)
    slices = set(table["Slice"])
    assert {"natural language", "keyword"} <= slices
    assert any(s.split()[0] in ("low", "medium", "high") for s in slices)
    # Each cell: mean (CI), queries; ann on q1 (natural) has DCG@3 of 3/log2(3) + 0 (d5 failed).
    [natural] = table[table["Slice"] == "natural language"][label("ann")]
    assert natural.startswith(f"{3 / math.log2(3):.3f} (") and natural.endswith(", 1 q")
