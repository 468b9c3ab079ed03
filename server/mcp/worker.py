"""A run an agent started, in a process of its own, so that it outlives the MCP session.

Over stdio the MCP server *is* the session: when the agent closes it, the SDK's client closes
stdin, waits two seconds and kills the server's process group (the MCP lifecycle's shutdown). A
run in a thread of the server would die with it. So start_evaluation starts this module in a new
session (its own process group) and hands it the run's configuration; here the run is a
background job exactly as the app's (server/jobs.py: the pipeline, its heartbeat, the first
Results page kept on completion); a suite's run is the job of the app's "Run now", ``run_suite``
(server/mcp/suites.py ``suite_job``): evaluated, compared with the suite's previous complete run,
alerted on, and only then ended. The worker prints the run id on its first stdout line as soon
as the run exists, then writes the job's stages to ``<data dir>/mcp/<run id>.json`` while it
works (what run_progress reads), and exits when the run ends. Killed, its run turns
``interrupted`` like any other and `searchgrade resume RUN` finishes it.

    python -m searchgrade.server.mcp.worker < request.json   # {data_dir, collection_path, label, config}
                                                             # or {data_dir, suite, note}
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

#: How often the worker writes its job's progress.
PROGRESS_EVERY_S = 0.5
#: The folder under the data directory where workers write their progress.
PROGRESS_DIR = "mcp"


def progress_path(data_dir: Path, run_id: str) -> Path:
    return Path(data_dir) / PROGRESS_DIR / f"{run_id}.json"


def job_json(job: Any) -> dict[str, Any]:
    """A job's state and stages as run_progress shows them."""
    return {"state": job.state, "elapsed_s": round(job.elapsed_s, 1), "pid": os.getpid(),
            "stages": [{"stage": s.stage, "done": s.done, "total": s.total, "fraction": round(s.fraction, 3),
                        "remaining_s": None if s.remaining_s is None else round(s.remaining_s, 1)}
                       for s in job.stages.values()],
            "llm_tokens": {stage: int(c.get("prompt_tokens", 0) + c.get("completion_tokens", 0))
                           for stage, c in job.usage.items()},
            "error": job.error}


def _write(path: Path, payload: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(payload, f)
    os.replace(tmp, path)


def main() -> int:
    from searchgrade.engine.collections import load_collection
    from searchgrade.engine.run.config import RunConfig
    from searchgrade.engine.store import Store
    from searchgrade.server import jobs

    request = json.loads(sys.stdin.read())
    data_dir = Path(request["data_dir"])
    store = Store(data_dir)
    if request.get("suite"):
        from searchgrade.server.mcp.suites import suite_job

        try:
            load, run = suite_job(store, request["suite"], request.get("note"))
        except Exception as exc:  # noqa: BLE001 - the server waits for one line: give it the reason
            print(json.dumps({"error": str(exc).splitlines()[0] if str(exc) else type(exc).__name__}), flush=True)
            return 1
        job, _ = jobs.start_job(load, None, store, data_dir, label=f"suite {request['suite']}", run=run)
    else:
        config = RunConfig.from_json(request["config"])
        path = request["collection_path"]
        job, _ = jobs.start_job(lambda: load_collection(path), config, store, data_dir, label=request["label"])
    announced = None
    while True:
        snap = jobs.wait(job.job_id, PROGRESS_EVERY_S)
        if snap is None:
            return 1
        if snap.run_id is not None and announced is None:
            announced = snap.run_id
            print(json.dumps({"run_id": snap.run_id}), flush=True)
            # Nothing else goes to the pipe (the server that reads it may be gone): stdout is the log now.
            os.dup2(2, 1)
        if announced is not None:
            _write(progress_path(data_dir, announced), job_json(snap))
        if not snap.active:
            if announced is None:  # it failed before the run existed: say why on the first line
                print(json.dumps({"error": snap.error or "no run was created"}), flush=True)
                os.dup2(2, 1)
            print(f"searchgrade mcp worker: run {announced} ended {snap.state}"
                  + (f": {snap.error}" if snap.error else ""), file=sys.stderr, flush=True)
            return 0 if snap.state == "complete" else 1


if __name__ == "__main__":
    sys.exit(main())
