"""Rating results in the app: the results a page lists, with what people said of them, and saving a
rating (engine/labels/ratings.py says how ratings reach runs)."""

from __future__ import annotations

from dataclasses import dataclass, field

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.labels.ratings import (
    content_hash,
    human_grade,
    latest_per_rater,
    new_rating,
    run_labels,
    scale_accepts_ratings,
    to_run_scale,
)
from searchgrade.engine.run.strategies import label, strategy_order
from searchgrade.engine.store import RunRecord, Store

#: What each grade means, as the rating buttons say it (PRODUCT.md's scale).
GRADE_WORDS = {0: "unrelated", 1: "on topic, no answer", 2: "partly answers", 3: "answers it"}


#: What a "relevant" on a run with binary labels is stored as: the lowest 0-3 grade that is relevant
#: on both scales (ratings belong to the collection and go to its 0-3 runs too; 2 maps to 1 here).
BINARY_RELEVANT = 2


def rating_scale(run: RunRecord) -> dict[int, tuple[int, str]]:
    """The rating buttons of a run, following its labels: shown value -> (the 0-3 rating stored, words).
    Binary labels (0/1, SciFact's) get 0 and 1; every other scale ratings fit gets 0-3."""
    if run.grade_max is not None and run.grade_max <= 1:
        return {0: (0, "not relevant"), 1: (BINARY_RELEVANT, "relevant")}
    return {grade: (grade, words) for grade, words in GRADE_WORDS.items()}


def shown_rating(run: RunRecord, rating: int) -> int:
    """A stored 0-3 rating as the run's scale shows it (1 for 2 or 3 on binary labels)."""
    return to_run_scale(rating, run.grade_min, run.grade_max) if run.grade_max is not None and \
        run.grade_max <= 1 else rating


def query_ratings(store: Store, run_id: str, query_id: str) -> dict[str, str]:
    """What people rated the query's results, read afresh (a rating shows at once): doc id ->
    "Ada 1, Bob 0" on the run's scale."""
    run = store.get_run(run_id)
    labels = run_labels(store, run)
    out: dict[str, str] = {}
    for (q, doc_id), ratings in labels.ratings.items():
        if q == query_id:
            latest = latest_per_rater(ratings)
            out[doc_id] = ", ".join(f"{who} {shown_rating(run, r.grade)}" for who, r in sorted(latest.items()))
    return out


@dataclass
class RateItem:
    """One result to rate, with where the page found it."""

    query_id: str
    query_text: str
    doc_id: str
    title: str
    text: str
    #: "ANN (dense) rank 2, Hybrid (RRF) rank 1"
    found: str
    #: The run's grade of the pair as it was scored, and its source ("llm", "human", None: unjudged).
    run_grade: int | None
    run_source: str | None
    #: rater -> their latest grade
    people: dict[str, int] = field(default_factory=dict)


@dataclass
class LabelStatus:
    """How a run stands with people's ratings."""

    can_rate: bool
    why_not: str | None
    #: Pairs of the run that people rated (ratings that apply).
    rated_pairs: int
    #: Rated pairs whose human grade is not what the run was scored with: what a re-score changes.
    pending: int
    raters: list[str]
    stale: int


def rating_blocked(run: RunRecord) -> str | None:
    """Why a run's results cannot be rated (None: they can)."""
    if run.status != "complete":
        return f"run {run.run_id} is {run.status}: rate the results of a complete run"
    if not scale_accepts_ratings(run.grade_min, run.grade_max):
        return (f"this run's labels are on a {run.grade_min}-{run.grade_max} scale and ratings are 0-3: "
                "they cannot be mixed; rate an LLM-judged run of the collection")
    return None


def label_status(store: Store, run: RunRecord) -> LabelStatus:
    why_not = rating_blocked(run)
    labels = run_labels(store, run)
    if not labels.ratings:
        return LabelStatus(why_not is None, why_not, 0, 0, [], labels.stale)
    stored = {(g["query_id"], g["doc_id"]): g
              for g in store.grades_of_queries(run.run_id, sorted({q for q, _ in labels.ratings}))}
    pending = 0
    for pair, ratings in labels.ratings.items():
        grade, old = human_grade(ratings), stored.get(pair)
        mapped = grade if why_not else to_run_scale(grade, run.grade_min, run.grade_max)
        if old is None or old["source"] != "human" or old["grade"] != mapped:
            pending += 1
    return LabelStatus(why_not is None, why_not, len(labels.ratings), pending, labels.raters(), labels.stale)


def _items(store: Store, run: RunRecord, rows: list[dict]) -> list[RateItem]:
    """Rate items for result rows (strategy, query_id, rank, doc_id), one per unique pair, in row order."""
    texts = {q["query_id"]: q["text"] for q in store.queries(run.run_id)}
    doc_ids = sorted({r["doc_id"] for r in rows})
    docs = store.documents(run.run_id, doc_ids)
    grades = {(g["query_id"], g["doc_id"]): g
              for g in store.grades_of_queries(run.run_id, sorted({r["query_id"] for r in rows}))}
    labels = run_labels(store, run, doc_ids=doc_ids)
    items: dict[tuple[str, str], RateItem] = {}
    found: dict[tuple[str, str], list[str]] = {}
    for r in rows:
        pair = (r["query_id"], r["doc_id"])
        found.setdefault(pair, []).append(f"{label(r['strategy'])} rank {r['rank']}")
        if pair in items:
            continue
        doc = docs.get(r["doc_id"], {"title": "", "text": ""})
        g = grades.get(pair)
        people = {name: rating.grade for name, rating in latest_per_rater(labels.ratings.get(pair, [])).items()}
        items[pair] = RateItem(r["query_id"], texts.get(r["query_id"], ""), r["doc_id"], doc["title"],
                               doc["text"], "", g["grade"] if g else None, g["source"] if g else None, people)
    for pair, item in items.items():
        item.found = ", ".join(found[pair])
    return list(items.values())


def query_items(store: Store, run_id: str, query_id: str) -> list[RateItem]:
    """The drill-down's results of one query: each unique document once, strategy by strategy."""
    run = store.get_run(run_id)
    rows = store.results_with_grades(run.run_id, query_id=query_id)
    order = {s: i for i, s in enumerate(strategy_order({r["strategy"] for r in rows}))}
    rows.sort(key=lambda r: (order[r["strategy"]], r["rank"]))
    return _items(store, run, rows)


def failed_items(store: Store, run_id: str, strategy: str) -> list[RateItem]:
    """The failed-queries table's results: every strategy's top 1 of each query whose top 1 from
    ``strategy`` is not relevant (engine/store/failures.py), that strategy's first."""
    run = store.get_run(run_id)
    rows = [{"strategy": r["strategy"], "query_id": r["query_id"], "rank": 1, "doc_id": r["doc_id"]}
            for r in store.failed_top1(run.run_id, strategy, run.threshold)]
    rows.sort(key=lambda r: (r["query_id"], r["strategy"] != strategy))
    return _items(store, run, rows)


def save_rating(store: Store, run_id: str, query_id: str, doc_id: str, grade: int, rater: str,
                note: str | None = None, origin: str = "app") -> None:
    """Store a person's rating of one of a run's pairs, with the document's content hash."""
    run = store.get_run(run_id)
    why_not = rating_blocked(run)
    if why_not:
        raise SearchGradeError(why_not)
    texts = {q["query_id"]: q["text"] for q in store.queries(run.run_id)}
    if query_id not in texts:
        raise SearchGradeError(f"query {query_id!r} is not in run {run.run_id}")
    doc = store.documents(run.run_id, [doc_id]).get(doc_id)
    if doc is None:
        raise SearchGradeError(f"document {doc_id!r} is not stored with run {run.run_id}")
    store.add_labels([new_rating(collection_name=run.collection_name, query_id=query_id,
                                 query_text=texts[query_id], doc_id=doc_id,
                                 content_hash=content_hash(doc["title"], doc["text"]), grade=grade,
                                 rater=rater, note=note, origin=origin, run_id=run.run_id)])
