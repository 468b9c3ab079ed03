"""A panel's grade: the lower median of its judges' grades, standing for the results the qrels miss
with --judge-unjudged (human grades always win), each judge's own grade kept beside it."""

from __future__ import annotations

import pytest

from searchgrade.engine.judges.spec import panel_grade
from searchgrade.engine.store import Store
from tests.engine.judges.judge_server import judge_server
from tests.engine.judges.simulated import BEHAVIOURS, simulated, strategies_file
from tests.engine.judges.test_simulated_judges import cli

pytestmark = pytest.mark.slow

JUDGES = ["faithful", "lenient", "flip"]


def test_unjudged_results_take_the_panels_median_and_people_keep_theirs(tmp_path):
    sim = simulated(tmp_path / "sim", n_queries=10, k=4)
    data = str(tmp_path / "data")
    server, _ = judge_server(sim, JUDGES)
    with server:
        run_id = cli(["evaluate", str(sim.folder), "--qrels", "--llm", "--judge-models", ",".join(JUDGES),
                      "--judge-unjudged", "--base-url", server.base_url,
                      "--strategies-file", str(strategies_file(sim, tmp_path / "s.toml")),
                      "--strategies", "best,poor", "--k", "4", "--data-dir", data])[0].strip().splitlines()[-1]
    store = Store(data)
    run = store.get_run(run_id)
    assert run.label_source == "human+llm"
    grades = {(g["query_id"], g["doc_id"]): g for g in store.grades(run_id)}
    per_judge = {(g["judge"], g["query_id"], g["doc_id"]): g["grade"] for g in store.judge_grades(run_id)}
    unjudged = [(q, d) for s in ("best", "poor") for q, docs in sim.rankings[s].items() for d in docs[:4]
                if d not in sim.qrels[q]]
    assert unjudged
    medians = set()
    for q, d in unjudged:
        said = [BEHAVIOURS[j](0, f"{q}|{d}", None) for j in JUDGES]  # deterministic judges, people's 0
        assert [per_judge[(j, q, d)] for j in JUDGES] == said
        g = grades[(q, d)]
        assert (g["source"], g["model"], g["grade"]) == ("llm", "panel", panel_grade(said)) == (
            "llm", "panel", per_judge[("panel", q, d)])
        medians.add(g["grade"])
    assert medians == {0, 1}  # 0 where the flipping judge agrees, 1 (the median of 0, 1, 3) where it does not
    judged = [(q, d) for q in sim.qrels for d in sim.qrels[q] if (q, d) in grades]
    assert all(grades[p]["source"] == "human" and grades[p]["grade"] == sim.qrels[p[0]][p[1]] for p in judged)
    assert all(grades[p]["llm_grade"] == per_judge[("panel", *p)] for p in judged if ("panel", *p) in per_judge)
