"""Declared strategies in the app: the Evaluate page lists them with a Test action (against a real
local search server), and Results shows overlaps and backend problems."""

from __future__ import annotations

import json
import time

from searchgrade.server import jobs
from tests.indexes.declared.tiny_search import server, tiny_folder, tiny_search  # noqa: F401 - fixtures
from tests.pages.conftest import open_page


def declare(home, monkeypatch, text):
    path = home / "strategies.toml"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setenv("SEARCHGRADE_STRATEGIES_FILE", str(path))


def test_declared_strategies_are_offered_and_tested_with_one_sample_query(home, monkeypatch, server,  # noqa: F811
                                                                          tiny_folder):  # noqa: F811
    monkeypatch.delenv("SG_PAGE_SECRET", raising=False)
    declare(home, monkeypatch, f'''
[strategy.es]
kind = "elasticsearch"
host = "{server.url}"
index = "tiny"
query = '{{"match": {{"text": {{{{query}}}}}}}}'

[strategy.locked]
kind = "elasticsearch"
host = "{server.url}"
index = "tiny"
query = '{{"match": {{"text": {{{{query}}}}}}}}'
headers = {{ Authorization = "env:SG_PAGE_SECRET" }}
''')
    at = open_page("views/evaluate.py")
    at.radio(key="evaluate_source").set_value("A path on this machine").run()
    at.text_input(key="evaluate_path").set_value(str(tiny_folder)).run()
    options = at.multiselect(key="evaluate_strategies").options
    assert {"es", "locked", "ANN (dense)"} <= set(options)
    at.button(key="evaluate_test_es").click().run()
    assert not at.exception
    message = at.success[0].value.replace("\\", "")
    assert message.startswith("es answered") and "results are in the collection" in message
    # The collection's preview is a table too: the test's is the one with the mapped results.
    (table,) = [d.value for d in at.dataframe if "In collection" in d.value.columns]
    assert table["In collection"].eq("yes").all() and table["Id"].iloc[0] == "d1"
    at.button(key="evaluate_test_locked").click().run()
    errors = [e.value.replace("\\", "") for e in at.error]
    assert any("SG_PAGE_SECRET" in e and "not set" in e for e in errors), errors


def test_a_bad_strategies_file_is_one_error_and_the_built_ins_stay(home, monkeypatch):
    declare(home, monkeypatch, '[strategy.x]\nkind = "solr"\n')
    at = open_page("views/evaluate.py")
    assert any("unknown kind 'solr'" in e.value for e in at.error)
    assert len(at.multiselect(key="evaluate_strategies").options) == 6


def test_results_show_the_overlap_of_each_pair_and_backend_problems(tiny_run, store):
    with store.transaction() as con:
        con.execute("INSERT INTO failed_queries VALUES (?, 'fulltext', 'q2', 'HTTP 500', 3)", [tiny_run])
    store.update_run(tiny_run, stats={"not_in_collection": {"ann": {"results": 6, "not_in_collection": 3,
                                                                    "described": 0}}})
    at = open_page("views/results.py")
    warnings = [w.value.replace("\\", "") for w in at.warning]
    assert any(w.startswith("Full-text (BM25) failed on 1 of 2 queries: HTTP 500.") for w in warnings)
    assert "50% of ANN (dense) results are not in the collection: check the id mapping" in warnings
    # At the page's k (the tiny run's 3).
    (overlap,) = [d.value for d in at.dataframe if "RBO@3" in d.value.columns]
    assert len(overlap) == 3 and set(overlap.columns) >= {"Jaccard@3", "RBO@3"}
    assert json.loads(overlap.to_json())  # plain numbers


def test_a_search_added_on_the_page_is_saved_picked_and_runs(home, server, tiny_folder, store, clean_jobs):  # noqa: F811
    at = open_page("views/evaluate.py")
    at.radio(key="evaluate_source").set_value("A path on this machine").run()
    at.text_input(key="evaluate_path").set_value(str(tiny_folder)).run()
    at.selectbox(key="evaluate_add_kind").set_value("http").run()
    for field, value in (("name", "my-http"), ("http_url", server.url + "/search?q={{query}}&n={{k}}"),
                         ("http_hits", "results"), ("http_id", "doc.id"), ("http_score", "relevance"),
                         ("http_title", "doc.name")):
        at.text_input(key=f"evaluate_add_{field}").set_value(value)
    at.button(key="evaluate_add_save").click().run()
    assert not at.exception
    assert any(s.value.replace("\\", "").startswith("Saved my-http") for s in at.success)
    picker = at.multiselect(key="evaluate_strategies")
    assert "my-http" in picker.options and "my-http" in picker.value
    picker.set_value(["my-http"]).run()
    at.button(key="evaluate_start").click().run()
    deadline = time.time() + 120
    while jobs.active_job() is not None and time.time() < deadline:
        time.sleep(0.1)
    at.run()
    assert "Run complete" in at.success[0].value.replace("\\", ""), [e.value for e in at.error]
    [run] = store.list_runs()
    assert run.config["strategies"] == ["my-http"] and run.config["declared"]["my-http"]["declared_in"] == "app"
    assert store.metric_summary(run.run_id, 10)


def test_a_declared_reranker_in_the_reranker_field_lets_the_reranked_strategies_run(home, monkeypatch):
    """Issue 27 on the Evaluate page: ``[reranker.NAME]`` of the strategies file is a service the
    run calls, so with NAME as "Reranker model" the reranked strategies are preselected offline,
    and the run's configuration carries the declaration (resume rebuilds it)."""
    declare(home, monkeypatch, '[reranker.tei]\nkind = "tei"\nurl = "http://127.0.0.1:9/"\n')
    at = open_page("views/evaluate.py")
    assert at.multiselect(key="evaluate_strategies").value == ["ann", "fulltext", "hybrid"]  # offline
    at.text_input(key="evaluate_reranker").set_value("tei").run()
    at.multiselect(key="evaluate_strategies").set_value(["fulltext", "fulltext_rerank"]).run()
    assert not [w for w in at.warning if "will be skipped" in w.value]
    from searchgrade.viewmodels.declared import declared_strategies
    assert declared_strategies().rerankers["tei"]["kind"] == "tei"
