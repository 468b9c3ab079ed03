"""The command line with the user's own files: --queries and --qrels-file beside a single-file corpus,
--text-field a,b, guessed columns; and `searchgrade app`'s limits, checked before anything starts."""

from __future__ import annotations

import json

import pytest

from searchgrade.cli import main
from searchgrade.engine.store import Store

CSV = ("doc_id,headline,abstract,body\n"
       "d1,Apple pie,,A classic apple pie recipe with cinnamon and butter.\n"
       "d2,Jupiter,The largest planet.,A gas giant with many moons.\n"
       "d3,Rust,,A systems programming language focused on memory safety.\n"
       "d4,,,\n")


@pytest.fixture
def own_files(tmp_path):
    (tmp_path / "export.csv").write_text(CSV, encoding="utf-8")
    (tmp_path / "queries.tsv").write_text("1\tapple pie recipe\n2\tlargest planet\n", encoding="utf-8")
    (tmp_path / "judgments.qrels").write_text("1 0 d1 2\n2 0 d2 2\n2 0 d4 1\n", encoding="utf-8")
    return tmp_path


def test_a_single_file_corpus_with_queries_and_trec_qrels_runs_in_qrels_mode(own_files, capsys):
    code = main(["evaluate", str(own_files / "export.csv"), "--qrels", "--queries", str(own_files / "queries.tsv"),
                 "--qrels-file", str(own_files / "judgments.qrels"), "--text-field", "abstract,body",
                 "--strategies", "fulltext", "--data-dir", str(own_files / "d")])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "export.csv: columns guessed: id from 'doc_id', title from 'headline', text from 'abstract' + 'body'" in err
    assert "queries.tsv: no header line: the first column is the query id, the second its text" in err
    assert "judgments.qrels: 1 judgment names a document skipped as empty" in err
    store = Store(own_files / "d")
    [run] = store.list_runs()
    assert run.status == "complete" and run.stats["queries"] == 2 and run.stats["documents"] == 3
    fields = run.config["collection_fields"]
    assert fields["text_field"] == ["abstract", "body"] and fields["id_field"] == "doc_id"
    assert fields["queries_file"] == str((own_files / "queries.tsv").resolve())
    assert fields["qrels_file"] == str((own_files / "judgments.qrels").resolve())
    docs = store.documents(run.run_id, ["d2"])
    assert docs["d2"]["text"] == "The largest planet.\n\nA gas giant with many moons."
    # The empty document's judgment counts in the ideal: q2's NDCG is below 1 even with d2 first.
    ndcg = {r["query_id"]: r["value"] for r in store.metric_values(run.run_id, "ndcg", 10)}
    assert ndcg["1"] == pytest.approx(1.0) and ndcg["2"] < 1.0


def test_resume_loads_the_collection_as_the_run_stored_it(own_files, capsys):
    args = ["evaluate", str(own_files / "export.csv"), "--qrels", "--queries", str(own_files / "queries.tsv"),
            "--qrels-file", str(own_files / "judgments.qrels"), "--text-field", "abstract,body",
            "--strategies", "fulltext", "--data-dir", str(own_files / "d")]
    assert main(args) == 0
    store = Store(own_files / "d")
    [run] = store.list_runs()
    store.update_run(run.run_id, status="interrupted")
    capsys.readouterr()
    assert main(["resume", run.run_id, "--data-dir", str(own_files / "d")]) == 0, capsys.readouterr().err
    assert store.get_run(run.run_id).status == "complete"


@pytest.mark.parametrize(("extra", "fragment"), [
    (["--qrels-file", "judgments.qrels"], "judgments.qrels: judgments need the queries' texts; pass --queries FILE"),
    (["--queries", "nope.csv"], "nope.csv: no such file"),
    (["--text-field", "summary"], "export.csv:1: no 'summary' column in the header"),
    (["--id-field", "key"], "pass --id-field with the column that holds the document id"),
])
def test_bad_options_beside_a_corpus_give_one_line_and_no_run(own_files, capsys, monkeypatch, extra, fragment):
    monkeypatch.chdir(own_files)
    code = main(["evaluate", "export.csv", "--qrels", "--data-dir", "d", *extra])
    err = capsys.readouterr().err.strip()
    assert code == 1 and "\n" not in err, err
    assert fragment in err
    assert not (own_files / "d" / "searchgrade.duckdb").exists() or Store(own_files / "d").list_runs() == []


@pytest.mark.parametrize(("args", "message"), [
    (["--max-upload-mb", "0"], "searchgrade: error: --max-upload-mb of 0 must be at least 1"),
    (["--collections-root", "/no/such/folder"],
     "searchgrade: error: --collections-root /no/such/folder: no such folder; point it at the folder that "
     "holds the collections"),
])
def test_app_options_are_checked_before_the_server_starts(capsys, args, message):
    assert main(["app", *args]) == 1
    assert capsys.readouterr().err.strip() == message


def test_the_app_command_passes_the_upload_limit_and_the_root_to_streamlit(tmp_path, monkeypatch):
    import os

    calls = []
    monkeypatch.setattr(os, "execve", lambda path, command, env: calls.append((command, env)))
    main(["app", "--max-upload-mb", "512", "--collections-root", str(tmp_path), "--data-dir", str(tmp_path / "d")])
    [(command, env)] = calls
    assert command[command.index("--server.maxUploadSize") + 1] == "512"
    assert env["SEARCHGRADE_COLLECTIONS_ROOT"] == str(tmp_path.resolve())
    assert json.dumps(command)  # plain strings
