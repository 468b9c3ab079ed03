"""A backend kind is one registration: the strategies file and the build read the same record."""

from __future__ import annotations

import pytest

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.declared import http, kinds
from searchgrade.indexes.declared.declaration import Key, StrategySpec
from searchgrade.indexes.declared.kinds import KINDS, BackendKind, register
from searchgrade.indexes.declared.spec import load_strategies_file, parse_spec
from searchgrade.indexes.registry import registry_for


class EchoNode:
    inputs: tuple[str, ...] = ()

    def __init__(self, spec: StrategySpec, ctx: object) -> None:
        self.name, self.spec, self.ctx = spec.name, spec, ctx


def echo_check(spec: StrategySpec) -> StrategySpec:
    if spec.options["shout"] and spec.options["word"] != spec.options["word"].upper():
        raise SearchGradeError(f"{spec.where}: shout = true needs an upper-case word")
    return StrategySpec(spec.name, spec.kind, {**spec.options, "checked": True}, spec.rerank, spec.source)


@pytest.fixture
def echo(monkeypatch):
    kind = BackendKind("echo", {"word": Key((str,), required=True, example='"hello"'),
                                "shout": Key((bool,), False, example="true")}, echo_check, EchoNode)
    monkeypatch.setitem(KINDS, "echo", kind)
    return kind


def test_one_registration_gives_the_file_its_keys_and_checks_and_the_build_its_builder(echo, tmp_path):
    path = tmp_path / "s.toml"
    path.write_text('[strategy.e]\nkind = "echo"\nword = "HI"\nshout = true\nrerank = true\n', encoding="utf-8")
    spec = load_strategies_file(path)["e"]
    assert spec.options == {"word": "HI", "shout": True, "checked": True}
    registry = registry_for({"e": spec})
    assert registry.info("e").kind == "echo" and registry.info("e_rerank").reranks == "e"
    node = registry["e"]("the build's context")
    assert isinstance(node, EchoNode) and node.spec == spec and node.ctx == "the build's context"


@pytest.mark.parametrize(("table", "expected"), [
    ({"kind": "echo"}, "missing key 'word': add word = \"hello\""),
    ({"kind": "echo", "word": "hi", "url": "http://h"}, "unknown key 'url' for kind 'echo': the keys are "
                                                        "kind, rerank, shout, word"),
    ({"kind": "echo", "word": "hi", "shout": True}, "shout = true needs an upper-case word"),
    ({"kind": "solr"}, "use one of http, elasticsearch, opensearch, milvus, python, postgres, lancedb, hybrid, ann, "
                       "fulltext, echo"),
])
def test_a_registered_kind_is_checked_by_its_own_keys_and_rules(echo, table, expected):
    with pytest.raises(SearchGradeError, match="^s.toml: \\[strategy.e\\]: .*" + expected.replace("(", "\\(")):
        parse_spec("e", table, "s.toml")


def test_a_kind_is_registered_once():
    with pytest.raises(ValueError, match="backend kind 'http' is registered twice"):
        register(BackendKind("http", {}, http.check, http.build_node))
    assert list(KINDS) == ["http", "elasticsearch", "opensearch", "milvus", "python", "postgres", "lancedb", "hybrid",
                          "ann", "fulltext"]


def test_the_elasticsearch_and_opensearch_presets_are_the_http_backend_with_their_own_keys():
    for preset in ("elasticsearch", "opensearch"):
        assert KINDS[preset].build is http.build_node and KINDS[preset].keys is http.PRESET_KEYS
    assert KINDS["http"].keys is http.KEYS and KINDS["http"].check is http.check


def test_a_stored_declaration_of_a_kind_no_longer_registered_fails_when_built_with_the_kinds():
    spec = StrategySpec.from_json("old", {"kind": "solr", "source": "strategies.toml"})
    build = kinds.factory(spec)
    with pytest.raises(SearchGradeError, match=r"strategies.toml: \[strategy.old\]: unknown kind 'solr': "
                                               "use one of http, elasticsearch"):
        build(None)


class CountingEmbedder:
    """Stands in for a sentence-transformers model: counts the texts it embeds."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def encode(self, texts, **kwargs):
        import numpy as np

        self.texts.extend(texts)
        return np.ones((len(texts), 4), dtype=np.float32) / 2


def test_a_query_embedded_for_one_declared_strategy_is_not_embedded_again_for_another():
    from searchgrade.indexes.declared.declaration import query_vectors

    model = CountingEmbedder()
    first, first_cost = query_vectors(model, ["a", "b", "a"], 8)
    again, again_cost = query_vectors(model, ["b", "c"], 8)
    assert model.texts == ["a", "b", "c"]  # each text once, whatever strategies asked
    assert len(first) == 3 and len(again) == 2
    assert again_cost[0] == first_cost[1]  # charged at what it cost when it was embedded
    other = CountingEmbedder()
    query_vectors(other, ["a"], 8)
    assert other.texts == ["a"]  # another model embeds it itself
