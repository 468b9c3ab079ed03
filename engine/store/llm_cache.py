"""The LLM result cache: generated queries and grades by content, model and prompt version.

Keys are made by engine.llm.cache; here they are stored and looked up in bulk.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from searchgrade.engine.store.connection import StoreConnection, now_utc


class LLMCacheMixin(StoreConnection):
    """Bulk get and put of cached LLM payloads."""

    def llm_cache_get(self, kind: str, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Cached LLM payloads of one kind ("judge", "querygen") by key; keys not cached are absent."""
        keys = list(dict.fromkeys(keys))
        if not keys:
            return {}
        import pyarrow as pa

        with self.connect() as con:
            # A join against the keys, not list_contains: the cache grows to many thousand rows.
            con.register("_llm_keys", pa.table({"cache_key": keys}))
            try:
                rows = con.execute(
                    "SELECT c.cache_key, c.payload FROM llm_cache c JOIN _llm_keys k "
                    "ON c.cache_key = k.cache_key WHERE c.kind = ?",
                    [kind],
                ).fetchall()
            finally:
                con.unregister("_llm_keys")
        return {key: json.loads(payload) for key, payload in rows}

    def llm_cache_put(self, kind: str, entries: Iterable[tuple[str, str, str, dict[str, Any]]]) -> None:
        """Cache (key, model, prompt_version, payload) entries; a key already cached keeps its payload."""
        now = now_utc()
        rows: dict[str, tuple] = {}
        for key, model, prompt_version, payload in entries:
            rows.setdefault(key, (kind, key, model, prompt_version, json.dumps(payload), now))
        if not rows:
            return
        import pyarrow as pa

        columns = ["kind", "cache_key", "model", "prompt_version", "payload", "created_at"]
        arrow = pa.table({c: list(col) for c, col in zip(columns, zip(*rows.values(), strict=True),
                                                          strict=True)})
        with self.connect() as con:
            con.register("_llm_entries", arrow)
            try:
                con.execute(
                    f"INSERT INTO llm_cache ({', '.join(columns)}) SELECT {', '.join(columns)} "  # noqa: S608 - constant names, values bound
                    "FROM _llm_entries ON CONFLICT DO NOTHING"
                )
            finally:
                con.unregister("_llm_entries")
