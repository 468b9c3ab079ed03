"""Every loader error, phrased for where it is read: the command line names the flag to change, the
app names the picker (never a flag), and the app names files as the user uploaded them (never a
server path). One line each, both ways."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.collections import FolderLimits, load_collection

FLAG = re.compile(r"--[a-z]")


def _jsonl(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _beside(tmp: Path, queries: str | None = None, qrels: str | None = None) -> dict:
    corpus = _jsonl(tmp / "docs.jsonl", [{"_id": "d1", "text": "one"}, {"_id": "d2", "text": "two"}])
    options: dict = {"path": corpus}
    if queries is not None:
        (tmp / "queries.csv").write_text(queries, encoding="utf-8")
        options["queries_file"] = tmp / "queries.csv"
    if qrels is not None:
        (tmp / "judgments.txt").write_text(qrels, encoding="utf-8")
        options["qrels_file"] = tmp / "judgments.txt"
    return options


def _parquet(tmp: Path, **columns) -> Path:
    import pandas as pd

    pd.DataFrame(columns).to_parquet(tmp / "export.parquet")
    return tmp / "export.parquet"


def _text_folder(tmp: Path, n_files: int) -> Path:
    folder = tmp / "notes"
    folder.mkdir()
    for i in range(n_files):
        (folder / f"{i}.txt").write_text(f"note {i}", encoding="utf-8")
    return folder


#: case -> (make the input: tmp -> load_collection keywords, CLI fragment, page fragment).
#: A fragment of None: the fix names no setting, so both phrasings are the same line.
CASES = {
    "id missing in a record": (
        lambda t: {"path": _jsonl(t / "docs.jsonl", [{"_id": "a", "text": "x"}, {"key": "b", "text": "y"}])},
        "--id-field", "'Document id column'"),
    "text missing in a record": (
        lambda t: {"path": _jsonl(t / "docs.jsonl", [{"_id": "a", "text": "x"}, {"_id": "b", "words": "y"}])},
        "--text-field", "'Text columns'"),
    "no id column to guess": (
        lambda t: {"path": _csv(t, "key,text\na,x\n")}, "--id-field", "'Document id column'"),
    "no text column to guess": (
        lambda t: {"path": _csv(t, "_id,words\na,x\n")}, "--text-field", "'Text columns'"),
    "a named text column missing": (
        lambda t: {"path": _parquet(t, id=["a"], body=["x"]), "text_field": "text"},
        "--text-field", "'Text columns'"),
    "an id that is not a string": (
        lambda t: {"path": _jsonl(t / "docs.jsonl", [{"_id": ["a"], "text": "x"}])},
        "--id-field", "'Document id column'"),
    "a text that is an object": (
        lambda t: {"path": _jsonl(t / "docs.jsonl", [{"_id": "a", "text": {"en": "x"}}])},
        "--text-field", "'Text columns'"),
    "a title that is a list": (
        lambda t: {"path": _jsonl(t / "docs.jsonl", [{"_id": "a", "title": ["x"], "text": "x"}])},
        "--title-field", "'Title column'"),
    "every document empty": (
        lambda t: {"path": _jsonl(t / "docs.jsonl", [{"_id": "a", "text": ""}])},
        "--text-field", "'Text columns'"),
    "a named query text column missing": (
        lambda t: _beside(t, queries="qid,query\nq1,wing\n") | {"query_text_field": "missing"},
        "--query-text-field", "'Query text column'"),
    "no query id column to guess": (
        lambda t: _beside(t, queries="number,question\n1,wing\n"), "--query-id-field", "'Query id column'"),
    "judgments without queries": (
        lambda t: _beside(t, qrels="q1 0 d1 1\n"), "--queries", "'Queries file'"),
    "a folder past the file limit": (
        lambda t: {"path": _text_folder(t, 4), "limits": FolderLimits(max_files=3)},
        "--max-files", "from the command line"),
    "invalid JSON": (lambda t: {"path": _raw(t, "docs.jsonl", '{"_id": "a", "text": }\n')}, None, None),
    "a JSON line that is a list": (lambda t: {"path": _raw(t, "docs.jsonl", '["a", "x"]\n')}, None, None),
    "bytes that are not UTF-8": (lambda t: {"path": _raw(t, "docs.csv", b"_id,text\na,caf\xe9\n")}, None, None),
    "a row with too many cells": (lambda t: {"path": _csv(t, "_id,text\na,x,y\n")}, None, None),
    "a repeated id": (lambda t: {"path": _csv(t, "_id,text\na,x\na,y\n")}, None, None),
    "an empty id": (lambda t: {"path": _csv(t, "_id,text\n,x\n")}, None, None),
    "a header only": (lambda t: {"path": _csv(t, "_id,text\n")}, None, None),
    "not Parquet": (lambda t: {"path": _raw(t, "export.parquet", b"PAR1 nope")}, None, None),
    "a grade that is not a number": (
        lambda t: _beside(t, queries="qid,query\nq1,one\n", qrels="q1 0 d1 1\nq1 0 d2 high\n"), None, None),
    "a judgments line of 5 cells": (
        lambda t: _beside(t, queries="qid,query\nq1,one\n", qrels="q1 0 d1 1 x\n"), None, None),
    "two grades for one pair": (
        lambda t: _beside(t, queries="qid,query\nq1,one\n", qrels="q1 0 d1 1\nq1 0 d1 2\n"), None, None),
    "an unsupported file type": (lambda t: {"path": _raw(t, "docs.xml", "<doc/>")}, None, None),
    "no text files in a folder": (lambda t: {"path": _empty_folder(t)}, None, None),
}


def _raw(tmp: Path, name: str, content: str | bytes) -> Path:
    path = tmp / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def _csv(tmp: Path, content: str) -> Path:
    return _raw(tmp, "docs.csv", content)


def _empty_folder(tmp: Path) -> Path:
    (tmp / "empty").mkdir()
    (tmp / "empty" / "image.png").write_bytes(b"\x89PNG")
    return tmp / "empty"


def _error(options: dict, **extra) -> SearchGradeError:
    options = dict(options)
    path = options.pop("path")
    with pytest.raises(SearchGradeError) as info:
        load_collection(path, **options, **extra)
    return info.value


@pytest.mark.parametrize("case", CASES)
def test_each_loader_error_has_a_cli_and_a_page_phrasing(tmp_path, case):
    make, cli_fix, page_fix = CASES[case]
    options = make(tmp_path)
    given = {"corpus": f"my {Path(options['path']).name}", "queries": "my queries.csv",
             "qrels": "my judgments.txt"}
    cli = _error(options)
    page = _error(options, labels=given)
    cli_text, page_text = str(cli), page.page_message
    for text in (cli_text, page_text):
        assert "\n" not in text and text.strip() == text
    # The command line names files as typed (here: their paths); the page as uploaded, and never
    # a server path.
    assert str(tmp_path) in cli_text
    assert str(tmp_path) not in page_text and "my " in page_text
    assert not FLAG.search(page_text), page_text
    if cli_fix is None:
        assert not FLAG.search(cli_text)
        assert cli_text.split(": ", 1)[1] == page_text.split(": ", 1)[1] or \
            cli_text.split("; ", 1)[1] == page_text.split("; ", 1)[1]
    else:
        assert cli_fix in cli_text and page_fix not in cli_text
        assert page_fix in page_text


def test_a_symlink_out_of_the_collections_root_is_refused(tmp_path):
    root, outside = tmp_path / "collections", tmp_path / "secret"
    (root / "kb").mkdir(parents=True)
    outside.mkdir()
    (outside / "passwords.txt").write_text("hunter2", encoding="utf-8")
    (root / "kb" / "a.txt").write_text("fine", encoding="utf-8")
    (root / "kb" / "b.txt").symlink_to(outside / "passwords.txt")
    (root / "linked").symlink_to(outside)
    assert len(load_collection(root / "kb").documents) == 2  # without a root, links are followed
    error = _error({"path": root / "kb"}, root=root)
    assert str(error).endswith("kb/b.txt: points outside the collections folder (through a symlink or '..'); "
                               "use a collection inside the collections folder")
    assert "points outside the collections folder" in str(_error({"path": root / "linked"}, root=root))
    assert "points outside" in str(_error({"path": root / ".." / "secret"}, root=root))
    _jsonl(root / "docs.jsonl", [{"_id": "d1", "text": "x"}])
    assert len(load_collection(root / "docs.jsonl", root=root).documents) == 1


def test_a_folder_walk_stops_past_the_byte_limit(tmp_path):
    folder = _text_folder(tmp_path, 3)
    (folder / "big.md").write_text("x" * (2 * 1024**2), encoding="utf-8")
    message = str(_error({"path": folder}, limits=FolderLimits(max_bytes=1024**2)))
    assert message == (f"{folder}: more than 1 MB of .txt/.md files under this folder; point the path at "
                       "the collection's own folder, or raise the limit with --max-files and --max-folder-mb")


def test_walking_the_root_of_the_filesystem_stops_with_one_line():
    with pytest.raises(SearchGradeError) as info:
        load_collection("/", limits=FolderLimits(max_files=2_000))
    assert str(info.value).startswith("/: more than 2,000 files under this folder; point the path at")


def test_a_folder_loaded_with_other_limits_is_loaded_again_with_them(tmp_path):
    # A resume and every Ray search worker load the collection again from the run's fields.
    folder = _text_folder(tmp_path, 2)
    collection = load_collection(folder, limits=FolderLimits(max_files=3))
    assert collection.fields["limits"] == {"max_files": 3, "max_bytes": FolderLimits().max_bytes}
    (folder / "2.txt").write_text("note 2", encoding="utf-8")
    (folder / "3.txt").write_text("note 3", encoding="utf-8")
    with pytest.raises(SearchGradeError, match="more than 3 files"):
        load_collection(folder, **collection.fields)
    assert "limits" not in load_collection(folder).fields  # the defaults are not recorded
