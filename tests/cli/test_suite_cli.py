"""`searchgrade suite ...`: a suite made from a run, run again on its frozen queries, listed, shown,
scheduled and deleted; bad input gives one line and stores nothing; `runs` names the suite."""

from __future__ import annotations

import pytest

from searchgrade.cli import main
from searchgrade.engine.store import Store
from tests.conftest import write_beir
from tests.engine.llm.fake_server import FakeOpenAIServer
from tests.engine.llm_fakes import MIN_WORDS, Recorder


def _last_line(capsys) -> str:
    return capsys.readouterr().out.strip().splitlines()[-1]


@pytest.fixture(scope="module")
def source_run(tmp_path_factory):
    """One qrels run of 4 of the tiny collection's 5 queries (fulltext), and a suite "s" made from it."""
    import contextlib
    import io

    data = tmp_path_factory.mktemp("suite-cli") / "d"
    folder = write_beir(tmp_path_factory.mktemp("beir") / "tiny")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        assert main(["evaluate", str(folder), "--qrels", "--strategies", "fulltext", "--max-queries", "4",
                     "--data-dir", str(data)]) == 0
        run_id = out.getvalue().strip().splitlines()[-1]
        assert main(["suite", "create", "s", "--from", run_id, "--data-dir", str(data)]) == 0
    return data, run_id


def test_a_suite_runs_its_frozen_queries_again_and_runs_lists_it(source_run, capsys):
    data, run_id = source_run
    store = Store(data)
    frozen = [q["query_id"] for q in store.queries(run_id)]
    assert len(frozen) == 4
    assert main(["suite", "create", "nightly", "--from", run_id, "--data-dir", str(data)]) == 0
    assert "4 queries" in capsys.readouterr().out
    assert main(["suite", "run", "nightly", "--note", "synonyms v3 deployed", "--data-dir", str(data)]) == 0
    out, err = capsys.readouterr()
    new_run = out.strip().splitlines()[-1]
    assert new_run != run_id
    # The same queries (not a new sample of the collection's 5), so the runs pair.
    assert [q["query_id"] for q in store.queries(new_run)] == frozen
    assert "no significant change" in err  # 4 queries: the paired test says it cannot tell
    entries = store.suite_entries("nightly")
    assert [e["run_id"] for e in entries] == [run_id, new_run]
    assert entries[-1]["baseline_run_id"] == run_id and entries[-1]["note"] == "synonyms v3 deployed"
    assert entries[-1]["changes"] == []  # nothing changed in the stored configuration

    assert main(["runs", "--data-dir", str(data)]) == 0
    lines = {line.split()[0]: line for line in capsys.readouterr().out.splitlines()[1:]}
    assert "nightly" in lines[new_run] and "nightly" in lines[run_id]

    assert main(["suite", "list", "--data-dir", str(data)]) == 0
    assert "nightly" in capsys.readouterr().out
    assert main(["suite", "show", "nightly", "--data-dir", str(data)]) == 0
    shown = capsys.readouterr().out
    assert new_run in shown and "note: synonyms v3 deployed" in shown and "dcg@10" in shown

    assert main(["suite", "schedule", "nightly", "--cron", "0 2 * * *", "--data-dir", str(data)]) == 0
    assert "UTC" in capsys.readouterr().out
    assert store.get_suite("nightly").schedule_expr == "0 2 * * *"
    assert main(["suite", "delete", "nightly", "--data-dir", str(data)]) == 0
    assert [s.name for s in store.list_suites()] == ["s"] and store.suite_entries("nightly") == []
    assert store.get_run(new_run).status == "complete"  # its runs stay


@pytest.mark.parametrize("argv, words", [
    (["suite", "schedule", "s", "--cron", "61 * * *"], "is not a cron expression"),
    (["suite", "schedule", "s", "--every", "5x"], "is not a positive interval"),
    (["suite", "schedule", "s", "--every", "99999999999d"], "give an interval from 1s to 366d"),
    (["suite", "schedule", "s", "--every", "9" * 5000 + "s"], "give an interval from 1s to 366d"),
    (["suite", "run", "nope"], "no suite named 'nope'"),
    (["suite", "alert", "s", "--webhook", "ftp://example.com/hook"], "is not an http(s) URL"),
    (["suite", "alert", "s", "--email", "team@example.com"], "SEARCHGRADE_SMTP_HOST"),
    (["suite", "create", "s", "--from", "RUN", "--margin", "-1"], "negative"),
    (["suite", "create", "bad name", "--from", "RUN"], "is not 1-64 letters"),
])
def test_bad_input_is_one_line_with_the_fix_and_stores_nothing(source_run, capsys, monkeypatch, argv, words):
    data, run_id = source_run
    monkeypatch.delenv("SEARCHGRADE_SMTP_HOST", raising=False)
    before = Store(data).get_suite("s")
    capsys.readouterr()
    argv = [run_id if a == "RUN" else a for a in argv]
    assert main([*argv, "--data-dir", str(data)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and words in err
    after = Store(data).get_suite("s")
    assert (after.schedule_expr, after.webhook, after.email) == (before.schedule_expr, before.webhook, before.email)
    assert [s.name for s in Store(data).list_suites()] == ["s"]


def test_an_smtp_server_that_does_not_answer_is_named_and_nothing_is_stored(source_run, capsys, monkeypatch):
    import socket

    data, _ = source_run
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("SEARCHGRADE_SMTP_HOST", "127.0.0.1")
    monkeypatch.setenv("SEARCHGRADE_SMTP_PORT", str(port))
    capsys.readouterr()
    assert main(["suite", "alert", "s", "--email", "team@example.com", "--data-dir", str(data)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and f"the SMTP server 127.0.0.1:{port} does not answer" in err
    assert Store(data).get_suite("s").email is None


def test_an_llm_suite_run_of_an_unchanged_system_makes_no_llm_call(tmp_path, tiny_beir, capsys, monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SEARCHGRADE_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)
    data = tmp_path / "d"
    with FakeOpenAIServer(Recorder()) as server:
        assert main(["evaluate", str(tiny_beir), "--llm", "--model", "fake", "--base-url", server.base_url,
                     "--docs", "3", "--queries-per-doc", "1", "--keyword-per-doc", "1", "--min-doc-words",
                     str(MIN_WORDS), "--strategies", "fulltext", "--data-dir", str(data)]) == 0
        first = _last_line(capsys)
        assert main(["suite", "create", "llm-suite", "--from", first, "--data-dir", str(data)]) == 0
        assert main(["suite", "run", "llm-suite", "--data-dir", str(data)]) == 0
        again = _last_line(capsys)
    store = Store(data)
    usage = store.llm_usage(again)
    # Every grade came from the cache: the store counts no request, and as many cache hits as pairs judged.
    assert usage["judge"]["requests"] == 0 and usage["judge"]["cache_hits"] > 0
    assert "querygen" not in usage or usage["querygen"]["requests"] == 0
    assert {q["text"] for q in store.queries(again)} == {q["text"] for q in store.queries(first)}
