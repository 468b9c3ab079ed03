"""Tests for searchgrade.engine.collections: the three input layouts, bad input, notes, fingerprints."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from searchgrade.core.records import Collection, Document, Query, SearchGradeError, collection_fingerprint
from searchgrade.engine.collections import default_threshold, grade_scale, load_collection

REPO = Path(__file__).resolve().parents[2]
SCIFACT = REPO / "demo" / "scifact"
CRANFIELD = REPO / "tests" / "data" / "cranfield"


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def make_beir(
    root: Path,
    docs: list[dict] | None = None,
    queries: list[dict] | None = None,
    qrels: str | None = "query-id\tcorpus-id\tscore\nq1\td1\t2\nq1\td2\t0\nq2\td2\t1\n",
    qrels_name: str = "qrels.tsv",
) -> Path:
    docs = (
        docs
        if docs is not None
        else [
            {"_id": "d1", "title": "Wings", "text": "Lift on a wing."},
            {"_id": "d2", "title": "", "text": "Drag at high speed."},
        ]
    )
    write_jsonl(root / "corpus.jsonl", docs)
    queries = (
        queries
        if queries is not None
        else [{"_id": "q1", "text": "wing lift"}, {"_id": "q2", "text": "drag"}]
    )
    write_jsonl(root / "queries.jsonl", queries)
    if qrels is not None:
        (root / qrels_name).parent.mkdir(parents=True, exist_ok=True)
        (root / qrels_name).write_text(qrels, encoding="utf-8")
    return root


def load_error(path: Path, **kwargs) -> str:
    with pytest.raises(SearchGradeError) as info:
        load_collection(path, **kwargs)
    message = str(info.value)
    assert "\n" not in message, "errors are one line"
    return message


# ---------------------------------------------------------------- BEIR folders


def test_beir_folder_loads_documents_queries_and_qrels(tmp_path: Path) -> None:
    collection = load_collection(make_beir(tmp_path / "tiny"))

    assert collection.name == "tiny"
    assert collection.path == str((tmp_path / "tiny").resolve())
    assert collection.documents == [
        Document("d1", "Wings", "Lift on a wing."),
        Document("d2", "", "Drag at high speed."),
    ]
    assert collection.queries == [Query("q1", "wing lift", "qrels", None), Query("q2", "drag", "qrels", None)]
    assert collection.qrels == {"q1": {"d1": 2, "d2": 0}, "q2": {"d2": 1}}
    assert collection.notes == []


def test_beir_qrels_without_header_are_read_from_the_first_line(tmp_path: Path) -> None:
    collection = load_collection(make_beir(tmp_path, qrels="q1\td1\t1\nq2\td2\t1\n"))

    assert collection.qrels == {"q1": {"d1": 1}, "q2": {"d2": 1}}


def test_beir_qrels_test_split_is_found_under_qrels_folder(tmp_path: Path) -> None:
    collection = load_collection(
        make_beir(tmp_path, qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\n", qrels_name="qrels/test.tsv")
    )

    assert collection.qrels == {"q1": {"d1": 1}}


def test_beir_integer_ids_in_json_become_strings(tmp_path: Path) -> None:
    root = make_beir(
        tmp_path,
        docs=[{"_id": 10, "title": "a", "text": "alpha"}, {"_id": 20, "title": "b", "text": "beta"}],
        queries=[{"_id": 1, "text": "alpha?"}],
        qrels="query-id\tcorpus-id\tscore\n1\t10\t1\n",
    )
    collection = load_collection(root)

    assert [d.doc_id for d in collection.documents] == ["10", "20"]
    assert collection.queries[0].query_id == "1"
    assert collection.qrels == {"1": {"10": 1}}


def test_beir_folder_without_qrels_keeps_queries_and_has_no_qrels(tmp_path: Path) -> None:
    collection = load_collection(make_beir(tmp_path, qrels=None))

    assert len(collection.queries) == 2
    assert collection.qrels is None
    assert not collection.has_qrels


def test_a_beir_folder_with_empty_queries_and_qrels_loads_its_documents(tmp_path: Path) -> None:
    # An LLM-only collection: queries.jsonl and qrels.tsv are there but hold nothing.
    folder = make_beir(tmp_path)
    (folder / "queries.jsonl").write_text("", encoding="utf-8")
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n", encoding="utf-8")
    collection = load_collection(folder)

    assert collection.documents and collection.queries == [] and collection.qrels is None
    with pytest.raises(SearchGradeError, match="no queries"):
        load_collection(folder, queries_file=folder / "queries.jsonl")


def test_queries_without_any_judgment_are_dropped_with_a_note(tmp_path: Path) -> None:
    root = make_beir(
        tmp_path,
        queries=[
            {"_id": "q1", "text": "wing lift"},
            {"_id": "q2", "text": "drag"},
            {"_id": "q3", "text": "flutter"},
        ],
        qrels="q1\td1\t1\n",
    )
    collection = load_collection(root)

    assert [q.query_id for q in collection.queries] == ["q1"]
    assert any("dropped 2 queries without any" in note and "q2, q3" in note for note in collection.notes)


def test_empty_documents_are_skipped_with_their_ids_in_a_note(tmp_path: Path) -> None:
    root = make_beir(
        tmp_path,
        docs=[
            {"_id": "d1", "title": "a", "text": "alpha"},
            {"_id": "d2", "title": " ", "text": "\n"},
            {"_id": "d3", "title": "", "text": ""},
        ],
        qrels="q1\td1\t1\n",
        queries=[{"_id": "q1", "text": "alpha"}],
    )
    collection = load_collection(root)

    assert [d.doc_id for d in collection.documents] == ["d1"]
    assert collection.notes == ["corpus.jsonl: skipped 2 empty documents (ids d2, d3)"]


def test_qrels_of_unknown_queries_are_dropped_and_of_skipped_documents_kept_as_trec_eval_does(
    tmp_path: Path,
) -> None:
    root = make_beir(
        tmp_path,
        docs=[{"_id": "d1", "title": "", "text": "alpha"}, {"_id": "d9", "title": "", "text": ""}],
        queries=[{"_id": "q1", "text": "alpha"}],
        qrels="q1\td1\t1\nq7\td1\t1\nq8\td1\t1\nq1\tnope\t1\nq1\td9\t1\n",
    )
    collection = load_collection(root)

    # trec_eval scores only the queries a run answers, but counts every judgment of those: the
    # empty document d9 and the unknown one stay in the recall / MAP denominators and NDCG ideal.
    assert collection.qrels == {"q1": {"d1": 1, "nope": 1, "d9": 1}}
    assert (
        "qrels.tsv: dropped 2 judgments naming queries not in queries.jsonl (e.g. line 2: query 'q7')"
        in collection.notes
    )
    assert ("qrels.tsv: 1 judgment names a document not in the corpus (e.g. line 4: document 'nope'): "
            "it still counts in recall, MAP and the NDCG ideal, as in trec_eval") in collection.notes
    assert ("qrels.tsv: 1 judgment names a document skipped as empty (e.g. line 5: document 'd9'): "
            "it still counts in recall, MAP and the NDCG ideal, as in trec_eval") in collection.notes


def test_negative_grades_count_as_not_relevant_and_stay_judged(tmp_path: Path) -> None:
    root = make_beir(tmp_path, qrels="q1\td1\t-1\nq1\td2\t2\n")
    collection = load_collection(root)

    assert collection.qrels == {"q1": {"d1": 0, "d2": 2}}
    assert ("qrels.tsv: 1 judgment with a negative grade (e.g. line 1: -1) counts as not relevant "
            "(grade 0), as in trec_eval; bpref, the condensed lists, infAP and the RBP residual read "
            "them as in the pool but not judged, as trec_eval does") in collection.notes
    # Which is what the metrics for incomplete judgments read (engine/metrics/_holes.py).
    assert collection.pooled_unjudged == {"q1": {"d1"}}


def test_judgments_none_of_which_name_a_corpus_document_are_not_used(tmp_path: Path) -> None:
    collection = load_collection(make_beir(tmp_path, qrels="q1\tD-1\t1\nq2\tD-2\t1\n"))

    assert collection.qrels is None
    assert any("no judgment names a document of the corpus" in note for note in collection.notes)


def test_queries_with_empty_text_are_skipped_with_a_note(tmp_path: Path) -> None:
    root = make_beir(
        tmp_path, queries=[{"_id": "q1", "text": "wing"}, {"_id": "q2", "text": "  "}], qrels=None
    )
    collection = load_collection(root)

    assert [q.query_id for q in collection.queries] == ["q1"]
    assert collection.notes == ["queries.jsonl: skipped 1 query with empty text (ids q2)"]


def test_qrels_without_queries_file_are_ignored_with_a_note(tmp_path: Path) -> None:
    root = make_beir(tmp_path)
    (root / "queries.jsonl").unlink()
    collection = load_collection(root)

    assert collection.qrels is None
    assert collection.notes == ["qrels.tsv ignored: judgments need the query texts in queries.jsonl"]


def test_name_argument_overrides_the_folder_name(tmp_path: Path) -> None:
    assert load_collection(make_beir(tmp_path / "x"), name="demo").name == "demo"


# ---------------------------------------------------------------- single files


def test_jsonl_file_with_custom_fields_and_no_title(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "notes.jsonl", [{"key": "a", "body": "first"}, {"key": 2, "body": "second"}]
    )
    collection = load_collection(path, id_field="key", text_field="body")

    assert collection.name == "notes"
    assert collection.documents == [Document("a", "", "first"), Document("2", "", "second")]
    assert collection.queries == [] and collection.qrels is None
    assert collection.notes == ["notes.jsonl: columns guessed: id from 'key', no title, text from 'body'"]


def test_csv_file_keeps_ids_as_text_and_reads_quoted_multiline_cells(tmp_path: Path) -> None:
    path = tmp_path / "docs.csv"
    path.write_text(
        'id,heading,content\n007,Bond,"line one\nline two, with comma"\n8,,plain\n', encoding="utf-8"
    )
    collection = load_collection(path, id_field="id", title_field="heading", text_field="content")

    assert collection.documents == [
        Document("007", "Bond", "line one\nline two, with comma"),
        Document("8", "", "plain"),
    ]


def test_parquet_file_with_integer_ids(tmp_path: Path) -> None:
    import pandas as pd
    path = tmp_path / "docs.parquet"
    pd.DataFrame({"doc": [1, 2], "title": ["T1", None], "text": ["one", "two"]}).to_parquet(path)
    collection = load_collection(path, id_field="doc")

    assert collection.documents == [Document("1", "T1", "one"), Document("2", "", "two")]


# ---------------------------------------------------------------- text folders


def test_text_folder_ids_are_relative_posix_paths_and_md_heading_is_the_title(tmp_path: Path) -> None:
    root = tmp_path / "kb"
    (root / "guides" / "deep").mkdir(parents=True)
    (root / "a.txt").write_text("  plain text\n", encoding="utf-8")
    (root / "guides" / "deep" / "b.md").write_text("\n# Setup guide\n\nInstall it.\n", encoding="utf-8")
    (root / "guides" / "c.md").write_text("Intro\n# Not a title\n", encoding="utf-8")
    (root / "guides" / "empty.txt").write_text("   \n", encoding="utf-8")
    (root / "image.png").write_bytes(b"\x89PNG")
    (root / ".git").mkdir()
    (root / ".git" / "HEAD.txt").write_text("hidden", encoding="utf-8")
    collection = load_collection(root)

    assert collection.name == "kb"
    assert collection.documents == [
        Document("a.txt", "", "plain text"),
        Document("guides/c.md", "", "Intro\n# Not a title"),
        Document("guides/deep/b.md", "Setup guide", "Install it."),
    ]
    assert collection.notes == [
        "kb: skipped 1 empty file (guides/empty.txt)",
        "kb: ignored 1 file not ending in .txt or .md (image.png)",
    ]


# ---------------------------------------------------------------- bad input


def test_missing_path_is_an_error_naming_it(tmp_path: Path) -> None:
    message = load_error(tmp_path / "nowhere")
    assert "nowhere: no such file or folder" in message and "BEIR folder" in message


def test_unsupported_file_type_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "docs.xml"
    path.write_text("<doc/>", encoding="utf-8")
    assert "docs.xml: unsupported file type '.xml'" in load_error(path)


def test_folder_without_corpus_or_text_files_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "data.bin").write_bytes(b"\x00")
    assert "no corpus.jsonl and no .txt or .md files" in load_error(tmp_path)


def test_missing_text_field_names_file_line_field_and_option(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "c.jsonl", [{"_id": "a", "text": "x"}, {"_id": "b", "body": "y"}])
    message = load_error(path)
    assert message.startswith(f"{path}:2: no 'text' field")
    assert "'body'" in message and "--text-field" in message


def test_missing_id_field_names_file_line_field_and_option(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "c.jsonl", [{"_id": "a", "text": "x"}, {"key": "b", "text": "y"}])
    message = load_error(path)
    assert message.startswith(f"{path}:2: no '_id' field") and "--id-field" in message


def test_missing_csv_column_names_the_header_and_option(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    path.write_text("_id,words\na,x\n", encoding="utf-8")
    message = load_error(path, text_field="text")
    assert message.startswith(f"{path}:1: no 'text' column") and "--text-field" in message


def test_missing_parquet_column_names_the_file_and_option(tmp_path: Path) -> None:
    import pandas as pd
    path = tmp_path / "c.parquet"
    pd.DataFrame({"_id": ["a"], "body": ["x"]}).to_parquet(path)
    message = load_error(path, text_field="text")
    assert message.startswith(f"{path}: no 'text' column") and "--text-field" in message


def test_empty_id_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "c.csv"
    path.write_text("_id,text\n,x\n", encoding="utf-8")
    assert load_error(path).startswith(f"{path}:2: document id is empty")


def test_duplicate_document_id_names_both_lines(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "c.jsonl",
        [{"_id": "a", "text": "x"}, {"_id": "b", "text": "y"}, {"_id": "a", "text": "z"}],
    )
    message = load_error(path)
    assert message.startswith(f"{path}:3: duplicate document id 'a' (first at line 1)")


def test_duplicate_document_id_in_parquet_names_both_rows(tmp_path: Path) -> None:
    import pandas as pd
    path = tmp_path / "c.parquet"
    pd.DataFrame({"_id": ["a", "a"], "text": ["x", "y"]}).to_parquet(path)
    assert load_error(path).startswith(f"{path} row 2: duplicate document id 'a' (first at row 1)")


def test_undecodable_bytes_name_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"_id": "a", "text": "ok"}\n{"_id": "b", "text": "caf\xe9"}\n')
    message = load_error(path)
    assert message.startswith(f"{path}:2: bytes b'\\xe9' are not valid UTF-8") and "UTF-8" in message


def test_undecodable_text_file_names_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes(b"fine\nna\xefve\n")
    assert load_error(tmp_path).startswith(f"{tmp_path / 'a.txt'}:2: bytes")


def test_invalid_json_line_names_file_line_and_column(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('{"_id": "a", "text": "x"}\n{"_id": "b", "text": }\n', encoding="utf-8")
    message = load_error(path)
    assert message.startswith(f"{path}:2: invalid JSON") and "column 22" in message


def test_json_line_that_is_not_an_object_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text('["a", "x"]\n', encoding="utf-8")
    assert load_error(path).startswith(f"{path}:1: expected a JSON object, got list")


def test_file_without_documents_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    path.write_text("\n\n", encoding="utf-8")
    assert load_error(path).startswith(f"{path}: no documents")


def test_corpus_of_only_empty_documents_is_an_error(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "c.jsonl", [{"_id": "a", "text": ""}, {"_id": "b", "title": " ", "text": " "}]
    )
    message = load_error(path)
    assert (
        message.startswith(f"{path}: all 2 documents have an empty title and text")
        and "--text-field" in message
    )


def test_qrels_with_a_non_integer_grade_name_file_line_and_value(tmp_path: Path) -> None:
    root = make_beir(tmp_path, qrels="query-id\tcorpus-id\tscore\nq1\td1\t1\nq1\td2\thigh\n")
    assert load_error(root).startswith(f"{root / 'qrels.tsv'}:3: score 'high' is not an integer grade")


def test_qrels_with_a_fractional_grade_is_an_error(tmp_path: Path) -> None:
    root = make_beir(tmp_path, qrels="q1\td1\t0.5\n")
    assert load_error(root).startswith(f"{root / 'qrels.tsv'}:1: score '0.5' is not an integer grade")


def test_qrels_line_with_wrong_number_of_columns_is_an_error(tmp_path: Path) -> None:
    root = make_beir(tmp_path, qrels="query-id\tcorpus-id\tscore\nq1\t0\td1\t1\tx\n")
    message = load_error(root)
    assert (
        message.startswith(f"{root / 'qrels.tsv'}:2: expected 3 tab-separated columns")
        and "found 5" in message
    )


def test_trec_qrels_are_read_and_a_mix_of_formats_is_an_error(tmp_path: Path) -> None:
    root = make_beir(tmp_path, qrels="q1 0 d1 2\nq2\t0\td2  1\n")
    assert load_collection(root).qrels == {"q1": {"d1": 2}, "q2": {"d2": 1}}
    mixed = make_beir(tmp_path / "mixed", qrels="q1\td1\t2\nq2 0 d2 1\n")
    assert "qrels.tsv:2: 1 column where the file's first judgment has 3" in load_error(mixed)


def test_qrels_grading_one_pair_twice_differently_is_an_error(tmp_path: Path) -> None:
    root = make_beir(tmp_path, qrels="q1\td1\t1\nq1\td1\t2\n")
    assert "graded 2 here but 1 at line 1" in load_error(root)


def test_duplicate_query_id_names_both_lines(tmp_path: Path) -> None:
    root = make_beir(tmp_path, queries=[{"_id": "q1", "text": "a"}, {"_id": "q1", "text": "b"}])
    assert load_error(root).startswith(
        f"{root / 'queries.jsonl'}:2: duplicate query id 'q1' (first at line 1)"
    )


def test_query_without_text_field_is_an_error(tmp_path: Path) -> None:
    root = make_beir(tmp_path, queries=[{"_id": "q1", "text": "a"}, {"_id": "q2", "words": "a"}])
    assert load_error(root).startswith(f"{root / 'queries.jsonl'}:2: no 'text' field")


# ---------------------------------------------------------------- fingerprint and grade scale


def tiny(documents: list[Document], name: str = "c") -> Collection:
    return Collection(name=name, path="/x", documents=documents)


def test_fingerprint_depends_on_ids_contents_and_order_but_not_name() -> None:
    a, b = Document("1", "t", "alpha"), Document("2", "", "beta")
    base = collection_fingerprint(tiny([a, b]))

    assert len(base) == 64
    assert collection_fingerprint(tiny([a, b], name="other")) == base
    assert collection_fingerprint(tiny([b, a])) != base
    assert collection_fingerprint(tiny([a, Document("2", "", "beta!")])) != base
    assert collection_fingerprint(tiny([a, Document("3", "", "beta")])) != base
    # Shifting a boundary between id and content must not collide.
    assert collection_fingerprint(tiny([Document("ab", "", "c")])) != collection_fingerprint(
        tiny([Document("a", "", "bc")])
    )


def test_grade_scale_reports_min_and_max() -> None:
    assert grade_scale({"q1": {"a": 0, "b": 4}, "q2": {"c": 2}}) == (0, 4)
    with pytest.raises(ValueError):
        grade_scale({})


@pytest.mark.parametrize(("max_grade", "threshold"), [(1, 1), (2, 1), (3, 2), (4, 2)])
def test_default_threshold_is_two_from_a_scale_of_three(max_grade: int, threshold: int) -> None:
    assert default_threshold(max_grade) == threshold


# ---------------------------------------------------------------- real collections


def test_scifact_loads_with_all_binary_judgments() -> None:
    # How long it takes is bench/bench_indexes.py's figure, not a test's.
    collection = load_collection(SCIFACT)
    assert collection.name == "scifact"
    assert len(collection.documents) == 5183
    assert len(collection.queries) == 300
    assert sum(len(docs) for docs in collection.qrels.values()) == 339
    assert grade_scale(collection.qrels) == (1, 1)
    assert collection.notes == []


def test_cranfield_skips_two_empty_documents_with_a_note() -> None:
    collection = load_collection(CRANFIELD)

    assert len(collection.documents) == 1398
    assert len(collection.queries) == 225
    assert "corpus.jsonl: skipped 2 empty documents (ids 471, 995)" in collection.notes
    # The one judgment of document 995 stays, as in trec_eval (recall and MAP denominators).
    assert sum(len(docs) for docs in collection.qrels.values()) == 1837
    assert collection.qrels["125"]["995"] == 2
    assert grade_scale(collection.qrels) == (0, 4)
    assert default_threshold(4) == 2
