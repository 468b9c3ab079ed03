"""Strategies added in the app, kept in the run store: saved, edited, deleted, read back as
declarations a run uses, by name from the command line, and held to the outbound policy of the app
they were typed in wherever they run."""

from __future__ import annotations

import pytest

from searchgrade.cli import main
from searchgrade.core.records import SearchGradeError
from searchgrade.engine.run.strategies import saved_declarations
from searchgrade.engine.store import Store
from searchgrade.viewmodels.add_search import check_declaration, save, toml_snippet
from searchgrade.viewmodels.declared import declared_strategies
from tests.indexes.declared.tiny_search import server, tiny_folder, tiny_search  # noqa: F401 - fixtures


def es_table(server, **keys):  # noqa: F811 - pytest fixtures imported above
    return {"kind": "elasticsearch", "host": server.url, "index": "tiny", "retries": 0,
            "query": '{"match": {"text": {{query}}}}', **keys}


def test_a_saved_strategy_is_kept_as_typed_edited_and_deleted(tmp_path):
    store = Store(tmp_path)
    table = {"kind": "http", "url": "http://127.0.0.1:9/s?q={{query}}", "hits": "h", "id": "i"}
    store.save_strategy("mine", table, "app")
    with pytest.raises(SearchGradeError, match="a strategy named 'mine' is saved already"):
        store.save_strategy("mine", table, "app")
    store.save_strategy("mine", {**table, "id": "doc.id"}, "exposed app", replace=True)
    (row,) = store.saved_strategies().values()
    assert row["table"]["id"] == "doc.id" and row["declared_in"] == "exposed app"
    declared = saved_declarations(tmp_path)
    assert declared["mine"]["declared_in"] == "exposed app" and declared["mine"]["method"] == "GET"
    assert store.delete_strategy("mine") and not store.delete_strategy("mine")
    assert saved_declarations(tmp_path) == {}


def test_a_strategy_saved_for_a_collection_is_offered_only_there(tmp_path, monkeypatch):
    monkeypatch.setenv("SEARCHGRADE_HOME", str(tmp_path))
    monkeypatch.delenv("SEARCHGRADE_STRATEGIES_FILE", raising=False)
    store = Store(tmp_path)
    table = {"kind": "http", "url": "http://127.0.0.1:9/s?q={{query}}", "hits": "h", "id": "i"}
    save(store, table, check_declaration("shop-http", table, exposed=False), collection="shop")
    store.save_strategy("anywhere", table, "app")  # saved before collections were recorded: any
    assert set(saved_declarations(tmp_path, collection="shop")) == {"shop-http", "anywhere"}
    assert set(saved_declarations(tmp_path, collection="scifact")) == {"anywhere"}
    assert set(saved_declarations(tmp_path)) == {"shop-http", "anywhere"}  # the command line names them
    demo = declared_strategies({}, collection="scifact")
    assert "shop-http" not in demo.names and "anywhere" in demo.names
    assert demo.elsewhere == {"shop-http": "shop"}
    shop = declared_strategies({}, collection="shop")
    assert {"shop-http", "anywhere"} <= set(shop.names) and shop.elsewhere == {}


def test_asking_for_saved_strategies_creates_no_store():
    import tempfile
    from pathlib import Path

    folder = Path(tempfile.mkdtemp())
    assert saved_declarations(folder) == {} and list(folder.iterdir()) == []


def test_a_saved_strategy_is_offered_beside_the_files_and_the_file_wins_a_clash(tmp_path, server, monkeypatch):  # noqa: F811 - pytest fixtures imported above
    strategies = tmp_path / "s.toml"
    strategies.write_text('[strategy.shared]\nkind = "http"\nurl = "http://h/s?q={{query}}"\nhits = "h"\n'
                          'id = "i"\n', encoding="utf-8")
    mine = check_declaration("mine", es_table(server), exposed=False)
    clash = check_declaration("shared", es_table(server), exposed=False)
    saved = {spec.name: {**spec.to_json()} for spec in (mine, clash)}
    offered = declared_strategies({"SEARCHGRADE_STRATEGIES_FILE": str(strategies)}, saved=saved)
    assert {"mine", "shared", "ann"} <= set(offered.names)
    assert offered.saved == {"mine": "elasticsearch"} and offered.kinds == {"shared": "http"}
    assert offered.declared["shared"]["kind"] == "http" and offered.declared["mine"]["declared_in"] == "app"
    with pytest.raises(SearchGradeError, match="'shared' is declared in the strategies file s.toml"):
        check_declaration("shared", es_table(server), exposed=False, taken={"shared": "s.toml"})


def test_the_snippet_declares_the_same_strategies_in_a_file(tmp_path, server):  # noqa: F811 - pytest fixtures imported above
    import tomllib

    from searchgrade.indexes.declared.spec import load_strategies_file, parse_spec

    tables = {"my-es": es_table(server, headers={"Authorization": "env:ES_AUTH"}, rerank=True),
              "pg": {"kind": "postgres", "dsn": "postgresql://me:env:PG_PW@db.example/docs",
                     "sql": "SELECT doc_id\nFROM docs WHERE tsv @@ plainto_tsquery(:query)\nLIMIT :k"}}
    snippet = toml_snippet(tables)
    assert "env:ES_AUTH" in snippet and "query = '{\"match\": {\"text\": {{query}}}}'" in snippet
    path = tmp_path / "s.toml"
    path.write_text(snippet, encoding="utf-8")
    from_file = load_strategies_file(path)
    for name, table in tables.items():
        assert from_file[name].options == parse_spec(name, table).options
        assert from_file[name].rerank == bool(table.get("rerank"))
    assert set(tomllib.loads(snippet)["strategy"]) == set(tables)


def test_the_command_line_runs_a_saved_strategy_by_name(tmp_path, server, tiny_folder, capsys):  # noqa: F811 - pytest fixtures imported above
    data = tmp_path / "data"
    spec = check_declaration("my-es", es_table(server), exposed=False)
    save(Store(data), es_table(server), spec)
    assert main(["evaluate", str(tiny_folder), "--qrels", "--strategies", "fulltext,my-es", "--data-dir",
                 str(data)]) == 0
    run = Store(data).list_runs()[0]
    assert run.status == "complete" and run.config["declared"]["my-es"]["declared_in"] == "app"
    summary = {(r["strategy"], r["metric"]): r["value"] for r in Store(data).metric_summary(run.run_id, 10)}
    assert summary[("my-es", "ndcg")] == pytest.approx(summary[("fulltext", "ndcg")])


def test_a_strategy_typed_in_an_exposed_app_is_held_to_its_policy_when_run_from_the_command_line(
        tmp_path, server, tiny_folder, capsys, monkeypatch):  # noqa: F811 - pytest fixtures imported above
    # Saved while the operator allowed 127.0.0.1; run later without that allowance: refused, in one line.
    data = tmp_path / "data"
    spec = check_declaration("my-es", es_table(server), exposed=True,
                             environ={"SEARCHGRADE_BACKEND_ALLOWED_HOSTS": "127.0.0.1"})
    save(Store(data), es_table(server), spec)
    monkeypatch.delenv("SEARCHGRADE_BACKEND_ALLOWED_HOSTS", raising=False)
    code = main(["evaluate", str(tiny_folder), "--qrels", "--strategies", "my-es", "--data-dir", str(data)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "127.0.0.1 is a loopback address" in err[0]
    monkeypatch.setenv("SEARCHGRADE_BACKEND_ALLOWED_HOSTS", "127.0.0.1")
    assert main(["evaluate", str(tiny_folder), "--qrels", "--strategies", "my-es", "--data-dir", str(data)]) == 0
