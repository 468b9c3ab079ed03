"""A declared rerank server as the run's reranker, in the real app and a real browser.

Offline: a small BEIR folder cut from the demo, evaluated with `--reranker-model tei`, where
``[reranker.tei]`` of the strategies file names a local TEI-shaped server
(tests/indexes/rerank/rerank_server.py). The three reranked strategies run (none is skipped, though
no cross-encoder can be downloaded here), and Results, started with the same strategies file, shows
them where the built-in reranked ones are: the bars, without and with the reranker, at the stored
figures.
"""

from __future__ import annotations

import re

import pytest

from searchgrade.cli import main
from searchgrade.engine.run.strategies import base_strategies, reranked_of
from searchgrade.engine.run.strategies import label as strategy_label
from searchgrade.engine.store import Store
from searchgrade.viewmodels.common import WITH, WITHOUT
from tests.browser.server import environment, serve_app
from tests.browser.test_e2e import _wait_chart, small_beir
from tests.indexes.rerank.rerank_server import RerankServer

pytestmark = [pytest.mark.browser, pytest.mark.slow]


def test_a_declared_rerank_server_gives_the_three_reranked_strategies_in_the_browser(browser, tmp_path, capsys):
    server = RerankServer()
    try:
        strategies = tmp_path / "strategies.toml"
        strategies.write_text(f'[reranker.tei]\nkind = "tei"\nurl = "{server.url}"\ndepth = 10\n', encoding="utf-8")
        home = tmp_path / "home"
        folder = small_beir(tmp_path / "small", n_queries=6, n_other_docs=20)
        code = main(["evaluate", str(folder), "--qrels", "--reranker-model", "tei", "--strategies-file",
                     str(strategies), "--data-dir", str(home)])
        assert code == 0, capsys.readouterr().err
        store = Store(home)
        [run] = store.list_runs()
        assert run.skipped == {}
        assert set(run.config["strategies"]) == {*base_strategies(), *(reranked_of(s) for s in base_strategies())}
        assert server.requests, "the reranked strategies never called the TEI server"
        dcg = {r["strategy"]: r["value"] for r in store.metric_summary(run.run_id, 10) if r["metric"] == "dcg"}
        assert len(dcg) == 6

        env = environment(home, SEARCHGRADE_STRATEGIES_FILE=str(strategies))
        with serve_app(tmp_path, env=env) as url:
            page = browser.new_page(viewport={"width": 1500, "height": 1100})
            page.set_default_timeout(60_000)
            page.goto(f"{url}/results")
            page.get_by_text("Best DCG@").wait_for()
            chart = _wait_chart(page, "strategies")
            labels = {strategy_label(s): s for s in base_strategies()}
            shown = {}
            # The bars' traces are the two series; the legend's entries (one per strategy) are empty.
            for trace in (t for t in chart["data"] if t["x"]):
                assert trace["name"] in (WITHOUT, WITH)
                for x, y in zip(trace["x"], trace["y"], strict=True):
                    shown[labels[x] if trace["name"] == WITHOUT else reranked_of(labels[x])] = y
            assert shown == pytest.approx(dcg)
            # No "X was skipped: ..." / "X, Y were skipped: ..." (viewmodels/runs.py skipped_messages).
            assert page.get_by_text(re.compile(r"(was|were) skipped:")).count() == 0
    finally:
        server.stop()
