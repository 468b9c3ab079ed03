"""The real llama.cpp server (a 270M Gemma) as one judge of a panel, beside a simulated one: the
protocol, the per-judge cache and accounting through `searchgrade evaluate --judge-models` and
`searchgrade judges`. The model's grades are meaningless: nothing here claims any quality."""

from __future__ import annotations

import json

import pytest

from searchgrade.engine.store import Store
from tests.engine.judges.judge_server import judge_server
from tests.engine.judges.simulated import simulated, strategies_file
from tests.engine.judges.test_simulated_judges import cli

pytestmark = [pytest.mark.llm_server, pytest.mark.slow]


def test_the_llama_server_judges_every_pair_of_a_panel_its_calls_counted_and_cached(counting_proxy, tmp_path):
    sim = simulated(tmp_path / "sim", n_queries=3, k=2)
    data = str(tmp_path / "data")
    gemma = f"gemma-3-270m@{counting_proxy.base_url}"
    fake, responder = judge_server(sim, ["faithful"])
    with fake:
        evaluate = ["evaluate", str(sim.folder), "--qrels", "--llm", "--judge-models", f"faithful,{gemma}",
                    "--base-url", fake.base_url, "--strategies-file", str(strategies_file(sim, tmp_path / "s.toml")),
                    "--strategies", "best,poor", "--k", "2", "--timeout", "120", "--concurrency", "2",
                    "--data-dir", data]
        run_id = cli(evaluate)[0].strip().splitlines()[-1]
        store = Store(data)
        retrieved = {(q, d) for s in ("best", "poor") for q, docs in sim.rankings[s].items() for d in docs[:2]}
        rows = {(g["query_id"], g["doc_id"]): g for g in store.judge_grades(run_id, [gemma])}
        assert set(rows) == retrieved
        for g in rows.values():  # a grade on the scale, or a failure saying so: never an invented grade
            assert g["grade"] in (0, 1, 2, 3) or g["reason"].startswith("judge failure: ")
        failures = sum(g["grade"] is None for g in rows.values())
        usage = store.llm_usage(run_id)
        assert usage[f"judge:{gemma}"]["requests"] == counting_proxy.posts
        assert usage[f"judge:{gemma}"]["ok"] + usage[f"judge:{gemma}"]["failures"] == len(retrieved)
        assert usage["judge:faithful"]["requests"] == fake.posts == len(retrieved)
        shown = json.loads(cli(["show", run_id, "--format", "json", "--data-dir", data])[0])["run"]
        assert shown["llm_calls"]["judge"] == fake.posts + counting_proxy.posts
        # The same evaluation again: the simulated judge is asked nothing, gemma only its failures.
        posts, fake_posts = counting_proxy.posts, fake.posts
        cli(evaluate)
        assert fake.posts == fake_posts
        assert counting_proxy.posts - posts <= 3 * failures
        report = {j["model"]: j for j in json.loads(cli(["judges", run_id, "--format", "json",
                                                         "--data-dir", data])[0])["judges"]}
    assert list(report) == ["faithful", gemma, "panel"]
    assert report[gemma]["pairs"] == len(retrieved) - failures
    assert report[gemma]["cost_per_1000_pairs"]["tokens"] > 0 and report[gemma]["cost_per_1000_pairs"]["usd"] is None
