"""What a judge costs, and the cheapest judge whose decisions agree with people's as often as the
best judge's.

**Cost per 1,000 pairs** counts what was actually sent: a judge's prompt and completion tokens
over the pairs it sent (a cached grade costs nothing and is not counted), times 1,000; in US dollars
where ``--judge-price`` gives its price per million tokens (prompt and completion alike). A judge
that sent nothing (every grade from the cache) has no measured cost unless its repeats sent some.
A panel costs the sum of its judges (each judges every pair). **Latency** is the mean seconds of a
call.

**The rule** (``cheapest_sufficient``): the best judge is the one with the highest agreement (the
decision agreement; where no judge has one, the weighted kappa, and the words say so). A judge is
*sufficient* when its agreement is at least the low end of the best judge's 95% interval: within
what the queries can tell from the best. The recommendation is the cheapest sufficient judge in
dollars among those with a price (the others are named as left out), or by tokens when none has
one; ties go to the faster, then the better-agreeing. No judge with a measured cost: no
recommendation, and the words say why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from searchgrade.engine.statistics.judge_vs_human import Estimate


@dataclass(frozen=True)
class Cost:
    """What one judge's grading cost, per 1,000 pairs sent."""

    #: Pairs sent to the judge (calls that ended, valid or failed), cache hits excluded.
    pairs_sent: int
    tokens_per_1000: float | None
    usd_per_1000: float | None
    #: Mean seconds per call.
    latency_s: float | None
    #: US dollars per million tokens, where configured.
    price: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"tokens": None if self.tokens_per_1000 is None else round(self.tokens_per_1000),
                "usd": None if self.usd_per_1000 is None else round(self.usd_per_1000, 6)}

    def text(self) -> str:
        if self.tokens_per_1000 is None:
            return "no cost measured (no pair was sent: every grade came from the cache)"
        if self.usd_per_1000 is not None:
            return f"${self.usd_per_1000:,.4f} per 1,000 pairs ({self.tokens_per_1000:,.0f} tokens)"
        return f"{self.tokens_per_1000:,.0f} tokens per 1,000 pairs"


def stage_cost(counters: Mapping[str, float] | None, price: float | None) -> Cost:
    """A judge's Cost from its accounting stage's counters (engine/llm/accounting.py StageUsage)."""
    counters = counters or {}
    sent = int(counters.get("ok", 0) + counters.get("failures", 0))
    requests = int(counters.get("requests", 0))
    latency = counters.get("latency_s", 0.0) / requests if requests else None
    if not sent:
        return Cost(0, None, None, latency, price)
    tokens = 1000 * (counters.get("prompt_tokens", 0) + counters.get("completion_tokens", 0)) / sent
    return Cost(sent, tokens, tokens * price / 1e6 if price is not None else None, latency, price)


def panel_cost(members: Sequence[Cost]) -> Cost:
    """A panel's cost: every judge judges every pair, so the sum (unknown if any is unknown)."""
    def total(values: list[float | None]) -> float | None:
        return None if not values or any(v is None for v in values) else float(sum(values))  # type: ignore[arg-type]

    return Cost(min((c.pairs_sent for c in members), default=0), total([c.tokens_per_1000 for c in members]),
                total([c.usd_per_1000 for c in members]), total([c.latency_s for c in members]))


class Candidate(NamedTuple):
    name: str
    agreement: Estimate
    cost: Cost


@dataclass(frozen=True)
class Recommendation:
    #: The judge to use; None when the rule cannot choose.
    name: str | None
    #: The judges within the best one's interval.
    sufficient: list[str]
    #: The rule's reading, in words.
    text: str


def cheapest_sufficient(candidates: Sequence[Candidate], measure: str = "decision agreement") -> Recommendation:
    """The cheapest judge whose agreement is within the best judge's interval (see the module)."""
    scored = [c for c in candidates if c.agreement.value is not None]
    if not scored:
        return Recommendation(None, [], f"No judge has a {measure} to compare: no recommendation.")
    best = max(scored, key=lambda c: (c.agreement.value, c.agreement.low if c.agreement.low is not None else -1))
    floor = best.agreement.low if best.agreement.low is not None else best.agreement.value
    sufficient = [c for c in scored if c.agreement.value >= floor - 1e-12]
    priced = [c for c in sufficient if c.cost.usd_per_1000 is not None]
    unit = "usd_per_1000" if priced else "tokens_per_1000"
    costed = [c for c in sufficient if getattr(c.cost, unit) is not None]
    names = [c.name for c in sufficient]
    unpriced = [c.name for c in sufficient if priced and c.cost.usd_per_1000 is None]
    if not costed:
        return Recommendation(None, names, f"{len(sufficient)} judge(s) agree within the best one's interval "
                              f"({', '.join(names)}), but none has a measured cost (every grade came from the "
                              "cache): no recommendation.")
    pick = min(costed, key=lambda c: (getattr(c.cost, unit),
                                      c.cost.latency_s if c.cost.latency_s is not None else math.inf,
                                      -c.agreement.value, c.name))
    how = "in dollars" if priced else "in tokens"
    if len(sufficient) == 1:
        text = (f"{pick.name}: the best {measure} ({pick.agreement.value:.0%}), and no other judge comes "
                f"within its 95% interval ({floor:.0%} and up).")
    else:
        text = (f"{pick.name}: the cheapest {how}, {pick.cost.text()}, of the {len(sufficient)} judges that do as well "
                f"as the best one within its 95% interval (the best: {best.name}, {measure} "
                f"{best.agreement.value:.0%}; within: {floor:.0%} and up): {', '.join(names)}.")
    if unpriced:
        were = "was" if len(unpriced) == 1 else "were"
        text += (f" {', '.join(unpriced)} had no price and {were} left out of the comparison in dollars: a "
                 "--judge-price for each compares it too.")
    return Recommendation(pick.name, names, text)
