"""Safe to expose, in the real app and a real browser: the login, a typed LLM endpoint that never
sees the server's key, Cancel from the page, and a CLI run killed with SIGKILL while the app is open.

One server for the module, started as users start it (`searchgrade app`, which execs Streamlit),
with a password, the server's OPENAI_API_KEY set, and a 3 s heartbeat timeout. The LLM endpoints
are local HTTP listeners (tests/engine/llm/fake_server.py) that record every request. Runs use the
tiny collection and full-text search only: no model is loaded, so the LLM is reached within seconds.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from searchgrade.engine.store import Store
from tests.browser.server import environment, serve_app
from tests.conftest import TINY_QRELS, write_beir
from tests.engine.llm.fake_server import FakeOpenAIServer
from tests.engine.llm_fakes import Recorder, pair_of, stage_of

pytestmark = [pytest.mark.browser, pytest.mark.slow]

SECRET = "sk-server-key-never-leaves-0123456789"
PASSWORD = "correct horse battery staple"
HEARTBEAT_TIMEOUT_S = 3
#: What the page may take, after the heartbeat timeout, to show a killed run interrupted: the
#: Results page's status watch polls every 2 s, then the page reruns.
SHOW_INTERRUPTED_S = 15
#: A run's search stage lands whole in its own transaction (queries, results); what grading
#: writes (Store.GRADED_TABLES) lands whole at the end. A stopped run holds all of a stage or none.
SEARCH_TABLES = ("queries", "results")
NO_KEY = "No API key is sent to this endpoint"


def _settings(tmp: Path) -> dict[str, str]:
    # HOME elsewhere: no secrets.toml of the machine's user is read.
    return {"HOME": str(tmp), "SEARCHGRADE_HEARTBEAT_TIMEOUT_S": str(HEARTBEAT_TIMEOUT_S),
            "OPENAI_API_KEY": SECRET}


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("safety")
    home = tmp / "home"
    env = environment(home, SEARCHGRADE_APP_PASSWORD=PASSWORD, **_settings(tmp))
    with serve_app(tmp, env=env) as url:
        yield url, home, tmp


def _open(browser, url: str):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.set_default_timeout(60_000)
    page.goto(url)
    page.get_by_label("Password", exact=True).wait_for()
    return page


def _log_in(page, password: str = PASSWORD) -> None:
    box = page.get_by_label("Password", exact=True)
    box.fill(password)
    page.get_by_role("button", name="Log in").click()


def _app_visible(page) -> bool:
    return (page.get_by_role("link", name="Results").count() > 0
            or page.get_by_text("Evaluate search quality").count() > 0)


def _fill(page, label: str, value: str) -> None:
    box = page.get_by_label(label, exact=True)
    box.fill(value)
    box.press("Enter")


def _logged_in(browser, url: str):
    page = _open(browser, url)
    _log_in(page)
    page.get_by_role("button", name="Evaluate search quality").wait_for()
    return page


def _listener(model: str, latency_s: float = 0.0) -> FakeOpenAIServer:
    """A recording endpoint serving ``model``. Each test has its own model: the judge's cache is
    keyed by the model and what the endpoint reports about it, and every test judges the same pairs."""
    listener = FakeOpenAIServer(Recorder(), latency_s=latency_s)
    listener.models = [{"id": model, "object": "model"}]
    return listener


def _start_llm_run(page, folder: Path, endpoint: str, model: str) -> None:
    """On Evaluate: the folder, a typed endpoint, human judgments + the judge, full-text only,
    one request in flight; then start."""
    page.get_by_text("A path on this machine").click()
    _fill(page, "Path", str(folder))
    page.get_by_text("queries with human judgments").first.wait_for()
    if not page.get_by_label("Model", exact=True).is_visible():
        page.get_by_text("LLM endpoint (for the LLM judge)").click()
    _fill(page, "Model", model)
    _fill(page, "Endpoint base URL", endpoint)
    page.get_by_text(NO_KEY).first.wait_for()
    # The server has a key: withholding it is the policy, not a missing key.
    page.get_by_text("OPENAI_API_KEY in the app server's environment (set)").wait_for()
    page.get_by_text("Human judgments + LLM agreement").click()
    # Full-text only: the dense and reranked strategies load models before the judge is asked.
    strategies = page.locator('[data-testid="stMultiSelect"]').filter(has_text="Strategies")
    others = strategies.get_by_role("button", name=re.compile(r"^Remove (?!Full-text \(BM25\)$)"))
    for _ in range(20):
        if not others.count():
            break
        others.first.click()
        page.wait_for_timeout(200)
    chips = strategies.get_by_role("button", name=re.compile(r"^Remove "))
    assert chips.count() == 1 and strategies.get_by_role("button", name="Remove Full-text (BM25)").count() == 1
    in_flight = page.get_by_role("spinbutton", name="LLM requests in flight")
    in_flight.fill("1")
    in_flight.press("Enter")
    page.wait_for_timeout(500)
    page.get_by_role("button", name="Evaluate search quality").click()


def _wait_for_post(listener: FakeOpenAIServer, timeout_s: float, process: subprocess.Popen | None = None) -> None:
    deadline = time.time() + timeout_s
    while not any(method == "POST" for method, _, _ in listener.requests):
        if process is not None:
            assert process.poll() is None, process.communicate()[1]
        assert time.time() < deadline, f"no request reached the endpoint within {timeout_s:g} s"
        time.sleep(0.1)


def _contents(home: Path, run_id: str) -> dict[str, int]:
    with Store(home).connect() as con:
        return {t: con.execute(f"SELECT count(*) FROM {t} WHERE run_id = ?", [run_id]).fetchone()[0]  # noqa: S608 - the test's own table names
                for t in (*SEARCH_TABLES, *Store.GRADED_TABLES)}


def _only_whole_search(home: Path, run_id: str) -> dict[str, int]:
    """The contents of a run stopped while grading: its whole search stage, nothing of the grading."""
    contents = _contents(home, run_id)
    assert contents["queries"] == len({q for q, _, _ in TINY_QRELS}), contents
    assert contents["results"] > 0, contents
    assert {t: contents[t] for t in Store.GRADED_TABLES} == dict.fromkeys(Store.GRADED_TABLES, 0), contents
    return contents


def _pick_run(page, name: str) -> None:
    page.get_by_role("link", name="Results").click()
    dropdown = page.get_by_role("combobox").first
    dropdown.wait_for()
    dropdown.click()
    page.get_by_role("option", name=name).first.click()


def _authorization(headers: dict[str, str]) -> str | None:
    return next((value for name, value in headers.items() if name.lower() == "authorization"), None)


def _judged_pairs(listener: FakeOpenAIServer) -> list[tuple[str, str]]:
    return [pair_of(body) for body in listener.bodies if stage_of(body) == "judge"]


def test_nothing_shows_before_the_login_a_wrong_password_is_refused_the_right_one_opens(served, browser):
    url, _, _ = served
    page = _open(browser, url)
    time.sleep(1)  # whatever the app would draw besides the gate has had time to arrive
    assert not _app_visible(page)
    _log_in(page, "not the password at all")
    page.get_by_text("Wrong password.").first.wait_for()
    assert not _app_visible(page)
    _log_in(page)
    page.get_by_role("button", name="Evaluate search quality").wait_for()
    page.get_by_role("link", name="Results").wait_for()
    page.close()


def test_a_typed_endpoint_gets_the_requests_but_never_the_servers_key(served, browser):
    url, home, tmp = served
    with _listener("typed-model") as listener:
        page = _logged_in(browser, url)
        _start_llm_run(page, write_beir(tmp / "typed"), listener.base_url, "typed-model")
        page.get_by_text("Run complete").first.wait_for()
        run = Store(home).list_runs()[0]
        assert run.status == "complete", run.error
    # The judge graded the judged results through the listener: it did get the run's requests.
    judged = [g for g in Store(home).grades(run.run_id) if g["llm_grade"] is not None]
    assert listener.posts >= len(judged) > 0, (listener.posts, judged)
    assert listener.requests
    assert {_authorization(headers) for _, _, headers in listener.requests} == {None}
    for method, path, headers in listener.requests:
        assert not any(SECRET in value for value in headers.values()), (method, path)
    assert SECRET not in json.dumps(listener.bodies)
    assert SECRET not in page.locator("body").inner_text()
    page.close()


def test_cancel_from_the_page_ends_the_run_cancelled_with_nothing_half_written_then_resume_completes(
        served, browser):
    url, home, tmp = served
    # Slow replies, one at a time: the run is judging when Cancel is clicked.
    with _listener("cancelled-model", latency_s=1.0) as listener:
        page = _logged_in(browser, url)
        _start_llm_run(page, write_beir(tmp / "cancelled"), listener.base_url, "cancelled-model")
        _wait_for_post(listener, 60)
        page.get_by_role("button", name="Cancel run").click()
        page.get_by_text("The run cancelled").first.wait_for()
        run = Store(home).list_runs()[0]
        assert run.status == "cancelled", run.error
        assert "cancelled from the app during grade" in run.error
        stopped = _only_whole_search(home, run.run_id)
        asked_before = listener.posts
        assert asked_before < len(TINY_QRELS)  # it was stopped, not finished

        listener.latency_s = 0.0
        page.get_by_role("button", name="Resume this run").click()
        page.get_by_text("Run complete").first.wait_for()
    run = Store(home).get_run(run.run_id)
    assert run.status == "complete", run.error
    done = _contents(home, run.run_id)
    # The search the cancelled run stored was the whole stage: the resume kept it as it was.
    assert {t: done[t] for t in SEARCH_TABLES} == {t: stopped[t] for t in SEARCH_TABLES}
    assert all(done[t] for t in ("grades", "metric_values", "metric_summary")), done
    # The replies received before the cancel were kept: the resume asked only for the rest.
    pairs = _judged_pairs(listener)
    assert len(pairs) - len(set(pairs)) <= 1, "at most the request in flight at the cancel is asked again"
    page.close()


def test_a_cli_run_killed_while_the_app_is_open_shows_interrupted_and_resumes_from_the_page(served, browser):
    url, home, tmp = served
    folder = write_beir(tmp / "killed")
    # Slow replies: the CLI run is still judging while the page is opened and the run picked.
    with _listener("killed-model", latency_s=5.0) as listener:
        cli = subprocess.Popen(
            [sys.executable, "-m", "searchgrade.cli", "evaluate", str(folder), "--qrels", "--llm", "--model", "killed-model",
             "--base-url", listener.base_url, "--concurrency", "1", "--strategies", "fulltext",
             "--name", "killed run"],
            cwd=tmp, env=environment(home, **_settings(tmp)), stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True)
        try:
            page = _logged_in(browser, url)
            _wait_for_post(listener, 60, cli)
            _pick_run(page, "killed run")
            page.get_by_text("This run is still running").first.wait_for()
        finally:
            cli.kill()
            cli.wait()
        killed = time.monotonic()
        # The open page turns the run interrupted once its heartbeat is stale: no reload, no restart.
        page.get_by_text("This run is interrupted").first.wait_for(
            timeout=(HEARTBEAT_TIMEOUT_S + SHOW_INTERRUPTED_S) * 1000)
        shown_after = time.monotonic() - killed
        [run] = [r for r in Store(home).list_runs() if r.name == "killed run"]
        assert run.status == "interrupted" and "no heartbeat" in run.error, run.error
        _only_whole_search(home, run.run_id)
        from_cli = len(listener.requests)

        listener.latency_s = 0.0
        page.get_by_role("button", name="Resume this run").click()
        page.get_by_text("Run complete").first.wait_for()
    assert Store(home).get_run(run.run_id).status == "complete"
    # Not before the heartbeat went stale: the last beat came at most one interval (timeout / 6)
    # before the kill.
    assert HEARTBEAT_TIMEOUT_S * 5 / 6 - 0.1 <= shown_after < HEARTBEAT_TIMEOUT_S + SHOW_INTERRUPTED_S
    # The CLI's --base-url had the key for that command; the app resuming the same run did not send it.
    assert {_authorization(h) for m, _, h in listener.requests[:from_cli] if m == "POST"} == {f"Bearer {SECRET}"}
    assert {_authorization(h) for _, _, h in listener.requests[from_cli:]} == {None}
    page.close()
