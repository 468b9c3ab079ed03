"""A run's settings in words, the same wherever they appear: one flattening, one name per setting, one
diff (Compare, suites' change notes), and what a run changed from the defaults (Results)."""

from __future__ import annotations

from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.settings_words import changed_settings, setting_name, setting_value, settings_diff
from searchgrade.engine.suites.changes import config_changes
from searchgrade.indexes.settings import IndexSettings

BROKEN = RunConfig(strategies=("fulltext",), index=IndexSettings(bm25_k1=0.05, bm25_b=0.0)).to_json()


def test_settings_are_named_in_words_not_raw_keys():
    assert setting_name("index.bm25_k1") == "BM25 k1" and setting_name("config.index.fusion") == "Fusion"
    assert setting_name("declared.es.query") == "Strategy es: query"
    assert setting_value("strategies", ["ann", "hybrid"]) == "ANN (dense), Hybrid (RRF)"
    assert setting_value("judge_unjudged", True) == "yes" and setting_value("max_queries", None) == "(not set)"


def test_a_run_on_the_defaults_and_one_that_changed_bm25_differ_only_there():
    # index None means the defaults: filled in, so only what a person changed differs.
    default = RunConfig(strategies=("fulltext",)).to_json()
    assert [(c.name, c.before, c.after) for c in settings_diff(default, BROKEN)] == \
        [("BM25 k1", "1.5", "0.05"), ("BM25 b", "0.75", "0")]
    assert changed_settings(BROKEN) == [("BM25 k1", "0.05"), ("BM25 b", "0")]
    assert changed_settings(default) == []


def test_a_suites_change_notes_use_the_same_words():
    before = {"config": RunConfig(strategies=("fulltext",)).to_json(), "documents": 12}
    after = {"config": BROKEN, "documents": 12}
    assert config_changes(before, after) == ["BM25 k1: 1.5 -> 0.05", "BM25 b: 0.75 -> 0"]
    assert config_changes(None, after) == []
