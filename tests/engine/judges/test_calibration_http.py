"""Calibrating a judge from people's ratings, through `searchgrade judges RUN --calibrate` against
simulated judges over HTTP: the mechanics (examples from other folds only, the pair last, the kept
prompt a valid judge prompt), and the rule: kept when better, not kept when not. A real model's
gain cannot be shown here (no capable model): these judges are built to gain, or not."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from searchgrade.engine.llm.prompts import read_judge_prompt
from searchgrade.engine.store import Store
from tests.engine.judges.judge_server import NEEDS_EXAMPLES, judge_server
from tests.engine.judges.simulated import simulated, strategies_file
from tests.engine.judges.test_simulated_judges import cli

pytestmark = pytest.mark.slow

EXAMPLE_QUERY = re.compile(r"<example>\n<query>\n(.*?)\n</query>", re.DOTALL)


@pytest.fixture(scope="module")
def calibrated(tmp_path_factory):
    folder = tmp_path_factory.mktemp("calibration")
    sim = simulated(folder / "sim", n_queries=40)
    data = str(folder / "data")
    server, responder = judge_server(sim, [NEEDS_EXAMPLES, "faithful"])
    with server:
        run_id = cli(["evaluate", str(sim.folder), "--qrels", "--llm", "--judge-models", f"{NEEDS_EXAMPLES},faithful",
                      "--base-url", server.base_url, "--strategies-file", str(strategies_file(sim, folder / "s.toml")),
                      "--strategies", "best,good,fair,poor", "--k", "5", "--data-dir", data])[0].strip().splitlines()[-1]
        asked_before = len(responder.asked)
        needs = cli(["judges", run_id, "--calibrate", NEEDS_EXAMPLES, "--data-dir", data])
        calibration_requests = responder.asked[asked_before:]
        faithful = cli(["judges", run_id, "--calibrate", "faithful", "--format", "json", "--data-dir", data])
    return {"sim": sim, "data": data, "run_id": run_id, "needs": needs, "faithful": faithful,
            "requests": calibration_requests}


def test_each_fold_is_judged_with_examples_from_the_other_folds_only(calibrated):
    by_text = {text: q for q, text in calibrated["sim"].queries.items()}
    folds: dict[frozenset[str], set[str]] = {}
    for model, judged, _, user in calibrated["requests"]:
        assert model == NEEDS_EXAMPLES
        examples = frozenset(by_text[t] for t in EXAMPLE_QUERY.findall(user))
        assert 1 <= len(examples) <= 4  # one per grade that occurs
        assert user.rfind("</example>") < user.rfind("<query>")  # the pair to judge comes last
        folds.setdefault(examples, set()).add(judged)
    assert len(folds) == 2
    for examples, judged in folds.items():
        assert not examples & judged  # never an example from a query it judges
    assert set().union(*folds.values()) == set(calibrated["sim"].queries)


def test_a_judge_that_gains_from_examples_gets_its_prompt_kept_and_written(calibrated):
    out, err = calibrated["needs"]
    assert "kept: " in err
    path = Path(re.search(r"kept: (\S+\.txt)", err).group(1))
    name, text = read_judge_prompt(path)  # a valid judge prompt, as --judge-prompt reads it
    assert text.count("<example>") >= 3 and name.startswith("judge_v1-calibrated-")
    [row] = [r for r in Store(calibrated["data"]).judge_calibrations(calibrated["run_id"]) if r["judge"] == NEEDS_EXAMPLES]
    report = row["report"]
    assert row["kept"] and report["kappa_difference"]["low"] > 0
    assert report["kappa_calibrated"]["value"] == pytest.approx(1.0)
    assert report["queries"] == 40 and report["folds"] == 2
    assert "Calibrated prompt" in out  # the text report lists it


def test_a_judge_that_does_not_gain_keeps_its_plain_prompt(calibrated):
    out, err = calibrated["faithful"]
    assert "not kept" in err and "kept: " not in err.replace("not kept", "")
    assert list(json.loads(out)) == ["judges"]  # stdout holds only the contract's document
