"""Strategies added from the browser ("Add your search"): saved, edited, deleted, listed.

A saved strategy is its ``[strategy.NAME]`` table as it was typed (what a strategies file would
hold: ``env:`` names, never a secret), where it was typed (``declared_in``: "app" or "exposed
app") and the collection it was added for (the app offers it only there; None: any collection). It was checked before it was saved (viewmodels/add_search.py) and is checked
again whenever it is read into a declaration (engine/run/strategies.py ``saved_declarations``),
by the same code as a strategies file's.
"""

from __future__ import annotations

import json
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.store.connection import StoreConnection, now_utc


class SavedStrategiesMixin(StoreConnection):
    """The saved_strategies table."""

    def save_strategy(self, name: str, table: dict[str, Any], declared_in: str, *, replace: bool = False,
                      collection_name: str | None = None) -> None:
        """Keep one strategy's table (with its ``kind``), added for ``collection_name`` (None: any).

        Raises:
            SearchGradeError: a strategy of that name is saved already and ``replace`` is False.
        """
        now = now_utc()
        with self.transaction() as con:
            found = con.execute("SELECT created_at FROM saved_strategies WHERE name = ?", [name]).fetchone()
            if found is not None and not replace:
                raise SearchGradeError(f"a strategy named {name!r} is saved already: edit it, or give "
                                       "this one another name")
            con.execute("DELETE FROM saved_strategies WHERE name = ?", [name])
            con.execute("INSERT INTO saved_strategies (name, kind, declaration, declared_in, created_at, "
                        "updated_at, collection_name) VALUES (?, ?, ?, ?, ?, ?, ?)",
                        [name, str(table["kind"]), json.dumps(table, sort_keys=True), declared_in,
                         found[0] if found is not None else now, now, collection_name])

    def saved_strategies(self) -> dict[str, dict[str, Any]]:
        """Every saved strategy by name, in name order: ``{"table": {...}, "declared_in": ...,
        "updated_at": ..., "collection_name": ...}``."""
        rows = self._dicts("SELECT name, declaration, declared_in, updated_at, collection_name FROM saved_strategies "
                           "ORDER BY name", [])
        return {r["name"]: {"table": json.loads(r["declaration"]), "declared_in": r["declared_in"],
                            "updated_at": r["updated_at"], "collection_name": r["collection_name"]} for r in rows}

    def delete_strategy(self, name: str) -> bool:
        """Remove a saved strategy; False when there was none of that name. Runs that used it
        keep their own copy of the declaration."""
        with self.transaction() as con:
            found = con.execute("SELECT count(*) FROM saved_strategies WHERE name = ?", [name]).fetchone()[0]
            con.execute("DELETE FROM saved_strategies WHERE name = ?", [name])
        return bool(found)
