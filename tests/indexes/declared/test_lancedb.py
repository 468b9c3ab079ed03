"""The lancedb kind against a real embedded LanceDB: dense, full-text and hybrid search, bad
declarations in one line, and export-index's load aside and swap."""

from __future__ import annotations

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.collections import load_collection
from searchgrade.indexes.declared.declaration import embedded_by
from searchgrade.indexes.declared.lancedb import STAGING_PREFIX, build_node, connect, export_table
from searchgrade.indexes.declared.spec import parse_spec
from tests.conftest import write_beir
from tests.indexes.declared.test_postgres import MODEL, ctx, small, unit_vectors


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("lance")
    collection = load_collection(write_beir(root / "tiny"))
    export_table(collection, unit_vectors(len(collection.documents), 3), str(root / "db"), "tiny",
                 embedding=embedded_by(MODEL, "torch"))
    return collection, str(root / "db")


def spec(uri, **keys):
    return parse_spec("ld", {"kind": "lancedb", "uri": uri, "table": "tiny", **keys}, "s.toml")


def test_dense_fulltext_and_hybrid_search_the_exported_table(tiny):
    collection, uri = tiny
    vectors = unit_vectors(12, 3)
    dense = build_node(spec(uri, search="dense"), ctx())
    assert [d.doc_id for d in dense.search_one("", vectors[4], 3).docs][0] == collection.documents[4].doc_id
    fulltext = build_node(spec(uri, search="fulltext"), ctx())
    assert fulltext.embedder is None
    assert fulltext.search_one("largest planet in the solar system", None, 3).docs[0].doc_id == "d3"
    hybrid = build_node(spec(uri, search="hybrid"), ctx())
    docs = hybrid.search_one("largest planet in the solar system", vectors[2], 5).docs
    assert docs[0].doc_id == "d3" and len(docs) == 5  # first in both lists
    assert [d.rank for d in docs] == [1, 2, 3, 4, 5]


def test_a_table_embedded_by_another_backend_is_refused_in_one_line(tiny):
    _, uri = tiny
    with pytest.raises(SearchGradeError) as info:
        build_node(spec(uri, search="hybrid"), ctx("onnx-int8"))
    message = str(info.value)
    assert "\n" not in message and "LanceDB table 'tiny' holds vectors of" in message and "--to lancedb" in message


@pytest.mark.parametrize(("keys", "expected"), [
    ({"search": "fulltext", "text_column": "body"}, "text_column 'body' is not a column of LanceDB table 'tiny': "
                                                   "its columns are doc_id, title, text, embedding"),
    ({"table": "nope"}, "has no table 'nope': load one with `searchgrade export-index"),
])
def test_a_missing_table_or_column_is_one_line(tiny, keys, expected):
    _, uri = tiny
    with pytest.raises(SearchGradeError, match=expected.replace("(", r"\(")):
        build_node(spec(uri, **keys), ctx())


def test_a_literal_api_key_is_refused():
    with pytest.raises(SearchGradeError, match="api_key holds a literal secret"):
        spec("db://mine", api_key="sk-123")


def test_replace_swaps_in_a_complete_table_and_a_failed_load_keeps_the_old_one(tmp_path):
    uri = str(tmp_path / "db")

    def ids() -> set[str]:
        return set(connect(uri).open_table("docs").to_arrow().column("doc_id").to_pylist())

    export_table(small("old"), unit_vectors(6, 0), uri, "docs")
    with pytest.raises(SearchGradeError, match="already has a table 'docs': pass --replace"):
        export_table(small("new"), unit_vectors(6, 1), uri, "docs")

    def interrupted(stage, done, total):
        raise RuntimeError("disk full")

    with pytest.raises(SearchGradeError, match="disk full.*the existing 'docs' is unchanged"):
        export_table(small("new"), unit_vectors(6, 1), uri, "docs", replace=True, progress=interrupted)
    assert ids() == {f"old{i}" for i in range(6)}
    export_table(small("new", 4), unit_vectors(4, 2), uri, "docs", replace=True)
    assert ids() == {f"new{i}" for i in range(4)}
    assert not [p for p in (tmp_path / "db").iterdir() if p.name.startswith(STAGING_PREFIX)]
    with pytest.raises(SearchGradeError, match="loads into a local folder"):
        export_table(small("x"), unit_vectors(6, 0), "s3://bucket/db", "docs")
