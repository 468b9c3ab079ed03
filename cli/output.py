"""What commands print while they work: progress bars on stderr, notes and skipped strategies."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from searchgrade.engine.llm.accounting import usage_postfix

#: tqdm's bar without its rate (see Bars).
BAR_FORMAT = "{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}{postfix}]"


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
            # No rate: a stage that a cache answers at once jumps from 0 to its total in microseconds,
            # and tqdm's rate then read "137589098.94/s"; the time left says the pace well enough.
            bar = self._bars[stage] = tqdm(total=total, desc=stage, leave=True, file=sys.stderr,
                                           dynamic_ncols=True, bar_format=BAR_FORMAT)
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
    """The notes, then one line per distinct reason strategies were skipped for (three reranked
    strategies skipped because the reranker did not load are one line, not three)."""
    from searchgrade.viewmodels.runs import skipped_messages

    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    for line in skipped_messages(skipped):
        print(f"skipped: {line}", file=sys.stderr)
