"""The postgres kind against a real PostgreSQL 16 + pgvector (pgserver, one per test session): the
user's SQL bound, never formatted; bad declarations in one line; export-index's load aside and swap."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from searchgrade.core.records import Collection, Document, SearchGradeError
from searchgrade.engine.collections import load_collection
from searchgrade.indexes.declared.declaration import embedded_by
from searchgrade.indexes.declared.postgres import (
    STAGING_PREFIX,
    build_node,
    export_table,
    translate_sql,
)
from searchgrade.indexes.declared.spec import parse_spec
from searchgrade.indexes.settings import IndexSettings
from tests.conftest import write_beir

MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def unit_vectors(n: int, seed: int, dim: int = 8) -> np.ndarray:
    vectors = np.random.default_rng(seed).normal(size=(n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def small(prefix: str, n: int = 6) -> Collection:
    docs = [Document(f"{prefix}{i}", f"title {i}", f"text about topic {i} and more") for i in range(n)]
    return Collection(name="small", path="/tmp/small", documents=docs)


def ctx(backend: str = "torch", embedder=("embedder",)):
    """A build context whose embedder is a stand-in: what is tested is before it is used."""
    return SimpleNamespace(settings=IndexSettings(embedding_model=MODEL, embedding_backend=backend),
                           embedder=lambda name: embedder)


@pytest.fixture(scope="module")
def tiny(postgres, tmp_path_factory):
    collection = load_collection(write_beir(tmp_path_factory.mktemp("beir") / "tiny"))
    export_table(collection, unit_vectors(len(collection.documents), 3), postgres.dsn, "tiny_docs",
                 replace=True, embedding=embedded_by(MODEL, "torch"))
    return collection


def spec(postgres, **keys):
    return parse_spec("pg", {"kind": "postgres", "dsn": postgres.dsn, **keys}, "s.toml")


# -- the user's SQL --------------------------------------------------------------------------------

def test_named_parameters_become_placeholders_and_literals_comments_and_casts_stay_as_written():
    sql = ("SELECT doc_id, 100 * ts_rank(tsv, q)::float8 AS score -- ':query' here is a comment\n"
           "FROM docs, plainto_tsquery('english', :query) q /* :k /* nested */ */ "
           "WHERE title NOT LIKE '%:query%' AND body <> E'it\\'s :k' AND $tag$ :k $tag$ <> '' "
           "AND \"odd:k\" IS NOT NULL ORDER BY embedding <=> :query_vector::vector LIMIT :k")
    text, used = translate_sql(sql)
    assert used == {"query", "query_vector", "k"}
    assert "plainto_tsquery('english', %(query)s) q" in text
    assert "<=> %(query_vector)s::vector LIMIT %(k)s" in text
    assert "100 * ts_rank(tsv, q)::float8" in text
    assert "-- ':query' here is a comment" in text and "/* :k /* nested */ */" in text
    assert "NOT LIKE '%%:query%%'" in text and "E'it\\'s :k'" in text and "$tag$ :k $tag$" in text
    assert '"odd:k"' in text


@pytest.mark.parametrize(("sql", "bound"), [
    # A standard literal ends at its quote, a backslash is text (standard_conforming_strings).
    ("SELECT doc_id FROM docs WHERE path = 'C:\\' AND tsv @@ plainto_tsquery(:query)", "'C:\\' AND"),
    # The end of a nested comment is the end of the outer one: what is inside it stays as written.
    ("SELECT doc_id /* a /* b */ :k */ FROM docs WHERE t = :query", "/* a /* b */ :k */ FROM"),
    ("SELECT doc_id FROM docs WHERE t = U&'d\\0061t :k' AND u = :query", "U&'d\\0061t :k' AND"),
])
def test_what_postgres_quotes_is_never_bound(sql, bound):
    text, used = translate_sql(sql)
    assert used == {"query"} and bound in text and text.count("%(query)s") == 1


@pytest.mark.parametrize(("sql", "expected"), [
    ("SELECT doc_id FROM docs WHERE id = :user", "sql has :user: only :query"),
    ("SELECT doc_id FROM docs WHERE id = $1", "positional parameter"),
    ("SELECT doc_id FROM docs WHERE t = 'open", "unterminated string literal"),
])
def test_a_bad_parameter_is_one_line(sql, expected):
    with pytest.raises(SearchGradeError, match=expected):
        translate_sql(sql, "s.toml: [strategy.pg]")


# -- bad declarations --------------------------------------------------------------------------------

@pytest.mark.parametrize(("keys", "expected"), [
    ({"dsn": "postgresql://me:hunter2@db.example/docs", "table": "docs"}, "dsn holds a literal password"),
    ({"dsn": "host=db.example password=hunter2 dbname=docs", "table": "docs"}, "dsn holds a literal password"),
    ({"dsn": "postgresql://me@db.example/docs", "sql": "SELECT doc_id FROM docs LIMIT :k"},
     "sql has no :query .nor :query_vector."),
    ({"dsn": "postgresql://me@db.example/docs", "table": "docs", "sql": "SELECT 1 WHERE :query = ''"},
     "give either table"),
    ({"dsn": "postgresql://me@db.example/docs"}, "give either table"),
    ({"dsn": "postgresql://me@db.example/docs", "table": "docs", "search": "bm25"}, "search 'bm25' is not known"),
    ({"dsn": "not a dsn at all", "table": "docs"}, "dsn is not a connection string libpq reads"),
])
def test_a_bad_declaration_is_one_line_naming_the_key(keys, expected):
    with pytest.raises(SearchGradeError) as info:
        parse_spec("pg", {"kind": "postgres", **keys}, "s.toml")
    message = str(info.value)
    assert message.startswith("s.toml: [strategy.pg]: ") and "\n" not in message
    assert __import__("re").search(expected, message), message


def test_a_password_from_the_environment_is_accepted_and_never_kept(monkeypatch):
    checked = parse_spec("pg", {"kind": "postgres", "dsn": "postgresql://me:env:PG_SECRET@db.example/docs",
                                "table": "docs"}, "s.toml")
    assert checked.to_json()["dsn"] == "postgresql://me:env:PG_SECRET@db.example/docs"


def test_an_unknown_column_or_table_is_one_line_with_the_fix(postgres, tiny):
    with pytest.raises(SearchGradeError) as info:
        build_node(spec(postgres, table="tiny_docs", search="fulltext", tsv_column="body_tsv"), ctx())
    message = str(info.value)
    assert "\n" not in message and "tsv_column 'body_tsv' is not a column of 'tiny_docs'" in message
    assert "its columns are doc_id, title, text, embedding, tsv" in message
    with pytest.raises(SearchGradeError, match="has no table 'nope': load one with `searchgrade export-index"):
        build_node(spec(postgres, table="nope", search="fulltext"), ctx())
    with pytest.raises(SearchGradeError, match='sql does not run .column "nope" does not exist.'):
        build_node(spec(postgres, sql="SELECT nope FROM tiny_docs WHERE tsv @@ plainto_tsquery(:query)"), ctx())


# -- searching ---------------------------------------------------------------------------------------

def test_the_query_text_is_a_bound_value_never_sql(postgres, tiny):
    node = build_node(spec(postgres, sql="SELECT doc_id, 1.0 AS score FROM tiny_docs WHERE title = :query "
                                         "OR :query LIKE '%%%' LIMIT :k"), ctx())
    hostile = "x'; DROP TABLE tiny_docs; --"
    docs, _ = node.search_one(hostile, None, 3)
    assert len(docs) == 3  # the LIKE matched the text as a value, the DROP was never a statement
    assert postgres.execute("SELECT count(*) FROM tiny_docs") == [(12,)]


def test_the_fulltext_preset_takes_any_word_of_the_query(postgres, tiny):
    node = build_node(spec(postgres, table="tiny_docs", search="fulltext", title_column="title"), ctx())
    docs, described = node.search_one("which planet is the largest gas giant", None, 3)
    assert docs[0].doc_id == "d3" and described["d3"].title == "Jupiter"
    assert {d.doc_id for d in docs} >= {"d3", "d4"}  # d4 (Mars) shares only "planet"


def test_dense_search_asks_the_hnsw_scan_for_as_many_rows_as_the_depth(postgres, tiny):
    node = build_node(spec(postgres, table="tiny_docs", search="dense"), ctx())
    assert node.settings(300)["hnsw.ef_search"] == "300"
    assert node.settings(10)["hnsw.ef_search"] == "100"
    tuned = build_node(spec(postgres, table="tiny_docs", search="dense", ef_search=40), ctx())
    assert tuned.settings(10)["hnsw.ef_search"] == "40" and tuned.settings(50)["hnsw.ef_search"] == "50"
    vectors = unit_vectors(12, 3)
    docs, _ = node.search_one("", vectors[2], 12)
    assert len(docs) == 12 and docs[0].doc_id == tiny.documents[2].doc_id


def test_dense_search_refuses_a_table_embedded_by_another_backend(postgres, tiny):
    dense = spec(postgres, table="tiny_docs", search="dense")
    with pytest.raises(SearchGradeError) as info:
        build_node(dense, ctx("onnx-int8"))
    message = str(info.value)
    assert "\n" not in message and "Postgres table 'tiny_docs' holds vectors of" in message
    assert "onnx-int8" in message and "--to postgres" in message and "--replace" in message
    assert build_node(dense, ctx("torch")).embedder == ("embedder",)
    assert build_node(spec(postgres, table="tiny_docs", search="fulltext"), ctx("onnx-int8")).embedder is None


# -- export-index --to postgres ----------------------------------------------------------------------

def ids_in(postgres, table: str) -> set[str]:
    return {row[0] for row in postgres.execute(f"SELECT doc_id FROM {table}")}  # noqa: S608 - test's own name


def test_replace_swaps_in_a_complete_table_and_a_failed_load_keeps_the_old_one(postgres):
    export_table(small("old"), unit_vectors(6, 0), postgres.dsn, "swapped")
    assert ids_in(postgres, "swapped") == {f"old{i}" for i in range(6)}
    with pytest.raises(SearchGradeError, match="already has a table 'swapped': pass --replace"):
        export_table(small("new"), unit_vectors(6, 1), postgres.dsn, "swapped")

    def interrupted(stage, done, total):
        raise RuntimeError("connection lost")

    with pytest.raises(SearchGradeError, match="connection lost.*nothing was committed; the existing 'swapped' "
                                               "is unchanged"):
        export_table(small("new"), unit_vectors(6, 1), postgres.dsn, "swapped", replace=True, progress=interrupted)
    assert ids_in(postgres, "swapped") == {f"old{i}" for i in range(6)}
    export_table(small("new", 4), unit_vectors(4, 2, dim=16), postgres.dsn, "swapped", replace=True)
    assert ids_in(postgres, "swapped") == {f"new{i}" for i in range(4)}
    tables = {row[0] for row in postgres.execute("SELECT tablename FROM pg_tables")}
    indexes = {row[0] for row in postgres.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'swapped'")}
    assert not [t for t in tables if t.startswith(STAGING_PREFIX)]
    assert indexes == {"swapped_pkey", "swapped_tsv", "swapped_hnsw"}
    assert postgres.execute("SELECT vector_dims(embedding) FROM swapped LIMIT 1") == [(16,)]


def test_export_refuses_a_literal_password_before_connecting():
    with pytest.raises(SearchGradeError, match="dsn holds a literal password"):
        export_table(small("x"), unit_vectors(6, 0), "postgresql://me:hunter2@db.example/docs", "docs")
