"""A simulated run written straight into a store: rankings of known skill, qrels, and the
simulated judges' grades of every retrieved pair (and, asked for, their repeats)."""

from __future__ import annotations

import random
from pathlib import Path

from searchgrade.core.records import Document, Query
from searchgrade.engine.judges.panel import judge_stage
from searchgrade.engine.judges.spec import PANEL, panel_grade
from searchgrade.engine.store import Store
from tests.engine.judges.simulated import BEHAVIOURS, Simulated, simulated
from tests.pages.synthetic import RunSpec, write_run

#: Tokens each judge spends per pair (the expensive one is the same faithful judge, ten times the price).
TOKENS = {"faithful": 300, "faithful_big": 300, "flip": 300, "lenient": 300, "random": 300}
PRICES = {"faithful": 0.1, "faithful_big": 10.0}


def write_simulated_run(store: Store, folder: Path, judges: list[str], *, repeats: int = 0, n_queries: int = 40,
                        seed: int = 0, skills: dict[str, float] | None = None) -> tuple[str, Simulated]:
    sim = simulated(folder, n_queries=n_queries, seed=seed, skills=skills)
    documents = [Document(d, title, text) for d, (title, text) in sim.docs.items()]
    queries = [Query(q, text, "natural") for q, text in sim.queries.items()]
    spec = RunSpec(documents, queries, sim.qrels, sim.rankings, k=5, name="simulated", collection_name="simulated",
                   config={"llm": {"model": judges[0]}, "judges": judges,
                           "judge_prices": {j: p for j, p in PRICES.items() if j in judges}})
    run_id = write_run(store, spec, n_bootstrap=200)
    pairs = sorted({(q, d) for ranking in sim.rankings.values() for q, docs in ranking.items() for d in docs})
    rng = random.Random(seed)
    rows = []
    said: dict[str, dict[tuple[str, str], int]] = {}
    for name in judges:
        behaviour = BEHAVIOURS[name]
        said[name] = {p: behaviour(sim.grade(*p), f"{p[0]}|{p[1]}", rng) for p in pairs}
        rows += [(name, q, d, g, None, "judge_v1-test") for (q, d), g in said[name].items()]
        store.add_llm_usage(run_id, judge_stage(name), {"requests": len(pairs), "ok": len(pairs),
                                                         "prompt_tokens": TOKENS[name] * len(pairs) - 10 * len(pairs),
                                                         "completion_tokens": 10 * len(pairs),
                                                         "latency_s": 0.01 * len(pairs)})
    rows += [(PANEL, q, d, panel_grade([said[n][(q, d)] for n in judges]), None, "judge_v1-test") for q, d in pairs]
    with store.transaction() as con:
        store.write_judge_grades(con, run_id, rows)
    if repeats:
        sample = random.Random(1).sample(pairs, min(200, len(pairs)))
        store.add_judge_repeats(run_id, [(name, q, d, r, BEHAVIOURS[name](sim.grade(q, d), f"{q}|{d}", rng))
                                         for name in judges for q, d in sample for r in range(1, repeats + 1)])
    return run_id, sim
