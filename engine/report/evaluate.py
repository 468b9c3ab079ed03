"""The Evaluate screen: what a collection offers (sizes, judgments, grade scale), which grading
modes can run with the LLM endpoint at hand, reusable query sets, and the index defaults."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.collections import default_threshold, grade_scale, load_collection
from engine.llm.env import endpoint_status
from engine.report.runs import run_label
from engine.store import Store
from indexes.settings import ANN_INDEXES, IndexSettings


@dataclass(frozen=True)
class CollectionOverview:
    name: str
    path: str
    documents: int
    queries: int
    judged_queries: int
    has_qrels: bool
    grade_min: int | None
    grade_max: int | None
    threshold: int | None
    notes: tuple[str, ...]
    has_precomputed_embeddings: bool


def collection_overview(path: str | Path, **options: Any) -> CollectionOverview:
    """What the evaluate page needs to pre-fill its defaults: sizes, judgments, grade scale.

    ``options`` are load_collection's (columns, queries and qrels files, labels, root).
    """
    collection = load_collection(path, **options)
    qrels = collection.qrels or {}
    scale = grade_scale(qrels) if qrels else (None, None)
    return CollectionOverview(
        name=collection.name, path=collection.path, documents=len(collection.documents),
        queries=len(collection.queries),
        judged_queries=sum(1 for q in collection.queries if qrels.get(q.query_id)),
        has_qrels=collection.has_qrels, grade_min=scale[0], grade_max=scale[1],
        threshold=default_threshold(scale[1]) if scale[1] is not None else None,
        notes=tuple(collection.notes),
        has_precomputed_embeddings=Path(collection.path, "embeddings").is_dir(),
    )


@dataclass(frozen=True)
class ModeStatus:
    mode: str
    label: str
    available: bool
    reason: str


#: Grading modes the evaluate page offers, in order.
MODE_LABELS = {
    "qrels": "Human judgments (qrels)",
    "llm": "LLM judge",
    "qrels_llm": "Human judgments + LLM agreement",
}


def mode_status(overview: CollectionOverview | None, environ: dict[str, str] | None = None, *,
                model: str | None = None, base_url: str | None = None) -> list[ModeStatus]:
    """Which grading modes can run on this collection with this LLM endpoint, and why not.

    Args:
        overview: The collection (None: none picked yet).
        environ: The server's environment (default os.environ): SEARCHGRADE_LLM_MODEL,
            OPENAI_BASE_URL, OPENAI_API_KEY (only whether it is set is looked at).
        model, base_url: What the form holds; None means the environment's value.
    """
    if overview is None:
        has_qrels, why_not = False, "pick a collection first"
    elif overview.has_qrels:
        has_qrels, why_not = True, f"{overview.judged_queries} queries with judgments"
    else:
        has_qrels, why_not = False, ("this collection has no judgments: no qrels.tsv (query-id, corpus-id, "
                                     "score), and no judgments file beside it")
    llm_ready, why = endpoint_status(model, base_url, environ)
    if overview is None:
        llm_ready, why = False, "pick a collection first"
    both_why = why_not if not has_qrels else why
    return [
        ModeStatus("qrels", MODE_LABELS["qrels"], has_qrels, why_not),
        ModeStatus("llm", MODE_LABELS["llm"], llm_ready, why),
        ModeStatus("qrels_llm", MODE_LABELS["qrels_llm"], has_qrels and llm_ready, both_why),
    ]


def query_set_choices(store: Store, collection_name: str) -> list[tuple[str, str]]:
    """LLM runs of a collection whose generated queries can be reused (queries_from): (run id, label),
    newest first. A stopped run counts: its queries were stored before any judging."""
    counts = store.query_counts()
    return [(r.run_id, f"{run_label(r)} · {counts[r.run_id]:,} queries")
            for r in store.list_runs(collection_name)
            if r.mode == "llm" and counts.get(r.run_id)]


#: The index settings the Evaluate screen lets a person change.
INDEX_FIELDS = ("embedding_model", "reranker_model", "ann_index")


def index_defaults() -> dict[str, str]:
    """The pre-filled values of the screen's index settings (the defaults of IndexSettings)."""
    defaults = IndexSettings()
    return {name: getattr(defaults, name) for name in INDEX_FIELDS}


def index_choices() -> tuple[str, ...]:
    """The ANN index types a person can pick."""
    return ANN_INDEXES


def index_settings(values: dict[str, Any]) -> IndexSettings:
    """IndexSettings from the screen's values; a bad value raises SearchGradeError saying which."""
    return IndexSettings(**values)
