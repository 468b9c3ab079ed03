"""The Evaluate screen's collection section, as a view model: previews and guesses, the mapping
offered again, the counts loading would give, paths on an exposed app, no server path in a message."""

from __future__ import annotations

import json

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.viewmodels.collection_form import (
    ColumnMap,
    document_preview,
    hide_server_paths,
    initial_mapping,
    initial_query_mapping,
    load_options,
    mapping_counts,
    path_policy,
    query_preview,
    resolve_typed_path,
    source_kind,
)


def test_a_preview_shows_the_first_rows_and_guesses_each_column(tmp_path):
    path = tmp_path / "export.csv"
    path.write_text("ID,Headline,Body,extra\n" + "".join(f"{i},T{i},{'long text ' * 40}{i},x\n" for i in range(9)))
    preview = document_preview(path, "export.csv")
    assert preview.columns == ["ID", "Headline", "Body", "extra"]
    assert len(preview.rows) == 5 and preview.rows[0]["ID"] == "0"
    assert preview.rows[0]["Body"].endswith("…") and len(preview.rows[0]["Body"]) == 160
    assert preview.guess == {"id": "ID", "title": "Headline", "text": ["Body"]}


def test_a_text_column_with_an_unusual_name_is_guessed_by_its_length(tmp_path):
    path = tmp_path / "notes.jsonl"
    path.write_text("".join(json.dumps({"key": i, "tag": "x", "passage": "a long passage " * 10}) + "\n"
                            for i in range(3)))
    preview = document_preview(path, "notes.jsonl")
    assert preview.guess == {"id": None, "title": None, "text": ["passage"]}


def test_a_queries_tsv_without_header_is_id_then_text(tmp_path):
    path = tmp_path / "queries.tsv"
    path.write_text("1048578\tcost of endless pools\n1048579\twhat is pcnt\n")
    preview = query_preview(path, "queries.tsv")
    assert not preview.header
    assert preview.columns == ["column 1", "column 2"]
    assert preview.guess == {"query_id": "column 1", "query_text": "column 2"}
    assert preview.rows[0] == {"column 1": "1048578", "column 2": "cost of endless pools"}


def test_the_stored_mapping_wins_over_the_guess_when_its_columns_are_there(tmp_path):
    path = tmp_path / "export.csv"
    path.write_text("doc_id,headline,body,notes\na,b,c,d\n")
    preview = document_preview(path, "export.csv")
    stored = [{"id_field": "doc_id", "title_field": "", "text_field": ["notes", "body"]}]
    assert initial_mapping(preview, stored) == ColumnMap("doc_id", None, ("notes", "body"))
    gone = [{"id_field": "doc_id", "title_field": "", "text_field": ["summary"]}]
    assert initial_mapping(preview, gone) == ColumnMap("doc_id", "headline", ("body",))
    queries = tmp_path / "q.csv"
    queries.write_text("qid,query,question\n1,a,b\n")
    q_preview = query_preview(queries, "q.csv")
    assert initial_query_mapping(q_preview, [], str(queries)) == ("qid", "query")
    stored_q = [{"queries_file": str(queries), "query_id_field": "qid", "query_text_field": "question"}]
    assert initial_query_mapping(q_preview, stored_q, str(queries)) == ("qid", "question")


def test_counts_say_what_loading_gives_and_what_stops_it(tmp_path):
    path = tmp_path / "export.csv"
    path.write_text("doc_id,cat,body\na,x,one\nb,x,\nc,y,three\n")
    ok = mapping_counts(path, "export.csv", ColumnMap("doc_id", None, ("body",)))
    assert ok.text == "Loading gives 2 documents; 1 empty one skipped" and ok.problem is None
    repeated = mapping_counts(path, "export.csv", ColumnMap("cat", None, ("body",)))
    assert repeated.problem == ("export.csv: 1 id appears more than once (e.g. 'x'), so loading would stop; "
                                "pick a column with one id per row as 'Document id column'")
    same = mapping_counts(path, "export.csv", ColumnMap("body", None, ("body",)))
    assert "is also a text column" in same.problem
    assert mapping_counts(path, "export.csv", ColumnMap(None, None, ("body",))).problem == \
        "pick a column as 'Document id column'"


def test_paths_on_an_exposed_app_are_off_without_a_root_and_stay_inside_it(tmp_path):
    off = path_policy(exposed=True, root=None)
    assert not off.allowed and "--collections-root" in off.message
    with pytest.raises(SearchGradeError, match="Reading collections by path is off"):
        resolve_typed_path("/etc", off)
    local = path_policy(exposed=False, root=None)
    assert local.allowed and resolve_typed_path(str(tmp_path), local) == tmp_path
    (tmp_path / "root" / "beir").mkdir(parents=True)
    rooted = path_policy(exposed=True, root=tmp_path / "root")
    assert resolve_typed_path("beir", rooted) == tmp_path / "root" / "beir"
    for outside in ("..", "../root/../..", str(tmp_path)):
        with pytest.raises(SearchGradeError, match="outside the collections folder"):
            resolve_typed_path(outside, rooted)


def test_source_kinds_and_load_options(tmp_path):
    (tmp_path / "beir").mkdir()
    (tmp_path / "beir" / "corpus.jsonl").write_text("")
    (tmp_path / "kb").mkdir()
    assert [source_kind(tmp_path / n) for n in ("beir", "kb", "x.csv")] == ["beir", "folder", "file"]
    options = load_options("export.csv", ColumnMap("doc_id", None, ("a", "b")), root=tmp_path,
                           queries=("/srv/q.csv", "q.csv", "qid", "query"), qrels=("/srv/r", "r.txt"))
    assert options == {"labels": {"corpus": "export.csv", "queries": "q.csv", "qrels": "r.txt"},
                       "id_field": "doc_id", "title_field": "", "text_field": ["a", "b"], "root": str(tmp_path),
                       "queries_file": "/srv/q.csv", "query_id_field": "qid", "query_text_field": "query",
                       "qrels_file": "/srv/r"}


def test_server_folders_are_hidden_and_an_upload_keeps_its_own_name():
    folders = {"/srv/sg": "the data folder", "/srv/collections": ""}
    assert hide_server_paths("/srv/sg/uploads/0123456789abcdef/export.csv:3: bad", folders) == "export.csv:3: bad"
    assert hide_server_paths("cannot write /srv/sg/indexes/x.npy", folders) == \
        "cannot write the data folder/indexes/x.npy"
    assert hide_server_paths("/srv/collections/beir/corpus.jsonl:2: x", folders) == "beir/corpus.jsonl:2: x"
