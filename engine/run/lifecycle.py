"""A run while a process works on it: its heartbeat, and the ways it is told to stop.

Whatever process runs a run (the CLI, the app's worker thread) holds a :class:`RunGuard` for it:
a daemon thread beats the run's heartbeat in the store every ``timeout / 6`` seconds and reads
whether someone asked the run to cancel (Cancel in the app, from this process or another). The
pipeline calls :meth:`RunGuard.check` at every progress step; it raises :class:`RunCancelled`
once a cancel was asked, and :class:`RunTakenOver` when another process has resumed the run
meanwhile (so that two processes never write one run). Both derive from BaseException, as
KeyboardInterrupt does, so that no ``except Exception`` on the way turns a stop into a skipped
strategy or a failed judgment.

A process that dies beats no more: after the timeout, whoever looks at the run sees it
interrupted (engine/store/runs.py).
"""

from __future__ import annotations

import sys
import threading
from typing import Any

from searchgrade.engine.store import heartbeat_timeout_s


class RunStopped(BaseException):
    """The work on a run must stop now (see the subclasses)."""


class RunCancelled(RunStopped):
    """Someone asked the run to stop; it ends 'cancelled' and can be resumed."""


class RunTakenOver(RunStopped):
    """Another process resumed the run: this one must not write to it any more."""


class RunGuard:
    """The heartbeat of one run in this process, and its cancel flag.

    Args:
        store: The run store.
        run_id: The run.
        owner: This process's token for the run (engine.store.new_owner).
        interval_s: Seconds between beats (default: the heartbeat timeout / 6).
    """

    def __init__(self, store: Any, run_id: str, owner: str, interval_s: float | None = None) -> None:
        self.store = store
        self.run_id = run_id
        self.owner = owner
        self.interval_s = interval_s if interval_s is not None else heartbeat_timeout_s() / 6
        self._cancel = threading.Event()
        self._lost = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def __enter__(self) -> RunGuard:
        self._thread = threading.Thread(target=self._beat_forever, name=f"searchgrade-heartbeat-{self.run_id}",
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)

    def cancel(self) -> None:
        """Stop at the next check (the run is marked cancelled by whoever runs it)."""
        self._cancel.set()

    @property
    def cancelled(self) -> bool:
        return self._cancel.is_set()

    def check(self) -> None:
        """Raise RunTakenOver or RunCancelled if the run must stop; cheap, called often."""
        if self._lost.is_set():
            raise RunTakenOver(f"run {self.run_id} was resumed by another process; this one stops")
        if self._cancel.is_set():
            raise RunCancelled(f"run {self.run_id} was cancelled")

    def beat(self) -> None:
        """One heartbeat (the thread calls this; tests may too)."""
        beat = self.store.heartbeat(self.run_id, self.owner)
        if not beat.owned:
            self._lost.set()
        elif beat.cancel:
            self._cancel.set()

    def _beat_forever(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.beat()
            except Exception as exc:  # noqa: BLE001 - a missed beat (the file busy) is retried next time
                print(f"searchgrade: heartbeat of run {self.run_id} missed ({exc}); retrying",
                      file=sys.stderr)
