"""Query sets sampled from a log, each query with its design weight.

Pure numpy, seeded: the same counts, method, size and seed give the same set. The counts are the
log's distinct queries sorted most searched first (their index is their rank - 1).

Methods (``METHODS``):

- ``uniform``: distinct queries drawn with equal chance (simple random sampling).
- ``frequency``: drawn with chance proportional to searches (systematic PPS sampling): a query
  whose share would give it a chance of 1 or more is taken for certain (the "take-all" part), the
  rest are drawn with inclusion probability ``size_left * count / searches_left``.
- ``top``: the ``size`` most searched queries.
- ``stratified``: head, torso and tail (engine/traffic/bands.py) sampled apart, ``size`` split as
  evenly as the bands allow (a band with fewer queries than its share is taken whole, and the
  rest goes to the others), uniform within each band.

Each query's **weight** is its count divided by its inclusion probability (``count / pi``), so the
set's weighted mean (sum w*x / sum w) estimates the whole log's traffic-weighted mean: a query drawn
with chance 1/10 stands for ten like it. Queries with pi = 1 (taken for certain) are ``fixed``:
the weighted bootstrap (engine/statistics/weighted_bootstrap.py) never resamples them, since
another draw would have taken them too. ``top`` is no sample: every one of its queries is fixed,
and its weighted mean speaks for the share of traffic the top queries carry, not for the rest.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from searchgrade.engine.traffic.bands import BANDS, HEAD_SHARE, TORSO_SHARE, bands

METHODS = ("uniform", "frequency", "top", "stratified")


class Sample(NamedTuple):
    """A sampled query set: positions into the counts, in increasing order, with their design."""

    indices: np.ndarray
    #: count / inclusion probability.
    weights: np.ndarray
    #: inclusion probability of each sampled query.
    pi: np.ndarray
    #: The stratum the bootstrap resamples within: the band (stratified) or "all".
    strata: list[str]
    #: Taken for certain (pi = 1): never resampled.
    fixed: np.ndarray
    #: Band of each sampled query (head / torso / tail).
    bands: list[str]


def _pps(counts: np.ndarray, size: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Systematic PPS: (indices, inclusion probabilities), certainty units first found iteratively."""
    n = counts.size
    certain = np.zeros(n, dtype=bool)
    while True:
        left = size - int(certain.sum())
        rest = counts * ~certain
        total = rest.sum()
        if left <= 0 or total <= 0:
            break
        pi = left * rest / total
        new = (pi >= 1) & ~certain
        if not new.any():
            break
        certain |= new
    pi = np.where(certain, 1.0, 0.0)
    left = size - int(certain.sum())
    chosen = list(np.flatnonzero(certain))
    if left > 0:
        rest_idx = np.flatnonzero(~certain & (counts > 0))
        if rest_idx.size:
            p = left * counts[rest_idx] / counts[rest_idx].sum()
            pi[rest_idx] = p
            order = rng.permutation(rest_idx.size)
            cum = np.cumsum(p[order])
            points = rng.uniform() + np.arange(left)
            hits = np.searchsorted(cum, points, side="right")
            chosen.extend(rest_idx[order[hits[hits < order.size]]])
    idx = np.unique(np.asarray(chosen, dtype=int))
    return idx, pi[idx]


def _allocate(sizes: np.ndarray, size: int) -> np.ndarray:
    """``size`` split over strata as evenly as their sizes allow."""
    take = np.zeros(len(sizes), dtype=int)
    left = size
    open_ = [i for i in range(len(sizes)) if sizes[i] > 0]
    while left > 0 and open_:
        share = max(1, left // len(open_))
        for i in list(open_):
            add = min(share, sizes[i] - take[i], left)
            take[i] += add
            left -= add
            if take[i] >= sizes[i]:
                open_.remove(i)
            if left == 0:
                break
    return take


def sample_queries(counts: np.ndarray, method: str, size: int, seed: int = 0, *,
                   head_share: float = HEAD_SHARE, torso_share: float = TORSO_SHARE) -> Sample:
    """A query set of ``size`` distinct queries (all of them when the log has no more).

    Raises:
        ValueError: an unknown method, size < 1, or counts not sorted most searched first.
    """
    if method not in METHODS:
        raise ValueError(f"method {method!r} is not one of {', '.join(METHODS)}")
    if isinstance(size, bool) or int(size) != size or size < 1:
        raise ValueError(f"size of {size!r} must be a whole number of at least 1")
    c = np.asarray(counts, dtype=float)
    band = bands(c, head_share, torso_share)
    n = c.size
    rng = np.random.default_rng(seed)
    strata: np.ndarray
    if size >= n:
        idx, pi = np.arange(n), np.ones(n)
        strata = np.array(["all"] * n)
    elif method == "top":
        idx, pi = np.arange(size), np.ones(size)
        strata = np.array(["all"] * size)
    elif method == "uniform":
        idx = np.sort(rng.choice(n, size=size, replace=False))
        pi = np.full(size, size / n)
        strata = np.array(["all"] * size)
    elif method == "frequency":
        idx, pi = _pps(c, size, rng)
        strata = np.array(["all"] * idx.size)
    else:
        sizes = np.array([(band == b).sum() for b in range(len(BANDS))])
        take = _allocate(sizes, size)
        parts, pis, names = [], [], []
        for b in range(len(BANDS)):
            members = np.flatnonzero(band == b)
            if take[b] == 0:
                continue
            picked = np.sort(rng.choice(members, size=take[b], replace=False))
            parts.append(picked)
            pis.append(np.full(take[b], take[b] / members.size))
            names += [BANDS[b]] * int(take[b])
        order = np.argsort(np.concatenate(parts), kind="stable")
        idx = np.concatenate(parts)[order]
        pi = np.concatenate(pis)[order]
        strata = np.array(names)[order]
    pi = np.minimum(pi, 1.0)
    return Sample(idx, c[idx] / pi, pi, strata.tolist(), pi >= 1.0 - 1e-12,
                  [BANDS[b] for b in band[idx]])
