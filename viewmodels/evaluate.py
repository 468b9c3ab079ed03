"""The Evaluate screen: what a collection offers (sizes, judgments, grade scale, judgments naming
documents it lacks), which grading modes can run with the LLM endpoint at hand (and by clicks, with
a query log's), reusable query sets, the index defaults, the user's judge prompt and what an LLM run
will cost."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from searchgrade.engine.collections import default_threshold, grade_scale, load_collection
from searchgrade.engine.collections.qrels import NO_MATCHING_DOCUMENTS
from searchgrade.engine.llm.env import endpoint_status
from searchgrade.engine.store import Store
from searchgrade.indexes.settings import ANN_INDEXES, IndexSettings
from searchgrade.viewmodels.runs import run_label

if TYPE_CHECKING:
    from searchgrade.core.records import Collection
    from searchgrade.engine.llm.judge import JudgeSettings
    from searchgrade.engine.run.config import RunConfig
    from searchgrade.engine.run.estimate import CostEstimate

#: How long the page's cost estimate waits for the endpoint's GET /models, its only request.
ESTIMATE_TIMEOUT_S = 5.0


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
    #: Judgments kept, and those naming a document the loaded corpus does not have (not in the
    #: file, or skipped as empty): such a document counts as relevant and is never retrieved.
    judgments: int = 0
    unmatched_judgments: int = 0
    unmatched_documents: int = 0
    #: The loader found judgments, but none names a document of the corpus (ids that do not match).
    no_matching_judgments: bool = False

    @property
    def scale_words(self) -> str:
        """The judgments' scale in words: "binary: relevant or not" (SciFact's qrels hold only 1s;
        it read "grades 1 to 1"), else "grades 0 to 3; relevant = grade ≥ 2"."""
        if self.grade_max is not None and self.grade_max <= 1:
            return "binary: relevant or not"
        return f"grades {self.grade_min} to {self.grade_max}; relevant = grade ≥ {self.threshold}"

    def judgment_warning(self) -> str | None:
        """What the page warns about the judgments and the corpus, with counts (None: they match)."""
        if self.no_matching_judgments:
            return ("None of the judgments names a document of the corpus, so they are not used: check that "
                    "the judgments' document ids are the corpus's ids (the 'Document id column').")
        if not self.unmatched_judgments:
            return None
        return (f"{self.unmatched_judgments:,} of {self.judgments:,} judgments name "
                f"{self.unmatched_documents:,} document{'s' if self.unmatched_documents != 1 else ''} the "
                "corpus does not have: they count as relevant but can never be retrieved, which lowers "
                "recall, MAP and NDCG for every strategy. Check the 'Document id column', or that the "
                "judgments belong to this corpus.")


def collection_overview(path: str | Path, **options: Any) -> CollectionOverview:
    """What the evaluate page needs to pre-fill its defaults: sizes, judgments, grade scale.

    ``options`` are load_collection's (columns, queries and qrels files, labels, root).
    """
    collection = load_collection(path, **options)
    qrels = collection.qrels or {}
    scale = grade_scale(qrels) if qrels else (None, None)
    doc_ids = {d.doc_id for d in collection.documents}
    unmatched = {(q, d) for q, judged in qrels.items() for d in judged if d not in doc_ids}
    return CollectionOverview(
        name=collection.name, path=collection.path, documents=len(collection.documents),
        queries=len(collection.queries),
        judged_queries=sum(1 for q in collection.queries if qrels.get(q.query_id)),
        has_qrels=collection.has_qrels, grade_min=scale[0], grade_max=scale[1],
        threshold=default_threshold(scale[1]) if scale[1] is not None else None,
        notes=tuple(collection.notes),
        has_precomputed_embeddings=Path(collection.path, "embeddings").is_dir(),
        judgments=sum(len(judged) for judged in qrels.values()), unmatched_judgments=len(unmatched),
        unmatched_documents=len({d for _, d in unmatched}),
        no_matching_judgments=any(NO_MATCHING_DOCUMENTS in note for note in collection.notes),
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
    "clicks": "Clicks (a click model over a query log)",
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


def clicks_mode(has_clicks: bool) -> ModeStatus:
    """Grading by clicks: a query log of this collection with click events is stored."""
    return ModeStatus("clicks", MODE_LABELS["clicks"], has_clicks,
                      "a query log with clicks" if has_clicks else
                      "no query log with click events for this collection: import one under 'Queries from a "
                      "query log'")


def query_set_choices(store: Store, collection_name: str) -> list[tuple[str, str]]:
    """LLM runs of a collection whose generated queries can be reused (queries_from): (run id, label),
    newest first. A stopped run counts: its queries were stored before any judging."""
    counts = store.query_counts()
    return [(r.run_id, f"{run_label(r)} · {counts[r.run_id]:,} queries")
            for r in store.list_runs(collection_name)
            if r.mode == "llm" and counts.get(r.run_id)]


#: The index settings the Evaluate screen lets a person change.
INDEX_FIELDS = ("embedding_model", "embedding_backend", "reranker_model", "ann_index", "bm25_k1", "bm25_b",
                "rrf_k", "fusion_depth")


def index_defaults() -> dict[str, Any]:
    """The pre-filled values of the screen's index settings (the defaults of IndexSettings)."""
    defaults = IndexSettings()
    return {name: getattr(defaults, name) for name in INDEX_FIELDS}


def index_choices() -> tuple[str, ...]:
    """The ANN index types a person can pick."""
    return ANN_INDEXES


def backend_choices() -> dict[str, str]:
    """The embedding backends a person can pick: name -> what it is."""
    from searchgrade.indexes.embeddings.backends import BACKENDS

    return dict(BACKENDS)


def index_settings(values: dict[str, Any]) -> IndexSettings:
    """IndexSettings from the screen's values; a bad value raises SearchGradeError saying which."""
    return IndexSettings(**values)


def judge_prompt_upload(filename: str, source: BinaryIO) -> JudgeSettings:
    """The judge settings of a prompt file uploaded in the app, checked by the code that checks
    ``--judge-prompt FILE`` (engine/llm/prompts/__init__.py), so the run stores its text and version alike.

    Raises:
        SearchGradeError: Not a judge prompt, too big or not UTF-8 (one line saying why).
    """
    from searchgrade.engine.llm.judge import JudgeSettings
    from searchgrade.engine.llm.prompts import MAX_JUDGE_PROMPT_BYTES, judge_prompt_from_bytes

    source.seek(0)
    data = source.read(MAX_JUDGE_PROMPT_BYTES + 1)
    name, text = judge_prompt_from_bytes(filename, data, f"The judge prompt file {filename}")
    return JudgeSettings(prompt=name, prompt_text=text)


def judge_prompt_version(settings: JudgeSettings) -> str:
    """The version a run records for this prompt (its name and the hash of its text)."""
    from searchgrade.engine.llm.judge import judge_prompt

    return judge_prompt(settings).version


def cost_estimate(collection: Collection, config: RunConfig, store: Store) -> CostEstimate:
    """What ``searchgrade evaluate --dry-run`` prints for this run (engine/run/estimate.py, the same
    function): nothing is indexed, searched, prompted or stored.

    Counting cached replies asks the endpoint ``GET /models`` (their key's fingerprint); here that
    waits at most ESTIMATE_TIMEOUT_S, and an endpoint that does not answer in time is identified by
    its URL, so replies cached under its listing are counted as calls (an overestimate). The key
    goes where the run's would (engine/llm/key_policy.py): never to an endpoint typed in the browser.
    """
    from searchgrade.engine.run.estimate import estimate_cost

    if config.llm is not None:
        config = replace(config, llm=replace(config.llm, timeout_s=min(config.llm.timeout_s, ESTIMATE_TIMEOUT_S)))
    return estimate_cost(collection, config, store)
