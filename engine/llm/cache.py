"""The cache of LLM results (generated queries, grades), shared by every run.

An entry is keyed by (kind, key), where key is the sha256 of everything that determines the
reply: for a grade, the query text, the document content, the judge model and the prompt version.
Only valid replies are cached; a failure is retried by the next run. The store's table
``llm_cache`` holds the entries across runs; ``MemoryCache`` does the same in memory (tests).
While a stage runs, ``CacheWriter`` writes valid results as they come, so a killed run loses little.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, NamedTuple, Protocol


class CacheEntry(NamedTuple):
    key: str
    model: str
    prompt_version: str
    payload: dict[str, Any]


class LLMCache(Protocol):
    def get_many(self, kind: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """The payloads found, by key."""
        ...

    def put_many(self, kind: str, entries: Iterable[CacheEntry]) -> None:
        """Store entries; an existing key keeps its first payload."""
        ...


def cache_key(*parts: Any) -> str:
    """sha256 of the parts as a JSON array (unambiguous, unlike plain concatenation)."""
    blob = json.dumps(list(parts), ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class MemoryCache:
    """An in-process LLMCache."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.entries: dict[tuple[str, str], CacheEntry] = {}

    def get_many(self, kind: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        with self._lock:
            return {k: self.entries[(kind, k)].payload for k in keys if (kind, k) in self.entries}

    def put_many(self, kind: str, entries: Iterable[CacheEntry]) -> None:
        with self._lock:
            for entry in entries:
                self.entries.setdefault((kind, entry.key), entry)

    def __len__(self) -> int:
        return len(self.entries)


class StoreCache:
    """An LLMCache in the run store's ``llm_cache`` table (searchgrade.engine.store.Store)."""

    def __init__(self, store: Any) -> None:
        self.store = store

    def get_many(self, kind: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        return self.store.llm_cache_get(kind, keys)

    def put_many(self, kind: str, entries: Iterable[CacheEntry]) -> None:
        self.store.llm_cache_put(kind, [tuple(e) for e in entries])


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
