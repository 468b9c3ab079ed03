"""The evaluation pipeline's entry points: a new run (``run_evaluation``) or a stopped one resumed
(``resume_run``), stored as one run.

A run is created as 'running' before any work and ends 'complete' only after its last write; a
failure ends it 'failed', and Ctrl-C or Cancel in the app 'cancelled', each with what it completed
(stage timings and the error). While it runs, its heartbeat is kept (engine/run/lifecycle.py): a run
whose process dies is seen 'interrupted' once the heartbeat is stale. Results, grades and metrics
of a run land in one transaction, so a run that did not finish never holds half of them.

What a run does is its ``RunConfig`` (engine/run/config.py), what it evaluates its plan
(engine/run/plan.py), and its work the stages of engine/run/stages.py: how results are graded, by
qrels, the LLM judge or both, is engine/run/grading.py; how they are scored, engine/run/scoring.py.
Where the heavy stages run (here, or on Ray) is the ``StageRunner`` a caller passes
(engine/run/stage_runner.py). Once a run is complete, the caller's ``on_complete`` hook is called (the
CLI and the app keep its first Results page: viewmodels.results.keep_first_view).

LLM-mode runs can be resumed (`resume_run`): generated queries are stored as soon as they exist
and every valid LLM reply is cached within seconds, so a resumed run reuses the queries, gets
completed judgments from the cache and sends only the missing calls.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from searchgrade.core.records import Collection, SearchGradeError
from searchgrade.engine.collections import load_collection
from searchgrade.engine.llm.client import LLMClient
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.context import OnComplete, Progress, RunContext, RunOutcome, UsageCallback
from searchgrade.engine.run.grading import UsageSink, flush_quietly
from searchgrade.engine.run.lifecycle import RunCancelled, RunGuard, RunTakenOver
from searchgrade.engine.run.plan import check_trained_reranker, plan_run, prepare
from searchgrade.engine.run.stage_runner import LocalRunner, StageRunner
from searchgrade.engine.run.stages import run_stages
from searchgrade.engine.store import Store, heartbeat_timeout_s, new_owner

__all__ = ["RunOutcome", "resume_run", "run_evaluation"]


def _client(config: RunConfig) -> LLMClient | None:
    return LLMClient(config.llm) if config.uses_llm else None


def run_evaluation(
    collection: Collection,
    config: RunConfig,
    store: Store,
    data_dir: str | Path,
    *,
    progress: Progress | None = None,
    on_run_created: Callable[[str], None] | None = None,
    on_usage: UsageCallback | None = None,
    on_complete: OnComplete | None = None,
    runner: StageRunner | None = None,
) -> RunOutcome:
    """Evaluate every strategy on a collection and store the run.

    Args:
        collection: The corpus, with queries and qrels for mode "qrels".
        config: What to run.
        store: The run store (engine.store.Store).
        data_dir: Where index artifacts and caches live.
        progress: Called as progress(stage, done, total) while work advances.
        on_run_created: Called with the run id as soon as the run row exists.
        on_usage: Called as on_usage(stage, counters) with the LLM accounting of a stage so far.
        on_complete: Called as on_complete(store, run_id) once the run is complete.
        runner: Where the heavy stages run (engine/run/stage_runner.py; e.g. engine.ray.stage_runner.RayRunner);
            None runs them here.

    Returns:
        The run id and its final status. Raises on failure after marking the run failed.
    """
    runner = runner if runner is not None else LocalRunner()
    config, device_note = runner.device(config)
    # How the collection was loaded (columns, queries and qrels files), so a resume loads it alike.
    config = prepare(replace(config, collection_fields=dict(collection.fields)))
    check_trained_reranker(config, data_dir)
    plan = plan_run(collection, config, store)
    if device_note is not None:
        plan.notes.append(device_note)
    client = _client(config)
    name = config.name or f"{collection.name} {time.strftime('%Y-%m-%d %H:%M')}"
    owner = new_owner()
    run_id = store.create_run(
        name=name,
        collection_name=collection.name,
        collection_path=str(collection.path),
        mode=config.mode,
        label_source=plan.label_source,
        grade_min=plan.grade_min,
        grade_max=plan.grade_max,
        threshold=plan.threshold,
        k=config.k,
        depth=config.retrieval_depth,
        config=config.to_json(),
        notes=[*collection.notes, *plan.notes],
        owner=owner,
    )
    if on_run_created is not None:
        on_run_created(run_id)
    return _execute(RunContext(collection, config, store, Path(data_dir), run_id, plan, client,
                               progress, on_usage, owner=owner, runner=runner), on_complete)


def resume_run(
    run_id: str,
    store: Store,
    data_dir: str | Path,
    *,
    collection: Collection | None = None,
    base_url: str | None = None,
    declared_in: str = "",
    concurrency: int | None = None,
    progress: Progress | None = None,
    on_usage: UsageCallback | None = None,
    on_complete: OnComplete | None = None,
    runner: StageRunner | None = None,
) -> RunOutcome:
    """Continue an interrupted, cancelled or failed run with its stored config; only missing work is done.

    Stored queries are reused, completed LLM replies come from the cache (none is asked again),
    and the run's results, grades and metrics are written once, at the end, as for a new run.

    Args:
        run_id: The run (or an unambiguous prefix).
        collection: The corpus; None loads it from the path and fields the run stored.
        base_url, concurrency: Override the stored LLM endpoint or concurrency (the model and
            prompts stay, or the cache would not apply).
        declared_in: Where ``base_url`` was typed ("" for the operator's: ``--base-url``; "app" or
            "exposed app" from a page: its connections then go through core/outbound.py's policy).
        on_complete: Called as on_complete(store, run_id) once the run is complete.
        runner: Where the missing work runs (engine/run/stage_runner.py); None runs it here.
    """
    run = store.get_run(run_id)
    failed_queries = store.failed_query_counts(run.run_id)
    if run.status == "complete" and not failed_queries:
        raise SearchGradeError(f"run {run.run_id} is already complete; start a new one with "
                               "`searchgrade evaluate`")
    if run.status == "running":
        raise SearchGradeError(
            f"run {run.run_id} is still running ({store.running_where(run.run_id)}); stop or cancel "
            f"it first, or wait: without a heartbeat for {heartbeat_timeout_s():g} s it counts as interrupted")
    config = RunConfig.from_json(run.config)
    if config.llm is not None and (base_url is not None or concurrency is not None):
        overrides: dict[str, Any] = {}
        if base_url is not None:
            overrides.update(base_url=base_url, declared_in=declared_in)
        if concurrency is not None:
            overrides["concurrency"] = concurrency
        config = replace(config, llm=replace(config.llm, **overrides))
    runner = runner if runner is not None else LocalRunner()
    config, _ = runner.device(config)
    if collection is None:
        collection = load_collection(run.collection_path, **config.collection_fields)
    config = prepare(config)
    check_trained_reranker(config, data_dir)  # gone since the run started: stop before any work
    plan = plan_run(collection, config, store)
    client = _client(config)
    owner = new_owner()
    store.reopen_run(run.run_id, owner, allow_complete=bool(failed_queries))
    stored = {key: hits for key, hits in store.stored_hits(run.run_id).items()
              if key[0] in config.strategies}
    return _execute(RunContext(collection, config, store, Path(data_dir), run.run_id, plan, client,
                               progress, on_usage, owner=owner, timings=dict(run.timings),
                               stats=dict(run.stats), stored_hits=stored, runner=runner), on_complete)


def _execute(ctx: RunContext, on_complete: OnComplete | None) -> RunOutcome:
    """The run's stages under its heartbeat, and its end: complete, cancelled or failed."""
    usage = UsageSink(ctx) if ctx.client is not None else None
    with RunGuard(ctx.store, ctx.run_id, ctx.owner or "") as ctx.guard:
        try:
            outcome = run_stages(ctx, usage)
        except RunTakenOver:
            # Another process resumed the run: its status and contents are that process's now.
            flush_quietly(usage)
            raise
        except (KeyboardInterrupt, RunCancelled) as exc:
            flush_quietly(usage)
            how = "by the user (Ctrl-C)" if isinstance(exc, KeyboardInterrupt) else "from the app"
            _stop(ctx, "cancelled", f"cancelled {how} during {ctx.stage}; what was done is kept for resume")
            raise
        except BaseException as exc:
            flush_quietly(usage)
            message = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            _stop(ctx, "failed", f"{type(exc).__name__}: {message}")
            raise
        ctx.store.finish_run(ctx.run_id, "complete", owner=ctx.owner)
    if on_complete is not None:
        on_complete(ctx.store, ctx.run_id)
    outcome.status = "complete"
    return outcome


def _stop(ctx: RunContext, status: str, error: str) -> None:
    ctx.store.update_run(ctx.run_id, timings=ctx.timings, stats=ctx.stats)
    ctx.store.finish_run(ctx.run_id, status, error, owner=ctx.owner)
