"""Query sets: a seeded sample of a stored log, stored under a name with each query's searches,
band and design weight, so a run (``evaluate --query-set NAME``) and a suite can use exactly
those queries again.

A set's queries carry their own text and counts: replacing the log later leaves the set as it
was. A query's id is ``q-`` and the first 12 hex digits of the sha256 of its normalised text, so
one query has one id in every set of every log (and people's ratings, which match by text,
apply to it in every run).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from searchgrade.core.records import Query, SearchGradeError
from searchgrade.engine.traffic.bands import BANDS, HEAD_SHARE, TORSO_SHARE, check_shares
from searchgrade.engine.traffic.logs import check_name
from searchgrade.engine.traffic.sampling import METHODS, sample_queries

#: The query type of a log's queries in a run.
LOG_QUERY_TYPE = "log"
#: Largest query set (queries are searched and graded one by one).
MAX_SET_SIZE = 100_000


def query_id(text: str) -> str:
    return "q-" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:12]


@dataclass(frozen=True)
class SetOptions:
    method: str = "stratified"
    size: int = 200
    seed: int = 0
    name: str | None = None
    head_share: float = HEAD_SHARE
    torso_share: float = TORSO_SHARE
    replace: bool = False


@dataclass
class SetSummary:
    set_name: str
    log_name: str
    method: str
    size: int
    #: Searches the set's queries carry, and the log's.
    searches: int
    log_searches: int
    by_band: dict[str, int]
    notes: list[str]

    @property
    def share(self) -> float:
        return self.searches / self.log_searches if self.log_searches else 0.0


def create_query_set(store: Any, log_name: str, options: SetOptions = SetOptions()) -> SetSummary:
    """Sample a stored log and store the set (searchgrade.engine.store.Store)."""
    if options.method not in METHODS:
        raise SearchGradeError(f"--method {options.method!r} is not one of {', '.join(METHODS)}")
    if isinstance(options.size, bool) or not 1 <= options.size <= MAX_SET_SIZE:
        raise SearchGradeError(f"--size of {options.size!r} must be between 1 and {MAX_SET_SIZE:,}")
    try:
        check_shares(options.head_share, options.torso_share)
    except ValueError as exc:
        raise SearchGradeError(f"--head-share / --torso-share: {exc}") from None
    log = store.query_log(log_name)
    name = check_name(options.name or f"{log_name}-{options.method}-{options.size}-s{options.seed}",
                      "query set", "--name")
    if store.query_set_exists(name) and not options.replace:
        raise SearchGradeError(f"a query set named {name!r} is stored already (a suite may use it): choose "
                               "another --name, or --replace it")
    counts = store.log_counts(log_name)
    sample = sample_queries(counts, options.method, options.size, options.seed,
                            head_share=options.head_share, torso_share=options.torso_share)
    ranks = [int(i) + 1 for i in sample.indices]
    by_rank = {r["rank"]: r for r in store.log_queries(log_name, ranks)}
    rows = []
    for i, rank in enumerate(ranks):
        q = by_rank[rank]
        rows.append((query_id(q["text"]), q["text"], rank, int(q["searches"]), sample.bands[i],
                     float(sample.weights[i]), sample.strata[i], bool(sample.fixed[i])))
    searches = sum(r[3] for r in rows)
    notes = []
    if options.method == "uniform" and len(rows) < len(counts):
        notes.append("a uniform set draws every distinct query with the same chance, so it rarely holds the "
                     "head queries that carry most searches: its traffic-weighted figures are unreliable "
                     "(use --method frequency or stratified for them)")
    if options.method == "top" and len(rows) < len(counts):
        notes.append(f"the top {len(rows):,} queries carry {searches / max(1, int(log['kept_searches'])):.1%} of the "
                     "searches; their traffic-weighted mean says nothing about the rest")
    if len(rows) < options.size:
        notes.append(f"the log holds {len(rows):,} distinct queries (after its privacy floor): the set is all of them")
    record = {"set_name": name, "log_name": log_name, "collection_name": log["collection_name"],
              "method": options.method, "size": len(rows), "seed": options.seed,
              "head_share": options.head_share, "torso_share": options.torso_share, "searches": searches,
              "log_searches": int(log["kept_searches"]), "log_queries": int(log["kept_queries"])}
    store.write_query_set(record, rows, replace=options.replace)
    by_band = {b: sum(1 for r in rows if r[4] == b) for b in BANDS}
    return SetSummary(name, log_name, options.method, len(rows), searches, int(log["kept_searches"]), by_band, notes)


@dataclass(frozen=True)
class SetQuery:
    """A query of a set, as a run uses it."""

    query_id: str
    text: str
    searches: int
    band: str
    weight: float
    stratum: str
    fixed: bool
    log_rank: int


def set_queries(store: Any, set_name: str) -> list[SetQuery]:
    return [SetQuery(r["query_id"], r["text"], int(r["searches"]), r["band"], float(r["weight"]), r["stratum"],
                     bool(r["fixed"]), int(r["log_rank"])) for r in store.query_set_queries(set_name)]


def run_queries(store: Any, set_name: str) -> list[Query]:
    """The set's queries as a run evaluates them (sorted by query id, as a run stores them)."""
    return sorted((Query(q.query_id, q.text, LOG_QUERY_TYPE) for q in set_queries(store, set_name)),
                  key=lambda q: q.query_id)


def head_and_tail(store: Any, log_name: str, n: int = 10) -> dict[str, list[dict[str, Any]]]:
    """The ``n`` most and least searched queries of a log, with their share of searches."""
    log = store.query_log(log_name)
    total = max(1, int(log["kept_searches"]))
    last = int(log["kept_queries"])
    head_end = min(n, (last + 1) // 2) if last < 2 * n else n  # a small log: half and half
    head = store.log_rank_range(log_name, 1, head_end)
    tail = store.log_rank_range(log_name, max(head_end + 1, last - n + 1), last)
    for row in head + tail:
        row["share"] = row["searches"] / total
    return {"head": head, "tail": tail}
