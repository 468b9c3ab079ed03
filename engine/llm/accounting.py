"""A stage's LLM accounting in a few words: for the app's live progress and the CLI's bars."""

from __future__ import annotations

from collections.abc import Mapping


def usage_counts(counters: Mapping[str, float]) -> dict[str, int]:
    """What a person wants to know of a stage's counters (engine.llm.client.StageUsage):
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
