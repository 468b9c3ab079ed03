"""What the LLM costs, per stage: the counters (thread-safe), and the same in a few words for the
app's live progress and the CLI's bars."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass, fields


@dataclass
class StageUsage:
    """What one stage (e.g. "querygen", "judge") cost."""

    #: HTTP requests sent, retries and rejected negotiation attempts included.
    requests: int = 0
    #: Calls that ended with a valid reply.
    ok: int = 0
    #: Calls that ended without one (recorded as failures).
    failures: int = 0
    #: Replies that were not valid JSON for the schema (each one retried or failed).
    invalid_replies: int = 0
    #: Requests repeated after a timeout, connection error, 429 or 5xx.
    retries: int = 0
    #: Items answered from the cache, without a call.
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    #: Sum of the wall time of every request, seconds.
    latency_s: float = 0.0


class Usage:
    """Thread-safe per-stage accounting."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stages: dict[str, StageUsage] = {}

    def add(self, stage: str, **deltas: float) -> None:
        with self._lock:
            usage = self._stages.setdefault(stage, StageUsage())
            for name, delta in deltas.items():
                setattr(usage, name, getattr(usage, name) + delta)

    def snapshot(self) -> dict[str, dict[str, float]]:
        """Stage -> counter -> value, a copy."""
        with self._lock:
            return {stage: asdict(u) for stage, u in self._stages.items()}


USAGE_FIELDS = tuple(f.name for f in fields(StageUsage))


def usage_counts(counters: Mapping[str, float]) -> dict[str, int]:
    """What a person wants to know of a stage's counters (StageUsage):
    calls and tokens always, then cached, retried and failed where there are any."""
    counts = {
        "calls": int(counters.get("requests", 0)),
        "tokens": int(counters.get("prompt_tokens", 0) + counters.get("completion_tokens", 0)),
    }
    for name, counter in (("cached", "cache_hits"), ("retried", "retries"), ("failed", "failures")):
        if counters.get(counter):
            counts[name] = int(counters[counter])
    return counts


def usage_text(counters: Mapping[str, float]) -> str:
    """ "12 calls · 3,456 tokens · 5 cached · 1 failed"."""
    counts = usage_counts(counters)
    calls = counts.pop("calls")
    parts = [f"{calls} {'call' if calls == 1 else 'calls'}", f"{counts.pop('tokens'):,} tokens"]
    parts += [f"{n:,} {name}" for name, n in counts.items()]
    return " · ".join(parts)


def usage_postfix(counters: Mapping[str, float]) -> str:
    """ "calls=12 tokens=3456 cached=5 failed=1": a progress bar's postfix."""
    return " ".join(f"{name}={n}" for name, n in usage_counts(counters).items())
