"""A run's summary and its per-query metrics as MCP resources, for an agent to attach.

``searchgrade://runs/{run_id}/summary`` is run_summary's JSON; ``searchgrade://runs/{run_id}/metrics.csv``
is the file `searchgrade export RUN --format csv` writes (engine/export.py writes it here too,
into a temporary folder), one row per strategy, query, metric and cut-off. A CSV larger than
MAX_CSV_BYTES is refused with the command that writes it to a file instead.
"""

from __future__ import annotations

import tempfile
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.store import Store
from searchgrade.server.mcp import reads
from searchgrade.server.mcp.payload import error_line, scrub, to_json
from searchgrade.server.mcp.settings import McpSettings

SUMMARY_URI = "searchgrade://runs/{run_id}/summary"
CSV_URI = "searchgrade://runs/{run_id}/metrics.csv"
MAX_CSV_BYTES = 20 * 1024 * 1024


def metrics_csv(store: Store, run_id: str) -> str:
    """The run's per-query metrics CSV, as `searchgrade export RUN --format csv` writes it."""
    from searchgrade.engine.export import export_metrics

    with tempfile.TemporaryDirectory(prefix="searchgrade-mcp-") as folder:
        path = export_metrics(store, run_id, "csv", folder)
        size = path.stat().st_size
        if size > MAX_CSV_BYTES:
            raise SearchGradeError(f"run {run_id}'s metrics CSV is {size / 1024**2:.0f} MB, above the "
                                   f"{MAX_CSV_BYTES // 1024**2} MB a resource carries: write it with "
                                   f"`searchgrade export {run_id} --format csv --out DIR`")
        return path.read_text(encoding="utf-8")


def register(server: Any, store: Store, settings: McpSettings) -> None:
    from mcp.server.mcpserver.exceptions import ResourceError

    def answer(work: Any) -> str:
        try:
            return work()
        except SearchGradeError as exc:
            raise ResourceError(error_line(str(exc), settings.data_dir, settings.collections_root)) from None

    @server.resource(SUMMARY_URI, name="run_summary", mime_type="application/json",
                     description="A run's summary: headline, per-strategy metrics with CIs, judged@k, failures")
    def summary(run_id: str) -> str:
        return answer(lambda: to_json(reads.run_summary(store, run_id)))

    @server.resource(CSV_URI, name="run_metrics_csv", mime_type="text/csv",
                     description="A run's per-query metrics as `searchgrade export --format csv` writes them")
    def metrics(run_id: str) -> str:
        return answer(lambda: scrub(metrics_csv(store, run_id)))
