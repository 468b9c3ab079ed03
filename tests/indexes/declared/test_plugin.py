"""Python strategies: a class path or an entry point of group searchgrade.strategies."""

from __future__ import annotations

import re

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.base import QueryBatch
from searchgrade.indexes.declared.plugin import PluginNode, build_node
from searchgrade.indexes.declared.spec import load_strategies_file, parse_spec
from searchgrade.indexes.executor import Executor
from searchgrade.indexes.registry import registry_for

DOCS = {"d1": "the sun is a star", "d2": "jupiter is a gas giant planet", "d3": "a star and a planet"}
MODULE = "tests.indexes.declared.plugin_example"


def run(spec, texts, k=2):
    node = build_node(spec, None)
    ids = [f"q{i}" for i in range(len(texts))]
    execution = Executor({spec.name: node}, [spec.name], k).run(QueryBatch(ids, texts))
    return execution.hits[spec.name], execution.failures[spec.name], execution.documents[spec.name]


def spec(cls, **keys):
    return parse_spec("mine", {"kind": "python", "class": f"{MODULE}:{cls}", **keys}, "s.toml")


def test_a_class_path_with_args_answers_with_ranked_ids_and_scores():
    hits, failures, _ = run(spec("KeywordSearch", args={"documents": DOCS}), ["star planet", "gas"])
    assert failures == {}
    assert [[d.doc_id for d in h.docs] for h in hits] == [["d3", "d1"], ["d2"]]
    assert [d.score for d in hits[0].docs] == [2.0, 1.0] and [d.rank for d in hits[0].docs] == [1, 2]
    assert all(h.latency_s > 0 for h in hits)


def test_an_exception_fails_the_queries_of_its_batch_only():
    s = spec("KeywordSearch", args={"documents": DOCS, "fail_on": "jupiter"}, batch_size=1)
    hits, failures, _ = run(s, ["star", "jupiter", "planet"])
    assert list(failures) == ["q1"] and hits[1] is None and hits[0] is not None and hits[2] is not None
    assert failures["q1"].error == "search() raised ConnectionError: index shard down for 'jupiter'"


def test_described_documents_are_kept_and_a_wrong_reply_is_a_failure_in_one_line():
    hits, failures, documents = run(spec("Described"), ["anything"])
    assert [d.doc_id for d in hits[0].docs] == ["web-1", "d1"] and documents["web-1"].title == "Outside"
    _, failures, _ = run(spec("WrongCount"), ["a", "b"])
    # The executor's first chunk holds one query, the next ones the rest.
    assert failures["q0"].error.startswith("search() returned 0 lists for 1 query: it must return one")
    assert failures["q1"].error.startswith("search() returned 0 lists for 1 query")


@pytest.mark.parametrize(("cls", "message"), [
    ("NoSearch", "has no search(queries, k) method"),
    ("Missing", "has no 'Missing': check class"),
])
def test_a_class_that_cannot_serve_is_one_line(cls, message):
    with pytest.raises(SearchGradeError, match=re.escape(message)):
        build_node(spec(cls), None)
    with pytest.raises(SearchGradeError, match=r"cannot import module 'no_such_pkg.mod' .*install it or put it on PYTHONPATH"):
        build_node(parse_spec("x", {"kind": "python", "class": "no_such_pkg.mod:C"}, "s.toml"), None)


def test_an_installed_entry_point_is_an_optional_strategy_and_can_be_declared(tmp_path, monkeypatch):
    dist = tmp_path / "my_search_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: my-search-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(f"[searchgrade.strategies]\nmine-ep = {MODULE}:Described\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = registry_for()
    assert "mine-ep" in registry.names() and "mine-ep" not in registry.defaults()
    node = registry["mine-ep"](None)
    assert isinstance(node, PluginNode)
    path = tmp_path / "s.toml"
    path.write_text('[strategy.web]\nkind = "python"\nentry_point = "mine-ep"\n', encoding="utf-8")
    hits, failures, _ = run(load_strategies_file(path)["web"], ["q"])
    assert failures == {} and hits[0].docs[0].doc_id == "web-1"
    path.write_text('[strategy.web]\nkind = "python"\nentry_point = "nope"\n', encoding="utf-8")
    with pytest.raises(SearchGradeError, match="no entry point 'nope' in group searchgrade.strategies"):
        build_node(load_strategies_file(path)["web"], None)
