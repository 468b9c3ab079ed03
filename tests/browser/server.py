"""Starting the real app for browser tests: a free port, and waiting until it answers."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.request
from pathlib import Path


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_up(url: str, server: subprocess.Popen, log: Path, timeout_s: float = 90) -> None:
    """Block until the app's health check answers; raise with the end of its log if it died or hung."""
    deadline = time.time() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if server.poll() is not None or time.time() > deadline:
            raise RuntimeError(f"the app did not start: {log.read_text()[-2000:]}")
        time.sleep(0.5)
