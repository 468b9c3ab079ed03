"""Background evaluation runs for the app: one thread per run, one registry per server process.

A Streamlit page script reruns on every interaction and a browser tab can close at any time, so
an evaluation never runs inside a page. The app asks :func:`start_job` for a run; the run happens
in a worker thread and reports into a :class:`Job` held in a module-level registry. Every session
of the same server (a refreshed tab, a second tab) reads the same registry, so it shows the same
run; closing a tab stops nothing. While a job is active, starting another returns the active one:
a second click never starts a duplicate run (the machine has few cores, and two runs would only
slow each other down).

A stopped run (interrupted, failed or cancelled) is resumed the same way, in a worker
(:func:`start_resume`, over :func:`searchgrade.engine.run.pipeline.resume_run`), and so is training a reranker
from a run's grades (:func:`start_training`). LLM stages report their calls and tokens so far into
the job (``Job.usage``), for the live progress; every stage knows when it started, so a page can
show the time left (``StageProgress.remaining_s``). :func:`cancel` stops a job at its next
progress step; the run is marked cancelled and keeps what it did, for resume.

The registry's lock guards only the in-memory jobs: it is never held while the store (DuckDB,
which may wait seconds for another process's file lock) is read or written.
"""

from __future__ import annotations

import threading
import time
import traceback
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.run.lifecycle import RunCancelled, RunTakenOver
from searchgrade.server.outbound import TypedEndpoint

#: Job states; "starting" and "running" are active. A job ends "complete", "failed", "cancelled"
#: or "interrupted" (another process resumed its run).
ACTIVE_STATES = ("starting", "running")


@dataclass
class StageProgress:
    stage: str
    done: int
    total: int
    #: time.time() when the stage first reported.
    started_at: float = field(default_factory=time.time)

    @property
    def fraction(self) -> float:
        return min(1.0, self.done / self.total) if self.total > 0 else 0.0

    @property
    def remaining_s(self) -> float | None:
        """Seconds left at the stage's pace so far (None before the first step is done)."""
        if self.done <= 0 or self.done >= self.total:
            return None
        return (time.time() - self.started_at) / self.done * (self.total - self.done)


@dataclass
class Job:
    """One evaluation run in the background, as the pages see it."""

    job_id: str
    collection: str
    started_at: float
    state: str = "starting"
    run_id: str | None = None
    #: stage -> progress, in the order stages first reported.
    stages: dict[str, StageProgress] = field(default_factory=dict)
    current_stage: str | None = None
    error: str | None = None
    skipped: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    finished_at: float | None = None
    #: "evaluate", "resume", "train" (a reranker from a run's grades; run_id is that run) or "tune"
    #: (a strategy of run_id tuned, engine/tuning/).
    kind: str = "evaluate"
    #: kind "train": the reranker's name (``--reranker-model trained:NAME``).
    reranker: str | None = None
    #: LLM stage -> its counters so far in this job (requests, tokens, cache_hits, failures, ...).
    usage: dict[str, dict[str, float]] = field(default_factory=dict)
    #: Cancel was asked: the worker stops at its next progress step.
    cancel_requested: bool = False

    @property
    def active(self) -> bool:
        return self.state in ACTIVE_STATES

    @property
    def elapsed_s(self) -> float:
        return (self.finished_at or time.time()) - self.started_at


_LOCK = threading.Lock()
_JOBS: dict[str, Job] = {}
_THREADS: dict[str, threading.Thread] = {}
#: Called with the job after it ends (e.g. to clear the app's caches).
_LISTENERS: list[Callable[[Job], None]] = []


def snapshot(job_id: str) -> Job | None:
    """A consistent copy of a job, safe to read while its worker writes."""
    with _LOCK:
        job = _JOBS.get(job_id)
        return _copy(job) if job else None


def active_job() -> Job | None:
    with _LOCK:
        for job in _JOBS.values():
            if job.active:
                return _copy(job)
    return None


def latest_job() -> Job | None:
    """The most recently started job of this process, active or not."""
    with _LOCK:
        if not _JOBS:
            return None
        return _copy(max(_JOBS.values(), key=lambda j: j.started_at))


def on_finish(listener: Callable[[Job], None]) -> None:
    """Register a callback run (in the worker thread) when any job ends; registered once per callable."""
    with _LOCK:
        if listener not in _LISTENERS:
            _LISTENERS.append(listener)


def start_job(
    load_collection: Callable[[], Any],
    config: Any,
    store: Any,
    data_dir: str | Path,
    *,
    label: str,
    run: Callable[..., Any] | None = None,
) -> tuple[Job, bool]:
    """Start an evaluation in a worker thread, unless one is already active.

    Args:
        load_collection: Returns the Collection to evaluate; called in the worker (loading a large
            corpus takes seconds).
        config: The engine.run.config.RunConfig.
        store: The run store.
        data_dir: Where index artifacts and caches live.
        label: The collection as the user named it, shown while it loads.
        run: The pipeline entry point (engine.run.pipeline.run_evaluation unless a test passes a fake);
            called with the keywords progress, on_run_created, on_usage and on_complete (the
            first Results page kept when the run completes: viewmodels.results.keep_first_view).

    Returns:
        (job, started): the new job and True, or the already active job and False.
    """
    if run is None:
        from searchgrade.engine.run.pipeline import run_evaluation as run
    from searchgrade.viewmodels.results import keep_first_view

    def body(report: _Reporter) -> Any:
        report.progress("load collection", 0, 1)
        collection = load_collection()
        report.progress("load collection", 1, 1)
        report.running(collection.notes)
        return run(collection, config, store, Path(data_dir), progress=report.progress,
                   on_run_created=report.created, on_usage=report.usage, on_complete=keep_first_view)

    return _start(label, "evaluate", body, store)


def start_resume(
    run_id: str,
    store: Any,
    data_dir: str | Path,
    *,
    label: str,
    endpoint: TypedEndpoint | None = None,
    resume: Callable[..., Any] | None = None,
) -> tuple[Job, bool]:
    """Resume a stopped (interrupted, failed or cancelled) run in a worker thread, unless a job is active.

    Args:
        run_id: The run to continue.
        endpoint: A new LLM endpoint typed on the page, as server/outbound.py's
            ``check_llm_endpoint`` checked and marked it (None: the one the run stored).
        resume: engine.run.pipeline.resume_run unless a test passes a fake (called with the
            keywords of :func:`start_job`'s ``run`` but on_run_created).

    Returns:
        (job, started) as :func:`start_job`.
    """
    if resume is None:
        from searchgrade.engine.run.pipeline import resume_run as resume
    from searchgrade.viewmodels.results import keep_first_view

    def body(report: _Reporter) -> Any:
        report.created(run_id)
        report.running([])
        typed = {"base_url": endpoint.base_url, "declared_in": endpoint.declared_in} if endpoint else {}
        return resume(run_id, store, Path(data_dir), progress=report.progress, on_usage=report.usage,
                      on_complete=keep_first_view, **typed)

    return _start(label, "resume", body, store)


def start_training(
    run_id: str,
    config: Any,
    store: Any,
    data_dir: str | Path,
    *,
    label: str,
    train: Callable[..., Any] | None = None,
) -> tuple[Job, bool]:
    """Train a reranker from a run's grades in a worker thread, unless a job is active.

    Args:
        run_id: The complete run whose grades train it.
        config: The engine.training.reranker.RerankerTrainingConfig.
        train: engine.training.reranker.train_reranker unless a test passes a fake.

    Returns:
        (job, started) as :func:`start_job`; the job's ``reranker`` is the name it trains.
    """
    if train is None:
        from searchgrade.engine.training.reranker import train_reranker as train

    def body(report: _Reporter) -> Any:
        report.created(run_id)
        report.running([])
        train(store, run_id, Path(data_dir), config, progress=report.progress)
        return _Done(run_id)

    return _start(label, "train", body, store, reranker=config.name)


def start_tuning(
    run_id: str,
    store: Any,
    data_dir: str | Path,
    *,
    label: str,
    strategy: str | None = None,
    trials: int = 50,
    time_budget_s: float | None = None,
    judge_budget: int | None = None,
    metric: str = "ndcg@10",
    tune: Callable[..., Any] | None = None,
) -> tuple[Job, bool]:
    """Tune one strategy of a complete run in a worker thread (engine/tuning/study.py), unless a
    job is active. ``judge_budget``: an LLM run's new pairs its judge may grade during tuning
    (None: the tuner's default); ``metric``: the metric@k it maximises. Progress is stage "tune": trials done of every fold's trials; the
    study and its trials are in the store (``store.tuning_studies(run_id)``), so a cancelled tuning
    resumes.

    Returns:
        (job, started) as :func:`start_job`.
    """
    if tune is None:
        from searchgrade.engine.tuning.study import run_study as tune

    def body(report: _Reporter) -> Any:
        report.created(run_id)
        report.running([])
        counts = {"done": 0, "total": trials}

        def ready(tuning: Any, split: Any) -> None:
            counts["total"] = trials * (len(split.folds) + (1 if split.method == "k-fold" else 0))
            report.progress("tune", 0, counts["total"])

        def trial(record: Any, tuning: Any) -> None:
            counts["done"] += 1
            report.progress("tune", counts["done"], counts["total"])

        tune(store, run_id, Path(data_dir), strategy=strategy, trials=trials, time_budget_s=time_budget_s,
             judge_budget=judge_budget, metric=metric, on_trial=trial, on_ready=ready)
        return _Done(run_id)

    return _start(label, "tune", body, store)


@dataclass
class _Done:
    """The outcome of a job that makes no run of its own."""

    run_id: str
    status: str = "complete"
    skipped: dict[str, str] = field(default_factory=dict)


def _start(label: str, kind: str, body: Callable[[_Reporter], Any], store: Any,
           reranker: str | None = None) -> tuple[Job, bool]:
    with _LOCK:
        for job in _JOBS.values():
            if job.active:
                return _copy(job), False
        job = Job(job_id=uuid.uuid4().hex[:12], collection=label, started_at=time.time(), kind=kind,
                  reranker=reranker)
        _JOBS[job.job_id] = job
        thread = threading.Thread(target=_work, args=(job.job_id, body, store),
                                  name=f"searchgrade-job-{job.job_id}", daemon=True)
        _THREADS[job.job_id] = thread
        thread.start()
        return _copy(job), True


def cancel(job_id: str, store: Any) -> Job | None:
    """Ask a job to stop; its run ends 'cancelled' (what was done is kept for resume).

    The worker stops at its next progress step; the run row is also asked to cancel, so the
    heartbeat of whichever process holds it sees it. Returns the job's snapshot (None if unknown).
    """
    with _LOCK:
        job = _JOBS.get(job_id)
        if job is None:
            return None
        if job.active:
            job.cancel_requested = True
        # A training job's run is its source run, complete: there is no run of its own to stop.
        run_id = job.run_id if job.active and job.kind != "train" else None
        snap = _copy(job)
    if run_id is not None:
        store.request_cancel(run_id)
    return snap


def wait(job_id: str, timeout_s: float | None = None) -> Job | None:
    """Block until a job's worker ends (tests, the CLI); returns its final snapshot."""
    thread = _THREADS.get(job_id)
    if thread is not None:
        thread.join(timeout_s)
    return snapshot(job_id)


class _Reporter:
    """What a worker's pipeline call reports into its job."""

    def __init__(self, job_id: str) -> None:
        self.job_id = job_id

    def progress(self, stage: str, done: int, total: int) -> None:
        with _LOCK:
            job = _JOBS[self.job_id]
            before = job.stages.get(stage)
            job.stages[stage] = StageProgress(stage, int(done), int(total),
                                              before.started_at if before else time.time())
            job.current_stage = stage
            cancelled = job.cancel_requested
        if cancelled:
            raise RunCancelled(f"job {self.job_id} was cancelled")

    def created(self, run_id: str) -> None:
        with _LOCK:
            _JOBS[self.job_id].run_id = run_id

    def usage(self, stage: str, counters: dict[str, float]) -> None:
        with _LOCK:
            _JOBS[self.job_id].usage[stage] = dict(counters)

    def running(self, notes: list[str]) -> None:
        with _LOCK:
            _JOBS[self.job_id].state = "running"
            _JOBS[self.job_id].notes = list(notes)


#: What a cancelled job says, by kind: a run keeps what it did, a reranker is not saved at all.
_CANCELLED = {
    "evaluate": "cancelled: what was done is kept; resume the run to finish it",
    "resume": "cancelled: what was done is kept; resume the run to finish it",
    "tune": "cancelled: the trials so far are kept in the store; tune again with the same settings to "
            "continue",
    "train": "cancelled: no reranker was saved (a reranker with that name trained before is kept); "
             "train it again to finish it",
}


def _work(job_id: str, body: Callable[[_Reporter], Any], store: Any) -> None:
    try:
        outcome = body(_Reporter(job_id))
        with _LOCK:
            job = _JOBS[job_id]
            job.run_id = outcome.run_id
            job.skipped = dict(outcome.skipped)
            job.state = "complete" if outcome.status == "complete" else outcome.status
    except RunCancelled:
        with _LOCK:
            kind = _JOBS[job_id].kind
        _fail(job_id, _CANCELLED.get(kind, _CANCELLED["evaluate"]), state="cancelled")
    except RunTakenOver as exc:
        _fail(job_id, str(exc), state="interrupted")
    except SearchGradeError as exc:
        _fail(job_id, exc.page_message)  # jobs are the app's: the page's phrasing
    except BaseException as exc:  # noqa: BLE001 - a worker must record every failure, not die silently
        traceback.print_exc()
        _fail(job_id, f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}".rstrip(": "))
    finally:
        with _LOCK:
            run_id = _JOBS[job_id].run_id
            needs_skipped = bool(run_id) and not _JOBS[job_id].skipped
        # A run skipped strategies: show the reasons even when it failed later. Read outside the
        # lock: the store may wait on another process.
        skipped: dict[str, str] = {}
        if needs_skipped:
            try:
                skipped = dict(store.get_run(run_id).skipped)
            except Exception:  # noqa: BLE001, S110 - best effort, the store may be what failed
                pass
        with _LOCK:
            job = _JOBS[job_id]
            if job.active:
                job.state = "failed"
                job.error = job.error or "the run stopped without a result"
            job.finished_at = time.time()
            if skipped and not job.skipped:
                job.skipped = skipped
            final = _copy(job)
            listeners = list(_LISTENERS)
        for listener in listeners:
            try:
                listener(final)
            except Exception:  # noqa: BLE001 - a listener must not break the worker
                traceback.print_exc()


def _fail(job_id: str, message: str, state: str = "failed") -> None:
    with _LOCK:
        job = _JOBS[job_id]
        job.state = state
        job.error = message


def _copy(job: Job) -> Job:
    return replace(job, stages={k: replace(v) for k, v in job.stages.items()},
                   skipped=dict(job.skipped), notes=list(job.notes),
                   usage={k: dict(v) for k, v in job.usage.items()})


def _reset_for_tests() -> None:
    """Forget finished jobs (tests only); active jobs are kept, their threads still run.

    A job is finished before its worker's last step has read it again (outside the lock), so
    the worker is joined first: forgetting the job under it would end the thread on a KeyError.
    """
    with _LOCK:
        finished = {j: _THREADS.get(j) for j, job in _JOBS.items() if not job.active}
    for thread in finished.values():
        if thread is not None:
            thread.join(timeout=30)
    with _LOCK:
        for job_id in finished:
            _JOBS.pop(job_id, None)
            _THREADS.pop(job_id, None)
