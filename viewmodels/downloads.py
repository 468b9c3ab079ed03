"""What the Results screen offers to download: per-query metrics (CSV), the ranked results (CSV)
and TREC run files (zip); every score is the export's strictly decreasing one (engine/export.py)."""

from __future__ import annotations

import io
import tempfile
import zipfile

from searchgrade.engine.export import export_metrics, export_run
from searchgrade.engine.store import Store


def per_query_csv(store: Store, run_id: str) -> bytes:
    """The run's per-query metrics as CSV (searchgrade.engine.export's format)."""
    with tempfile.TemporaryDirectory() as tmp:
        return export_metrics(store, run_id, "csv", tmp).read_bytes()


def results_csv(store: Store, run_id: str) -> bytes:
    """The run's ranked results as CSV (searchgrade.engine.export's format)."""
    with tempfile.TemporaryDirectory() as tmp:
        _, path = export_run(store, run_id, "csv", tmp)
        return path.read_bytes()


def trec_zip(store: Store, run_id: str) -> bytes:
    """The run's TREC run files, one per strategy, zipped."""
    buffer = io.BytesIO()
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as zf:
        for path in export_run(store, run_id, "trec", tmp):
            zf.write(path, arcname=path.name)
    return buffer.getvalue()
