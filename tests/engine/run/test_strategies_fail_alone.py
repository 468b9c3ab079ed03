"""Strategies fail alone: on the demo, the built-ins beside a declared HTTP strategy whose server is
down and one whose ids are not the collection's. The built-ins complete with the figures they have
on their own, both declared ones are recorded failed with their reasons, `evaluate` exits 3 (1
under --strict), and once the server is up `resume` searches only what failed."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from searchgrade.cli import main
from searchgrade.engine.failures.diagnosis import strategy_failures
from searchgrade.engine.store import Store
from tests.conftest import DEMO
from tests.indexes.declared.conftest import SearchServer

pytestmark = pytest.mark.slow

QUERIES = "40"
BUILTINS = ("ann", "fulltext", "hybrid")


class ForeignIds:
    """An Elasticsearch-shaped server whose hits carry ids no collection holds (a wrong id mapping)."""

    def __init__(self) -> None:
        owner = self
        self.requests = 0

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self) -> None:
                owner.requests += 1
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                body = json.dumps({"hits": {"hits": [{"_id": f"elsewhere-{i}", "_score": 1.0 / i}
                                                     for i in range(1, 11)]}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.server.shutdown()


def _summary(store: Store, run_id: str) -> dict:
    return {(r["strategy"], r["metric"]): (r["value"], r["ci_low"], r["ci_high"], r["n"])
            for r in store.metric_summary(run_id, 10) if r["strategy"] in BUILTINS}


def test_the_built_ins_complete_beside_two_failed_declared_strategies_and_resume_retries_only_those(
        tmp_path, capsys, monkeypatch):
    data = str(tmp_path / "d")
    down = SearchServer(DEMO, tmp_path / "server-data")  # started to learn its port, then stopped
    down.stop()
    foreign = ForeignIds()
    strategies = tmp_path / "strategies.toml"
    strategies.write_text(
        f'[strategy.down]\nkind = "elasticsearch"\nhost = "{down.url}"\nindex = "scifact"\n'
        'query = \'{"match": {"text": {{query}}}}\'\nretries = 1\nbackoff_s = 0.01\n\n'
        f'[strategy.foreign]\nkind = "elasticsearch"\nhost = "{foreign.url}"\nindex = "scifact"\n'
        'query = \'{"match": {"text": {{query}}}}\'\n')
    try:
        assert main(["evaluate", "demo", "--qrels", "--max-queries", QUERIES, "--strategies", ",".join(BUILTINS),
                     "--data-dir", data]) == 0
        alone = capsys.readouterr().out.strip().splitlines()[-1]
        code = main(["evaluate", "demo", "--qrels", "--max-queries", QUERIES, "--strategies-file", str(strategies),
                     "--strategies", ",".join((*BUILTINS, "down", "foreign")), "--data-dir", data])
        out, err = capsys.readouterr()
        assert code == 3  # complete, with failed strategies (docs/strategies.md)
        run_id = out.strip().splitlines()[-1]
        store = Store(data)
        run = store.get_run(run_id)
        assert run.status == "complete"
        assert _summary(store, run_id) == _summary(store, alone)  # the built-ins' figures, as on their own
        failures = {f.strategy: f for f in strategy_failures(store, run)}
        assert set(failures) == {"down", "foreign"}
        assert failures["down"].queries_failed == failures["foreign"].queries_failed == int(QUERIES)
        assert failures["down"].reason.startswith("not asked: 3 connections in a row were refused (cannot connect to "
                                                  f"{down.url}/scifact/_search (connection refused)")
        assert failures["foreign"].reason.startswith("none of the 10 ids foreign returned for the first query "
                                                     "('elsewhere-1'")
        assert foreign.requests == 1  # not asked again after its first answer
        assert "down failed on 40 of 40 queries" in err and "foreign failed on 40 of 40 queries" in err
        assert main(["show", run_id, "--format", "json", "--data-dir", data]) == 0
        shown = json.loads(capsys.readouterr().out)
        assert {f["strategy"]: f["queries_failed"] for f in shown["strategy_failures"]} == {"down": 40, "foreign": 40}

        # Under --strict the first strategy failure fails the run: exit 1, the run marked failed.
        assert main(["evaluate", "demo", "--qrels", "--max-queries", QUERIES, "--strategies-file", str(strategies),
                     "--strategies", "fulltext,down", "--strict", "--data-dir", data]) == 1
        assert "--strict" in capsys.readouterr().err
        assert store.list_runs()[0].status == "failed"

        # The server comes up: resume searches only the failed strategies' queries.
        down.start_again()
        searched: list[tuple[str, ...]] = []
        from searchgrade.engine.run.stage_runner import LocalSearch

        execute = LocalSearch.execute
        monkeypatch.setattr(LocalSearch, "execute", lambda self, strategies, *rest: (
            searched.append(tuple(strategies)), execute(self, strategies, *rest))[1])
        builtin_rows = store.results_with_grades(run_id, "fulltext")
        assert main(["resume", run_id, "--data-dir", data]) == 3  # foreign's ids are still not the collection's
        assert searched == [("down", "foreign")]
        assert store.results_with_grades(run_id, "fulltext") == builtin_rows
        assert set(store.failed_query_counts(run_id)) == {"foreign"}
        assert foreign.requests == 2
        summary = {(r["strategy"], r["metric"]): r for r in store.metric_summary(run_id, 10)}
        # The server is our full-text search: once up, its figures are full-text's.
        assert summary[("down", "ndcg")]["value"] == pytest.approx(summary[("fulltext", "ndcg")]["value"])
        assert summary[("down", "ndcg")]["n"] == int(QUERIES)
    finally:
        foreign.stop()
        down.stop()
