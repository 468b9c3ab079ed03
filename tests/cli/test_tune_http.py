"""A declared HTTP strategy's {{boost_title}} tuned against the real search server: the requests
the server counted equal the tuner's report, and a variable the template lacks is one line."""

from __future__ import annotations

import json

import pytest

from searchgrade.cli import main
from searchgrade.engine.store import Store
from tests.indexes.declared.tiny_search import server, tiny_folder, tiny_search  # noqa: F401

BODY = ('{"size": {{k}}, "query": {"match": {"text": {{query}}}}, '
        '"indices_boost": [{"tiny": {{boost_title}}}]}')


@pytest.fixture(scope="module")
def es_run(tiny_folder, server, tmp_path_factory):  # noqa: F811
    data = tmp_path_factory.mktemp("data")
    strategies = data / "strategies.toml"
    strategies.write_text(f'[strategy.es]\nkind = "elasticsearch"\nhost = "{server.url}"\nindex = "tiny"\n'
                          f"body = '{BODY}'\nvariables = {{ boost_title = 2 }}\nconcurrency = 2\n"
                          "retries = 0\n", encoding="utf-8")
    assert main(["evaluate", str(tiny_folder), "--qrels", "--data-dir", str(data), "--strategies", "es",
                 "--strategies-file", str(strategies)]) == 0
    return Store(data).list_runs()[0].run_id, data


def test_tuning_boost_title_calls_the_backend_as_often_as_the_report_says(es_run, server, tmp_path, capsys):  # noqa: F811
    run_id, data = es_run
    space = tmp_path / "space.toml"
    space.write_text('strategy = "es"\n[params]\nboost_title = [1, 5]\n', encoding="utf-8")
    server.control()  # the server's request counter starts again
    capsys.readouterr()
    assert main(["tune", run_id, "--space", str(space), "--trials", "2", "--format", "json",
                 "--data-dir", str(data)]) == 0
    report = json.loads(capsys.readouterr().out)
    counted = server.stats()
    calls = report["backend_calls"]
    assert calls["total"] == calls["tuning"] + calls["heldout"] == counted["requests"] > 0
    # 5 queries: 5 folds of 4 tuning queries x 2 trials, each fold's held-out query for start and
    # tuned, then 2 trials on all 5 queries.
    assert calls["tuning"] == 5 * 4 * 2 + 2 * 5 and calls["heldout"] == 5 * 2
    assert 1 <= report["best"]["boost_title"] <= 5 and report["start"] == {"boost_title": 2}
    assert "variables = { boost_title = " in report["configuration"]["snippet"]


def test_a_variable_the_template_lacks_is_one_line(es_run, tmp_path, capsys):
    run_id, data = es_run
    space = tmp_path / "space.toml"
    space.write_text('[params]\nboost_body = [1, 3]\n', encoding="utf-8")
    capsys.readouterr()
    code = main(["tune", run_id, "--strategy", "es", "--space", str(space), "--data-dir", str(data)])
    err = capsys.readouterr().err.strip()
    assert code != 0 and len(err.splitlines()) == 1
    assert "'boost_body' is not a variable of strategy es's templates (its variables: boost_title)" in err
