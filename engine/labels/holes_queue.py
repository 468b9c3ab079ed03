"""The "fill the holes" review queue: the unjudged pairs that could change a decision most, in the
order to rate them, and how many settle it.

The decision is which strategy leads on DCG@k (the headline metric; linear gain, so a hole's grade
moves it by exactly grade / log2(rank + 1) for its query). Against each strategy behind the
leader, the lead ``d`` is the difference of the means with every hole counted as not relevant (what
the run shows). A hole the other strategy ranks at r (and the leader at r', or not in its top k)
could take away at most ``G * (1/log2(r + 1) - 1/log2(r' + 1)) / n`` of it, G the scale's top grade
and n the queries: its *threat*. A comparison is open while its holes' threats add up to the lead
or more: the holes alone could reverse it.

The queue holds every hole that threatens an open comparison, the largest share of a lead first
(a pair high in a ranking whose comparison is close). The count needed to settle it: the fewest
pairs from the top of the queue after which no comparison is open any more, if the pairs rated
turn out not relevant (each one rated relevant moves the lead itself; re-score the run after
rating, and ask the queue again).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from searchgrade.core.records import SearchGradeError

if TYPE_CHECKING:
    from searchgrade.engine.store import Store


@dataclass(frozen=True)
class Comparison:
    """The leader against one other strategy on DCG@k."""

    leader: str
    other: str
    lead: float
    #: How much the holes could take away of the lead, all of them at the top grade.
    threat: float
    holes: int

    @property
    def open(self) -> bool:
        return self.threat > 0 and self.threat >= self.lead


@dataclass(frozen=True)
class HoleItem:
    query_id: str
    doc_id: str
    #: The strategy whose comparison the pair threatens most, and its rank there.
    strategy: str
    rank: int
    #: The largest share of a lead this pair alone could take away.
    priority: float


@dataclass
class HolesQueue:
    k: int
    leader: str | None
    comparisons: list[Comparison]
    items: list[HoleItem]
    #: Pairs from the top of ``items`` that settle every open comparison (0: none is open).
    settle: int


def _weight(rank: int | None, k: int) -> float:
    return 1.0 / math.log2(rank + 1) if rank is not None and rank <= k else 0.0


def build_queue(ranks: dict[str, dict[str, dict[str, int]]], dcg: dict[str, float], holes: set[tuple[str, str]],
                n_queries: dict[str, int], k: int, top_grade: int) -> HolesQueue:
    """The queue from a run's top-k ranks, its DCG@k means and its holes.

    Args:
        ranks: strategy -> query -> doc id -> rank (the top k, ranks from 1).
        dcg: strategy -> mean DCG@k over its n_queries[strategy] queries, holes counted as 0.
        holes: The (query, doc) pairs with no grade (or pooled, not judged).
        top_grade: G, the scale's top grade.
    """
    if not dcg:
        return HolesQueue(k, None, [], [], 0)
    leader = max(sorted(dcg), key=lambda s: dcg[s])
    threats: dict[str, dict[tuple[str, str], tuple[float, int]]] = {}
    comparisons = []
    for other in sorted(s for s in dcg if s != leader):
        mine: dict[tuple[str, str], tuple[float, int]] = {}
        for qid, docs in ranks.get(other, {}).items():
            for doc_id, rank in docs.items():
                if (qid, doc_id) not in holes:
                    continue
                leader_rank = ranks.get(leader, {}).get(qid, {}).get(doc_id)
                threat = top_grade * (_weight(rank, k) / n_queries[other]
                                      - _weight(leader_rank, k) / n_queries[leader])
                if threat > 0:
                    mine[(qid, doc_id)] = (threat, rank)
        threats[other] = mine
        comparisons.append(Comparison(leader, other, dcg[leader] - dcg[other],
                                      sum(t for t, _ in mine.values()), len(mine)))
    open_ones = [c for c in comparisons if c.open]
    best: dict[tuple[str, str], HoleItem] = {}
    for c in open_ones:
        for pair, (threat, rank) in threats[c.other].items():
            share = threat / c.lead if c.lead > 0 else math.inf
            if pair not in best or share > best[pair].priority:
                best[pair] = HoleItem(pair[0], pair[1], c.other, rank, share)
    items = sorted(best.values(), key=lambda i: (-i.priority, i.rank, i.query_id, i.doc_id))
    remaining = {c.other: c.threat for c in open_ones}
    settle = 0
    for position, item in enumerate(items, start=1):
        if all(not _still_open(remaining[c.other], c.lead) for c in open_ones):
            break
        for c in open_ones:
            threat = threats[c.other].get((item.query_id, item.doc_id))
            if threat is not None:
                remaining[c.other] -= threat[0]
        settle = position
    return HolesQueue(k, leader, comparisons, items, settle)


def _still_open(threat: float, lead: float) -> bool:
    return threat > 1e-12 and threat >= lead


def holes_queue(store: Store, run_id: str, k: int | None = None) -> HolesQueue:
    """The run's "fill the holes" queue at DCG@k (default: the run's k).

    Raises:
        SearchGradeError: the run is not complete, or k is outside its depth.
    """
    from searchgrade.engine.run.stored_metrics import check_cutoff, per_query_values

    run = store.get_run(run_id)
    if run.status != "complete":
        raise SearchGradeError(f"run {run.run_id} is {run.status}: fill the holes of a complete run")
    k = k or run.k
    check_cutoff(run, k)
    values = per_query_values(store, run, "dcg", k)
    dcg = {s: float(v["value"].mean()) for s, v in values.groupby("strategy")}
    counts = {s: len(v) for s, v in values.groupby("strategy")}
    ranks: dict[str, dict[str, dict[str, int]]] = {}
    for strategy, by_query in store.top_lists(run.run_id, k).items():
        ranks[strategy] = {q: {d: i for i, d in enumerate(docs, start=1)} for q, docs in by_query.items()}
    holes = {(r["query_id"], r["doc_id"]) for r in store.unjudged_in_pool(run.run_id, k)}
    top = run.grade_max if run.grade_max is not None else 3
    return build_queue(ranks, dcg, holes, counts, k, max(int(top), 1))


def queue_text(queue: HolesQueue, labels: dict[str, str] | None = None) -> list[str]:
    """The queue in words: each open comparison, then how many pairs settle it."""
    name = (labels or {}).get
    lines = []
    k = queue.k
    for c in queue.comparisons:
        if not c.open:
            continue
        lines.append(f"{name(c.leader) or c.leader} leads {name(c.other) or c.other} on DCG@{k} by {c.lead:.2f}, "
                     f"but {c.holes} unjudged results of {name(c.other) or c.other} could add up to {c.threat:.2f}: "
                     "the holes alone could reverse it.")
    if not lines:
        return [f"No unjudged result could reverse which strategy leads on DCG@{k}: there is nothing to settle."]
    lines.append(f"Rating the first {queue.settle} of these {len(queue.items)} pairs settles it if they are not "
                 "relevant (each one rated relevant moves the lead; re-score the run after rating).")
    return lines


def queue_items(queue: HolesQueue, size: int | None = None) -> Sequence[tuple[str, str, str]]:
    """The queue's first ``size`` pairs (default: the count that settles it, at least one) as review
    items (query_id, doc_id, stratum)."""
    size = size if size is not None else max(queue.settle, 1)
    return [(i.query_id, i.doc_id, f"holes · {i.strategy} rank {i.rank}") for i in queue.items[:size]]
