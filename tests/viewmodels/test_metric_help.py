"""What a metric is, where it is picked and in the glossary, from its record; DCG read against the
queries' ideal."""

from __future__ import annotations

import math

import pytest

from searchgrade.engine.metrics import REGISTRY
from searchgrade.engine.store import Store
from searchgrade.viewmodels.common import metric_names
from searchgrade.viewmodels.metric_help import glossary, ideal_words, metric_json
from tests.pages.synthetic import tiny_spec, write_run


@pytest.fixture
def store(tmp_path):
    return Store(tmp_path)


@pytest.fixture
def tiny_run(store):
    return write_run(store, tiny_spec())


def test_the_glossary_defines_every_metric_offered_and_judged_beside_them(store, tiny_run):
    run = store.get_run(tiny_run)
    offered = metric_names(run)
    words = {e.word: e.meaning for e in glossary(offered, 3, run)}
    for metric in offered:
        record = REGISTRY[metric]
        assert words[f"{record.label}@3"].startswith(record.definition) and record.direction in words[f"{record.label}@3"]
    assert "Judged share@3" in words and "Holm" not in words and "RBP residual@3" not in words


def test_dcg_is_read_against_the_queries_ideal(store, tiny_run):
    run = store.get_run(tiny_run)
    # q1 knows grades 3, 1, 0: ideal DCG@3 = 3 + 1/log2(3); q2 knows 3, 2, 2: 3 + 2/log2(3) + 2/2.
    mean = (3 + 1 / math.log2(3) + 3 + 2 / math.log2(3) + 1) / 2
    assert f"averages {mean:.3f}, from 3.631 to 5.262" in ideal_words(store, run, "dcg", 3)
    assert ideal_words(store, run, "ndcg", 3) is None


def test_a_metrics_json_fields_come_from_its_record(store, tiny_run):
    run = store.get_run(tiny_run)
    assert metric_json("precision", 10, run) == pytest.approx({
        "label": "Precision", "definition": REGISTRY["precision"].definition,
        "range": "0 to 1 (1: every one of the 10 places relevant)", "higher_is_better": True, "diagnostic": False,
        "ir_measures": "P(rel=2)@10"})
    assert metric_json("judged", 10, run)["diagnostic"] and not metric_json("pct_not_relevant", 10)["higher_is_better"]
