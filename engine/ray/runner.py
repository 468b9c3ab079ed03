"""Running a run's heavy stages on Ray: a local Ray started for the run, or an existing cluster.

- **Connecting.** ``connect(None)`` starts a local Ray for the run (no dashboard, a small object
  store) and ``RaySession.close`` stops it; ``connect("HOST:PORT")`` joins a running cluster (the
  head node's GCS address, as ``ray start --head`` prints it; ``ray://HOST:PORT`` for Ray Client).
  ``ray.init`` retries an unreachable address for minutes, so the address is checked first: a TCP
  connection and an HTTP/2 (gRPC) greeting within seconds, else one line naming the address and
  the fix. A Ray already initialised in the process (a test's) is used as it is and left running.
- **Search.** The executor (indexes/executor.py) runs on Ray actors (``SearchWorker``; those the
  cluster cannot place in ``PLACE_TIMEOUT_S`` are dropped, none placed is one line), each
  building the same strategies from the collection and the index artifacts the driver built
  (same paths: on a cluster, a filesystem every node mounts). The queries are cut into the same
  chunks as a local run (the first holds one query, then ``CHUNK_SIZE``), so every batch (query
  embeddings, cross-encoder batches) is the same as locally; the chunks' ``Execution`` s are
  merged on the driver in query order, so the stored results are the local run's.
- **Embedding.** The texts the embedding cache lacks go through Ray Data (``map_batches`` over
  actors holding the model), cut into the chunks ``encode_cached`` would encode, one block each,
  so the vectors are the local run's; they land in the driver's embedding cache.
- **LLM judging.** The judge's requests are sent by Ray actors (``LLMWorker``), each request
  holding a permit of a named actor (``RequestLimiter``, one per endpoint): at most
  ``--concurrency`` requests in flight across the cluster, whichever runs send them. A permit is
  a lease that expires (a holder that died does not keep it), and a request that gets none in a
  bounded time stops the run with one line. The driver keeps the cache, the accounting and the
  judge's identity.
- **Errors** raised on a worker come back as the same one-line ``SearchGradeError``.

Nothing here changes what a run computes: the metrics of a run on Ray equal the local run's.
"""

from __future__ import annotations

import itertools
import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from searchgrade.core.records import Query, SearchGradeError, first_line
from searchgrade.indexes.executor import CHUNK_SIZE, Execution, Executor, QueryBatch, chunk_bounds
from searchgrade.indexes.settings import IndexSettings

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
#: Seconds the search actors have to be placed on the cluster (each needs a free CPU).
PLACE_TIMEOUT_S = 120.0

Progress = Callable[[str, int, int], None]
Check = Callable[[Execution], None]

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
            with _stderr_captured():  # Ray's start-up notes would come between our progress lines
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

    with _stderr_captured() as said:
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
        with _stderr_captured():
            ray.shutdown()
    except Exception:  # noqa: BLE001, S110 - the error being reported matters, not this one
        pass


def _ray_logs() -> str:
    """Where Ray writes its session logs on this machine (``RAY_TMPDIR``, else the temp dir)."""
    import tempfile

    base = os.environ.get("RAY_TMPDIR") or tempfile.gettempdir()
    return str(Path(base) / "ray" / "session_latest" / "logs")


@contextmanager
def _stderr_captured() -> Iterator[list[str]]:
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


def device_on_ray(device: str, backend: str = "torch") -> tuple[str, str | None]:
    """The embedding device of a run on Ray, and a note when it is not what ``device`` gives here.

    The Ray actors request CPUs, not GPUs, so they embed and rerank on the CPU: ``--device
    cuda`` is refused, and ``auto`` on a driver that sees a GPU becomes ``cpu`` for the driver
    too (its query vectors then come from the same device as the actors' corpus vectors).

    Raises:
        SearchGradeError: ``device`` names a CUDA GPU.
    """
    if device.startswith("cuda"):
        raise SearchGradeError(f"--device {device} does not run on Ray: the Ray actors embed and rerank "
                               "on CPUs (they request no GPU); use --device cpu (or auto) with --ray, or "
                               "run without --ray to use the GPU")
    if device == "auto":
        from searchgrade.indexes.embeddings.backends import resolve_device

        if resolve_device(backend, device).startswith("cuda"):
            return "cpu", ("--device auto ran on the CPU: on Ray the actors request no GPU, so the "
                           "driver embedded on the CPU too")
    return device, None


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


# -- search ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BuildSpec:
    """What a worker needs to build the strategies the driver built, from the same files.

    Attributes:
        collection_path: the collection, loaded with ``collection_fields`` (as ``resume`` does).
        fingerprint: the driver's collection fingerprint: a worker seeing another collection stops.
        artifacts: artifact name -> folder the driver built ("ann", "bm25"): a worker must see them.
    """

    collection_path: str
    collection_fields: Mapping[str, Any]
    fingerprint: str
    settings: IndexSettings
    data_dir: str
    strategies: tuple[str, ...]
    declared: Mapping[str, Any]
    artifacts: Mapping[str, str]
    queries: tuple[Query, ...] = ()


class SearchWorker:
    """A Ray actor holding the run's strategies (built from the driver's artifacts) and running
    executor chunks on them.

    Made in two steps: the actor (placed on a node with a free CPU: ``node`` answers once it is),
    then ``load`` (the collection, the indexes, the models: minutes on a large collection), so the
    driver can tell an actor the cluster has no room for from one that is loading.
    """

    def __init__(self) -> None:
        self.nodes: Any = None
        self.scores: Any = None

    def node(self) -> str:
        return socket.gethostname()

    def load(self, spec: BuildSpec) -> None:
        from searchgrade.core.records import collection_fingerprint
        from searchgrade.engine.collections import load_collection
        from searchgrade.engine.run.strategies import registry_for_declared
        from searchgrade.indexes.build import build_searchers

        node = socket.gethostname()
        fix = (f"give every Ray node the same files at the same paths (the collection {spec.collection_path} "
               f"and --data-dir {spec.data_dir}, e.g. on a shared filesystem)")
        for name, folder in spec.artifacts.items():
            if name in ("ann", "bm25") and not Path(folder).is_dir():
                raise SearchGradeError(f"the Ray worker on {node} does not see the {name} index "
                                       f"{folder}; {fix}")
        if not Path(spec.collection_path).exists():
            raise SearchGradeError(f"the Ray worker on {node} does not see the collection "
                                   f"{spec.collection_path}; {fix}")
        collection = load_collection(spec.collection_path, **dict(spec.collection_fields))
        if collection_fingerprint(collection) != spec.fingerprint:
            raise SearchGradeError(f"the collection at {spec.collection_path} on the Ray worker on {node} "
                                   f"is not the driver's (its documents differ); {fix}")
        built = build_searchers(collection, spec.settings, Path(spec.data_dir), strategies=spec.strategies,
                                collection_fingerprint=spec.fingerprint,
                                registry=registry_for_declared(dict(spec.declared)))
        for name in ("ann", "bm25"):
            if built.stats.get(f"{name}_reused") is False:
                raise SearchGradeError(f"the Ray worker on {node} had to build the {name} index again "
                                       f"(the driver's is not visible there); {fix}")
        for strategy in spec.strategies:
            if strategy in built.skipped:  # the driver had it: something differs on this node
                reason = (str(built.skipped[strategy]).strip().splitlines() or ["no reason given"])[0]
                raise SearchGradeError(f"the Ray worker on {node} cannot run {strategy}, which the driver "
                                       f"runs: {reason}; give every Ray node the driver's models, files "
                                       "and environment (the same paths and variables)")
        self.nodes = built.nodes
        self.scores = getattr(built.context, "_scores", None)
        bind = getattr(getattr(self.scores, "scorer", None), "bind_queries", None)
        if bind is not None and spec.queries:
            bind(spec.queries)

    def run_chunk(self, strategies: Sequence[str], k: int, ids: Sequence[str],
                  texts: Sequence[str]) -> Execution:
        return Executor(self.nodes, strategies, k).run_chunk(QueryBatch(list(ids), list(texts)))

    def counters(self) -> dict[str, Any]:
        """The cross-encoder's shared scores: pairs scored and reused; a trained reranker's record."""
        if self.scores is None:
            return {}
        summary = getattr(self.scores.scorer, "summary", None)
        return {"scored": self.scores.scored, "reused": self.scores.reused,
                "summary": summary() if summary is not None else None}


@dataclass
class RaySearch:
    """The search stage's executor on Ray actors (``execute`` is what engine/run/search.py calls)."""

    session: RaySession
    spec: BuildSpec
    k: int
    #: Actors to start (default: one per CPU of the cluster, at most one per chunk).
    actors: int | None = None
    chunk_size: int = CHUNK_SIZE
    #: Seconds the actors have to be placed on nodes with a free CPU (not to load: that is unbounded).
    place_timeout_s: float = PLACE_TIMEOUT_S
    workers: list[Any] = field(default_factory=list)
    chunks: int = 0
    started: int = 0

    def _start(self, wanted: int) -> None:
        """Start the actors, keep those the cluster placed in ``place_timeout_s``, then load them.

        The cluster's CPUs may be taken (by other jobs, or Ray Data's actors still stopping): the
        actors placed in time run the search; none placed stops the run with one line rather
        than wait for ever.
        """
        ray = import_ray()
        if self.workers:
            return
        n = max(1, min(self.actors or self.session.cpus(), wanted))
        remote = ray.remote(num_cpus=1)(SearchWorker)
        started = [remote.remote() for _ in range(n)]
        answers = [worker.node.remote() for worker in started]
        ready, _ = ray.wait(answers, num_returns=n, timeout=self.place_timeout_s)
        placed = {i for i, ref in enumerate(answers) if ref in ready}
        self.workers = [worker for i, worker in enumerate(started) if i in placed]
        for i, worker in enumerate(started):
            if i not in placed:  # its resource request is withdrawn with it
                ray.kill(worker)
        if not self.workers:
            free = int(ray.available_resources().get("CPU", 0))
            raise SearchGradeError(
                f"{n} search actor{'s' if n > 1 else ''} could not be placed on the Ray cluster in "
                f"{self.place_timeout_s:g} s (each needs 1 free CPU; {free} of {self.session.cpus()} CPUs "
                "are free now): free CPUs on the cluster (stop other jobs' actors) or add nodes, then "
                "resume the run")
        self.started = len(self.workers)
        try:
            ray.get([worker.load.remote(self.spec) for worker in self.workers])
        except ray.exceptions.RayError as exc:
            raise worker_error(exc) from None

    def execute(self, strategies: Sequence[str], batch: QueryBatch, progress: Progress | None,
                check: Check | None) -> Execution:
        """What ``Executor(nodes, strategies, k).run(batch, progress, check)`` gives, on Ray."""
        ray = import_ray()
        bounds = chunk_bounds(len(batch), self.chunk_size)
        self._start(max(1, len(bounds) - 1))
        total = Execution()
        if progress is not None:
            progress("search", 0, len(batch))
        todo = list(strategies)

        def submit(i: int, worker: Any) -> Any:
            start, stop = bounds[i]
            return worker.run_chunk.remote(todo, self.k, list(batch.ids[start:stop]),
                                           list(batch.texts[start:stop]))

        try:
            # The first chunk (one query) alone, so a check can stop the run before the rest.
            pending: dict[int, Any] = {}
            if bounds:
                pending[0] = submit(0, self.workers[0])
            next_chunk = 1
            done_chunks = 0
            while done_chunks < len(bounds):
                if done_chunks >= 1:
                    while next_chunk < len(bounds) and len(pending) < 2 * len(self.workers):
                        pending[next_chunk] = submit(next_chunk, self.workers[next_chunk % len(self.workers)])
                        next_chunk += 1
                execution = ray.get(pending.pop(done_chunks))
                total.extend(execution)
                self.chunks += 1
                done_chunks += 1
                if check is not None:
                    check(total)
                if progress is not None:
                    progress("search", bounds[done_chunks - 1][1], len(batch))
        except ray.exceptions.RayError as exc:
            raise worker_error(exc) from None
        return total

    def counters(self) -> dict[str, Any]:
        """The workers' cross-encoder counters, summed (and their trained-reranker records merged)."""
        from searchgrade.indexes.rerank.trained import merge_records

        ray = import_ray()
        out: dict[str, Any] = {}
        for counters in ray.get([w.counters.remote() for w in self.workers]):
            if not counters:
                continue
            out["scored"] = out.get("scored", 0) + counters["scored"]
            out["reused"] = out.get("reused", 0) + counters["reused"]
            if counters.get("summary") is not None:
                out["summary"] = merge_records(out.get("summary"), counters["summary"])
        return out

    def stats(self) -> dict[str, Any]:
        return {"actors": self.started, "chunks": self.chunks}

    def close(self) -> None:
        ray = import_ray()
        for worker in self.workers:
            ray.kill(worker)
        self.workers = []


# -- embedding ------------------------------------------------------------------------------------

#: Vectors written to the embedding cache per shard while a Ray embedding runs (a failure keeps them).
EMBED_SHARD_ROWS = 16_384


class EmbedBatches:
    """A Ray Data actor holding the embedding model (``indexes.embeddings.encoder.load_embedder``).

    Each input block is one chunk of texts, cut as ``encode_cached`` cuts them locally; a chunk is
    encoded alone, in its order, so the model sees the same batches (same padding) as a local run
    and the vectors are the same.
    """

    def __init__(self, model_name: str, batch_size: int, backend: str = "torch", device: str = "auto",
                 models_dir: str | None = None) -> None:
        from searchgrade.indexes.embeddings.encoder import load_embedder

        # The run's embedding backend (an ONNX one exports into models_dir once, on first use).
        self.model = load_embedder(model_name, backend, device, models_dir)
        self.batch_size = batch_size

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        import numpy as np

        from searchgrade.indexes.embeddings.encoder import encode

        chunks = np.asarray(batch["chunk"])
        order = np.lexsort((np.asarray(batch["pos"]), chunks))
        keys, vectors = [], []
        for chunk in dict.fromkeys(chunks[order].tolist()):
            rows = order[chunks[order] == chunk]
            vectors.append(encode(self.model, [str(batch["text"][i]) for i in rows], self.batch_size))
            keys.extend(str(batch["key"][i]) for i in rows)
        return {"key": np.asarray(keys), "vector": np.concatenate(vectors)}


def _quiet_ray_data() -> None:
    """Ray Data's progress bars and execution notes off: the run shows its own progress."""
    import logging

    from ray.data import DataContext

    DataContext.get_current().enable_progress_bars = False
    logging.getLogger("ray.data").setLevel(logging.ERROR)


@dataclass(frozen=True)
class RayEmbedStats:
    """What ``embed_on_ray`` did: texts asked for, found cached, embedded on Ray, seconds."""

    texts: int
    cache_hits: int
    embedded: int
    seconds: float
    actors: int

    def to_json(self) -> dict[str, Any]:
        rate = self.embedded / self.seconds if self.embedded and self.seconds > 0 else None
        return {"texts": self.texts, "cache_hits": self.cache_hits, "embedded": self.embedded,
                "seconds": round(self.seconds, 3), "docs_per_s": rate, "actors": self.actors}


def embed_on_ray(session: RaySession, model_name: str, texts: Sequence[str], cache_dir: Path,
                 batch_size: int = 32, progress: Progress | None = None,
                 actors: int | None = None, backend: str = "torch", device: str = "auto",
                 models_dir: Path | None = None) -> RayEmbedStats:
    """Embed the texts the cache lacks with Ray Data (``map_batches`` over actors holding the
    model) and add them to the embedding cache, so the index build that follows embeds nothing.

    The texts are cut into the chunks ``encode_cached`` would encode (the same order and size),
    one Ray Data block each, so every vector is the one a local run computes.
    """
    import time

    import numpy as np
    import pyarrow as pa

    from searchgrade.indexes.embeddings.encoder import PROGRESS_CHUNK, EmbeddingCache, text_key

    ray = import_ray()
    started = time.perf_counter()
    cache = EmbeddingCache(cache_dir)
    unique: dict[bytes, str] = {}
    for text in texts:
        unique.setdefault(text_key(text), text)
    found = cache.get(list(unique))
    missing = [key for key in unique if key not in found]
    if progress is not None:
        progress("embed", len(found), len(unique))
    if not missing:
        return RayEmbedStats(len(texts), len(found), 0, 0.0, 0)
    blocks = []
    for chunk, start in enumerate(range(0, len(missing), PROGRESS_CHUNK)):
        part = missing[start:start + PROGRESS_CHUNK]
        blocks.append(pa.table({"chunk": [chunk] * len(part), "pos": list(range(len(part))),
                                "key": [key.hex() for key in part], "text": [unique[key] for key in part]}))
    n_actors = max(1, min(actors or session.cpus(), len(blocks)))
    _quiet_ray_data()
    dataset = ray.data.from_arrow(blocks).map_batches(
        EmbedBatches, fn_constructor_kwargs={"model_name": model_name, "batch_size": batch_size,
                                             "backend": backend, "device": device,
                                             "models_dir": str(models_dir) if models_dir else None},
        batch_size=None, batch_format="numpy", compute=ray.data.ActorPoolStrategy(size=n_actors),
        num_cpus=1)
    done = len(found)
    pending_keys: list[bytes] = []
    pending_vectors: list[Any] = []
    try:
        batches = iter(dataset.iter_batches(batch_size=None, batch_format="numpy"))
        # Starting the actors, Ray's core logs a note about their constructor arguments to stderr.
        with _stderr_captured():
            first = next(batches, None)
        for batch in itertools.chain([first] if first is not None else [], batches):
            pending_keys.extend(bytes.fromhex(str(k)) for k in batch["key"])
            pending_vectors.append(np.asarray(batch["vector"], dtype=np.float32))
            if len(pending_keys) >= EMBED_SHARD_ROWS:
                cache.add(pending_keys, np.concatenate(pending_vectors))
                pending_keys, pending_vectors = [], []
            done += len(batch["key"])
            if progress is not None:
                progress("embed", done, len(unique))
    except ray.exceptions.RayError as exc:
        raise worker_error(exc) from None
    finally:
        if pending_keys:  # what was embedded before a failure or Ctrl-C is kept
            cache.add(pending_keys, np.concatenate(pending_vectors))
    return RayEmbedStats(len(texts), len(found), len(missing), time.perf_counter() - started, n_actors)


# -- LLM judging ----------------------------------------------------------------------------------


class RequestLimiter:
    """A named Ray actor holding ``slots`` permits: every LLM request a worker sends to one
    endpoint holds one, so the requests in flight stay within ``slots`` across the cluster,
    however many workers (and runs) send them.

    A permit is a lease: ``acquire`` returns a token that expires after the lease's seconds, and
    an expired token's permit is taken back. The actor outlives the runs that use it (on a
    cluster it is detached), so a holder that dies without releasing (a killed driver, a lost
    node, a caller gone while it waited) costs the others a lease's length, never the permit.
    ``release`` of a token that expired or was released already does nothing.
    """

    def __init__(self, slots: int) -> None:
        import asyncio

        self.slots = slots
        self.leases: dict[int, float] = {}  # token -> deadline (time.monotonic)
        self.freed = asyncio.Condition()
        self.tokens = itertools.count(1)
        self.peak = 0
        self.reclaimed = 0

    def _reclaim(self, now: float) -> None:
        for token, deadline in list(self.leases.items()):
            if deadline <= now:
                del self.leases[token]
                self.reclaimed += 1

    async def acquire(self, lease_s: float, wait_s: float) -> int | None:
        """A token valid for ``lease_s``, or None when no permit came free within ``wait_s``."""
        import asyncio
        import time

        give_up = time.monotonic() + wait_s
        async with self.freed:
            while True:
                now = time.monotonic()
                self._reclaim(now)
                if len(self.leases) < self.slots:
                    token = next(self.tokens)
                    self.leases[token] = now + lease_s
                    self.peak = max(self.peak, len(self.leases))
                    return token
                if now >= give_up:
                    return None
                # Woken by a release, or when the first lease ends (or the wait does).
                until = min([give_up, *self.leases.values()])
                try:
                    await asyncio.wait_for(self.freed.wait(), timeout=max(0.01, until - now))
                except asyncio.TimeoutError:
                    pass

    async def release(self, token: int) -> None:
        async with self.freed:
            if self.leases.pop(token, None) is not None:
                self.freed.notify()

    async def stats(self) -> dict[str, int]:
        return {"slots": self.slots, "peak_in_flight": self.peak, "leases_reclaimed": self.reclaimed}


#: Seconds a request permit is leased beyond the LLM timeout (a request holds one for one attempt).
LEASE_MARGIN_S = 30.0
#: A request waits this many leases for a permit before the run stops with one line.
PERMIT_WAIT_LEASES = 3
#: The limiter actor's name is this and the endpoint's URL. ("llm-requests:" named the limiter
#: whose permits never expired: a cluster may still hold one with leaked permits; it is not used.)
LIMITER_PREFIX = "llm-leases:"


@dataclass(frozen=True)
class _Lease:
    """Where permits come from and how long they are held and waited for."""

    limiter: Any
    name: str
    lease_s: float
    wait_s: float


class _Permit:
    """One request's permit from the limiter, held while the request is in flight."""

    def __init__(self, lease: _Lease) -> None:
        self.lease = lease
        self.token: int | None = None

    def __enter__(self) -> None:
        ray = import_ray()
        lease = self.lease
        try:
            # The limiter answers None at wait_s; the margin is for an actor that does not answer.
            self.token = ray.get(lease.limiter.acquire.remote(lease.lease_s, lease.wait_s),
                                 timeout=lease.wait_s + LEASE_MARGIN_S)
        except ray.exceptions.GetTimeoutError:
            self.token = None
        if self.token is None:
            raise SearchGradeError(
                f"no LLM request permit from the Ray actor {lease.name!r} (namespace {NAMESPACE!r}) in "
                f"{lease.wait_s:g} s: all its permits are held; if no other run judges with this "
                f"endpoint, remove it (ray.kill(ray.get_actor({lease.name!r}, namespace={NAMESPACE!r})) "
                "from a driver connected to the cluster) and resume the run")

    def __exit__(self, *exc: Any) -> None:
        ray = import_ray()
        if self.token is None:
            return
        try:  # a release that does not arrive costs the lease's length, not the permit
            ray.get(self.lease.limiter.release.remote(self.token), timeout=LEASE_MARGIN_S)
        except ray.exceptions.RayError:
            pass
        self.token = None


class _CallUsage:
    """An LLM client's accounting that also keeps what the current thread's call added, so a
    worker returns each call's counters with its reply (the driver adds them to the run's)."""

    def __init__(self) -> None:
        from searchgrade.engine.llm.accounting import Usage

        self.total = Usage()
        self.local = threading.local()

    def add(self, stage: str, **deltas: float) -> None:
        self.total.add(stage, **deltas)
        mine = getattr(self.local, "deltas", None)
        if mine is None:
            mine = self.local.deltas = {}
        for name, delta in deltas.items():
            mine.setdefault(stage, {})
            mine[stage][name] = mine[stage].get(name, 0) + delta

    def snapshot(self) -> dict[str, dict[str, float]]:
        return self.total.snapshot()

    def take(self) -> dict[str, dict[str, float]]:
        mine = getattr(self.local, "deltas", None) or {}
        self.local.deltas = {}
        return mine


class LLMWorker:
    """A Ray actor sending LLM requests (each through the cluster-wide limiter) for the driver.

    The endpoint is the driver's (its settings come with the base URL the driver resolved, not
    one a worker's environment might name). The API key is read from the worker's own
    environment, and only when the driver's client would send it (the endpoint is one the
    operator chose): it never travels through Ray.
    """

    def __init__(self, settings: Any, trusted: bool, lease: _Lease) -> None:
        from searchgrade.engine.llm.client import LLMClient
        from searchgrade.engine.llm.env import env_api_key

        self.client = LLMClient(settings, api_key=env_api_key() if trusted else None)
        self.client.usage = _CallUsage()  # type: ignore[assignment]
        self.client.request_gate = lambda: _Permit(lease)

    def complete(self, stage: str, messages: list[dict[str, str]], reply_model: Any,
                 schema: dict[str, Any], kwargs: dict[str, Any]) -> tuple[Any, dict[str, Any], str | None]:
        reply = self.client.complete(stage, messages, reply_model, schema, **kwargs)
        return reply, self.client.usage.take(), self.client.output_mode


class RayLLM:
    """The run's LLM client, with its requests sent by Ray workers through a cluster-wide limiter.

    Everything but ``complete`` is the driver's client (the model, its cache identity, the
    accounting the run stores, ``map``'s threads); ``complete`` runs on a worker, whose counters
    are added to the driver's accounting as each call returns.

    Args:
        workers: LLM worker actors (default: up to 4; requests wait on the network, not the CPU).
        lease_s: Seconds a request's permit is leased (default: the LLM timeout plus
            ``LEASE_MARGIN_S``; a request holds one for one attempt, retries take another).
        wait_s: Seconds a request waits for a permit before the run stops with one line (default:
            ``PERMIT_WAIT_LEASES`` leases, in which every permit held by a dead holder comes back).
    """

    def __init__(self, client: Any, session: RaySession, workers: int | None = None,
                 lease_s: float | None = None, wait_s: float | None = None) -> None:
        from dataclasses import replace

        from searchgrade.engine.llm.env import HOSTED_URL
        from searchgrade.engine.llm.key_policy import normalise_url

        ray = import_ray()
        self.local = client
        self.session = session
        # The workers send to the endpoint the driver resolved (OPENAI_BASE_URL read here, once).
        settings = replace(client.settings, base_url=client.settings.resolved_base_url() or HOSTED_URL)
        limiter_cls = ray.remote(num_cpus=0, max_concurrency=1000)(RequestLimiter)
        name = f"{LIMITER_PREFIX}{normalise_url(settings.base_url)}"
        options: dict[str, Any] = {"name": name, "namespace": NAMESPACE, "get_if_exists": True}
        if session.address is not None:
            options["lifetime"] = "detached"  # the bound holds across runs sharing the cluster
        self.limiter = limiter_cls.options(**options).remote(settings.concurrency)
        lease_s = lease_s if lease_s is not None else settings.timeout_s + LEASE_MARGIN_S
        lease = _Lease(self.limiter, name, lease_s, wait_s if wait_s is not None else PERMIT_WAIT_LEASES * lease_s)
        worker_cls = ray.remote(num_cpus=0, max_concurrency=settings.concurrency)(LLMWorker)
        n = max(1, min(workers or 4, settings.concurrency))
        self.workers = [worker_cls.remote(settings, bool(client.trusted_endpoint), lease) for _ in range(n)]
        self._next = 0
        self._lock = threading.Lock()
        self._mode: str | None = None
        self.calls = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self.local, name)

    @property
    def output_mode(self) -> str | None:
        return self._mode or self.local.output_mode

    def complete(self, stage: str, messages: list[dict[str, str]], reply_model: Any,
                 schema: dict[str, Any], **kwargs: Any) -> Any:
        ray = import_ray()
        with self._lock:
            worker = self.workers[self._next % len(self.workers)]
            self._next += 1
        try:
            reply, deltas, mode = ray.get(worker.complete.remote(stage, messages, reply_model, schema, kwargs))
        except ray.exceptions.RayError as exc:
            raise worker_error(exc) from None
        for counted_stage, counters in deltas.items():
            self.local.usage.add(counted_stage, **counters)
        with self._lock:
            self.calls += 1
            if mode is not None:
                self._mode = mode
        return reply

    def stats(self) -> dict[str, Any]:
        ray = import_ray()
        return {"workers": len(self.workers), "calls": self.calls,
                **ray.get(self.limiter.stats.remote(), timeout=LEASE_MARGIN_S)}

    def close(self) -> None:
        ray = import_ray()
        for worker in self.workers:
            ray.kill(worker)
        self.workers = []
