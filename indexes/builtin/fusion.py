"""Fusion of ranked lists: RRF, weighted RRF, CombSUM, CombMNZ and a convex combination.

A fusion is a ``Fusion`` record (method, normalisation, weights, the RRF constant, the depth of
each list), written on the command line and in strategies files as one string, parsed once by
``parse_fusion``::

    rrf                              sum 1 / (k + rank)
    wrrf(w=0.7)                      sum w_i / (k + rank): weights 0.7 and 0.3 for two lists
    combsum(norm=zscore)             sum of normalised scores
    combmnz(norm=minmax)             that sum times the number of lists holding the document
                                     (with w=, times the sum of their weights: ranx's wmnz)
    convex(w=0.3,norm=minmax)        w * norm(first) + (1 - w) * norm(second)
    combsum(norm=sum,depth=50:100)   a depth per list (first list 50, second 100)

``w=`` gives the first list's weight (the others share 1 - w evenly) or every list's weight
(``w=0.2:0.3:0.5``). ``k=`` is the RRF constant and ``depth=`` the entries of each list that take
part; absent, they come from the settings (``--rrf-k``, ``--fusion-depth``).

The normalisations are ranx's (ranx/normalization), applied to each list after it is cut to its
depth, per query: min-max (s - min) / max(max - min, 1e-9); z-score (s - mean) / max(std, 1e-9)
with the population std; sum (s - min) / max(sum - n * min, 1e-9). A document absent from a list
gets 0 from it (after normalisation, as ranx's ``wsum`` and ``comb_sum`` do). ``norm=none`` fuses
the raw scores. RRF's rank is the 1-based position in the cut list; a document repeated within
one list counts once, at its best position. Equal fused scores are ordered by doc id, so the
result never depends on hash or input order. tests/indexes/builtin/test_fusion_vs_ranx.py checks
every method ranx also has against ``ranx.fuse``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from searchgrade.core.records import ScoredDoc, SearchGradeError

#: The fusion methods, by name: how each document's fused score is made.
METHODS = ("rrf", "wrrf", "combsum", "combmnz", "convex")
#: Methods that fuse scores (and so take a normalisation); rrf and wrrf fuse ranks.
SCORE_METHODS = ("combsum", "combmnz", "convex")
#: The normalisations of a list's scores before a score method fuses them.
NORMS = ("minmax", "zscore", "sum", "none")
#: ranx's floor of every normaliser's denominator.
EPSILON = 1e-9


@dataclass(frozen=True)
class Fusion:
    """How lists are fused (see the module for each method's formula).

    Attributes:
        method: one of METHODS.
        norm: one of NORMS (score methods only; "minmax" by default).
        weights: one weight per list, or a single weight for the first list (the others share
            1 - w evenly); None: equal weights (wrrf), 0.5 for two lists (convex).
        rrf_k: the RRF constant (rrf, wrrf).
        depth: entries of each list that take part: one number for all, or one per list.
    """

    method: str = "rrf"
    norm: str = "minmax"
    weights: tuple[float, ...] | None = None
    rrf_k: float = 60
    depth: int | tuple[int, ...] = 100

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise SearchGradeError(f"fusion method {self.method!r} is not known: use one of "
                                   f"{', '.join(METHODS)}")
        if self.norm not in NORMS:
            raise SearchGradeError(f"fusion norm {self.norm!r} is not known: use one of {', '.join(NORMS)}")
        if self.weights is not None and any(not math.isfinite(w) or w < 0 for w in self.weights):
            raise SearchGradeError(f"fusion weights {list(self.weights)} must be numbers >= 0, e.g. w=0.3")
        if not (math.isfinite(self.rrf_k) and self.rrf_k >= 0):
            raise SearchGradeError(f"rrf_k must be >= 0, got {self.rrf_k!r}")
        depths = self.depth if isinstance(self.depth, tuple) else (self.depth,)
        if not depths or any(isinstance(d, bool) or not isinstance(d, int) or d < 1 for d in depths):
            raise SearchGradeError(f"fusion depth must be whole numbers >= 1, got {self.depth!r}")

    def list_weights(self, n: int) -> tuple[float, ...]:
        """The weight of each of n lists."""
        if self.weights is None:
            return (1.0,) * n if self.method != "convex" else (1.0 / n,) * n
        if len(self.weights) == n:
            return self.weights
        if len(self.weights) == 1 and n >= 2:
            w = self.weights[0]
            if w > 1:
                raise SearchGradeError(f"fusion weight w={w} of the first list must be in [0, 1] "
                                       "(the others share 1 - w)")
            return (w, *((1.0 - w) / (n - 1),) * (n - 1))
        raise SearchGradeError(f"fusion has {len(self.weights)} weights for {n} lists: give one "
                               f"(the first list's) or {n}")

    def list_depths(self, n: int) -> tuple[int, ...]:
        """The depth of each of n lists."""
        if isinstance(self.depth, int):
            return (self.depth,) * n
        if len(self.depth) == 1:
            return self.depth * n
        if len(self.depth) != n:
            raise SearchGradeError(f"fusion has {len(self.depth)} depths for {n} lists: give one or {n}")
        return self.depth

    @property
    def max_depth(self) -> int:
        return self.depth if isinstance(self.depth, int) else max(self.depth)

    def text(self) -> str:
        """The canonical string (``parse_fusion(f.text()) == f``): what is stored and shown."""
        params = []
        if self.method in SCORE_METHODS:
            params.append(f"norm={self.norm}")
        if self.weights is not None:
            params.append("w=" + ":".join(_num(w) for w in self.weights))
        if self.method in ("rrf", "wrrf"):
            params.append(f"k={_num(self.rrf_k)}")
        depth = self.depth if isinstance(self.depth, int) else ":".join(str(d) for d in self.depth)
        params.append(f"depth={depth}")
        return f"{self.method}({','.join(params)})"


def _num(x: float) -> str:
    return f"{x:g}" if float(x) != int(x) else str(int(x))


_FORM = re.compile(r"\s*([a-z]+)\s*(?:\((.*)\))?\s*")


def parse_fusion(text: str, *, rrf_k: float = 60, depth: int = 100, where: str = "--fusion") -> Fusion:
    """A fusion string (see the module) as a Fusion; ``rrf_k`` and ``depth`` where it gives none.

    Raises:
        SearchGradeError: one line naming the part that is wrong and an example of a right one.
    """
    example = "e.g. rrf, wrrf(w=0.7), combmnz(norm=zscore) or convex(w=0.3,norm=minmax)"
    found = _FORM.fullmatch(str(text)) if isinstance(text, str) else None
    if found is None:
        raise SearchGradeError(f"{where} {text!r} is not a fusion: {example}")
    method, inner = found.group(1), found.group(2)
    fields: dict[str, object] = {"method": method, "rrf_k": rrf_k, "depth": depth}
    for part in filter(None, (p.strip() for p in (inner or "").split(","))):
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        parse = _PARAMS.get(key)
        if not sep or parse is None:
            raise SearchGradeError(f"{where} {text!r}: {part!r} is not a parameter: use norm=, w=, k= or "
                                   f"depth=, {example}")
        try:
            fields[_FIELD[key]] = parse(value)
        except ValueError:
            raise SearchGradeError(f"{where} {text!r}: {key}={value!r} is not a number: {example}") from None
    if method not in METHODS:
        raise SearchGradeError(f"{where} {text!r}: unknown method {method!r}: use one of {', '.join(METHODS)}")
    if method not in SCORE_METHODS and "norm" in (inner or ""):
        raise SearchGradeError(f"{where} {text!r}: {method} fuses ranks, not scores: drop norm= (it goes "
                               "with combsum, combmnz, convex)")
    return Fusion(**fields)  # type: ignore[arg-type]


def _numbers(value: str, kind: Callable[[str], float]) -> tuple:
    return tuple(kind(v) for v in value.split(":"))


def _one_or_many(values: tuple) -> object:
    return values[0] if len(values) == 1 else values


_PARAMS: dict[str, Callable[[str], object]] = {
    "norm": str,
    "w": lambda v: _numbers(v, float),
    "k": float,
    "depth": lambda v: _one_or_many(_numbers(v, int)),
}
_FIELD = {"norm": "norm", "w": "weights", "k": "rrf_k", "depth": "depth"}


def normalise(scores: Sequence[float], norm: str) -> list[float]:
    """One list's scores normalised as ranx does (see the module); "none" leaves them."""
    if norm == "none" or not scores:
        return list(scores)
    n = len(scores)
    if norm == "minmax":
        low, high = min(scores), max(scores)
        denominator = max(high - low, EPSILON)
        return [(s - low) / denominator for s in scores]
    if norm == "zscore":
        mean = sum(scores) / n
        std = math.sqrt(sum((s - mean) ** 2 for s in scores) / n)
        denominator = max(std, EPSILON)
        return [(s - mean) / denominator for s in scores]
    if norm == "sum":
        low = min(scores)
        denominator = max(sum(scores) - low * n, EPSILON)
        return [(s - low) / denominator for s in scores]
    raise ValueError(f"norm {norm!r} is not one of {', '.join(NORMS)}")


def _first_positions(ranking: Sequence[ScoredDoc], depth: int) -> list[tuple[int, ScoredDoc]]:
    """(1-based position, entry) of the first ``depth`` entries, a repeated document kept at its
    best (first) position; the positions of the others are unchanged by the repeat."""
    seen: set[str] = set()
    out = []
    for position, doc in enumerate(ranking[:depth], start=1):
        if doc.doc_id not in seen:
            seen.add(doc.doc_id)
            out.append((position, doc))
    return out


def fuse(lists: Sequence[Sequence[ScoredDoc]], fusion: Fusion = Fusion()) -> list[ScoredDoc]:
    """Fuse ranked lists (each best first) as ``fusion`` says.

    Example: rrf of [a, b] and [b, c] with k = 60 gives b = 1/62 + 1/61 = 0.03252,
    a = 1/61 = 0.01639, c = 1/62 = 0.01613, so [b, a, c].

    Returns:
        Every document of the cut lists, best first, ranks 1..n. No lists or empty lists -> [].
    """
    n = len(lists)
    if n == 0:
        return []
    weights = fusion.list_weights(n)
    depths = fusion.list_depths(n)
    fused: dict[str, float] = {}
    presence: dict[str, float] = {}
    for ranking, weight, depth in zip(lists, weights, depths, strict=True):
        entries = _first_positions(ranking, depth)
        cut = [doc for _, doc in entries]
        if fusion.method in ("rrf", "wrrf"):
            w = 1.0 if fusion.method == "rrf" else weight
            contributions = [w / (fusion.rrf_k + position) for position, _ in entries]
        else:
            normalised = normalise([doc.score for doc in cut], fusion.norm)
            w = weight if fusion.method == "convex" or fusion.weights is not None else 1.0
            # CombMNZ multiplies the plain sum by the weights of the lists holding the document
            # (ranx's wmnz; with no weights, by their number).
            contributions = normalised if fusion.method == "combmnz" else [w * s for s in normalised]
        for doc, value in zip(cut, contributions, strict=True):
            fused[doc.doc_id] = fused.get(doc.doc_id, 0.0) + value
            presence[doc.doc_id] = presence.get(doc.doc_id, 0.0) + (
                weight if fusion.method == "combmnz" and fusion.weights is not None else 1.0)
    if fusion.method == "combmnz":
        fused = {doc_id: score * presence[doc_id] for doc_id, score in fused.items()}
    # Rounding keeps float noise (1/61 + 1/63 vs 1/63 + 1/61 summed in another order) from
    # breaking ties that are exact in real arithmetic.
    order = sorted(fused, key=lambda doc_id: (-round(fused[doc_id], 12), doc_id))
    return [ScoredDoc(doc_id, fused[doc_id], rank) for rank, doc_id in enumerate(order, start=1)]


def with_params(fusion: Fusion, **params: object) -> Fusion:
    """``fusion`` with some fields changed (a tuner's trial), checked again."""
    return replace(fusion, **params)  # type: ignore[arg-type]
