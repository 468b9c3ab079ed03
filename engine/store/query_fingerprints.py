"""Which runs evaluated the same query set: one key per run, equal exactly when the runs hold the
same queries (ids and texts). Trends joins two runs of a collection into one line only then."""

from __future__ import annotations

from collections.abc import Sequence


class QueryFingerprintsMixin:
    def query_set_keys(self, run_ids: Sequence[str]) -> dict[str, str]:
        """run id -> the md5 of its queries' ids and texts in id order (runs without queries absent)."""
        if not run_ids:
            return {}
        rows = self._dicts(
            "SELECT run_id, md5(string_agg(query_id || chr(9) || text, chr(10) ORDER BY query_id)) AS key "
            "FROM queries WHERE list_contains(?, run_id) GROUP BY run_id", [list(run_ids)])
        return {r["run_id"]: r["key"] for r in rows}
