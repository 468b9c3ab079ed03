"""Lexical overlap of generated queries with their source document, stored per query, and the
metrics by query type and overlap band on Results."""

from __future__ import annotations

import pytest

from searchgrade.core.records import Document, Query
from searchgrade.engine.collections import load_collection
from searchgrade.engine.run.lexical_overlap import BANDS, band, lexical_overlap, query_overlaps
from searchgrade.engine.run.pipeline import run_evaluation
from searchgrade.engine.store import Store
from searchgrade.viewmodels.query_slices import query_slices
from tests.conftest import write_beir
from tests.engine.llm.fake_server import FakeOpenAIServer
from tests.engine.llm_fakes import Recorder
from tests.engine.test_llm_pipeline import llm_config
from tests.pages.synthetic import tiny_spec, write_run


def test_term_overlap_and_longest_span_hand_example():
    # Query terms {how, do, solar, panels, work, at, night}: solar, panels, work, at in the document
    # (4 of 7); "panels work at" is the longest run the document has too.
    overlap = lexical_overlap("How do solar panels work at night?",
                              "Solar panels: the panels work at a loss when cloudy.")
    assert overlap.term_overlap == pytest.approx(4 / 7)
    assert overlap.longest_span == 3


def test_a_copied_query_overlaps_fully_and_an_unrelated_one_not_at_all():
    doc = "Rust forms when iron meets oxygen and water."
    assert lexical_overlap("iron meets oxygen", doc) == (1.0, 3)
    assert lexical_overlap("Why does IRON rust?", doc).term_overlap == pytest.approx(2 / 4)
    assert lexical_overlap("volcano eruption", doc) == (0.0, 0)
    assert lexical_overlap("?!", doc) == (0.0, 0)


def test_repeated_query_terms_count_once_and_spans_stay_in_order():
    # "water iron" is not a run of the document (its order is "iron ... water").
    assert lexical_overlap("water water iron", "iron and water") == (1.0, 1)


def test_only_queries_with_a_source_document_get_overlap():
    docs = {"d1": Document("d1", "Oxide", "iron oxide forms in water")}
    rows = query_overlaps([Query("g1", "rust in water", "natural", "d1"), Query("q2", "rust", "qrels"),
                           Query("g3", "x", "keyword", "missing")], docs)
    assert rows == [("g1", pytest.approx(2 / 3), 2)]


def test_bands_cover_every_share():
    names = [name for _, name in BANDS]
    assert [band(v) for v in (0.0, 0.49, 0.5, 0.79, 0.8, 1.0)] == [names[2], names[2], names[1], names[1],
                                                                    names[0], names[0]]


def test_an_llm_run_stores_overlap_per_generated_query_and_results_slices_by_type_and_band(tmp_path):
    collection = load_collection(write_beir(tmp_path / "tiny"))
    store = Store(tmp_path / "d")
    with FakeOpenAIServer(Recorder()) as server:
        run_id = run_evaluation(collection, llm_config(server.base_url), store, tmp_path / "d").run_id
    docs = {d.doc_id: d for d in collection.documents}
    queries = store.queries(run_id)
    stored = {r["query_id"]: (r["term_overlap"], r["longest_span"]) for r in store.query_overlap(run_id)}
    assert set(stored) == {q["query_id"] for q in queries}
    for q in queries:
        assert stored[q["query_id"]] == tuple(lexical_overlap(q["text"], docs[q["source_doc_id"]].content))

    slices = query_slices(store, run_id, "dcg", 10)
    rows = slices.rows
    by_type = rows[rows["Slice kind"] == "Query type"]
    assert set(by_type["Slice"]) == {"natural language", "keyword"}
    # Every query is in exactly one type and one band, per strategy.
    assert by_type["n"].sum() == len(queries)
    assert rows[rows["Slice kind"] == "Overlap"]["n"].sum() == len(queries)
    # A cell is the mean of the stored per-query values of its queries.
    values = {r["query_id"]: r["value"] for r in store.metric_values(run_id, "dcg", 10)}
    keyword = [values[q["query_id"]] for q in queries if q["query_type"] == "keyword"]
    [cell] = by_type[by_type["Slice"] == "keyword"]["value"]
    assert cell == pytest.approx(sum(keyword) / len(keyword))
    # One strategy ran: it leads nothing, so no sentence says it does (issue 36: a lone strategy is
    # never "the best").
    assert rows["strategy"].nunique() == 1 and slices.sentences == []
    assert list(slices.overlap_summary["Queries"]) and slices.overlap_summary["Queries"].sum() == len(queries)


def test_a_run_of_collection_queries_has_no_slices(tmp_path):
    store = Store(tmp_path / "d")
    spec = tiny_spec(queries=[Query("q1", "what is alpha"), Query("q2", "beta")])
    assert query_slices(store, write_run(store, spec), "dcg", 3) is None


def test_a_run_stored_without_overlap_still_slices_by_type_but_not_by_band(tmp_path):
    store = Store(tmp_path / "d")
    slices = query_slices(store, write_run(store, tiny_spec()), "dcg", 3)
    rows = slices.rows
    assert set(rows["Slice kind"]) == {"Query type"}
    # ann's DCG@3 on q1 (natural) is 1.8928 by hand (tests/pages/synthetic.py).
    [ann] = rows[(rows["Slice"] == "natural language") & (rows["strategy"] == "ann")]["value"]
    assert ann == pytest.approx(1.8928, abs=1e-4)
    assert slices.overlap_summary["Mean term overlap"].isna().all()
