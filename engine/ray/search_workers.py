"""The search stage on Ray actors: each builds the run's strategies from the driver's artifacts.

The executor (indexes/executor.py) runs on Ray actors (``SearchWorker``; those the cluster cannot
place in ``PLACE_TIMEOUT_S`` are dropped, none placed is one line), each building the same
strategies from the collection and the index artifacts the driver built (same paths: on a
cluster, a filesystem every node mounts). The queries are cut into the same chunks as a local run
(the first holds one query, then ``CHUNK_SIZE``), so every batch (query embeddings, cross-encoder
batches) is the same as locally; the chunks' ``Execution`` s are merged on the driver in query
order, so the stored results are the local run's.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from searchgrade.core.records import Query, SearchGradeError
from searchgrade.engine.ray.session import RaySession, import_ray, worker_error
from searchgrade.indexes.base import QueryBatch
from searchgrade.indexes.executor import CHUNK_SIZE, Check, Execution, Executor, chunk_bounds
from searchgrade.indexes.settings import IndexSettings

#: Seconds the search actors have to be placed on the cluster (each needs a free CPU).
PLACE_TIMEOUT_S = 120.0

Progress = Callable[[str, int, int], None]


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
        #: The build's indexes.build.BuildContext (its reranker's counters).
        self.context: Any = None

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
        self.context = built.context
        if spec.queries:
            self.context.bind_queries(spec.queries)

    def run_chunk(self, strategies: Sequence[str], k: int, ids: Sequence[str],
                  texts: Sequence[str], stopped: Mapping[str, str] | None = None) -> Execution:
        return Executor(self.nodes, strategies, k).run_chunk(QueryBatch(list(ids), list(texts)), stopped)

    def counters(self) -> dict[str, Any]:
        """The cross-encoder's shared scores: pairs scored and reused; a trained reranker's record."""
        counts = self.context.reranker_counts() if self.context is not None else None
        if counts is None:
            return {}
        return {**counts, "summary": self.context.reranker_summary()}


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
                                           list(batch.texts[start:stop]), dict(total.stopped))

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
                if check is not None:  # a strategy it stops is not asked in the chunks sent after
                    total.stopped.update(check(total) or {})
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
