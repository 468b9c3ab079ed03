"""The judges measured end to end: simulated judges served over HTTP by a local OpenAI-compatible
server that knows the qrels (tests/engine/judges/judge_server.py), a real run through
`searchgrade evaluate --qrels --llm --judge-models ...` over a collection whose strategies differ by
known amounts, then `searchgrade judges RUN`: the report recovers what was built in.

- faithful: tau 1, every decision as people's;
- lenient (+1 on non-relevant pairs): its bias interval above 0, its decisions still people's;
- flip (30% of pairs on the other side of relevant): worse agreement and decisions;
- random (half its calls at random): it says the same thing twice less often than the faithful one;
- faithful_big (faithful, 100 times the price): the rule picks the cheap faithful one.
"""

from __future__ import annotations

import io
import json
from contextlib import redirect_stderr, redirect_stdout

import pytest

from searchgrade.cli import main
from searchgrade.engine.store import Store
from tests.engine.judges.judge_server import PROMPT_TOKENS, judge_server
from tests.engine.judges.simulated import simulated, strategies_file

pytestmark = pytest.mark.slow

MODELS = ["faithful", "faithful_big", "flip", "lenient", "random"]


def cli(argv: list[str]) -> tuple[str, str]:
    """`searchgrade ARGV`'s stdout and stderr (exit 0 asserted)."""
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(argv)
    assert code == 0, err.getvalue()
    return out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """A panel run of the five simulated judges, evaluated twice, reported, repeated (twice), and
    what the server received at each step."""
    folder = tmp_path_factory.mktemp("simulated-judges")
    sim = simulated(folder / "sim", n_queries=30)
    data = str(folder / "data")
    server, responder = judge_server(sim, MODELS)
    seen: dict = {"sim": sim, "responder": responder, "data": data}
    evaluate = ["evaluate", str(sim.folder), "--qrels", "--llm", "--judge-models", ",".join(MODELS),
                "--base-url", server.base_url, "--strategies-file", str(strategies_file(sim, folder / "s.toml")),
                "--strategies", "best,good,fair,poor", "--k", "5", "--judge-price", "faithful=0.1",
                "--judge-price", "faithful_big=10", "--concurrency", "8", "--data-dir", data]
    with server:
        run_id = cli(evaluate)[0].strip().splitlines()[-1]
        seen.update(run_id=run_id, posts_run=server.posts, calls=dict(responder.calls))
        seen["show"] = json.loads(cli(["show", run_id, "--format", "json", "--data-dir", data])[0])["run"]
        cli(evaluate)
        seen["posts_again"] = server.posts - seen["posts_run"]
        seen["report"] = json.loads(cli(["judges", run_id, "--format", "json", "--data-dir", data])[0])
        before = server.posts
        out, seen["repeat_err"] = cli(["judges", run_id, "--repeat", "2", "--sample", "40", "--format", "json",
                                       "--data-dir", data])
        seen["repeated"] = json.loads(out)
        seen["repeat_posts"] = server.posts - before
        seen["repeat_bodies"], seen["run_bodies"] = server.bodies[before:], server.bodies[:seen["posts_run"]]
        before = server.posts
        seen["again_err"] = cli(["judges", run_id, "--repeat", "2", "--sample", "40", "--data-dir", data])[1]
        seen["again_posts"] = server.posts - before
    return seen


def _by_model(document: dict) -> dict[str, dict]:
    return {j["model"]: j for j in document["judges"]}


def test_the_panel_judges_every_retrieved_pair_once_per_judge_and_counts_it(judged):
    store, run_id = Store(judged["data"]), judged["run_id"]
    retrieved = {(q, d) for ranking in judged["sim"].rankings.values() for q, docs in ranking.items() for d in docs}
    assert {(g["query_id"], g["doc_id"]) for g in store.judge_grades(run_id, ["panel"])} == retrieved
    assert judged["calls"] == dict.fromkeys(MODELS, len(retrieved))  # every pair, not only those the qrels judge
    usage = store.llm_usage(run_id)
    assert {s: int(u["requests"]) for s, u in usage.items() if s.startswith("judge:")} == {
        f"judge:{m}": len(retrieved) for m in MODELS}
    assert {s: int(u["requests"]) for s, u in usage.items() if s.startswith("judge-repeat:")} == {
        f"judge-repeat:{m}": 80 for m in MODELS}  # --repeat's calls, each judge's own
    assert judged["show"]["llm_calls"]["judge"] == judged["posts_run"]
    assert judged["show"]["tokens"]["judge"]["prompt"] == PROMPT_TOKENS * judged["posts_run"]
    assert judged["posts_again"] == 0  # the same evaluation again: every grade from the cache


def test_the_report_recovers_what_each_simulated_judge_was_built_to_do(judged):
    report = _by_model(judged["report"])
    assert list(report) == [*MODELS, "panel"]
    faithful, lenient, flip = report["faithful"], report["lenient"], report["flip"]
    assert faithful["tau"] == 1.0 and faithful["decision_agreement"] == 1.0 and faithful["kappa_w"] == 1.0
    assert faithful["queries"] == 30 and faithful["pairs"] == len(Store(judged["data"]).judge_grades(
        judged["run_id"], ["faithful"]))
    assert lenient["bias_ci"][0] > 0 and lenient["decision_agreement"] >= 5 / 6
    assert flip["kappa_w_ci"][1] < 0.8 and flip["decision_agreement"] < 1.0
    assert all(j["retest_agreement"] is None for j in report.values())  # not asked yet


def test_the_rule_picks_the_cheap_faithful_judge_over_the_expensive_one_no_better(judged):
    report = _by_model(judged["report"])
    tokens = (PROMPT_TOKENS + 12) * 1000
    assert report["faithful"]["cost_per_1000_pairs"] == {"tokens": tokens, "usd": pytest.approx(tokens * 0.1 / 1e6)}
    assert report["faithful_big"]["cost_per_1000_pairs"]["usd"] == pytest.approx(tokens * 10 / 1e6)
    assert report["faithful_big"]["decision_agreement"] == report["faithful"]["decision_agreement"]
    assert [m for m, j in report.items() if j["recommended"]] == ["faithful"]


def test_repeats_are_estimated_before_the_calls_and_the_random_judge_is_the_unstable_one(judged):
    err = judged["repeat_err"]
    assert err.index("total: 400 calls") < err.index("asked 400")  # 40 pairs x 2 repeats x 5 judges
    assert judged["repeat_posts"] == 400
    assert all("temperature" not in body for body in judged["repeat_bodies"])  # the endpoint's own sampling
    assert all(body.get("temperature") == 0.0 for body in judged["run_bodies"])
    report = _by_model(judged["repeated"])
    assert report["faithful"]["retest_agreement"] == 1.0 and report["flip"]["retest_agreement"] == 1.0
    assert report["random"]["retest_agreement"] < 0.8
    assert judged["again_posts"] == 0 and "every repeat is stored already" in judged["again_err"]
