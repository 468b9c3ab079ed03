"""The tools that start work or watch it: start_evaluation, run_progress, estimate_cost.

A start is of a collection (the agent picks the strategies, the mode and a sample size) or of a
suite (``start_suite``: the suite's next run, its frozen queries and saved settings, made by
``run_suite`` as `searchgrade suite run` makes it: server/mcp/suites.py).

A started run runs as the app's runs do, a background job (server/jobs.py) with the run created
in the store before any work and a heartbeat while it works, in a worker process of its own
(worker.py) so that it outlives the MCP session that started it, and the server too. One run at
a time per store: a start while a run is running is refused.

Bounds (the operator's, McpSettings): nothing starts without --allow-runs; a run samples at most
--max-queries queries (an LLM run generates at most that many; a suite with more frozen queries is
refused, never sampled); an LLM run (a suite's too) is estimated first
(engine/run/estimate.py, the numbers of `searchgrade evaluate --dry-run`), the estimate is
returned before it starts, and a run above --max-tokens is refused. The LLM's model and endpoint
are the server's environment's (SEARCHGRADE_LLM_MODEL, OPENAI_BASE_URL): an agent cannot point the
key anywhere.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from searchgrade.core.records import Collection, SearchGradeError
from searchgrade.engine.paths import DEMO_DIR, DEMO_NAME
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.request import RunRequest
from searchgrade.engine.run.request import run_config as build_run_config
from searchgrade.engine.store import Store
from searchgrade.server.mcp import suites
from searchgrade.server.mcp.settings import McpSettings
from searchgrade.server.mcp.worker import PROGRESS_DIR, progress_path

#: Grading modes an agent may start: the collection's judgments, the LLM judge, or both.
MODES = ("qrels", "llm", "qrels_llm")
#: How long start_evaluation waits for the job to create its run (loading the collection first).
RUN_ID_WAIT_S = 120.0
#: Run statuses after which nothing more happens to a run.
FINAL = ("complete", "failed", "cancelled", "interrupted")

#: Run id -> the worker process this server started for it (reaped when it ends).
_WORKERS: dict[str, subprocess.Popen] = {}
_LOCK = threading.Lock()
#: Held from the check that no run is running to the new run's id.
_START = threading.Lock()


class RefusedError(SearchGradeError):
    """A start the server's limits do not allow (read-only, over the token ceiling)."""


READ_ONLY = ("this MCP server is read-only: start_evaluation needs the server started with "
             "`searchgrade mcp --allow-runs` (ask its operator); every read tool works")


@dataclass(frozen=True)
class Target:
    """A collection an agent may evaluate: where it is and the name runs record."""

    name: str
    path: Path


def resolve_collection(settings: McpSettings, store: Store, collection: str) -> Target:
    """'demo', the collection of a stored run (by name), or a folder inside --collections-root."""
    text = (collection or "").strip()
    if text == DEMO_NAME:
        return Target(DEMO_NAME, DEMO_DIR)
    for run in store.list_runs(text):
        if Path(run.collection_path).exists():
            return Target(text, Path(run.collection_path))
    root = settings.collections_root
    if root is not None and text:
        candidate = (root / text).resolve()
        if candidate.is_relative_to(root.resolve()) and candidate.exists():
            return Target(candidate.name, candidate)
    where = f", or a folder inside {root}" if root is not None else ""
    raise SearchGradeError(f"collection {collection!r} is not one this server may read: use 'demo', the name of "
                           f"a collection of a stored run (list_runs){where}")


def run_request(settings: McpSettings, mode: str, strategies: list[str] | None, max_queries: int | None,
                name: str | None, k: int, judge_models: list[str] | None = None) -> RunRequest:
    """What an agent asks for, as every surface asks it, within the operator's bounds: at most
    --max-queries queries (an LLM run writes at most that many), the LLM of the server's
    environment (a panel's judges are models on it: an agent names no endpoint), the operator's
    strategies file and the strategies added in the app."""
    from searchgrade.engine.run.strategies import declarations

    if mode not in MODES:
        raise SearchGradeError(f"mode {mode!r} is not one of {', '.join(MODES)}")
    for judge in judge_models or []:
        if "@" in judge and "://" in judge:
            raise SearchGradeError(f"judge_models names {judge!r}, a model on an endpoint of its own: an agent names "
                                   "models on the server's endpoint only (the operator sets endpoints)")
    bound = settings.max_queries if max_queries is None else min(max_queries, settings.max_queries)
    docs = None
    if mode == "llm":
        from searchgrade.engine.llm.querygen import QueryGenSettings

        qg = QueryGenSettings()
        per_doc = qg.n_natural + qg.n_keyword
        if bound < per_doc:
            raise SearchGradeError(f"max_queries of {bound} is below the {per_doc} queries an LLM run writes per "
                                   "document: ask for more")
        docs = min(qg.n_docs, bound // per_doc)
    return RunRequest(qrels=mode != "llm", llm=mode != "qrels", name=name, k=k,
                      judge_models=tuple(judge_models or ()),
                      strategies=tuple(strategies) if strategies else None,
                      declared=declarations(settings.strategies_file, settings.data_dir, strategies),
                      max_queries=None if mode == "llm" else bound, docs=docs)


def run_config(settings: McpSettings, mode: str, strategies: list[str] | None, max_queries: int | None,
               name: str | None, k: int, judge_models: list[str] | None = None) -> RunConfig:
    """The run an agent asks for, within the operator's bounds (checked as every surface's is)."""
    return build_run_config(run_request(settings, mode, strategies, max_queries, name, k, judge_models))


def _load(target: Target) -> Collection:
    from searchgrade.engine.collections import load_collection

    return load_collection(target.path)


def _estimate(collection: Collection, config: RunConfig, store: Store) -> dict[str, Any]:
    from searchgrade.viewmodels.evaluate import cost_estimate

    e = cost_estimate(collection, config, store)

    def stage(s: Any) -> dict[str, Any] | None:
        return None if s is None else {"calls": s.calls, "cached": s.cached, "prompt_tokens": s.prompt_tokens,
                                       "completion_tokens": s.completion_tokens, "upper_bound": s.upper_bound}
    return {"queries": e.queries, "calls": e.calls, "tokens": e.tokens, "query_generation": stage(e.generation),
            "judge": stage(e.judge), "lines": e.lines(), "notes": e.notes}


def estimate_cost(settings: McpSettings, store: Store, collection: str | None, mode: str | None = None,
                  strategies: list[str] | None = None, max_queries: int | None = None,
                  suite: str | None = None, judge_models: list[str] | None = None) -> dict[str, Any]:
    """The dry-run estimate of a run (calls and tokens), and whether the server's ceiling allows it;
    ``suite``: of the suite's next run (its frozen queries and configuration)."""
    if suite is not None:
        _suite_alone(collection=collection, mode=mode, strategies=strategies, max_queries=max_queries,
                     judge_models=judge_models)
        record, config = _suite_run_parts(settings, store, suite)
        out = _suite_estimate(store, record, config)
        out.update(suite=record.name, collection=record.collection_name, mode=record.mode)
    else:
        target = resolve_collection(settings, store, _needs_collection(collection))
        mode = mode or "llm"
        config = run_config(settings, mode, strategies, max_queries, None, 10, judge_models)
        out = _estimate(_load(target), config, store)
        out.update(collection=target.name, mode=mode)
    out.update(max_tokens=settings.max_tokens, within_ceiling=out["tokens"] <= settings.max_tokens or not config.uses_llm,
               dry_run="nothing was indexed, searched, prompted or stored")
    return out


def _needs_collection(collection: str | None) -> str:
    if not collection:
        raise SearchGradeError("give collection ('demo', a collection of list_runs) or suite (a suite of list_runs)")
    return collection


def _suite_alone(**given: Any) -> None:
    """A suite's run is the suite's: its collection, queries and settings cannot be asked for."""
    asked = sorted(k for k, v in given.items() if v is not None)
    if asked:
        raise SearchGradeError(f"a suite's run evaluates the suite's own collection, frozen queries and settings: "
                               f"give suite without {', '.join(asked)} (or collection without suite)")


def _suite_run_parts(settings: McpSettings, store: Store, name: str) -> tuple[Any, RunConfig]:
    """The suite and its next run's configuration, within the server's query bound (a suite's
    queries are frozen: it is refused, never sampled)."""
    from searchgrade.engine.suites.definition import suite_config

    suite = store.get_suite(name)
    if len(suite.query_ids) > settings.max_queries:
        raise RefusedError(f"refused: suite {suite.name} evaluates {len(suite.query_ids)} frozen queries, above this "
                           f"server's --max-queries of {settings.max_queries} (a suite's queries are not sampled); "
                           f"ask the operator to raise it, or run `searchgrade suite run {suite.name}`")
    config = suite_config(suite)
    config.check_environment()
    return suite, config


def _suite_estimate(store: Store, suite: Any, config: RunConfig) -> dict[str, Any]:
    """The dry-run estimate of the suite's next run, over its collection as that run evaluates it."""
    from searchgrade.engine.suites.definition import suite_collection

    return _estimate(suite_collection(suite, store)[0], config, store)


def _ceiling(settings: McpSettings, estimate: dict[str, Any]) -> None:
    if estimate["tokens"] > settings.max_tokens:
        raise RefusedError(f"refused: the estimate is ~{estimate['tokens']:,} tokens, above this server's "
                           f"ceiling of {settings.max_tokens:,} (--max-tokens); ask for fewer queries "
                           f"(max_queries) or ask the operator to raise it. Estimate: "
                           + "; ".join(estimate["lines"]))


def _one_at_a_time(store: Store) -> None:
    running = [r.run_id for r in store.list_runs() if r.status == "running"]
    if running:
        raise RefusedError(f"run {running[0]} is still running in this store; poll run_progress until it "
                           "ends, then start again (one run at a time)")


def start_suite(settings: McpSettings, store: Store, name: str, note: str | None = None,
                accept_estimate: bool = False) -> dict[str, Any]:
    """A new run of suite ``name`` in a worker, as `searchgrade suite run NAME` makes it (an LLM
    suite: its estimate first, refused above the ceiling); its run id."""
    if not settings.allow_runs:
        raise RefusedError(READ_ONLY)
    suite, config = _suite_run_parts(settings, store, name)
    out: dict[str, Any] = {"suite": suite.name, "collection": suite.collection_name, "mode": suite.mode,
                           "strategies": list(config.strategies), "queries": len(suite.query_ids)}
    if config.uses_llm:
        estimate = _suite_estimate(store, suite, config)
        out["estimate"] = estimate
        _ceiling(settings, estimate)
        if not accept_estimate:
            out.update(started=False, next="the run is within the ceiling: call start_evaluation again with "
                                           "accept_estimate=true to start it")
            return out
    with _START:
        _one_at_a_time(store)
        run_id = _spawn(settings, {"suite": suite.name, "note": note})
    out.update(started=True, run_id=run_id,
               next="poll run_progress(run_id) until done; run_summary(run_id) then has the suite's verdict "
                    "against its previous complete run")
    return out


def start_evaluation(settings: McpSettings, store: Store, collection: str | None, mode: str | None = None,
                     strategies: list[str] | None = None, max_queries: int | None = None,
                     name: str | None = None, k: int | None = None, accept_estimate: bool = False,
                     suite: str | None = None, note: str | None = None,
                     judge_models: list[str] | None = None) -> dict[str, Any]:
    """Start a run in the background and return its id (an LLM run: its estimate first); with
    ``suite``, a new run of that suite (start_suite)."""
    if not settings.allow_runs:
        raise RefusedError(READ_ONLY)
    if suite is not None:
        _suite_alone(collection=collection, mode=mode, strategies=strategies, max_queries=max_queries, name=name,
                     k=k, judge_models=judge_models)
        return start_suite(settings, store, suite, note, accept_estimate)
    if note is not None:
        raise SearchGradeError("note goes with suite (a note on a suite's run); a run's name is name")
    target = resolve_collection(settings, store, _needs_collection(collection))
    mode = mode or "qrels"
    config = run_config(settings, mode, strategies, max_queries, name, 10 if k is None else k, judge_models)
    out: dict[str, Any] = {"collection": target.name, "mode": mode, "strategies": list(config.strategies)}
    if config.uses_llm:
        estimate = _estimate(_load(target), config, store)
        out["estimate"] = estimate
        _ceiling(settings, estimate)
        if not accept_estimate:
            out.update(started=False, next="the run is within the ceiling: call start_evaluation again with "
                                           "accept_estimate=true to start it")
            return out
    else:
        out["queries_at_most"] = config.max_queries
    with _START:  # two sessions of one HTTP server starting at once: one of them waits, then is refused
        _one_at_a_time(store)
        run_id = _spawn(settings, {"collection_path": str(target.path), "label": target.name,
                                   "config": config.to_json()})
    out.update(started=True, run_id=run_id, next="poll run_progress(run_id) until done, then run_summary")
    return out


def _spawn(settings: McpSettings, work: dict[str, Any]) -> str:
    """Start the run in a worker process of its own (server/mcp/worker.py); its run id.

    ``work``: a collection's run (collection_path, label, config) or a suite's run (suite, note).
    """
    request = json.dumps({"data_dir": str(settings.data_dir), **work})
    logs = settings.data_dir / PROGRESS_DIR
    logs.mkdir(parents=True, exist_ok=True)
    log = open(logs / f"worker-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}.log", "w")  # noqa: SIM115
    worker = subprocess.Popen([sys.executable, "-m", "searchgrade.server.mcp.worker"], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True)
    log.close()
    worker.stdin.write(request)
    worker.stdin.close()
    first: list[str] = []
    reader = threading.Thread(target=lambda: first.append(worker.stdout.readline()), daemon=True)
    reader.start()
    reader.join(RUN_ID_WAIT_S)
    line = json.loads(first[0]) if first and first[0].strip() else {}
    if "run_id" not in line:
        why = line.get("error") or (f"no run was created within {RUN_ID_WAIT_S:g} s (the worker's log: {log.name}; "
                                    "list_runs shows the run if it appears later)")
        raise SearchGradeError(f"the run did not start: {why}")
    with _LOCK:
        _WORKERS[line["run_id"]] = worker
    return line["run_id"]


def run_progress(settings: McpSettings, store: Store, run_id: str) -> dict[str, Any]:
    """A run's status from the store, and its stages when this server's job works on it."""
    run = store.get_run(run_id)
    out: dict[str, Any] = {"run_id": run.run_id, "status": run.status, "stage": run.stage,
                           "done": run.status in FINAL, "error": run.error,
                           "queries": run.stats.get("queries")}
    with _LOCK:
        worker = _WORKERS.get(run.run_id)
    if worker is not None:
        worker.poll()  # reaps a worker that ended (no zombie)
    try:
        job = json.loads(progress_path(settings.data_dir, run.run_id).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        job = None  # not started through MCP, or its worker has not written yet
    if job is not None:
        out["job"] = {k: v for k, v in job.items() if k not in ("error", "pid")}
        out["error"] = out["error"] or job.get("error")
    found = suites.entry_of_run(store, run.run_id)
    if found is not None:
        name, entry = found
        if out["done"] and entry["status"] == suites.RUNNING and job is not None and _working(job):
            # The run is complete; its worker is comparing it with the suite's previous run (and alerting).
            out.update(done=False, stage="comparing with the suite's previous complete run")
        out["suite"] = {"suite": name, "status": entry["status"], "verdict": suites.verdict_word(entry),
                        "baseline_run_id": entry["baseline_run_id"], "error": entry["error"]}
    if out["done"]:
        out["next"] = "run_summary(run_id)" if run.status == "complete" else f"`searchgrade resume {run.run_id}`"
    return out


def _working(job: dict[str, Any]) -> bool:
    """Whether a worker's job is still at work: active by its last progress, and its process alive."""
    if job.get("state") not in ("starting", "running"):
        return False
    pid = job.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except OSError:
        return False  # gone (killed): nothing more will happen
    return True
