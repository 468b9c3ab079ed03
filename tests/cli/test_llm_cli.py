"""`searchgrade evaluate --llm`, `resume` and `show` for LLM runs, against a local scripted server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from searchgrade.cli import main
from searchgrade.engine.store import Store
from tests.engine.llm.fake_server import FakeOpenAIServer
from tests.engine.llm_fakes import MIN_WORDS, Recorder

SEARCHGRADE = [sys.executable, "-m", "searchgrade.cli"]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_llm_environment(monkeypatch):
    for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "SEARCHGRADE_LLM_MODEL"):
        monkeypatch.delenv(name, raising=False)


def llm_args(tiny_beir, data_dir, base_url, *extra) -> list[str]:
    return ["evaluate", str(tiny_beir), "--llm", "--model", "fake", "--base-url", base_url,
            "--docs", "3", "--queries-per-doc", "1", "--keyword-per-doc", "1",
            "--min-doc-words", str(MIN_WORDS), "--strategies", "fulltext", "--data-dir", str(data_dir),
            *extra]


def show_json(capsys, run_id: str, data_dir: Path) -> dict:
    capsys.readouterr()
    assert main(["show", run_id, "--format", "json", "--data-dir", str(data_dir)]) == 0
    return json.loads(capsys.readouterr().out)


def test_evaluate_llm_prints_the_run_id_last_and_show_reports_the_calls_the_server_got(
    tmp_path, tiny_beir, capsys
):
    recorder = Recorder(invalid_every=4)
    with FakeOpenAIServer(recorder) as server:
        assert main(llm_args(tiny_beir, tmp_path / "d", server.base_url, "--concurrency", "2")) == 0
        out, err = capsys.readouterr()
        run_id = out.strip().splitlines()[-1]
        assert "calls=" in err and "tokens=" in err  # the progress bars of the LLM stages
        payload = show_json(capsys, run_id, tmp_path / "d")
        run = payload["run"]
        assert run["status"] == "complete" and run["mode"] == "llm"
        assert run["llm_calls"] == {"querygen": recorder.posts["querygen"], "judge": recorder.posts["judge"]}
        assert sum(run["llm_calls"].values()) == server.posts
        assert run["tokens"]["judge"] == {"prompt": 20 * recorder.posts["judge"], "completion": 8 * recorder.posts["judge"]}
        assert run["judge_failures"] == sum(g["grade"] is None for g in Store(tmp_path / "d").grades(run_id))
        assert run["config"]["llm"]["model"] == "fake"
        assert ("fulltext", "source_found", 10) in {(m["strategy"], m["metric"], m["k"]) for m in payload["metrics"]}
        # The same evaluation again: no LLM call at all, everything from the cache.
        posts = server.posts
        assert main(llm_args(tiny_beir, tmp_path / "d", server.base_url)) == 0
        again = capsys.readouterr().out.strip().splitlines()[-1]
        assert server.posts == posts
        second = show_json(capsys, again, tmp_path / "d")["run"]
        assert second["llm_calls"] == {"querygen": 0, "judge": 0}
        assert second["cache_hits"]["querygen"] == 3 and second["cache_hits"]["judge"] > 0
    assert main(["show", run_id, "--data-dir", str(tmp_path / "d")]) == 0
    table = capsys.readouterr().out
    assert "source_found@10" in table and "judge calls" in table


def test_queries_from_reuses_a_runs_queries(tmp_path, tiny_beir, capsys):
    with FakeOpenAIServer(Recorder()) as server:
        assert main(llm_args(tiny_beir, tmp_path / "d", server.base_url)) == 0
        first = capsys.readouterr().out.strip().splitlines()[-1]
    recorder = Recorder()
    with FakeOpenAIServer(recorder) as server:
        assert main(["evaluate", str(tiny_beir), "--llm", "--model", "fake", "--base-url", server.base_url,
                     "--queries-from", first, "--strategies", "fulltext", "--k", "5",
                     "--data-dir", str(tmp_path / "d")]) == 0
        second = capsys.readouterr().out.strip().splitlines()[-1]
    store = Store(tmp_path / "d")
    assert store.queries(second) == store.queries(first) and recorder.posts["querygen"] == 0


def _one_line_error(capsys, code: int) -> str:
    """The error line (progress bars drawn before it, with carriage returns, are not lines of it)."""
    err = capsys.readouterr().err
    assert code != 0
    assert "Traceback" not in err
    lines = [line for line in err.replace("\r", "\n").splitlines() if line.startswith("searchgrade:")]
    assert len(lines) == 1, err
    assert err.rstrip().endswith(lines[0]), err
    return lines[0]


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["evaluate", "TINY", "--llm", "--base-url", "http://127.0.0.1:9/v1"], "--model"),
        (["evaluate", "TINY", "--llm", "--model", "m"], "--base-url"),
        (["evaluate", "TINY", "--qrels", "--model", "m"], "--model goes with --llm"),
        (["evaluate", "TINY", "--qrels", "--llm", "--model", "m", "--base-url", "http://x/v1", "--docs", "3"],
         "--docs"),
        (["evaluate", "TINY", "--llm", "--model", "m", "--base-url", "http://x/v1", "--concurrency", "0"],
         "--concurrency of 0"),
        (["evaluate", "TINY", "--llm", "--model", "m", "--base-url", "http://x/v1", "--docs", "0"],
         "--docs of 0"),
        (["evaluate", "TINY", "--llm", "--model", "m", "--base-url", "http://x/v1", "--queries-from", "nope"],
         "no run"),
        (["evaluate", "TINY", "--llm", "--model", "m", "--base-url", "http://x/v1"], "at least 20 words"),
        (["evaluate", "TINY", "--qrels", "--judge-unjudged"], "--judge-unjudged goes with --llm"),
        (["resume", "no-such-run"], "no run"),
    ],
)
def test_bad_llm_options_are_one_line_errors(tmp_path, tiny_beir, capsys, argv, fragment):
    argv = [str(tiny_beir) if a == "TINY" else a for a in argv]
    try:
        code = main([*argv, "--data-dir", str(tmp_path / "d")])
    except SystemExit as exc:
        code = exc.code
    assert fragment in _one_line_error(capsys, code)
    if (tmp_path / "d" / "searchgrade.duckdb").exists():
        assert Store(tmp_path / "d").list_runs() == []


def test_a_server_that_refuses_us_is_a_one_line_error_and_a_failed_run(tmp_path, tiny_beir, capsys):
    with FakeOpenAIServer(lambda body, n: (404, {"error": {"message": "model 'fake' not found"}}, {})) as server:
        code = main(llm_args(tiny_beir, tmp_path / "d", server.base_url))
    err = _one_line_error(capsys, code)
    assert "404" in err and "searchgrade resume" in err
    (run,) = Store(tmp_path / "d").list_runs()
    assert run.status == "failed" and "404" in run.error


def test_resume_of_a_complete_run_is_a_one_line_error(tmp_path, tiny_beir, capsys):
    with FakeOpenAIServer(Recorder()) as server:
        assert main(llm_args(tiny_beir, tmp_path / "d", server.base_url)) == 0
    run_id = capsys.readouterr().out.strip().splitlines()[-1]
    code = main(["resume", run_id, "--data-dir", str(tmp_path / "d")])
    assert "already complete" in _one_line_error(capsys, code)


def _judge_cache_size(data_dir: Path) -> int:
    with Store(data_dir).connect() as con:
        return con.execute("SELECT count(*) FROM llm_cache WHERE kind = 'judge'").fetchone()[0]


@pytest.mark.slow
def test_kill_9_during_judging_then_resume_completes_with_no_duplicate_and_no_lost_grade(
    tmp_path, tiny_beir, capsys, monkeypatch
):
    data_dir = tmp_path / "d"
    recorder = Recorder()
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "OPENAI_BASE_URL")}
    env["PYTHONPATH"] = str(REPO)
    # A dead process's run counts as interrupted after 3 s without a heartbeat (default 60).
    env["SEARCHGRADE_HEARTBEAT_TIMEOUT_S"] = "3"
    monkeypatch.setenv("SEARCHGRADE_HEARTBEAT_TIMEOUT_S", "3")
    with FakeOpenAIServer(recorder, latency_s=0.1) as server:
        proc = subprocess.Popen(
            [*SEARCHGRADE, *llm_args(tiny_beir, data_dir, server.base_url, "--concurrency", "2",
                                     "--strategies", "fulltext,hybrid")],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        )
        deadline = time.monotonic() + 300
        # Kill once judging is well under way (the cache is written every 16 grades).
        while recorder.posts["judge"] < 24:
            assert proc.poll() is None, proc.communicate()[1]
            assert time.monotonic() < deadline, "judging did not start"
            time.sleep(0.02)
        proc.kill()
        proc.communicate(timeout=60)
        time.sleep(0.5)  # requests in flight at the kill reach the responder after its latency
        sent_before = recorder.posts["judge"]
        cached = _judge_cache_size(data_dir)
        assert 16 <= cached <= sent_before
        killed = time.monotonic()
        (run,) = Store(data_dir).list_runs()
        # Nobody could mark it at once: whoever looks after the heartbeat timeout sees it interrupted.
        while Store(data_dir).get_run(run.run_id).status == "running":
            assert time.monotonic() - killed < 30, "still running long after the heartbeat timeout"
            time.sleep(0.2)
        assert "no heartbeat" in Store(data_dir).get_run(run.run_id).error

        assert main(["resume", run.run_id, "--data-dir", str(data_dir)]) == 0
        assert capsys.readouterr().out.strip().splitlines()[-1] == run.run_id
    store = Store(data_dir)
    final = store.get_run(run.run_id)
    assert final.status == "complete"
    pairs = {(r["query_id"], r["doc_id"]) for r in store.results_with_grades(run.run_id)}
    pairs |= {(q["query_id"], q["source_doc_id"]) for q in store.queries(run.run_id)}
    grades = store.grades(run.run_id)
    # No lost grade: every pair has a valid one; none duplicated: the resume judged only the
    # pairs that were not in the cache when the first process died.
    assert len(grades) == len(pairs) and all(g["grade"] is not None for g in grades)
    assert recorder.posts["judge"] - sent_before == len(pairs) - cached
    resumed = recorder.judged_pairs[sent_before:]
    assert len(set(resumed)) == len(resumed)
    assert recorder.posts["querygen"] == 3
    assert _judge_cache_size(data_dir) == len(pairs)
