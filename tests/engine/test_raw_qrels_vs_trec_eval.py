"""Our stored metrics equal trec_eval (ir_measures) on the RAW Cranfield qrels, end to end.

The run goes through the command line (`evaluate --qrels-file`), the loader and the pipeline, so
every place that could drop or alter a judgment is on the path: the empty document 995 (whose
judgment trec_eval counts), and the raw codes' -1 grades (not relevant in trec_eval).
"""

from __future__ import annotations

import ir_measures
import pytest

from searchgrade.cli import main
from searchgrade.engine.store import Store
from tests.conftest import CRANFIELD

RAW = CRANFIELD / "qrels_raw.tsv"


def _raw_qrels() -> dict[str, dict[str, int]]:
    """The file as trec_eval reads it: every line, grades as written (-1 included)."""
    qrels: dict[str, dict[str, int]] = {}
    for line in RAW.read_text(encoding="utf-8").splitlines()[1:]:
        qid, doc_id, grade = line.split("\t")
        qrels.setdefault(qid, {})[doc_id] = int(grade)
    return qrels


@pytest.fixture(scope="module")
def raw_run(tmp_path_factory):
    data = tmp_path_factory.mktemp("raw") / "data"
    code = main(["evaluate", str(CRANFIELD), "--qrels", "--qrels-file", str(RAW), "--strategies",
                 "fulltext", "--k", "10", "--data-dir", str(data)])
    assert code == 0
    store = Store(data)
    [run] = store.list_runs()
    return store, run


def test_metrics_on_the_raw_cranfield_qrels_equal_ir_measures(raw_run):
    from ir_measures import AP, RR, P, R, nDCG

    store, run = raw_run
    qrels = _raw_qrels()
    assert min(g for judged in qrels.values() for g in judged.values()) == -1
    assert qrels["125"]["995"] == 3  # the judgment of an empty document
    ranked: dict[str, dict[str, float]] = {}
    for row in store.results_with_grades(run.run_id, "fulltext"):
        ranked.setdefault(row["query_id"], {})[row["doc_id"]] = 100.0 - row["rank"]
    t = run.threshold
    assert t == 2  # raw codes reach 4
    measures = {"ndcg": nDCG @ 10, "precision": P(rel=t) @ 10, "recall": R(rel=t) @ 10,
                "mrr": RR(rel=t) @ 10, "map": AP(rel=t) @ 10}
    ours = {(r["metric"], r["query_id"]): r["value"] for r in store.metric_values(run.run_id, k=10)
            if r["strategy"] == "fulltext"}
    compared = 0
    for metric, measure in measures.items():
        for result in ir_measures.iter_calc([measure], qrels, ranked):
            assert ours[(metric, result.query_id)] == pytest.approx(result.value, abs=1e-6), (
                metric, result.query_id)
            compared += 1
    assert compared == 5 * 225  # every query: the -1 grades give each one a judgment


def test_the_run_says_how_it_read_the_raw_codes(raw_run):
    store, run = raw_run
    notes = " ".join(run.notes)
    assert "225 judgments with a negative grade" in notes and "as in trec_eval" in notes
    assert "1 judgment names a document skipped as empty (e.g. line 990" in notes
    assert run.config["collection_fields"]["qrels_file"] == str(RAW.resolve())
    # The grades stored are the ones the metrics used: -1 read as 0, the empty document's kept.
    grades = {(g["query_id"], g["doc_id"]): g["grade"] for g in store.grades(run.run_id)}
    assert grades[("1", "486")] == 0 and grades[("125", "995")] == 3


def test_dropping_the_empty_documents_judgment_would_change_query_125(raw_run):
    # What the loader did before: the test above can fail, on this query.
    from ir_measures import R

    store, run = raw_run
    ranked = {"125": {r["doc_id"]: 100.0 - r["rank"]
                      for r in store.results_with_grades(run.run_id, "fulltext", "125")}}
    qrels = {"125": _raw_qrels()["125"]}
    dropped = {"125": {d: g for d, g in qrels["125"].items() if d != "995"}}
    measure = R(rel=run.threshold) @ 10
    [kept] = ir_measures.iter_calc([measure], qrels, ranked)
    [without] = ir_measures.iter_calc([measure], dropped, ranked)
    assert kept.value != pytest.approx(without.value, abs=1e-6)
