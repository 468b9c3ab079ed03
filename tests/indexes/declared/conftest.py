"""A real search server process over a collection, started once per module."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


class SearchServer:
    """The real local search server (search_server.py) in a process of its own, which can be
    stopped (connections refused) and started again on its port, as a declaration names it."""

    def __init__(self, collection: Path, data_dir: Path) -> None:
        self.argv = [sys.executable, "-m", "tests.indexes.declared.search_server", "--collection", str(collection),
                     "--data-dir", str(data_dir)]
        self.process = subprocess.Popen(self.argv, cwd=REPO, stdout=subprocess.PIPE, text=True)
        line = self.process.stdout.readline()
        if not line.startswith("PORT "):
            self.process.kill()
            raise RuntimeError(f"search server did not start: {line!r}")
        self.port = int(line.split()[1])
        self.url = f"http://127.0.0.1:{self.port}"

    def start_again(self) -> None:
        """Start the server again on its port, after ``stop``."""
        self.process = subprocess.Popen([*self.argv, "--port", str(self.port)], cwd=REPO, stdout=subprocess.PIPE,
                                        text=True)
        line = self.process.stdout.readline()
        if line.split() != ["PORT", str(self.port)]:
            self.process.kill()
            raise RuntimeError(f"search server did not start again on port {self.port}: {line!r}")

    def control(self, **settings) -> None:
        request = urllib.request.Request(f"{self.url}/_control", data=json.dumps(settings).encode(),
                                         headers={"Content-Type": "application/json"}, method="POST")
        urllib.request.urlopen(request, timeout=10).read()

    def stats(self) -> dict:
        return json.loads(urllib.request.urlopen(f"{self.url}/_stats", timeout=10).read())

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
