"""`searchgrade worker`: run the suites whose schedule is due (engine/suites/worker.py).

Long-running (a container's or a systemd unit's main process; `searchgrade app --worker` starts
one beside the app, which stops when the app does), or ``--once``: what is due now,
then exit (for a system cron). SIGTERM stops it as Ctrl-C does: a run in progress is marked
cancelled, what it did is kept, and `searchgrade resume RUN` continues it.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

from searchgrade.cli.options import add_common, open_store
from searchgrade.engine.paths import data_dir


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("worker", help="run the suites whose schedule is due (times in UTC), each due slot once")
    p.add_argument("--once", action="store_true", help="run what is due now, then exit (for a system cron)")
    p.add_argument("--stop-with", type=int, metavar="PID", help=argparse.SUPPRESS)  # `app --worker`: its app
    add_common(p)
    p.set_defaults(handler=cmd_worker)


def _log(line: str) -> None:
    print(f"{time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC {line}", file=sys.stderr, flush=True)


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def cmd_worker(args: argparse.Namespace) -> int:
    from searchgrade.engine.store import new_owner
    from searchgrade.engine.suites.worker import serve, work_once
    from searchgrade.viewmodels.results import keep_first_view

    store = open_store(args)
    worker = new_owner()
    if args.once:
        done = work_once(store, data_dir(args.data_dir), worker, on_complete=keep_first_view, log=_log)
        if not done:
            _log("nothing due")
        return 0
    signal.signal(signal.SIGTERM, _stop)
    _log(f"worker {worker} started; checking scheduled suites (times in UTC); Ctrl-C to stop")
    parent = args.stop_with

    def orphaned() -> bool:  # beside `searchgrade app --worker`: stop when the app's process is gone
        return parent is not None and os.getppid() != parent

    try:
        serve(store, data_dir(args.data_dir), worker, on_complete=keep_first_view, log=_log, should_stop=orphaned)
        _log("worker stopped: the app it ran beside is gone")
    except KeyboardInterrupt:
        _log("worker stopped")
    return 0
