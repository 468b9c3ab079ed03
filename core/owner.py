"""Whose a temporary folder is: the host and process that write it, named in the folder itself.

A data directory can be shared between machines (NFS, a Ray cluster), where a process id means
nothing on another host. So a temporary folder names ``PID@HOST``, and a later run removes only
what a dead process of its own host left; another host's folders are that host's to remove.
"""

from __future__ import annotations

import os
import re
import socket


def this_host() -> str:
    """This machine's host name, made safe for a file name (letters, digits, '.', '-', '_')."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", socket.gethostname()) or "localhost"


def owner_tag() -> str:
    """``PID@HOST`` of this process, for the name of a temporary folder it writes."""
    return f"{os.getpid()}@{this_host()}"


def is_alive(pid: int) -> bool:
    """Whether process ``pid`` of this host is running (this process counts as running)."""
    if pid == os.getpid():
        return True  # this process's own: another of its jobs, or its own clean-up removes it
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True  # someone else's process (PermissionError): leave its folders alone
    return True


def left_by_dead_process(pid: int, host: str | None) -> bool:
    """Whether a folder of process ``pid`` on ``host`` was left by a process that is gone.

    Only decidable on the same host: another host's folders are never taken as dead. ``host``
    None is a folder of the older format that named no host, taken as this host's (all that
    wrote them were single-machine versions).
    """
    if host is not None and host != this_host():
        return False
    return not is_alive(pid)
