"""The Review screen: blind review queues of a run, the next item for a rater, progress."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.labels.ratings import check_rater, run_labels
from searchgrade.engine.labels.review_sample import (
    MAX_ITEMS,
    MODES,
    Occurrence,
    ReviewItem,
    sample_pairs,
    sample_queries,
)
from searchgrade.engine.store import RunRecord, Store
from searchgrade.viewmodels.common import is_llm_run

MODE_LABELS = {"pairs": "Pairs: a stratified sample", "queries": "Whole queries: every result in the top k",
               "holes": "Fill the holes: the unjudged results that could change the decision"}


#: What the page says it is doing, by the mode of the review at hand.
PAGE_CAPTIONS = {
    "pairs": "Rate a sample of the judge's pairs without seeing its grade, the rank or the strategy. Your grades "
             "measure the judge (Results: how far to trust the judge) and correct every metric for its errors. "
             "Ratings belong to the collection: later runs reuse them.",
    "queries": "Rate every result in the top k of a sample of queries, without seeing the judge's grade, the rank "
               "or the strategy: the judge-corrected metrics need whole queries. Ratings belong to the "
               "collection: later runs reuse them.",
    "holes": "Fill the holes: rate the results nobody judged that could change which strategy leads, most "
             "decisive first, without seeing the rank or the strategy. Each grade turns an unjudged result (counted "
             "as not relevant) into a judged one; \"Re-score with the latest labels\" on Results puts them "
             "into the figures. Ratings belong to the collection: later runs reuse them.",
}
#: What a review needs, for a page that has nothing to review yet.
NEEDS = ("A review needs a complete run: one graded by the LLM judge (to check its grades), or any run on a "
         "0-3 or 0/1 scale (to fill its holes). Start one on the Evaluate page: \"LLM judge\" needs an LLM "
         "endpoint (see docs/llm.md).")


@dataclass(frozen=True)
class QueueChoice:
    queue_id: str
    label: str
    mode: str
    items: int


@dataclass
class ReviewItemView:
    """What a rater sees: the query and the document, nothing of the judge, rank or strategy."""

    position: int
    query_id: str
    query_text: str
    doc_id: str
    title: str
    text: str


@dataclass
class QueueProgress:
    total: int
    rated: int
    skipped: int
    #: The next item to rate (None: nothing left, skipped ones aside).
    next: ReviewItemView | None
    #: Positions rated by this rater, in queue order (to step back to).
    rated_positions: list[int]


def reviewable(run: RunRecord) -> str | None:
    """Why a run cannot have a review queue (None: it can)."""
    if run.status != "complete":
        return f"run {run.run_id} is {run.status}: review a complete run"
    if not is_llm_run(run):
        return "this run is graded by human judgments only: a review checks an LLM judge's grades"
    return None


def holes_reviewable(run: RunRecord) -> str | None:
    """Why a run cannot have a "fill the holes" queue (None: it can): any complete run whose labels
    people's 0-3 ratings can be put on (engine/labels/holes_queue.py)."""
    from searchgrade.engine.labels.ratings import scale_accepts_ratings

    if run.status != "complete":
        return f"run {run.run_id} is {run.status}: review a complete run"
    if not scale_accepts_ratings(run.grade_min, run.grade_max):
        return (f"this run's labels go from {run.grade_min} to {run.grade_max}, and ratings are 0-3: "
                "they cannot fill its holes")
    return None


def fill_holes_summary(store: Store, run_id: str, k: int) -> tuple[list[str], int]:
    """What a "fill the holes" queue would settle, in words, and how many pairs settle it (at least 1)."""
    from searchgrade.engine.labels.holes_queue import holes_queue, queue_text
    from searchgrade.engine.run.strategies import label

    queue = holes_queue(store, run_id, k)
    names = {s: label(s) for c in queue.comparisons for s in (c.leader, c.other)}
    return queue_text(queue, names), max(queue.settle, 1)


def available_modes(run: RunRecord) -> tuple[dict[str, str], str | None]:
    """The review modes a run offers (mode -> label), and why there is none when it offers none."""
    modes = {}
    why_not = reviewable(run)
    if why_not is None:
        modes.update({m: MODE_LABELS[m] for m in MODES})
    holes_why_not = holes_reviewable(run)
    if holes_why_not is None:
        modes["holes"] = MODE_LABELS["holes"]
    return modes, (None if modes else why_not or holes_why_not)


def _occurrences(store: Store, run: RunRecord) -> list[Occurrence]:
    judge = {(g["query_id"], g["doc_id"]): g["llm_grade"] for g in store.grades(run.run_id)}
    return [Occurrence(r["strategy"], r["query_id"], r["rank"], r["doc_id"], judge.get((r["query_id"], r["doc_id"])))
            for r in store.results_with_grades(run.run_id)]


def create_queue(store: Store, run_id: str, *, mode: str, size: int, k: int | None = None, seed: int = 0,
                 created_by: str | None = None) -> str:
    """A new queue of the run, stored with its items; returns its id.

    Args:
        mode: "pairs" (size = pairs) or "queries" (size = queries; all their top-k results).
    """
    run = store.get_run(run_id)
    if mode not in MODE_LABELS:
        raise SearchGradeError(f"review mode {mode!r} is not one of {', '.join(MODE_LABELS)}")
    why_not = holes_reviewable(run) if mode == "holes" else reviewable(run)
    if why_not:
        raise SearchGradeError(why_not)
    if not 1 <= size <= MAX_ITEMS:
        raise SearchGradeError(f"a review of {size} is outside 1..{MAX_ITEMS}: pick a smaller sample")
    k = k or run.k
    if not 1 <= k <= run.depth:
        raise SearchGradeError(f"k of {k} is outside 1..{run.depth} (the results the run kept)")
    if mode == "holes":
        from searchgrade.engine.labels.holes_queue import holes_queue, queue_items

        items = [ReviewItem(*item) for item in queue_items(holes_queue(store, run.run_id, k), size)]
        if not items:
            raise SearchGradeError(f"no unjudged result in the top {k} could change which strategy leads: "
                                   "there is no hole to fill")
    else:
        occurrences = _occurrences(store, run)
        items = sample_pairs([o for o in occurrences if o.rank <= k], size, seed) if mode == "pairs" \
            else sample_queries(occurrences, size, k, seed)
    if not items:
        raise SearchGradeError("the run has no judged result to review")
    if len(items) > MAX_ITEMS:
        raise SearchGradeError(f"{size} queries make {len(items)} results to rate, over {MAX_ITEMS}: "
                               "sample fewer queries")
    queue_id = uuid.uuid4().hex[:12]
    store.create_review_queue({"queue_id": queue_id, "run_id": run.run_id, "mode": mode, "size": size,
                               "k": k, "seed": seed, "created_by": created_by},
                              [(i.query_id, i.doc_id, i.stratum) for i in items])
    return queue_id


def queue_choices(store: Store, run_id: str) -> list[QueueChoice]:
    out = []
    for q in store.review_queues(run_id):
        what = (f"{q['items']} pairs" if q["mode"] == "pairs"
                else f"{q['items']} unjudged results in the top {q['k']} (fill the holes)" if q["mode"] == "holes"
                else f"{q['size']} queries, {q['items']} results in their top {q['k']}")
        by = f" by {q['created_by']}" if q["created_by"] else ""
        out.append(QueueChoice(q["queue_id"], f"{what} · started {q['created_at']:%Y-%m-%d %H:%M}{by}",
                               q["mode"], q["items"]))
    return out


def progress(store: Store, queue_id: str, rater: str, *, include_skipped: bool = False) -> QueueProgress:
    """A rater's progress through a queue, and the next item for them (resumes across sessions)."""
    rater = check_rater(rater)
    queue = store.review_queue(queue_id)
    if queue is None:
        raise SearchGradeError(f"no review queue {queue_id!r}; start one on the Review page")
    run = store.get_run(queue["run_id"])
    items = store.review_items(queue_id)
    labels = run_labels(store, run, doc_ids=sorted({i["doc_id"] for i in items}))
    mine = {pair for pair, ratings in labels.ratings.items() if any(r.rater == rater for r in ratings)}
    skipped = store.review_skips(queue_id, rater)
    rated = [i["position"] for i in items if (i["query_id"], i["doc_id"]) in mine]
    todo = [i for i in items if (i["query_id"], i["doc_id"]) not in mine
            and (include_skipped or i["position"] not in skipped)]
    return QueueProgress(len(items), len(rated), len(skipped - set(rated)),
                         item_view(store, run, todo[0]) if todo else None, rated)


def item_at(store: Store, queue_id: str, position: int) -> ReviewItemView:
    queue = store.review_queue(queue_id)
    run = store.get_run(queue["run_id"])
    item = next((i for i in store.review_items(queue_id) if i["position"] == position), None)
    if item is None:
        raise SearchGradeError(f"review queue {queue_id} has no item {position}")
    return item_view(store, run, item)


def item_view(store: Store, run: RunRecord, item: dict) -> ReviewItemView:
    texts = {q["query_id"]: q["text"] for q in store.queries(run.run_id)}
    doc = store.documents(run.run_id, [item["doc_id"]]).get(item["doc_id"], {"title": "", "text": ""})
    return ReviewItemView(item["position"], item["query_id"], texts.get(item["query_id"], ""), item["doc_id"],
                          doc["title"], doc["text"])
