"""What commands print while they work: progress bars on stderr, notes and skipped strategies."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from searchgrade.engine.llm.accounting import usage_postfix


class Bars:
    """One tqdm progress bar per stage, on stderr; LLM stages show their calls and tokens so far."""

    def __init__(self) -> None:
        self._bars: dict[str, Any] = {}
        self._usage: dict[str, str] = {}

    def set_usage(self, stage: str, counters: dict[str, float]) -> None:
        self._usage[stage] = usage_postfix(counters)

    def __call__(self, stage: str, done: int, total: int) -> None:
        from tqdm import tqdm

        bar = self._bars.get(stage)
        if bar is None:
            bar = self._bars[stage] = tqdm(total=total, desc=stage, unit="", leave=True,
                                           file=sys.stderr, dynamic_ncols=True)
        bar.total = total
        if stage in self._usage:
            bar.set_postfix_str(self._usage[stage], refresh=False)
        # update(), not n = done: tqdm derives the rate from updates.
        bar.update(max(0, done - bar.n))
        if done >= total:
            bar.close()

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()


def print_notes(notes: Sequence[str], skipped: dict[str, str]) -> None:
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    for strategy, reason in skipped.items():
        print(f"skipped {strategy}: {reason}", file=sys.stderr)
