"""Results panels for strategies that may share their answers or fail: each pair's top-k overlap
(Jaccard and rank-biased overlap), and each strategy's failed queries and results outside the
collection. Strategies that find the same documents are not twice the evidence.

Rank-biased overlap (Webber, Moffat & Zobel, "A similarity measure for indefinite rankings",
TOIS 2010) is the extrapolated RBO of two top-k lists (their eq. 32, which also handles lists of
different lengths), with persistence ``p`` = 0.9: the top 10 carry ~86% of the weight. Both
figures are means over the queries both strategies answered (failed queries left out).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations

import pandas as pd

from searchgrade.engine.run.strategies import label, strategy_order
from searchgrade.engine.store import RunRecord, Store
from searchgrade.viewmodels.common import one_session

#: Persistence of rank-biased overlap.
RBO_P = 0.9
#: Depth of the lists compared when no page chose one.
OVERLAP_K = 10


def jaccard(a: Sequence[str], b: Sequence[str]) -> float:
    """|A ∩ B| / |A ∪ B| of the two lists' sets (1.0 for two empty lists)."""
    sa, sb = set(a), set(b)
    union = sa | sb
    return len(sa & sb) / len(union) if union else 1.0


def rbo(a: Sequence[str], b: Sequence[str], p: float = RBO_P) -> float:
    """Extrapolated rank-biased overlap of two ranked lists without repeats (1.0: identical)."""
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be in (0, 1), got {p}")
    short, long_ = (list(a), list(b)) if len(a) <= len(b) else (list(b), list(a))
    s, n_long = len(short), len(long_)
    if s == 0:
        return 1.0 if n_long == 0 else 0.0
    seen_s: set[str] = set()
    seen_l: set[str] = set()
    overlap = 0
    x: list[int] = [0]  # x[d]: overlap of the two lists' top d (short list whole beyond s)
    for d in range(1, n_long + 1):
        if d <= s:
            item_s = short[d - 1]
            overlap += int(item_s in seen_l)
            seen_s.add(item_s)
        item_l = long_[d - 1]
        overlap += int(item_l in seen_s)
        seen_l.add(item_l)
        x.append(overlap)
    total = sum(x[d] / d * p ** d for d in range(1, n_long + 1))
    total += sum(x[s] * (d - s) / (s * d) * p ** d for d in range(s + 1, n_long + 1))
    return (1 - p) / p * total + ((x[n_long] - x[s]) / n_long + x[s] / s) * p ** n_long


def top_overlap(store: Store, run: RunRecord, k: int = OVERLAP_K) -> pd.DataFrame:
    """One row per pair of strategies: mean Jaccard and RBO of their top k over shared queries."""
    lists = store.top_lists(run.run_id, k)
    names = strategy_order(lists)
    rows = []
    for a, b in combinations(names, 2):
        shared = sorted(set(lists[a]) & set(lists[b]))
        if not shared:
            continue
        j = sum(jaccard(lists[a][q], lists[b][q]) for q in shared) / len(shared)
        r = sum(rbo(lists[a][q], lists[b][q]) for q in shared) / len(shared)
        rows.append((label(a), label(b), j, r, len(shared), a, b))
    return pd.DataFrame(rows, columns=["Strategy", "Other strategy", f"Jaccard@{k}", f"RBO@{k}",
                                       "Queries", "strategy", "other"])


def search_problems(store: Store, run: RunRecord) -> list[str]:
    """One line per strategy that failed on queries or returned ids the collection lacks."""
    from searchgrade.engine.failures.diagnosis import strategy_failures

    lines = [f"{f.text}. Those queries are left out of its figures, the other strategies' are complete; "
             f"\"Retry what failed\" below (or `searchgrade resume {run.run_id}`) asks them again"
             for f in strategy_failures(store, run)]
    outside = (run.stats or {}).get("not_in_collection") or {}
    for strategy in strategy_order(outside):
        counts = outside[strategy]
        share = counts["not_in_collection"] / max(1, counts["results"])
        line = f"{share:.0%} of {label(strategy)} results are not in the collection: check the id mapping"
        if counts.get("described"):
            line += f" ({counts['described']} came with a title/text and are shown with the run)"
        lines.append(line)
    return lines


@dataclass
class OverlapView:
    """The two panels of one run, read in one store session (as the other view models are)."""

    #: One row per pair of strategies (top_overlap); empty with fewer than two strategies.
    overlap: pd.DataFrame
    #: One line per strategy with failed queries or ids outside the collection (search_problems).
    problems: list[str]


@one_session
def overlap_view(store: Store, run_id: str, k: int = OVERLAP_K) -> OverlapView:
    """Both panels of a run, the overlap of each pair's top k (the page's k)."""
    run = store.get_run(run_id)
    return OverlapView(top_overlap(store, run, min(k, run.depth)), search_problems(store, run))
