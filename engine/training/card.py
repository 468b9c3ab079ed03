"""The model card of a trained reranker: ``card.json`` for the program, ``README.md`` for people.

The Markdown is a template shipped beside this module (``model_card.md``, Jinja2, as
sentence-transformers keeps its model card), filled from card.json's fields: what the reranker
learnt from, how, and how it did on queries it never saw.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import datetime, timezone
from importlib import resources
from typing import Any

import jinja2

from searchgrade.engine.training.config import RerankerTrainingConfig, TrainingWork
from searchgrade.engine.training.crossfit import CrossFitted
from searchgrade.indexes.rerank.trained import CARD_FORMAT

#: The template of README.md, in this package.
TEMPLATE = "model_card.md"


def card_json(work: TrainingWork, config: RerankerTrainingConfig, fitted: CrossFitted) -> dict[str, Any]:
    """card.json: what the reranker was trained on and how, its models and held-out figures
    (the timings, the machine and the notes are added when the training ends)."""
    run, split = work.run, config.split
    label_counts: dict[str, int] = {}
    for q in work.train_queries:
        for source in q.sources.values():
            label_counts[source] = label_counts.get(source, 0) + 1
    return {
        "format": CARD_FORMAT,
        "name": config.name,
        "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "mode": "training-split" if split else "cross-fitted",
        "source_run": {
            "run_id": run.run_id, "name": run.name, "collection_name": run.collection_name,
            "collection_path": run.collection_path, "mode": run.mode, "label_source": run.label_source,
            "grade_max": work.top_grade, "threshold": run.threshold, "k": run.k,
        },
        "train_qrels": config.train_qrels,
        "labels": {"by_source": label_counts, "queries": len(work.train_queries),
                   "graded_queries": sum(1 for q in work.train_queries if q.grades)},
        "folds": 0 if split else config.folds,
        "groups": len(set(work.groups.values())),
        "training": config.training.to_json(),
        "blend": config.blend,
        "negatives": {"per_query": config.sampling.negatives, "first_rank": config.sampling.first,
                      "last_rank": config.sampling.last},
        "strategies": work.strategies,
        "models": fitted.models,
        "total_steps": fitted.total_steps,
        "queries": [
            {"query_id": q.query_id, "text": q.text, "source_doc_id": q.source_doc_id,
             "group": work.groups.get(q.query_id), "fold": work.folds.get(q.query_id)}
            for q in work.train_queries
        ],
        "heldout": {
            "depth": work.depth, "k": int(run.k), "queries": fitted.heldout_queries,
            "scored_by": "the full model (trained on the separate split)" if split
            else "the fold model that never saw the query",
            "figures": [f.to_json() for f in fitted.figures],
            "cross_encoder_alone": [f.to_json() for f in fitted.alone],
        },
    }


def model_card_markdown(card: Mapping[str, Any]) -> str:
    """The card for people: what it learnt from, how, and how it did on queries it never saw."""
    return _template().render(card=card)


def _template() -> jinja2.Template:
    text = resources.files(__package__).joinpath(TEMPLATE).read_text(encoding="utf-8")
    # Markdown, not HTML: nothing to escape; a field the template names but the card lacks fails.
    environment = jinja2.Environment(trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True,
                                     autoescape=False, undefined=jinja2.StrictUndefined)  # noqa: S701
    return environment.from_string(text)


def loadavg() -> float | None:
    """The 1-minute load average (None where the system has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except OSError:
        return None


def machine(load_before: float | None) -> dict[str, Any]:
    """What the card records of the machine: CPUs, torch threads, the load before and after."""
    import platform

    import torch

    return {"cpus": os.cpu_count(), "torch_threads": torch.get_num_threads(),
            "processor": platform.processor() or platform.machine(),
            "load_before": load_before, "load_after": loadavg()}
