"""Labels in and out: TREC qrels and CSV export, qrels/CSV import, all or nothing."""

from __future__ import annotations

import csv

import pytest

from searchgrade.cli import main
from searchgrade.engine.labels.ratings import new_rating
from searchgrade.engine.store import Store
from tests.pages.synthetic import llm_spec, write_run


@pytest.fixture
def store_with_labels(tmp_path):
    store = Store(tmp_path)
    write_run(store, llm_spec())  # judge grades of collection "tiny"
    store.add_labels([
        new_rating(collection_name="tiny", query_id="q1", query_text="what is alpha", doc_id="d3",
                   content_hash=None, grade=3, rater="alice"),
        new_rating(collection_name="tiny", query_id="q1", query_text="what is alpha", doc_id="d3",
                   content_hash=None, grade=2, rater="bob"),
    ])
    return store


def _export(store, *args):
    return main(["labels", "export", "tiny", "--data-dir", str(store.data_dir), *args])


def test_export_human_labels_as_trec_qrels(store_with_labels, tmp_path):
    out = tmp_path / "human.qrels"
    assert _export(store_with_labels, "--out", str(out)) == 0
    assert out.read_text() == "q1 0 d3 2\n"  # alice 3, bob 2 -> lower median 2


def test_export_both_as_csv_has_a_source_column_and_people_win(store_with_labels, tmp_path):
    out = tmp_path / "both.csv"
    assert _export(store_with_labels, "--source", "both", "--format", "csv", "--out", str(out)) == 0
    rows = {(r["query_id"], r["doc_id"]): r for r in csv.DictReader(out.open())}
    assert rows[("q1", "d3")]["source"] == "human" and rows[("q1", "d3")]["grade"] == "2"
    assert rows[("q1", "d3")]["raters"] == "alice;bob"
    assert rows[("q1", "d1")]["source"] == "llm" and rows[("q1", "d1")]["grade"] == "3"
    assert rows[("q1", "d1")]["model"] == "fake"
    assert ("q1", "d5") not in rows  # a failed judgment is no label


def test_import_then_export_round_trips_trec_qrels(tmp_path, capsys):
    qrels = tmp_path / "in.qrels"
    qrels.write_text("1 0 184 3\n1 0 29 2\n2 0 12 0\n")
    assert main(["labels", "import", str(qrels), "--collection", "cranfield", "--data-dir", str(tmp_path / "h")]) == 0
    assert "3 labels (3 pairs, 2 queries, trec)" in capsys.readouterr().err
    out = tmp_path / "out.qrels"
    assert main(["labels", "export", "cranfield", "--data-dir", str(tmp_path / "h"), "--out", str(out)]) == 0
    assert sorted(out.read_text().splitlines()) == sorted(qrels.read_text().splitlines())
    [row] = Store(tmp_path / "h").label_counts()
    assert (row["ratings"], row["raters"]) == (3, 1)


def test_import_reads_beir_tsv_and_csv_with_raters(tmp_path):
    beir = tmp_path / "qrels.tsv"
    beir.write_text("query-id\tcorpus-id\tscore\nq1\td1\t2\n")
    table = tmp_path / "labels.csv"
    table.write_text("query_id,query_text,doc_id,grade,rater,note\nq1,what is alpha,d2,1,carol,on topic only\n")
    home = str(tmp_path / "h")
    assert main(["labels", "import", str(beir), "--collection", "tiny", "--data-dir", home]) == 0
    assert main(["labels", "import", str(table), "--collection", "tiny", "--data-dir", home]) == 0
    rows = Store(tmp_path / "h").labels("tiny")
    assert [(r["doc_id"], r["grade"], r["rater"], r["origin"]) for r in rows] == [
        ("d1", 2, "import:qrels.tsv", "import"), ("d2", 1, "carol", "import")]
    assert rows[1]["note"] == "on topic only" and rows[1]["query_text"] == "what is alpha"


@pytest.mark.parametrize(("content", "name", "message"), [
    ("1 0 184 3\n1 0 29 4\n", "bad.qrels", "bad.qrels:2: grade '4' is not on the 0-3 scale"),
    ("1 0 184\n", "short.qrels", "short.qrels:1: expected 4 columns"),
    ("query,doc,grade\n1,2,3\n", "bad.csv", "no query_id, doc_id column"),
    ("", "empty.qrels", "holds no labels"),
])
def test_a_bad_labels_file_stores_nothing_and_names_the_line(tmp_path, capsys, content, name, message):
    path = tmp_path / name
    path.write_text(content)
    assert main(["labels", "import", str(path), "--collection", "c", "--data-dir", str(tmp_path / "h")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]
    assert Store(tmp_path / "h").labels("c") == []


def test_export_without_labels_says_how_to_get_some(tmp_path, capsys):
    assert main(["labels", "export", "nothing", "--data-dir", str(tmp_path), "--out", str(tmp_path / "x")]) == 1
    assert "rate results in the app or import qrels" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
