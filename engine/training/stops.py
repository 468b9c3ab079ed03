"""A training that stops leaves nothing half-written: signals, temporary folders, the move into place.

A reranker is written to ``rerankers/.partial-NAME-PID@HOST`` and renamed into ``rerankers/NAME``
only when complete (``move_into_place``). Ctrl-C, SIGTERM and SIGHUP stop a training on the way
out of which the temporary folder is removed (``stop_on_signals``); what a killed process could not
remove, the next training sweeps (``sweep_stale``).
"""

from __future__ import annotations

import re
import shutil
import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from searchgrade.core.owner import left_by_dead_process, owner_tag


class TrainingStopped(KeyboardInterrupt):
    """SIGTERM or SIGHUP arrived while training (in the main thread).

    Raised from the signal handler so that the temporary folder is removed on the way out, as for
    Ctrl-C (a KeyboardInterrupt too, so no ``except Exception`` in between swallows it). ``saved``:
    the signal arrived while the finished reranker was being moved into place, and was held until
    it was there, so the training stopped with its reranker saved.
    """

    def __init__(self, signum: int, saved: bool = False) -> None:
        self.signum = signum
        self.saved = saved
        super().__init__(f"stopped by {signal.Signals(signum).name}" + (" (saved)" if saved else ""))


class Stops:
    """The signal handler of one training: raises TrainingStopped, or holds it while ``held``."""

    def __init__(self) -> None:
        self._holding = False
        self._pending: int | None = None

    def handle(self, signum: int, frame: Any) -> None:  # noqa: ARG002 - signal's API
        if self._holding:
            self._pending = signum
        else:
            raise TrainingStopped(signum)

    @contextmanager
    def held(self) -> Iterator[None]:
        """Hold signals while the reranker is moved into place; one that arrived meanwhile is
        raised after a move that succeeded, as a stop with the reranker saved."""
        self._holding = True
        try:
            yield
        finally:
            self._holding = False
        if self._pending is not None:
            raise TrainingStopped(self._pending, saved=True)


@contextmanager
def stop_on_signals() -> Iterator[Stops]:
    """While training, SIGTERM and SIGHUP stop it like Ctrl-C (the default would kill the process
    before the temporary folder is removed). Only the main thread can set handlers: elsewhere (a
    training job of the app) the signals keep their handling, and ``sweep_stale`` removes what a
    killed process left at the next training."""
    stops = Stops()
    if threading.current_thread() is not threading.main_thread():
        yield stops
        return
    wanted = [s for s in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s is not None]
    previous = {s: signal.signal(s, stops.handle) for s in wanted}
    try:
        yield stops
    finally:
        for s, handler in previous.items():
            signal.signal(s, handler)


#: Temporary folders of a training: ``.partial-NAME-PID@HOST`` (being written),
#: ``.old-NAME-PID@HOST`` (the reranker being replaced, for the moment between two renames).
#: Earlier versions wrote them without ``@HOST``. A NAME holds no "@" (check_name).
_TEMPORARY = re.compile(r"\.(partial|old)-([^@]+)-(\d+)(?:@([A-Za-z0-9._-]+))?")


def partial_folder(folder: Path, name: str) -> Path:
    """Where reranker ``name`` is written before it is moved into place."""
    return folder / f".partial-{name}-{owner_tag()}"


def sweep_stale(folder: Path) -> list[str]:
    """Remove the temporary folders of trainings whose process is gone; returns their names.

    A ``.partial`` folder is an unfinished reranker: removed. An ``.old`` folder is a reranker a
    killed process was replacing: put back under its name if nothing took that name, else removed.
    Folders of a live process (another training running now) and of another host (a data
    directory shared between machines: its process ids mean nothing here) are left alone.
    """
    swept = []
    for path in sorted(folder.glob(".*-*")) if folder.is_dir() else []:
        match = _TEMPORARY.fullmatch(path.name)
        if match is None or not path.is_dir() or not left_by_dead_process(int(match.group(3)),
                                                                          match.group(4)):
            continue
        kind, name = match.group(1), match.group(2)
        if kind == "old" and not (folder / name).exists():
            path.rename(folder / name)
        else:
            shutil.rmtree(path, ignore_errors=True)
        swept.append(path.name)
    return swept


def move_into_place(partial: Path, target: Path) -> None:
    """Rename the finished ``partial`` folder to ``target``, replacing what was there."""
    old = target.with_name(f".old-{target.name}-{owner_tag()}")
    if target.exists():
        target.rename(old)
    partial.rename(target)
    shutil.rmtree(old, ignore_errors=True)
