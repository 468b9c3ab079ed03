"""A click simulator with known truth, to check that click-derived labels rank systems as the
true labels do.

Pure numpy, seeded. Searches follow a log's counts; each search is served by one of the deployed
systems (an A/B split by ``shares``), and a share ``swap_rate`` of them has two adjacent results
swapped and a share ``shuffle_rate`` sees the top results in a random order (the randomisation
search teams use so that clicks can tell position from relevance). A user examines position p
with probability ``examination(p) = 1 / p**eta`` and clicks an examined result with its
attractiveness, ``attractiveness(grade)`` (the position-based model). The output is what ``clicks
import`` stores: impressions and clicks per (query, document, position). ``simulate_interleaving``
serves two systems' team-draft interleaving instead and counts, per query, the searches whose
clicks credit each system more (what ``clicks import-interleaving`` stores).

``system_means`` and ``ranking_agreement`` then score any number of systems' rankings with the
true grades and with click-derived ones, and compare the two orderings of the systems by
Kendall's tau.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from searchgrade.engine.clicks.interleaving import QueryOutcome, team_draft
from searchgrade.engine.clicks.models import ClickCounts
from searchgrade.engine.metrics.dcg import dcg

#: Random orders drawn per (system, query) for the shuffled share of its searches.
SHUFFLES = 8
#: Attractiveness of an unjudged or grade-0 result, and of the top grade.
FLOOR, CEILING = 0.05, 0.95


def attractiveness(grade: int | None, max_grade: int, ceiling: float = CEILING) -> float:
    """FLOOR + (ceiling - FLOOR) * (2**g - 1) / (2**max - 1): grade 0 (or unjudged) at FLOOR."""
    g = max(0, grade or 0)
    return FLOOR + (ceiling - FLOOR) * (2**g - 1) / (2**max_grade - 1)


def examination(position: int, eta: float = 1.0) -> float:
    return 1.0 / position**eta


@dataclass(frozen=True)
class SimulatedClicks:
    """Aggregated simulated clicks: keys (query, doc), and the counts per (pair, position)."""

    pairs: list[tuple[str, str]]
    counts: ClickCounts


def simulate_clicks(
    served: Mapping[str, Mapping[str, Sequence[str]]],
    shares: Mapping[str, float],
    searches: Mapping[str, int],
    relevance: Mapping[str, Mapping[str, int]],
    *,
    max_grade: int,
    eta: float = 1.0,
    swap_rate: float = 0.3,
    shuffle_rate: float = 0.0,
    ceiling: float = CEILING,
    seed: int = 0,
) -> SimulatedClicks:
    """Impressions and clicks of ``searches[q]`` searches of each query.

    Args:
        served: Deployed system -> query -> the ranked doc ids it shows.
        shares: Deployed system -> its share of the searches (normalised here).
        relevance: The true grades: query -> doc -> grade (absent: 0).
    """
    rng = np.random.default_rng(seed)
    names = sorted(served)
    split = np.array([shares[s] for s in names], dtype=float)
    split /= split.sum()
    cells: dict[tuple[str, str, int], list[float]] = {}
    for query in sorted(searches):
        for system, n_s in zip(names, rng.multinomial(int(searches[query]), split), strict=True):
            ranking = list(served[system].get(query, ()))
            if n_s == 0 or not ranking:
                continue
            k = len(ranking)
            variants = [ranking]
            weights = [1.0 - swap_rate - shuffle_rate if k > 1 else 1.0]
            for i in range(k - 1):
                swapped = ranking.copy()
                swapped[i], swapped[i + 1] = swapped[i + 1], swapped[i]
                variants.append(swapped)
                weights.append(swap_rate / (k - 1))
            for _ in range(SHUFFLES if shuffle_rate else 0):
                variants.append([ranking[i] for i in rng.permutation(k)])
                weights.append(shuffle_rate / SHUFFLES)
            for variant, m in zip(variants, rng.multinomial(n_s, np.asarray(weights) / sum(weights)), strict=True):
                if m == 0:
                    continue
                for position, doc in enumerate(variant, start=1):
                    p = examination(position, eta) * attractiveness(relevance.get(query, {}).get(doc), max_grade,
                                                                    ceiling)
                    cell = cells.setdefault((query, doc, position), [0.0, 0.0])
                    cell[0] += m
                    cell[1] += rng.binomial(m, p)
    keys = sorted({(q, d) for q, d, _ in cells})
    index = {key: i for i, key in enumerate(keys)}
    rows = sorted(cells.items())
    return SimulatedClicks(keys, ClickCounts.of([index[(q, d)] for (q, d, _), _ in rows], [p for (_, _, p), _ in rows],
                                                [v[0] for _, v in rows], [v[1] for _, v in rows], len(keys)))


def system_means(systems: Mapping[str, Mapping[str, Sequence[str]]], labels: Mapping[str, Mapping[str, int]],
                 queries: Sequence[str], k: int = 10) -> dict[str, float]:
    """Each system's mean DCG@k over ``queries`` with ``labels`` (an unlabelled result counts 0)."""
    out = {}
    for name, rankings in systems.items():
        values = [dcg([labels.get(q, {}).get(d, 0) for d in rankings.get(q, ())], [], k, 1) for q in queries]
        out[name] = float(np.mean(values)) if values else 0.0
    return out


def ranking_agreement(systems: Mapping[str, Mapping[str, Sequence[str]]], truth: Mapping[str, Mapping[str, int]],
                      labels: Mapping[str, Mapping[str, int]], queries: Sequence[str], k: int = 10) -> float:
    """Kendall's tau (tau-b) between the systems ordered by mean DCG@k with ``truth`` and with ``labels``."""
    from scipy.stats import kendalltau

    names = sorted(systems)
    true = system_means(systems, truth, queries, k)
    derived = system_means(systems, labels, queries, k)
    return float(kendalltau([true[n] for n in names], [derived[n] for n in names]).statistic)


def simulate_interleaving(
    a: Mapping[str, Sequence[str]],
    b: Mapping[str, Sequence[str]],
    searches: Mapping[str, int],
    relevance: Mapping[str, Mapping[str, int]],
    *,
    names: tuple[str, str] = ("a", "b"),
    max_grade: int,
    eta: float = 1.0,
    ceiling: float = CEILING,
    k: int = 10,
    seed: int = 0,
) -> list[QueryOutcome]:
    """``searches[q]`` team-draft interleaved searches of systems a and b per query (each search its
    own draw of the teams), clicked by the position-based model; per query, the searches each
    system's clicks won, the ties, and the searches."""
    rng = np.random.default_rng(seed)
    out = []
    for query in sorted(searches):
        n = int(searches[query])
        if n == 0 or not (a.get(query) or b.get(query)):
            continue
        wins_a = wins_b = ties = 0
        for _ in range(n):
            shown, teams = team_draft(a.get(query, ()), b.get(query, ()), rng, k)
            p = np.array([examination(i, eta) * attractiveness(relevance.get(query, {}).get(doc), max_grade, ceiling)
                          for i, doc in enumerate(shown, start=1)])
            clicked = rng.random(len(shown)) < p
            credit_b = int(clicked[np.asarray(teams, dtype=bool)].sum())
            credit_a = int(clicked.sum()) - credit_b
            wins_a += credit_a > credit_b
            wins_b += credit_b > credit_a
            ties += credit_a == credit_b > 0
        out.append(QueryOutcome(query, names[0], names[1], wins_a, wins_b, ties, n))
    return out
