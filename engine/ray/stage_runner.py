"""Running a run's heavy stages on Ray: the ``StageRunner`` (engine/run/stage_runner.py) of a Ray session.

- **Connecting** (engine/ray/session.py): a local Ray started for the run, or an existing cluster
  joined by address, checked in seconds.
- **Embedding** (engine/ray/data_embedding.py): the texts the embedding cache lacks, on Ray Data,
  in the chunks a local run encodes.
- **Search** (engine/ray/search_workers.py): the executor on Ray actors, each building the run's
  strategies from the driver's artifacts.
- **LLM judging** (engine/ray/llm_requests.py): the judge's requests sent by Ray actors within one
  cluster-wide bound on requests in flight.
- **The device**: the actors request CPUs, not GPUs (``device_on_ray``).

Errors raised on a worker come back as the same one-line ``SearchGradeError``. Nothing here
changes what a run computes: the metrics of a run on Ray equal the local run's. What ran where
goes to the run's ``stats["ray"]``: the session (address, nodes, CPUs), ``embed``, ``search``
and ``judge``.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from searchgrade.core.records import Collection, SearchGradeError
from searchgrade.engine.ray.search_workers import BuildSpec, RaySearch
from searchgrade.engine.ray.session import RaySession
from searchgrade.engine.run.stage_runner import Check, Progress, RerankerCounts, SearchJob, built_reranker_counts
from searchgrade.indexes.base import QueryBatch
from searchgrade.indexes.executor import Execution
from searchgrade.indexes.settings import IndexSettings

if TYPE_CHECKING:
    from searchgrade.engine.llm.client import LLMClient
    from searchgrade.engine.run.config import RunConfig


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


def _record(stats: dict[str, Any], **parts: Any) -> None:
    """Add to the run's ``stats["ray"]`` (a resumed run keeps what its earlier attempts recorded)."""
    stats["ray"] = {**stats.get("ray", {}), **parts}


@dataclass
class _SearchOnRay:
    """The search stage's executor on the Ray actors, with their reranker counters."""

    search: RaySearch
    built: Any

    def execute(self, strategies: Sequence[str], batch: QueryBatch, progress: Progress | None,
                check: Check | None) -> Execution:
        return self.search.execute(strategies, batch, progress, check)

    def reranker_counts(self) -> RerankerCounts | None:
        if built_reranker_counts(self.built) is None:  # the driver loaded no reranker: neither did they
            return None
        counters = self.search.counters()  # the cross-encoder ran on the Ray workers
        return RerankerCounts(counters.get("scored", 0), counters.get("reused", 0), counters.get("summary"))


class RayRunner:
    """A run's embedding, search and judging on a Ray session (see the module docstring)."""

    def __init__(self, session: RaySession) -> None:
        self.session = session

    def device(self, config: RunConfig) -> tuple[RunConfig, str | None]:
        index = config.index or IndexSettings()
        device, note = device_on_ray(index.device, index.embedding_backend)
        return (replace(config, index=replace(index, device=device)) if device != index.device else config), note

    def embed_corpus(self, collection: Collection, settings: IndexSettings, data_dir: Path,
                     fingerprint: str, progress: Progress | None, stats: dict[str, Any]) -> None:
        """The corpus's missing vectors embedded on Ray Data into the embedding cache, when the ANN
        index is not on disk yet (the build then embeds nothing)."""
        from searchgrade.engine.ray.data_embedding import embed_on_ray
        from searchgrade.indexes.build import bundled_shard
        from searchgrade.indexes.builtin import ann
        from searchgrade.indexes.embeddings.encoder import EmbeddingCache, cache_dir_for, load_embedder

        settings = settings.resolved(len(collection.documents))
        if (ann.ann_dir(data_dir, fingerprint, settings) / ann.MANIFEST).exists():
            return
        backend = settings.embedding_backend
        # Loaded here first (the driver needs it for the queries anyway): a model that cannot be loaded
        # stops the run with its one line, not with Ray Data restarting actors that fail. An ONNX
        # backend's export is made here, once, before the actors load it.
        load_embedder(settings.embedding_model, backend, settings.device, data_dir)
        cache_dir = cache_dir_for(data_dir, settings.embedding_model, backend)
        bundled = bundled_shard(collection, settings.embedding_model, backend)
        if bundled is not None and bundled.is_file():
            EmbeddingCache(cache_dir).import_shard(bundled)
        embedded = embed_on_ray(self.session, settings.embedding_model, [d.content for d in collection.documents],
                                cache_dir, settings.batch_size, progress, backend=backend,
                                device=settings.device, models_dir=Path(data_dir).resolve())
        _record(stats, embed=embedded.to_json())

    @contextmanager
    def searching(self, job: SearchJob, stats: dict[str, Any]) -> Iterator[_SearchOnRay]:
        """The search stage on Ray actors, building what the driver built."""
        config = job.config
        spec = BuildSpec(
            collection_path=str(Path(job.collection.path).resolve()),
            collection_fields=dict(config.collection_fields),
            fingerprint=job.built.stats["collection_fingerprint"], settings=config.index,
            data_dir=str(Path(job.data_dir).resolve()), strategies=job.strategies,
            declared=dict(config.declared), artifacts=dict(job.built.artifacts), queries=job.queries,
        )
        search = RaySearch(self.session, spec, config.retrieval_depth)
        try:
            yield _SearchOnRay(search, job.built)
        finally:
            search.close()
        _record(stats, **self.session.info(), search=search.stats())

    @contextmanager
    def judging(self, client: LLMClient | None, stats: dict[str, Any]) -> Iterator[LLMClient | None]:
        """The judge's requests sent by Ray workers through a cluster-wide bound on requests in
        flight (engine/ray/llm_requests.py); the driver keeps the cache and accounting."""
        if client is None:
            yield None
            return
        from searchgrade.engine.ray.llm_requests import RayLLM

        on_ray = RayLLM(client, self.session)
        try:
            yield on_ray
        finally:
            try:
                _record(stats, judge=on_ray.stats())
            except Exception as exc:  # noqa: BLE001 - the judging's own error, if any, is the one to see
                _record(stats, judge={"stats_error": str(exc)[:200]})
            finally:
                on_ray.close()
