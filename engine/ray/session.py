"""Connecting a run to Ray: a local Ray started for the run, or an existing cluster.

``connect(None)`` starts a local Ray for the run (no dashboard, a small object store) and
``RaySession.close`` stops it; ``connect("HOST:PORT")`` joins a running cluster (the head node's
GCS address, as ``ray start --head`` prints it; ``ray://HOST:PORT`` for Ray Client). ``ray.init``
retries an unreachable address for minutes, so the address is checked first: a TCP connection
and an HTTP/2 (gRPC) greeting within seconds, else one line naming the address and the fix. A Ray
already initialised in the process (a test's) is used as it is and left running.

Also here, what every module of engine/ray/ shares: ``import_ray`` (one line saying how to
install Ray when it is missing) and ``worker_error`` (an error raised on a worker comes back as
the same one-line ``SearchGradeError``).
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from searchgrade.core.records import SearchGradeError, first_line

#: How to get Ray, said whenever it is missing.
INSTALL = "pip install 'searchgrade[ray]'"
#: The GCS port of ``ray start --head``, and the Ray Client server's.
DEFAULT_GCS_PORT = 6379
DEFAULT_CLIENT_PORT = 10001
#: Seconds for the address check (TCP connect, then the gRPC greeting).
CHECK_TIMEOUT_S = 5.0
#: Seconds ``ray.init`` may take on a cluster that passed the check.
INIT_TIMEOUT_S = 60.0
#: Object store of a local Ray (MB): results and batches are small; Ray spills beyond it.
LOCAL_OBJECT_STORE_MB = 256
#: Ray namespace of everything a run creates (named actors, e.g. the LLM limiter).
NAMESPACE = "searchgrade"

#: The HTTP/2 client preface and an empty SETTINGS frame: a gRPC server answers with SETTINGS.
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"
_H2_SETTINGS = 0x04


def import_ray() -> Any:
    """The ``ray`` module, or one line saying how to install it."""
    try:
        import ray
    except ImportError:
        raise SearchGradeError(f"--ray needs Ray, which is not installed here: {INSTALL}") from None
    return ray


def parse_address(address: str) -> tuple[str, str, int]:
    """``(scheme, host, port)`` of ``HOST:PORT`` (scheme "") or ``ray://HOST:PORT`` ("ray").

    Raises:
        SearchGradeError: not an address of that form.
    """
    text = address.strip()
    scheme = ""
    if "://" in text:
        scheme, text = text.split("://", 1)
        if scheme != "ray":
            raise SearchGradeError(
                f"--ray {address!r}: use HOST:PORT (the head node's GCS address, e.g. 10.0.0.5:6379) "
                "or ray://HOST:PORT for Ray Client")
    text = text.rstrip("/")
    default = DEFAULT_CLIENT_PORT if scheme == "ray" else DEFAULT_GCS_PORT
    if text.startswith("["):  # [IPv6]:port
        host, _, rest = text[1:].partition("]")
        port_text = rest[1:] if rest.startswith(":") else ""
    elif text.count(":") == 1:
        host, port_text = text.split(":")
    else:
        host, port_text = text, ""
    try:
        port = int(port_text) if port_text else default
    except ValueError:
        port = -1
    if not host or not 0 < port < 65536:
        raise SearchGradeError(
            f"--ray {address!r} is not an address: use HOST:PORT (the head node's GCS address, e.g. "
            "10.0.0.5:6379), ray://HOST:PORT for Ray Client, or --ray alone for a local Ray")
    return scheme, host, port


def check_reachable(address: str, timeout_s: float = CHECK_TIMEOUT_S) -> None:
    """Fail in seconds, with one line, when nothing that speaks gRPC answers at ``address``.

    ``ray.init(address=...)`` retries an address where nothing listens for minutes; this checks
    the TCP connection and the server's HTTP/2 greeting (every Ray GCS and Ray Client server is
    a gRPC server) within ``timeout_s`` each.
    """
    _scheme, host, port = parse_address(address)
    fix = ("check the address: the head node's HOST:PORT as `ray start --head` prints it (GCS port "
           f"{DEFAULT_GCS_PORT} by default; ray://HOST:{DEFAULT_CLIENT_PORT} for Ray Client), or "
           "pass --ray alone to start a local Ray")
    try:
        sock = socket.create_connection((host, port), timeout=timeout_s)
    except socket.gaierror as exc:
        raise SearchGradeError(f"cannot reach the Ray cluster at {address}: unknown host {host!r} "
                               f"({exc.strerror}); {fix}") from None
    except TimeoutError:
        raise SearchGradeError(f"cannot reach the Ray cluster at {address}: no answer within "
                               f"{timeout_s:g} s; {fix}") from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise SearchGradeError(f"cannot reach the Ray cluster at {address}: {reason.lower()}; {fix}") from None
    with sock:
        sock.settimeout(timeout_s)
        try:
            sock.sendall(_H2_PREFACE)
            head = _read(sock, 9)
        except OSError:
            head = b""
    if len(head) < 9 or head[3] != _H2_SETTINGS:
        raise SearchGradeError(f"{address} answers, but not as a Ray cluster (no gRPC greeting; the "
                               f"dashboard's port 8265 is not the one); {fix}")


def _read(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            break
        data += chunk
    return data


@dataclass
class RaySession:
    """A connection to Ray for one run; ``close`` stops a local Ray this session started."""

    #: The cluster's address, or None for a local Ray.
    address: str | None
    #: This session started Ray (and stops it on close).
    started: bool

    def info(self) -> dict[str, Any]:
        """What the run records: where it ran, on how many nodes and CPUs."""
        ray = import_ray()
        nodes = [n for n in ray.nodes() if n.get("Alive")]
        return {"address": self.address or "local", "nodes": len(nodes),
                "cpus": int(ray.cluster_resources().get("CPU", 0))}

    def cpus(self) -> int:
        return max(1, int(import_ray().cluster_resources().get("CPU", 1)))

    def close(self) -> None:
        if self.started:
            import_ray().shutdown()
            self.started = False


def connect(address: str | None, *, cpus: int | None = None,
            check_timeout_s: float = CHECK_TIMEOUT_S, init_timeout_s: float = INIT_TIMEOUT_S) -> RaySession:
    """Start a local Ray (``address`` None) or join the cluster at ``address``.

    Args:
        cpus: CPUs of a local Ray (default: all of this machine's).

    Raises:
        SearchGradeError: Ray is not installed, the address is malformed or does not answer as a
            Ray cluster, or the cluster does not accept the connection in ``init_timeout_s``.
    """
    ray = import_ray()
    if address is not None:
        parse_address(address)
    if ray.is_initialized():
        return RaySession(address, started=False)
    common = {"log_to_driver": False, "configure_logging": False, "namespace": NAMESPACE}
    if address is None:
        try:
            with stderr_captured():  # Ray's start-up notes would come between our progress lines
                # "local": a new Ray, even where another runs (or RAY_ADDRESS names one).
                ray.init(address="local", num_cpus=cpus or os.cpu_count() or 1, include_dashboard=False,
                         object_store_memory=LOCAL_OBJECT_STORE_MB * 1024**2, **common)
        except Exception as exc:  # noqa: BLE001 - Ray's own errors are many and long: one line
            _shutdown_quietly(ray)
            first = first_line(exc)
            raise SearchGradeError(
                f"a local Ray could not be started: {first} (Ray's logs: {_ray_logs()}); check free "
                "memory and /dev/shm, or run without --ray") from None
        return RaySession(None, started=True)
    check_reachable(address, check_timeout_s)
    _init_within(ray, address, init_timeout_s, common)
    return RaySession(address, started=True)


#: What to do when a cluster refuses this driver's token (``ray start`` enables token auth).
TOKEN_FIX = ("set RAY_AUTH_MODE=token here, with the cluster's token in RAY_AUTH_TOKEN (or "
             "~/.ray/auth_token, as on the head node)")


def _init_within(ray: Any, address: str, timeout_s: float, kwargs: Mapping[str, Any]) -> None:
    """``ray.init(address)`` in a thread, given up after ``timeout_s`` with one line; what Ray
    prints meanwhile (a warning a second while it retries) is kept off the terminal."""
    outcome: dict[str, BaseException | None] = {}

    def init() -> None:
        try:
            ray.init(address=address, **kwargs)
            outcome["error"] = None
        except BaseException as exc:  # noqa: BLE001 - re-raised below as one line
            outcome["error"] = exc

    with stderr_captured() as said:
        thread = threading.Thread(target=init, name="ray-init", daemon=True)
        thread.start()
        thread.join(timeout_s)
    refused_token = "InvalidAuthToken" in said[0] or "Unauthenticated" in said[0]
    if "error" not in outcome:
        _shutdown_quietly(ray)  # ray.init keeps retrying in its thread otherwise
        fix = TOKEN_FIX if refused_token else ("check that its Ray version matches this one's and, "
                                               f"if it uses token authentication, {TOKEN_FIX}")
        raise SearchGradeError(f"the Ray cluster at {address} did not accept the connection within "
                               f"{timeout_s:g} s; {fix}")
    error = outcome["error"]
    if error is not None:
        if refused_token:
            raise SearchGradeError(f"the Ray cluster at {address} refused this driver's token; {TOKEN_FIX}")
        first = first_line(error)
        raise SearchGradeError(f"cannot join the Ray cluster at {address}: {first}") from None


def _shutdown_quietly(ray: Any) -> None:
    """``ray.shutdown()`` after a failed start or connect, whatever it says (best effort)."""
    try:
        with stderr_captured():
            ray.shutdown()
    except Exception:  # noqa: BLE001, S110 - the error being reported matters, not this one
        pass


def _ray_logs() -> str:
    """Where Ray writes its session logs on this machine (``RAY_TMPDIR``, else the temp dir)."""
    import tempfile

    base = os.environ.get("RAY_TMPDIR") or tempfile.gettempdir()
    return str(Path(base) / "ray" / "session_latest" / "logs")


@contextmanager
def stderr_captured() -> Iterator[list[str]]:
    """Standard error (the file descriptor: Ray's C++ core writes there) into a temporary file
    while the block runs; the list it yields holds what was written once the block ends."""
    import tempfile

    said = [""]
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as capture:
        os.dup2(capture.fileno(), 2)
        try:
            yield said
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            capture.seek(0)
            said[0] = capture.read().decode("utf-8", "replace")


@contextmanager
def ray_session(address: str | None, **kwargs: Any) -> Iterator[RaySession]:
    """``connect``, and ``close`` whatever happens."""
    session = connect(address, **kwargs)
    try:
        yield session
    finally:
        session.close()


def worker_error(exc: BaseException) -> BaseException:
    """The error a Ray worker raised, unwrapped: a SearchGradeError stays one line."""
    cause = getattr(exc, "cause", None)
    if isinstance(cause, SearchGradeError):
        return SearchGradeError(str(cause), page=cause.page)
    text = str(exc)
    marker = "SearchGradeError: "
    if marker in text:  # an actor whose constructor failed carries the message in its text
        return SearchGradeError(text.split(marker, 1)[1].strip().splitlines()[0])
    return exc

