"""The dashboard's view models as they were on main at 090b02f, before issue 12 made them fast.

Kept only so that bench/bench_dashboard.py can time them side by side with the current ones in
the same run; not part of searchgrade, and nothing outside bench/ imports it. The files are
copies of engine/report/*.py, engine/statistics/bootstrap.py and engine/store/dashboard.py at that commit,
with their imports pointed here.
"""

from __future__ import annotations

from bench.dashboard_baseline.store_reads import DashboardReadsMixin as _BaselineReads
from searchgrade.engine.store import Store


class BaselineStore(_BaselineReads, Store):
    """Today's store with the dashboard's SQL as it was at 090b02f (its other reads are unchanged)."""
