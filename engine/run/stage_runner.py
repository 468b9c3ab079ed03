"""Where a run's heavy stages run: here, or on Ray, behind one small interface.

The stages (engine/run/stages.py) ask the run's ``StageRunner`` for four things and never ask
where it runs (ragas' Executor hides async vs threads the same way):

- ``device(config)``: the config with the device the run embeds on, and a note when it changed;
- ``embed_corpus(...)``: the corpus's vectors in the embedding cache, ahead of the index build;
- ``searching(job, stats)``: the search stage's executor, and the reranker's counters after it;
- ``judging(client, stats)``: the client the judge sends its requests through.

``LocalRunner`` runs them in this process: the index build embeds what the cache lacks, the
executor runs on the built nodes, the judge's client sends its own requests. ``RayRunner``
(engine/ray/stage_runner.py) runs the same work on a Ray session, with the same results. What a runner
did is added to the run's ``stats`` (on Ray, its ``stats["ray"]``; here, nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from searchgrade.core.records import Collection, Query
from searchgrade.indexes.base import BuiltIndexes, QueryBatch
from searchgrade.indexes.executor import Check, Execution, Executor
from searchgrade.indexes.settings import IndexSettings

if TYPE_CHECKING:
    from searchgrade.engine.llm.client import LLMClient
    from searchgrade.engine.run.config import RunConfig

Progress = Callable[[str, int, int], None]


class RerankerCounts(NamedTuple):
    """What the cross-encoder did in the search stage."""

    scored: int
    reused: int
    #: A trained reranker's record of which model scored each query (None for any other).
    summary: dict[str, Any] | None


@dataclass(frozen=True)
class SearchJob:
    """The search stage's work, as a runner needs it to run here or elsewhere.

    Attributes:
        built: What the driver built (its nodes run here; elsewhere, its artifacts are rebuilt from).
        strategies: The strategies to search with (those that were built).
    """

    collection: Collection
    config: RunConfig
    data_dir: Path
    built: BuiltIndexes
    strategies: tuple[str, ...]
    queries: tuple[Query, ...]


class Search(Protocol):
    """The search stage's executor, while a runner holds it open."""

    def execute(self, strategies: Sequence[str], batch: QueryBatch, progress: Progress | None,
                check: Check | None) -> Execution:
        """What ``Executor(nodes, strategies, k).run(batch, progress, check)`` gives."""

    def reranker_counts(self) -> RerankerCounts | None:
        """The cross-encoder's counters so far; None when the run loaded no reranker."""


class StageRunner(Protocol):
    """Runs a run's heavy work: embedding the corpus, the search stage, the judge's requests."""

    def device(self, config: RunConfig) -> tuple[RunConfig, str | None]:
        """The config with the embedding device this runner uses, and a note when it changed it.

        Raises:
            SearchGradeError: a device this runner cannot use.
        """

    def embed_corpus(self, collection: Collection, settings: IndexSettings, data_dir: Path,
                     fingerprint: str, progress: Progress | None, stats: dict[str, Any]) -> None:
        """Put the corpus's missing vectors in the embedding cache before the index build."""

    def searching(self, job: SearchJob, stats: dict[str, Any]) -> AbstractContextManager[Search]:
        """The search stage's executor, open while the block runs."""

    def judging(self, client: LLMClient | None,
                stats: dict[str, Any]) -> AbstractContextManager[LLMClient | None]:
        """The client the judge sends through while the block runs (None: no judge)."""


def built_reranker_counts(built: BuiltIndexes) -> RerankerCounts | None:
    """The counters of the reranker ``built`` loaded in this process (None: it loaded none)."""
    counts = built.context.reranker_counts()
    if counts is None:
        return None
    return RerankerCounts(counts["scored"], counts["reused"], built.context.reranker_summary())


@dataclass
class LocalSearch:
    """The executor on the nodes built in this process."""

    built: BuiltIndexes
    k: int

    def execute(self, strategies: Sequence[str], batch: QueryBatch, progress: Progress | None,
                check: Check | None) -> Execution:
        return Executor(self.built.nodes, strategies, self.k).run(batch, progress, check)

    def reranker_counts(self) -> RerankerCounts | None:
        return built_reranker_counts(self.built)


class LocalRunner:
    """Every stage in this process."""

    def device(self, config: RunConfig) -> tuple[RunConfig, str | None]:
        return config, None

    def embed_corpus(self, collection: Collection, settings: IndexSettings, data_dir: Path,
                     fingerprint: str, progress: Progress | None, stats: dict[str, Any]) -> None:
        """Nothing ahead of the build: the build embeds what the cache lacks, in the same chunks."""

    @contextmanager
    def searching(self, job: SearchJob, stats: dict[str, Any]) -> Iterator[Search]:  # noqa: ARG002 - StageRunner's signature
        yield LocalSearch(job.built, job.config.retrieval_depth)

    @contextmanager
    def judging(self, client: LLMClient | None, stats: dict[str, Any]) -> Iterator[LLMClient | None]:  # noqa: ARG002 - StageRunner's signature
        yield client
