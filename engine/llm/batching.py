"""Writing valid LLM results to the cache while a stage runs, so a killed run loses little."""

from __future__ import annotations

import time
from collections.abc import Callable

from searchgrade.engine.llm.cache import CacheEntry, LLMCache


class CacheWriter:
    """Buffers cache entries and writes them every ``every`` entries or ``interval_s`` seconds.

    Only the thread that consumes results writes, so the store sees one writer. ``on_flush`` runs
    after each write (the pipeline uses it to store the accounting increments in step).
    """

    def __init__(
        self,
        cache: LLMCache,
        kind: str,
        *,
        every: int = 16,
        interval_s: float = 2.0,
        on_flush: Callable[[], None] | None = None,
    ) -> None:
        self.cache = cache
        self.kind = kind
        self.every = max(1, every)
        self.interval_s = interval_s
        self.on_flush = on_flush
        self._buffer: list[CacheEntry] = []
        self._last = time.monotonic()

    def add(self, entry: CacheEntry) -> None:
        self._buffer.append(entry)
        if len(self._buffer) >= self.every or time.monotonic() - self._last >= self.interval_s:
            self.flush()

    def flush(self) -> None:
        if self._buffer:
            self.cache.put_many(self.kind, self._buffer)
            self._buffer = []
        self._last = time.monotonic()
        if self.on_flush is not None:
            self.on_flush()
