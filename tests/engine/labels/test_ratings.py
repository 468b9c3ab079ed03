"""Human labels: which ratings apply to a run, how raters combine, re-scoring, and reuse by later runs."""

from __future__ import annotations

import json
import math
from datetime import datetime, timedelta

import pytest

from searchgrade.core.records import Grade, SearchGradeError
from searchgrade.engine.collections import load_collection
from searchgrade.engine.labels.ratings import (
    Rating,
    content_hash,
    human_grade,
    match_ratings,
    new_rating,
    run_labels,
    to_run_scale,
)
from searchgrade.engine.labels.rescore import apply_labels, rescore_run
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.pipeline import run_evaluation
from searchgrade.engine.store import Store
from searchgrade.viewmodels.failures import failure_summary
from searchgrade.viewmodels.results import keep_first_view, results_view
from tests.conftest import TINY_DOCS, TINY_QUERIES, write_beir
from tests.pages.synthetic import llm_spec, write_run

T0 = datetime(2026, 1, 1, 12, 0, 0)


def _rating(grade, rater="alice", *, query_id="q1", text="what is alpha", doc="d1", digest=None, minutes=0):
    return Rating(f"{rater}-{minutes}", "c", query_id, text, doc, digest, grade, rater, None, "app", None,
                  T0 + timedelta(minutes=minutes))


def test_each_raters_latest_rating_counts_once_and_the_lower_median_wins():
    ratings = [_rating(0, "alice", minutes=0), _rating(3, "alice", minutes=5),  # alice changed her mind
               _rating(2, "bob"), _rating(1, "carol")]
    assert human_grade(ratings) == 2  # latest 3, 2, 1 -> median 2
    assert human_grade([_rating(2, "alice"), _rating(3, "bob")]) == 2  # lower median of two
    assert human_grade([]) is None


def test_ratings_match_by_query_text_and_document_content():
    digest = content_hash("Doc 1 title", "Text of document 1.")
    texts = {"q1": "what is alpha", "q9": "what is alpha", "q2": "beta"}
    labels = match_ratings(
        [_rating(3, digest=digest),  # same text: applies to q1 and q9
         _rating(2, query_id="q2", text=None, doc="d2"),  # imported, no text: by id
         _rating(1, query_id="q1", text="another question", doc="d1"),  # same id, other question
         _rating(0, doc="d3", digest="0" * 64)],  # the document changed since
        texts, {"d1": digest, "d2": "x", "d3": "y"})
    assert set(labels.ratings) == {("q1", "d1"), ("q9", "d1"), ("q2", "d2")}
    assert labels.stale == 1


def test_ratings_map_onto_binary_runs_and_refuse_other_scales():
    assert [to_run_scale(g, 0, 1) for g in range(4)] == [0, 0, 1, 1]
    assert to_run_scale(2, 0, 3) == 2
    with pytest.raises(SearchGradeError, match="0-4 scale"):
        to_run_scale(2, 0, 4)


def test_a_rating_off_the_scale_or_without_a_rater_is_refused():
    with pytest.raises(SearchGradeError, match="0-3"):
        new_rating(collection_name="c", query_id="q", query_text="t", doc_id="d", content_hash=None,
                   grade=4, rater="alice")
    with pytest.raises(SearchGradeError, match="name"):
        new_rating(collection_name="c", query_id="q", query_text="t", doc_id="d", content_hash=None,
                   grade=2, rater="  ")


def test_human_labels_win_and_keep_the_judges_grade():
    grades = [Grade("q1", "d1", 0, "llm", "m", "p", "judge says 0")]
    merged, changed = apply_labels(grades, match_ratings([_rating(3)], {"q1": "what is alpha"}, {"d1": "h"}), 0, 3)
    assert changed == 1
    [g] = merged
    assert (g.grade, g.source, g.llm_grade) == (3, "human", 0)
    assert g.reason == "rated by alice: 3"


def _rate(store, run_id, query_id, doc_id, grade, rater="alice"):
    run = store.get_run(run_id)
    text = {q["query_id"]: q["text"] for q in store.queries(run_id)}[query_id]
    doc = store.documents(run_id, [doc_id])[doc_id]
    store.add_labels([new_rating(collection_name=run.collection_name, query_id=query_id, query_text=text,
                                 doc_id=doc_id, content_hash=content_hash(doc["title"], doc["text"]),
                                 grade=grade, rater=rater, run_id=run_id)])


def _dcg(store, run_id, strategy, k=3):
    return next(r["value"] for r in store.metric_summary(run_id, k)
                if r["strategy"] == strategy and r["metric"] == "dcg")


def test_rescore_makes_a_new_run_whose_metrics_move_as_the_labels_imply(tmp_path):
    store = Store(tmp_path)
    parent = write_run(store, llm_spec())
    before = store.metric_summary(parent)
    # ann: q1 [d3 0, d1 3, d5 failed], q2 [d4 2, d6 failed, d2 3]; people rate three of them.
    _rate(store, parent, "q1", "d3", 3)
    _rate(store, parent, "q1", "d5", 2)
    _rate(store, parent, "q2", "d6", 1)
    child = rescore_run(store, parent, on_complete=keep_first_view)
    run = store.get_run(child)
    assert run.parent_run_id == parent and run.status == "complete"
    assert run.label_source == "human+llm"
    assert run.stats["rescore"]["rated_pairs"] == 3 and run.stats["rescore"]["grades_changed"] == 3
    # q1 [3, 3, 2] = 3 + 3/log2(3) + 2/2; q2 [2, 1, 3] = 2 + 1/log2(3) + 3/2
    expected_ann = ((3 + 3 / math.log2(3) + 1) + (2 + 1 / math.log2(3) + 1.5)) / 2
    assert _dcg(store, child, "ann") == pytest.approx(expected_ann)
    assert _dcg(store, parent, "ann") == pytest.approx((3 / math.log2(3) + 3.5) / 2)
    # fulltext: q1 [d5 2, d1 3, d2 1], q2 [d6 1, d2 3, d4 2]
    expected_ft = ((2 + 3 / math.log2(3) + 0.5) + (1 + 3 / math.log2(3) + 1)) / 2
    assert _dcg(store, child, "fulltext") == pytest.approx(expected_ft)
    # The parent's stored metrics never change; the search results are the parent's.
    assert store.metric_summary(parent) == before
    assert store.results_with_grades(child, "ann")[0]["doc_id"] == "d3"
    graded = {(g["query_id"], g["doc_id"]): g for g in store.grades(child)}
    assert graded[("q1", "d3")]["source"] == "human" and graded[("q1", "d3")]["llm_grade"] == 0
    assert graded[("q1", "d5")]["llm_grade"] is None  # the judge failed on it; a person graded it
    # Each run's Results reads are kept from its own grades: ann's top 1 of q1 (d3) is 0 in the
    # parent and 3 in the child: a failed query there, none here; mean grade at rank 1 (1 -> 2.5).
    assert store.kept_reads(child)
    for run_id, failed, first in ((parent, 1, 1.0), (child, 0, 2.5)):
        view = results_view(store, run_id)
        assert failure_summary(store, run_id).table.set_index("strategy").loc["ann", "failed"] == failed
        by_position = view.by_position.set_index(["strategy", "rank"])
        assert by_position.loc[("ann", 1), "mean_grade"] == pytest.approx(first)
    # Nothing new to apply: no second, identical run.
    with pytest.raises(SearchGradeError, match="nothing to re-score"):
        rescore_run(store, child)


def test_rescore_without_applicable_ratings_says_what_to_do(tmp_path):
    store = Store(tmp_path)
    parent = write_run(store, llm_spec())
    with pytest.raises(SearchGradeError, match="rate some"):
        rescore_run(store, parent)


def test_a_rating_of_a_document_that_changed_is_stale(tmp_path):
    store = Store(tmp_path)
    parent = write_run(store, llm_spec())
    store.add_labels([new_rating(collection_name="tiny", query_id="q1", query_text="what is alpha",
                                 doc_id="d3", content_hash="0" * 64, grade=3, rater="alice")])
    assert run_labels(store, store.get_run(parent)).stale == 1
    with pytest.raises(SearchGradeError, match="changed since"):
        rescore_run(store, parent)


def test_a_later_run_reuses_the_collections_human_labels(tmp_path):
    """People judged once: a new run on the collection takes their grade over the qrels file's."""
    qrels = [("q1", "d1", 3), ("q1", "d2", 1), ("q2", "d3", 3), ("q3", "d6", 2), ("q4", "d10", 2),
             ("q5", "d11", 3), ("q5", "d12", 0)]
    folder = write_beir(tmp_path / "tiny", qrels=qrels)
    qrels_file = (folder / "qrels.tsv").read_text()
    store = Store(tmp_path / "home")
    # A person says d12 answers "how is espresso made" fairly well (the qrels say 0).
    store.add_labels([new_rating(collection_name="tiny", query_id="q5", query_text=TINY_QUERIES["q5"],
                                 doc_id="d12", content_hash=content_hash(*TINY_DOCS["d12"]), grade=2,
                                 rater="bob")])
    collection = load_collection(folder)
    outcome = run_evaluation(collection, RunConfig(strategies=("fulltext",), k=3, n_bootstrap=200), store,
                             tmp_path / "home")
    run = store.get_run(outcome.run_id)
    grades = {(g["query_id"], g["doc_id"]): g for g in store.grades(run.run_id)}
    assert grades[("q5", "d12")]["grade"] == 2 and grades[("q5", "d12")]["source"] == "human"
    assert run.stats["labels"]["rated_pairs"] == 1 and run.stats["labels"]["raters"] == ["bob"]
    assert (folder / "qrels.tsv").read_text() == qrels_file  # the qrels file is never written
    ranked = [r["doc_id"] for r in store.results_with_grades(run.run_id, "fulltext", "q5")]
    expected = sum({"d11": 3, "d12": 2}.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranked[:3]))
    value = next(v["value"] for v in store.metric_values(run.run_id, "dcg", 3) if v["query_id"] == "q5")
    assert value == pytest.approx(expected)
    assert json.dumps(run.stats)  # stored as JSON
