"""Samples for the blind review queue: which (query, document) pairs people rate, in which order.

Two modes:

- ``pairs``: a stratified sample of unique pairs over strategies, rank bands and the judge's grade
  (strata taken in turn, so rare cells such as "the judge said 3 at rank 8 of the reranker" are
  rated too, not only the common "0 at rank 10"). Judge failures are left out: there is no judge
  grade to check. What it measures: the judge's agreement and bias across the whole range.
- ``queries``: a simple random sample of queries, and every result in the top k of every strategy
  for each. A query whose top k is rated in full has a human-graded value of every metric, which
  the judge-corrected (prediction-powered) estimates need; simple random sampling is what makes
  those estimates unbiased.

Both are seeded and shuffled, so the order reveals no rank or strategy.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import NamedTuple

MODES = ("pairs", "queries")
#: Upper bounds of the rank bands of the pair strata.
RANK_BANDS = ((1, "1"), (3, "2-3"), (10, "4-10"))
#: Largest queue a person can ask for.
MAX_ITEMS = 5000


class Occurrence(NamedTuple):
    """One result of a run: a strategy returned doc_id at rank for query_id; the judge's grade."""

    strategy: str
    query_id: str
    rank: int
    doc_id: str
    judge_grade: int | None


class ReviewItem(NamedTuple):
    query_id: str
    doc_id: str
    #: Why the pair is in the sample (never shown to the rater).
    stratum: str


def rank_band(rank: int) -> str:
    for bound, name in RANK_BANDS:
        if rank <= bound:
            return name
    return f"{RANK_BANDS[-1][0] + 1}+"


def sample_pairs(occurrences: Sequence[Occurrence], size: int, seed: int = 0) -> list[ReviewItem]:
    """Up to ``size`` unique pairs, spread over (strategy, rank band, judge grade) strata."""
    rng = random.Random(seed)
    strata: dict[str, list[Occurrence]] = {}
    for o in occurrences:
        if o.judge_grade is None:
            continue
        strata.setdefault(f"{o.strategy} · rank {rank_band(o.rank)} · judge {o.judge_grade}", []).append(o)
    order = sorted(strata)
    rng.shuffle(order)
    for name in order:
        rng.shuffle(strata[name])
    chosen: dict[tuple[str, str], str] = {}
    cursors = {name: 0 for name in order}
    while len(chosen) < size and order:
        for name in list(order):
            pool, i = strata[name], cursors[name]
            while i < len(pool) and (pool[i].query_id, pool[i].doc_id) in chosen:
                i += 1
            if i == len(pool):
                order.remove(name)
                continue
            chosen[(pool[i].query_id, pool[i].doc_id)] = name
            cursors[name] = i + 1
            if len(chosen) == size:
                break
    items = [ReviewItem(q, d, s) for (q, d), s in chosen.items()]
    rng.shuffle(items)
    return items


def sample_queries(occurrences: Sequence[Occurrence], n_queries: int, k: int, seed: int = 0) -> list[ReviewItem]:
    """Every unique result in the top k of every strategy, for a simple random sample of queries;
    queries in sampled order, their documents shuffled."""
    rng = random.Random(seed)
    by_query: dict[str, list[str]] = {}
    for o in sorted(occurrences, key=lambda o: (o.query_id, o.strategy, o.rank)):
        if o.rank <= k:
            docs = by_query.setdefault(o.query_id, [])
            if o.doc_id not in docs:
                docs.append(o.doc_id)
    queries = sorted(by_query)
    picked = rng.sample(queries, min(n_queries, len(queries)))
    items = []
    for q in picked:
        docs = list(by_query[q])
        rng.shuffle(docs)
        items.extend(ReviewItem(q, d, "query sample") for d in docs)
    return items
