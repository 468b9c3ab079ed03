"""load_judgments: a training split's qrels and queries, read by the collections package's loaders."""

from __future__ import annotations

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.collections import load_judgments


def _write(tmp_path, qrels: str):
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"_id": "q1", "text": "alpha"}\n{"_id": "q2", "text": "beta"}\n'
                       '{"_id": "q3", "text": " "}\n', encoding="utf-8")
    path = tmp_path / "qrels.tsv"
    path.write_text(qrels, encoding="utf-8")
    return path, queries


def test_keeps_judgments_of_loaded_queries_and_corpus_documents_and_notes_the_rest(tmp_path):
    qrels, queries = _write(tmp_path, "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\tdX\t1\nq2\tdY\t1\n"
                                      "q3\td1\t1\nq9\td1\t1\nq2\td2\t-1\n")
    loaded, judged, notes = load_judgments(qrels, queries, ["d1", "d2"])
    assert [q.query_id for q in loaded] == ["q1", "q2"]
    assert judged == {"q1": {"d1": 2}, "q2": {"d2": 0}}  # a negative grade is "not relevant"
    assert any("dropped 2 judgments naming documents not in the corpus" in n for n in notes)
    assert any("naming queries not in queries.jsonl" in n for n in notes)
    # the trec_eval caveat (unknown documents still count) does not apply to training pairs
    assert not any("trec_eval" in n and "not in the corpus" in n for n in notes)


def test_a_query_whose_every_judgment_names_an_unknown_document_is_not_judged(tmp_path):
    qrels, queries = _write(tmp_path, "q1\tdX\t1\nq2\td1\t1\n")
    _, judged, _ = load_judgments(qrels, queries, ["d1"])
    assert judged == {"q2": {"d1": 1}}


def test_reads_trec_qrels(tmp_path):
    qrels, queries = _write(tmp_path, "q1 0 d1 3\nq2 0 d1 0\n")
    _, judged, _ = load_judgments(qrels, queries, ["d1"])
    assert judged == {"q1": {"d1": 3}, "q2": {"d1": 0}}


@pytest.mark.parametrize("missing", ["qrels", "queries"])
def test_a_missing_file_is_one_line_naming_it(tmp_path, missing):
    qrels, queries = _write(tmp_path, "q1\td1\t1\n")
    paths = {"qrels": qrels, "queries": queries}
    paths[missing] = tmp_path / "nope.tsv"
    with pytest.raises(SearchGradeError, match=f"nope.tsv: no such {missing} file; pass an existing file"):
        load_judgments(paths["qrels"], paths["queries"], ["d1"])


def test_a_malformed_line_names_the_file_and_line(tmp_path):
    qrels, queries = _write(tmp_path, "q1\td1\t1\nq2 d1\n")
    with pytest.raises(SearchGradeError, match=r"qrels.tsv:2: .*first judgment has 3"):
        load_judgments(qrels, queries, ["d1"])
