"""The model card for people: the Markdown template filled from card.json's fields.

The expected files (cards/*.md) were made by the card's earlier, in-code renderer from the same
cards: moving the text to a template changed no character of it.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest

from searchgrade.engine.training.card import TEMPLATE, model_card_markdown

HERE = Path(__file__).parent
ROOT = HERE.parents[2]

def figure(strategy, metric, diff):
    return {"strategy": strategy, "metric": metric, "k": 10, "base": 0.5, "reranked": 0.5 + diff, "diff": diff,
            "ci_low": diff - 0.05, "ci_high": diff + 0.05, "p_value": 0.024, "m": 2, "improved": 7,
            "hurt": 2, "judged_reranked": 0.9}


CROSS_FITTED = {
    "name": "demo-v1", "created_at": "2025-01-01T00:00:00+00:00", "mode": "cross-fitted",
    "source_run": {"run_id": "r1", "name": "nightly", "collection_name": "scifact", "label_source": "llm",
                   "grade_max": 3},
    "labels": {"queries": 48, "by_source": {"llm": 200, "human": 12}},
    "folds": 2, "groups": 40, "train_qrels": None,
    "negatives": {"per_query": 8, "first_rank": 11, "last_rank": 50},
    "strategies": ["ann", "fulltext"],
    "training": {"base_model": "all-MiniLM-L6-v2", "body_layers": 3, "train_layers": 2, "max_length": 96,
                 "epochs": 1.0, "batch_size": 16, "learning_rate": 5e-05, "warmup": 0.1, "seed": 0},
    "models": {"fold-1": {"train_queries": 24, "pairs": {"pairs": 300}, "steps": 19, "seconds": 12.34,
                          "blend_weight": 0.5},
               "fold-2": {"train_queries": 24, "pairs": {"pairs": 310}, "steps": 20, "seconds": 11.0,
                          "blend_weight": None}},
    "timings": {"total_s": 123.6, "candidates_s": 3.2, "train_s": 80.5, "score_s": 20.49},
    "machine": {"cpus": 2, "torch_threads": 1, "load_before": 1.5, "load_after": 1.75},
    "heldout": {"queries": 48, "depth": 20, "scored_by": "the fold model that never saw the query",
                "figures": [figure("ann", "ndcg", 0.0877), figure("fulltext", "ndcg", -0.0125)],
                "cross_encoder_alone": [figure("ann", "ndcg", -0.02)]},
    "blend": True, "notes": ["left out 2 training-split queries"],
}

SPLIT = {**CROSS_FITTED, "mode": "training-split", "folds": 0, "train_qrels": "train-qrels.tsv", "blend": False,
         "notes": [], "training": {**CROSS_FITTED["training"], "body_layers": None, "train_layers": None},
         "models": {"full": {"train_queries": 40, "pairs": {"pairs": 500}, "steps": 32, "seconds": 20.0,
                             "blend_weight": 0.0}},
         "heldout": {**CROSS_FITTED["heldout"], "scored_by": "the full model (trained on the separate split)",
                     "figures": [figure("ann", "dcg", 0.25)]}}


@pytest.mark.parametrize(("card", "expected"), [(CROSS_FITTED, "cross_fitted.md"), (SPLIT, "split.md")])
def test_the_readme_says_what_the_reranker_learnt_from_and_how_it_did(card, expected):
    assert model_card_markdown(card) == (HERE / "cards" / expected).read_text(encoding="utf-8")


def test_text_from_the_run_is_written_as_it_is_not_escaped():
    card = {**CROSS_FITTED, "source_run": {**CROSS_FITTED["source_run"], "name": "<b>a & b</b>"}}
    assert "(<b>a & b</b>, collection scifact" in model_card_markdown(card)


def test_the_template_ships_in_the_package():
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    assert TEMPLATE in package_data["package-data"]["searchgrade.engine.training"]
    assert (ROOT / "engine" / "training" / TEMPLATE).is_file()
