"""Splitting a run's queries into tuning and held-out parts, before the first trial.

Seeded and stratified by query type (natural vs keyword, say): each type's queries are shuffled
with the seed and ``heldout_share`` of them (rounded, at least one of a type with two or more) are
held out, so both parts have the run's mix. With fewer than ``KFOLD_BELOW`` queries a single split
leaves too few held-out queries for an interval: the queries are dealt into ``folds`` folds instead
(stratified the same way) and each fold is held out once while the others tune (cross-validation).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

#: Below this many queries, k-fold cross-validation instead of one split.
KFOLD_BELOW = 50
#: The share of queries held out in a single split.
HELDOUT_SHARE = 0.3
#: Folds of the cross-validation.
FOLDS = 5


@dataclass(frozen=True)
class Split:
    """One or more (tuning, held-out) parts of the same queries.

    Attributes:
        method: "holdout" or "k-fold".
        folds: (tuning ids, held-out ids) for each fold; one pair for "holdout". The held-out
            parts are disjoint and, in k-fold, cover every query.
    """

    method: str
    folds: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]

    @property
    def tuning(self) -> list[str]:
        """Every query some fold tuned on (all of them in k-fold), sorted."""
        return sorted({q for tuning, _ in self.folds for q in tuning})

    @property
    def heldout(self) -> list[str]:
        """Every query some fold held out (all of them in k-fold), sorted."""
        return sorted({q for _, heldout in self.folds for q in heldout})

    def to_json(self) -> dict[str, object]:
        out: dict[str, object] = {"method": self.method, "tuning": self.tuning, "heldout": self.heldout}
        if self.method == "k-fold":
            out["folds"] = [list(heldout) for _, heldout in self.folds]
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, object]) -> Split:
        if d["method"] == "k-fold":
            everyone = list(d["heldout"])  # type: ignore[arg-type]
            folds = tuple((tuple(q for q in everyone if q not in set(f)), tuple(f)) for f in d["folds"])  # type: ignore[union-attr]
            return cls("k-fold", folds)
        return cls("holdout", ((tuple(d["tuning"]), tuple(d["heldout"])),))  # type: ignore[arg-type]


def _by_type(query_ids: Sequence[str], types: Mapping[str, str], seed: int) -> list[list[str]]:
    groups: dict[str, list[str]] = {}
    for qid in sorted(query_ids):
        groups.setdefault(types.get(qid, ""), []).append(qid)
    rng = random.Random(seed)
    out = []
    for name in sorted(groups):
        ids = groups[name]
        rng.shuffle(ids)
        out.append(ids)
    return out


def split_queries(query_ids: Sequence[str], types: Mapping[str, str] | None = None, *, seed: int = 0,
                  heldout_share: float = HELDOUT_SHARE, folds: int = FOLDS,
                  kfold_below: int = KFOLD_BELOW) -> Split:
    """The split of ``query_ids`` (see the module); the same ids, types and seed give the same split.

    Raises:
        ValueError: fewer than two queries, or a share outside (0, 1).
    """
    if len(set(query_ids)) < 2:
        raise ValueError(f"{len(set(query_ids))} queries cannot be split into tuning and held-out parts: "
                         "tuning needs at least 2")
    if not 0 < heldout_share < 1:
        raise ValueError(f"heldout_share of {heldout_share} is not in (0, 1)")
    groups = _by_type(list(dict.fromkeys(query_ids)), types or {}, seed)
    everyone = sorted(q for g in groups for q in g)
    if len(everyone) < kfold_below:
        n_folds = min(folds, len(everyone))
        dealt: list[list[str]] = [[] for _ in range(n_folds)]
        position = 0
        for group in groups:  # dealt in turn across types, so each fold keeps the mix
            for qid in group:
                dealt[position % n_folds].append(qid)
                position += 1
        return Split("k-fold", tuple((tuple(q for q in everyone if q not in set(f)), tuple(sorted(f)))
                                     for f in dealt))
    heldout: list[str] = []
    for group in groups:
        n = round(len(group) * heldout_share)
        if len(group) >= 2:
            n = min(max(n, 1), len(group) - 1)
        heldout.extend(group[:n])
    held = set(heldout)
    return Split("holdout", ((tuple(q for q in everyone if q not in held), tuple(sorted(heldout))),))
