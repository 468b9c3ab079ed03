"""The judging pool: which retrieved pairs are judged, and which of a run's judgments are holes.

Pooling (as TREC does it) judges the union of every strategy's top D once per (query, document)
pair, D the pool depth (``--pool-depth``; by default every result a run keeps); a strategy may have
its own depth. A result below the pool depth of its strategy and in no other strategy's pool stays
unjudged: ``judged@k`` and the metrics for incomplete judgments show it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from searchgrade.core.records import Grade, Query, SearchGradeError, SearchHits


@dataclass(frozen=True)
class PoolDepth:
    """How deep each strategy's list goes into the pool: ``default`` (None: every kept result) or
    the strategy's own depth."""

    default: int | None = None
    per_strategy: dict[str, int] = field(default_factory=dict)

    def of(self, strategy: str) -> int | None:
        return self.per_strategy.get(strategy, self.default)

    @property
    def is_everything(self) -> bool:
        return self.default is None and not self.per_strategy

    def to_json(self) -> dict[str, object]:
        return {"default": self.default, "per_strategy": dict(self.per_strategy)}

    @classmethod
    def from_json(cls, value: Mapping[str, object] | None) -> PoolDepth:
        if not value:
            return cls()
        return cls(value.get("default"), dict(value.get("per_strategy") or {}))  # type: ignore[arg-type]

    def text(self) -> str:
        """ "the top 10 of every strategy (ann: 20)"."""
        base = "every kept result" if self.default is None else f"the top {self.default}"
        extra = ", ".join(f"{s}: {d}" for s, d in sorted(self.per_strategy.items()))
        return f"{base} of every strategy" + (f" ({extra})" if extra else "")


def parse_pool_depth(text: str, strategies: Sequence[str] | None = None) -> PoolDepth:
    """``--pool-depth``: ``10`` (every strategy's top 10) or ``10,ann=20`` (ann's top 20).

    Raises:
        SearchGradeError: a depth that is not a positive integer, or a strategy the run lacks.
    """
    default: int | None = None
    per: dict[str, int] = {}
    for part in (p.strip() for p in str(text).split(",")):
        if not part:
            continue
        name, sep, value = (x.strip() for x in part.rpartition("="))
        if not value.isdigit() or int(value) < 1:
            raise SearchGradeError(f"--pool-depth {text}: {value!r} is not a positive depth; use e.g. "
                                   "--pool-depth 10 or --pool-depth 10,ann=20")
        if sep:
            if strategies is not None and name not in strategies:
                raise SearchGradeError(f"--pool-depth {text}: {name!r} is not a strategy of the run; use one of "
                                       f"{', '.join(strategies)}")
            per[name] = int(value)
        else:
            default = int(value)
    if default is None and not per:
        raise SearchGradeError(f"--pool-depth {text!r} names no depth; use e.g. --pool-depth 10")
    return PoolDepth(default, per)


def pool_pairs(queries: Sequence[Query], hits: Mapping[str, Sequence[SearchHits | None]],
               depth: PoolDepth) -> list[tuple[str, str]]:
    """The pool: every strategy's top D per query, each (query, document) pair once, in query
    order, then strategy, then rank."""
    seen: set[tuple[str, str]] = set()
    pairs: list[tuple[str, str]] = []
    for i, query in enumerate(queries):
        for strategy, strategy_hits in hits.items():
            h = strategy_hits[i]
            if h is None:
                continue
            d = depth.of(strategy)
            for doc in h.docs if d is None else h.docs[:d]:
                pair = (query.query_id, doc.doc_id)
                if pair not in seen:
                    seen.add(pair)
                    pairs.append(pair)
    return pairs


def still_pooled_unjudged(pooled: Mapping[str, set[str]], grades: Iterable[Grade]) -> dict[str, set[str]]:
    """The qrels' pooled-but-unjudged pairs still so once a run is graded: a pair people rated, or
    the judge graded, is judged now (its grade is no longer the qrels' 0 with no reason)."""
    from_qrels = {(g.query_id, g.doc_id) for g in grades
                  if g.source == "human" and g.reason is None and g.grade == 0}
    out: dict[str, set[str]] = {}
    for qid, docs in pooled.items():
        kept = {d for d in docs if (qid, d) in from_qrels}
        if kept:
            out[qid] = kept
    return out
