"""The strategies file: the issue's exact form works; every mistake is one line naming the key."""

from __future__ import annotations

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.declared.spec import check_environment, load_strategies_file
from searchgrade.indexes.registry import registry_for

ISSUE_FORM = '''
[strategy.prod-es]
kind = "http"                      # http | milvus | python (elasticsearch / opensearch presets below)
url = "http://127.0.0.1:9200/docs/_search"
method = "POST"                    # with GET, {{query}} and {{k}} may stand in the url's parameters
body = '{"size": {{k}}, "query": {"match": {"text": {{query}}}}}'   # {{query}} becomes a JSON string, {{k}} an integer
hits = "hits.hits"                 # JMESPath to the ranked list of hits in the reply
id = "_id"                         # JMESPath inside one hit: the document id
title = "_source.title"            # optional: shown, and judged, when the id is not in the collection
text = "_source.text"              # optional
headers = { Authorization = "env:PROD_SEARCH_AUTH" }   # "env:NAME" is read from the environment, never stored
timeout_s = 10
concurrency = 4
rerank = true
'''


def write(tmp_path, text):
    path = tmp_path / "strategies.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_issue_form_declares_a_strategy_and_its_reranked_twin(tmp_path):
    specs = load_strategies_file(write(tmp_path, ISSUE_FORM))
    spec = specs["prod-es"]
    assert spec.kind == "http" and spec.rerank and spec.options["concurrency"] == 4
    assert spec.to_json()["headers"] == {"Authorization": "env:PROD_SEARCH_AUTH"}
    registry = registry_for(specs)
    assert {"prod-es", "prod-es_rerank"} <= set(registry.defaults())
    assert registry.info("prod-es_rerank").reranks == "prod-es"


def test_an_elasticsearch_preset_needs_only_the_index_and_the_query_dsl(tmp_path):
    spec = load_strategies_file(write(tmp_path, '''
[strategy.es]
kind = "elasticsearch"
host = "http://127.0.0.1:9201"
index = "scifact"
query = '{"match": {"text": {{query}}}}'
'''))["es"]
    o = spec.options
    assert o["url"] == "http://127.0.0.1:9201/scifact/_search" and o["method"] == "POST"
    assert (o["hits"], o["id"], o["score"], o["title"]) == ("hits.hits", "_id", "_score", "_source.title")
    assert o["body"] == '{"size": {{k}}, "query": {"match": {"text": {{query}}}}}'


@pytest.mark.parametrize(("text", "expected"), [
    ('[strategy.x]\nkind = "solr"\n', "unknown kind 'solr': use one of http, elasticsearch"),
    ('[strategy.x]\nkind = "http"\nhits = "h"\nid = "id"\n', "missing key 'url': add url ="),
    ('[strategy.x]\nkind = "http"\nurl = "http://h/s"\nbody = \'{"q": "x"}\'\nhits = "h"\nid = "i"\n',
     "the body template has no {{query}}"),
    ('[strategy.x\nkind = "http"\n', "is not valid TOML"),
    ('[strategy.ann]\nkind = "http"\nurl = "http://h/s?q={{query}}"\nhits = "h"\nid = "i"\n',
     "'ann' is the name of a built-in strategy"),
    ('[strategy.x]\nkind = "http"\nurl = "http://h/s?q={{query}}"\nhits = "h["\nid = "i"\n',
     "hits 'h[' is not a valid JMESPath"),
    ('[strategy.x]\nkind = "http"\nurl = "http://h/s?q={{query}}"\nhits = "h"\nid = "i"\nmethd = "GET"\n',
     "unknown key 'methd'"),
    ('[strategy.x]\nkind = "http"\nurl = "http://h/s"\nbody = \'{"q": "{{query}}"}\'\nhits = "h"\nid = "i"\n',
     "write it without quotes"),
    ('[strategy.x]\nkind = "http"\nurl = "http://h/s?q={{query}}"\nhits = "h"\nid = "i"\n'
     'headers = { Authorization = "Bearer abc" }\n', "holds a literal secret"),
    ('[strategy.x]\nkind = "http"\nurl = "http://h/s?q={{query}}"\nhits = "h"\nid = "i"\ntimeout_s = "ten"\n',
     "timeout_s must be a number"),
    ('[strategy.Prod]\nkind = "http"\n', "strategy name 'Prod' is not allowed"),
    ('[strategy.x_rerank]\nkind = "http"\n', "names ending in '_rerank' are kept"),
    ('[strategy.m]\nkind = "milvus"\nuri = "m.db"\ncollection = "c"\nsearch = "sparse"\n',
     "search 'sparse' is not known"),
    ('[strategy.p]\nkind = "python"\n', "give either class ="),
    ('title = "x"\n', "unknown top-level key 'title'"),
])
def test_a_bad_strategies_file_gives_one_line_naming_the_key_and_the_fix(tmp_path, text, expected):
    with pytest.raises(SearchGradeError) as error:
        load_strategies_file(write(tmp_path, text))
    message = str(error.value)
    assert expected in message and "\n" not in message
    assert message.startswith("strategies.toml")


def test_an_env_name_that_is_not_set_is_named_with_the_fix(tmp_path):
    spec = load_strategies_file(write(tmp_path, ISSUE_FORM))["prod-es"]
    with pytest.raises(SearchGradeError, match=r"reads \$PROD_SEARCH_AUTH .* not set: export PROD_SEARCH_AUTH="):
        check_environment(spec, environ={})
    check_environment(spec, environ={"PROD_SEARCH_AUTH": "Bearer secret"})


def test_a_missing_file_names_the_option(tmp_path):
    with pytest.raises(SearchGradeError, match="does not exist: check --strategies-file"):
        load_strategies_file(tmp_path / "nope.toml")
