"""`searchgrade evaluate --llm` end to end against a real llama.cpp server (a 270M model).

The model's queries and grades are meaningless; the test checks the path through the CLI: query
generation and judging over the real server, the calls the run reports against the requests the
server received, the stored grades, and the cache on a second identical run.
"""

from __future__ import annotations

import json

import pytest

from searchgrade.cli import main
from searchgrade.engine.store import Store
from tests.conftest import write_beir
from tests.engine.llm.fake_server import FakeOpenAIServer
from tests.engine.llm_fakes import Recorder

pytestmark = [pytest.mark.llm_server, pytest.mark.slow]

DOCS = {
    "rust": ("Rust", ("Rust is iron oxide. It forms when iron reacts with oxygen and water over time, "
                      "which is why bridges and ships are painted and coated against corrosion.")),
    "bread": ("Bread", ("Bread is made from flour, water and yeast. The yeast ferments sugars and "
                        "releases gas, which makes the dough rise before it is baked in a hot oven.")),
    "tides": ("Tides", ("Tides are the rise and fall of sea levels caused by the gravity of the moon "
                        "and the sun acting on the oceans as the earth rotates each day.")),
}


def _run_json(capsys, run_id: str, data_dir) -> dict:
    assert main(["show", run_id, "--format", "json", "--data-dir", str(data_dir)]) == 0
    return json.loads(capsys.readouterr().out)["run"]


def test_evaluate_llm_through_a_real_server_reports_what_the_server_received(
    counting_proxy, tmp_path, capsys, monkeypatch
):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    collection = write_beir(tmp_path / "mini", docs=DOCS, queries={}, qrels=[])
    data_dir = tmp_path / "d"
    common = ["--model", "gemma-3-270m", "--base-url", counting_proxy.base_url, "--concurrency", "2",
              "--timeout", "120", "--strategies", "fulltext", "--k", "2", "--data-dir", str(data_dir)]

    # 1. Query generation through the server. The 270M model tends to answer placeholders
    # ("...") that the filters drop; then the run fails with one line, its calls still counted.
    code = main(["evaluate", str(collection), "--llm", "--docs", "2", "--queries-per-doc", "1",
                 "--keyword-per-doc", "0", *common])
    captured = capsys.readouterr()
    (generated,) = Store(data_dir).list_runs()
    assert code == 0 or "no query was generated" in captured.err
    run = _run_json(capsys, generated.run_id, data_dir)
    assert run["llm_calls"]["querygen"] + run["llm_calls"]["judge"] == counting_proxy.posts
    assert run["llm_calls"]["querygen"] >= 2

    # 2. Judging through the server, on queries written by a scripted server (stored in a run).
    with FakeOpenAIServer(Recorder()) as fake:
        assert main(["evaluate", str(collection), "--llm", "--model", "fake", "--base-url", fake.base_url,
                     "--docs", "2", "--queries-per-doc", "1", "--keyword-per-doc", "0",
                     "--strategies", "fulltext", "--data-dir", str(data_dir)]) == 0
    source = capsys.readouterr().out.strip().splitlines()[-1]
    posts = counting_proxy.posts
    argv = ["evaluate", str(collection), "--llm", "--queries-from", source, *common]
    assert main(argv) == 0
    run_id = capsys.readouterr().out.strip().splitlines()[-1]
    run = _run_json(capsys, run_id, data_dir)
    assert run["status"] == "complete"
    assert run["llm_calls"] == {"querygen": 0, "judge": counting_proxy.posts - posts}
    assert run["tokens"]["judge"]["prompt"] > 0
    store = Store(data_dir)
    usage = store.llm_usage(run_id)
    grades = store.grades(run_id)
    # One judge call per unique pair (each ends valid or failed), whatever its retries.
    assert usage["judge"]["ok"] + usage["judge"]["failures"] == len(grades) >= 2
    assert run["judge_failures"] == sum(g["grade"] is None for g in grades)
    for g in grades:
        assert g["grade"] in (0, 1, 2, 3) or g["reason"].startswith("judge failure: ")
    assert store.get_run(run_id).stats["llm"]["output_mode"] == "json_object_schema"

    # 3. The same evaluation again: only failures are asked again (each at most 3 requests).
    posts = counting_proxy.posts
    assert main(argv) == 0
    again = capsys.readouterr().out.strip().splitlines()[-1]
    again_usage = store.llm_usage(again)
    assert counting_proxy.posts - posts == again_usage.get("judge", {}).get("requests", 0)
    assert counting_proxy.posts - posts <= 3 * run["judge_failures"]
