"""The run store: one DuckDB file holding every run, its queries, results, grades and metrics.

All SQL of the project lives in this package, one module per concern, composed into ``Store``:

- connection: opening the file (retried while another process holds its lock), transactions,
  bulk inserts, and applying the migrations at open.
- migrations: the schema as numbered, forward-only migrations (append-only).
- runs: a run's lifecycle (``RunRecord``): create, update, heartbeat, cancel, finish, list, mark
  stale, reopen.
- results: a run's contents written in one transaction, and read back.
- dashboard: the SQL aggregates the dashboard's view models read; run_summary: the Trends rows.
- failures: why queries fail: the one definition of a failed top 1, the evidence of each cause,
  the run's query vectors and the exact search of the failed queries (engine/failures/).
- relevance_recompute: migration 9, stored runs' mean relevance and shares divided by k.
- llm_cache: cached LLM replies (generated queries, grades).
- usage: a run's LLM accounting per stage.
- labels: human labels of a collection, review queues, per-query lexical overlap.
- traffic: query logs read from their files, query sets sampled from them, click stats.
- clicks: what click judgments cover of each ranking; team-draft interleaving results.
- holes: the judgments a run's qrels mark as pooled but not judged, and the reads of the metrics
  for incomplete judgments (holes in the rankings, the pool's judged non-relevant counts).
- strategies: strategies added from the browser ("Add your search").
- suites: evaluation suites, their runs, schedule slots (the lease) and alerts.
- query_fingerprints: one key per run for the queries it evaluated, equal exactly when two runs
  evaluated the same queries (Trends' breaks); the query sets sampled from traffic are traffic's.
- tuning: tuning studies and their trials (`searchgrade tune`), stored as each trial ends.
- judges: each judge's grades of a run's pairs, the grades asked again (test-retest), calibrated
  judge prompts.
"""

from __future__ import annotations

from searchgrade.engine.store.clicks import ClicksMixin
from searchgrade.engine.store.connection import DB_FILENAME, StoreConnection
from searchgrade.engine.store.dashboard import DashboardReadsMixin
from searchgrade.engine.store.failures import FailuresMixin
from searchgrade.engine.store.holes import HolesMixin
from searchgrade.engine.store.judges import JudgesMixin
from searchgrade.engine.store.labels import LabelsMixin
from searchgrade.engine.store.llm_cache import LLMCacheMixin
from searchgrade.engine.store.migrations import MIGRATIONS
from searchgrade.engine.store.query_fingerprints import QueryFingerprintsMixin
from searchgrade.engine.store.results import ResultsMixin
from searchgrade.engine.store.runs import (
    RUN_STATUSES,
    STOPPED_STATUSES,
    Beat,
    RunRecord,
    RunsMixin,
    heartbeat_timeout_s,
    new_owner,
    new_run_id,
)
from searchgrade.engine.store.strategies import SavedStrategiesMixin
from searchgrade.engine.store.suites import SuiteRecord, SuitesMixin
from searchgrade.engine.store.traffic import TrafficMixin
from searchgrade.engine.store.tuning import TuningMixin
from searchgrade.engine.store.usage import LLMUsageMixin


class Store(RunsMixin, ResultsMixin, DashboardReadsMixin, FailuresMixin, LLMCacheMixin, LLMUsageMixin, LabelsMixin,
            TrafficMixin, ClicksMixin, HolesMixin, SavedStrategiesMixin, SuitesMixin, QueryFingerprintsMixin,
            TuningMixin, JudgesMixin, StoreConnection):
    """The DuckDB run store at ``data_dir/searchgrade.duckdb``."""


__all__ = ["DB_FILENAME", "MIGRATIONS", "RUN_STATUSES", "STOPPED_STATUSES", "Beat", "RunRecord", "Store",
           "SuiteRecord", "heartbeat_timeout_s", "new_owner", "new_run_id"]
