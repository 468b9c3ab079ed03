"""A run in progress: what its stages share, and what the run gives when it ends."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchgrade.core.records import Collection, Document, SearchHits
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.lifecycle import RunGuard, RunTakenOver
from searchgrade.engine.run.plan import RunPlan
from searchgrade.engine.run.stage_runner import LocalRunner, StageRunner
from searchgrade.engine.store import Store

if TYPE_CHECKING:
    from searchgrade.engine.llm.client import LLMClient

Progress = Callable[[str, int, int], None]
#: Called as on_usage(stage, counters) with a stage's LLM accounting so far (engine.llm.accounting.StageUsage).
UsageCallback = Callable[[str, dict[str, float]], None]
#: Called as on_complete(store, run_id) once a run is complete and stored (e.g. the report layer
#: keeping its first Results page: viewmodels.results.keep_first_view). It must not raise: the
#: run is complete by then.
OnComplete = Callable[[Store, str], None]


@dataclass
class RunOutcome:
    run_id: str
    status: str
    skipped: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass
class RunContext:
    """A run in progress: what the stages share (engine/run/stages.py)."""

    collection: Collection
    config: RunConfig
    store: Store
    data_dir: Path
    run_id: str
    plan: RunPlan
    client: LLMClient | None
    progress: Progress | None
    on_usage: UsageCallback | None
    #: This process's token for the run (engine.store.new_owner).
    owner: str | None = None
    timings: dict[str, float] = field(default_factory=dict)
    stats: dict[str, Any] = field(default_factory=dict)
    stage: str = "starting"
    guard: RunGuard | None = None
    #: Where the heavy stages run (engine/run/stage_runner.py): here unless a caller passes another.
    runner: StageRunner = field(default_factory=LocalRunner)
    #: (strategy, query id) -> results a stopped run already stored (a resume keeps them).
    stored_hits: dict[tuple[str, str], SearchHits] = field(default_factory=dict)
    #: A panel's per-judge grades (engine/judges/panel.py), stored with the run's grades.
    judge_rows: list[tuple[Any, ...]] = field(default_factory=list)
    #: The collection's documents by id.
    docs_by_id: dict[str, Document] = field(init=False)

    def __post_init__(self) -> None:
        self.docs_by_id = {d.doc_id: d for d in self.collection.documents}

    def check(self) -> None:
        """Stop here if the run was cancelled or taken over (engine/run/lifecycle.py)."""
        if self.guard is not None:
            self.guard.check()

    def report(self, stage: str, done: int, total: int) -> None:
        """Progress, and a point where a cancel takes effect."""
        self.check()
        if self.progress is not None:
            self.progress(stage, done, total)

    def enter(self, stage: str) -> None:
        self.check()
        self.stage = stage
        self.store.update_run(self.run_id, stage=stage, timings=self.timings)

    @contextmanager
    def timed_stage(self, stage: str, *, add: bool = False) -> Iterator[None]:
        """Enter ``stage`` and keep its seconds in ``timings[stage]`` once it is done; with ``add``,
        added to what an earlier attempt of the run spent on it (a resume does only what is missing)."""
        self.enter(stage)
        started = time.perf_counter()
        yield
        self.timings[stage] = (self.timings.get(stage, 0.0) if add else 0.0) + time.perf_counter() - started

    @contextmanager
    def transaction(self) -> Iterator[Any]:
        """A store transaction, in which this process still owns the run (else RunTakenOver)."""
        self.check()
        with self.store.transaction() as con:
            if self.owner is not None and not self.store.owns(con, self.run_id, self.owner):
                raise RunTakenOver(f"run {self.run_id} was resumed by another process; this one stops")
            yield con
