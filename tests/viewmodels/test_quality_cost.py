"""Quality against cost on Results (viewmodels/variants.py): drawn when two strategies have a cost to
weigh, nothing for a lone strategy (it is weighed against nothing; the page used to fail on it)."""

from __future__ import annotations

from searchgrade.cli import main
from searchgrade.engine.store import Store
from searchgrade.viewmodels.results import results_view
from searchgrade.viewmodels.variants import quality_cost

VARIANT = '[strategy.bm25-flat]\nkind = "fulltext"\nbm25_k1 = 0.9\nbm25_b = 0.4\n'


def _view(home, tiny_beir, strategies: str, *extra: str):
    assert main(["evaluate", str(tiny_beir), "--qrels", "--strategies", strategies, "--k", "3",
                 "--data-dir", str(home), *extra]) == 0
    store = Store(home)
    view = results_view(store, store.list_runs()[0].run_id, "dcg", 3)
    return quality_cost(store, view.run, view.metric_summary, "dcg", 3, "p50_ms", view.latency.to_dict("records"))


def test_a_lone_strategy_has_no_quality_cost_view(tmp_path, tiny_beir):
    assert _view(tmp_path / "home", tiny_beir, "fulltext") is None


def test_two_strategies_are_drawn_against_their_query_latency(tmp_path, tiny_beir):
    declared = tmp_path / "variants.toml"
    declared.write_text(VARIANT)
    found = _view(tmp_path / "home", tiny_beir, "fulltext,bm25-flat", "--strategies-file", str(declared))
    assert found is not None and found.axis == "p50_ms" and "p50_ms" in found.axes
    assert sorted(found.points["strategy"]) == ["bm25-flat", "fulltext"]
    assert found.points["cost"].notna().all()
