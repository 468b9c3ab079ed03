"""Running many strategies over many queries, doing each piece of work once.

Every strategy is a *node* (``Node``, with its ``Answer`` and ``Failure``: indexes/base.py): it
answers a batch of queries, possibly from the answers of other nodes (its ``inputs``). ``hybrid`` fuses the answers of ``ann`` and ``fulltext``; ``X_rerank``
rescores the answers of ``X``. The executor computes each node once per query, at the deepest
list any consumer needs (``ann`` at the fusion depth for hybrid, say), and hands every consumer
the same list; a strategy's reported list is that list cut to the run's depth. So the ANN and
BM25 top lists are computed once per query and shared by hybrid and the reranked strategies,
queries are embedded in batches, and a (query, document) pair is scored by the cross-encoder
once whatever strategies retrieved it (indexes/rerank/cross_encoder.py).

Latency. Each node reports, per query, the seconds of its *own* work (``Answer.seconds``): a
search, a fusion, the cross-encoder scoring of its candidates, an HTTP round trip. Work done in a
batch is shared out evenly: the query's share of its embedding batch, a cross-encoder batch's time
divided by its pairs (a pair scored earlier for another strategy is charged at what it cost
then). A strategy's reported latency is its own seconds plus the reported latency of each of its
inputs: what the strategy would cost on its own, whatever was shared to compute it.

Failures. An external backend can fail on one query (``Failure``): that query is then failed
for the node and for every node built on it (a reranker has nothing to rerank), and never
scored as an empty list. Queries are run in chunks; the first chunk holds one query, so a
``check`` callback can stop a strategy on its first answer (a wrong id mapping) before hundreds
of calls: a stopped node is not asked again, each later query failing for it (and for the nodes
built on it) with the reason, while every other strategy goes on. Chunks are independent, so a
caller (Ray, say) can run the executor on slices of the queries and concatenate.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from searchgrade.core.checks import check_k
from searchgrade.core.records import Document, ScoredDoc, SearchGradeError, SearchHits
from searchgrade.indexes.base import Answer, Failure, Node, Outcome, QueryBatch

#: Queries per chunk after the first (which holds one query).
CHUNK_SIZE = 64


@dataclass
class Execution:
    """What a run of the executor produced for the requested strategies.

    Attributes:
        hits: strategy -> one entry per query, in query order: SearchHits (the top ``k`` and the
            strategy's latency on its own), or None where the query failed for it.
        failures: strategy -> query id -> Failure.
        documents: strategy -> doc id -> Document, as the strategy's replies described them.
        seconds: node -> seconds of own work summed over the queries (shared work counted once).
        stopped: node -> why a check stopped it (it was not asked again).
    """

    hits: dict[str, list[SearchHits | None]] = field(default_factory=dict)
    failures: dict[str, dict[str, Failure]] = field(default_factory=dict)
    documents: dict[str, dict[str, Document]] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)
    stopped: dict[str, str] = field(default_factory=dict)

    def extend(self, other: Execution) -> None:
        """Append another execution over later queries (same strategies)."""
        for name, why in other.stopped.items():
            self.stopped.setdefault(name, why)
        for name, hits in other.hits.items():
            self.hits.setdefault(name, []).extend(hits)
        for name, failed in other.failures.items():
            self.failures.setdefault(name, {}).update(failed)
        for name, docs in other.documents.items():
            mine = self.documents.setdefault(name, {})
            for doc_id, doc in docs.items():
                mine.setdefault(doc_id, doc)
        for name, s in other.seconds.items():
            self.seconds[name] = self.seconds.get(name, 0.0) + s


def chunk_bounds(n: int, chunk_size: int = CHUNK_SIZE) -> list[tuple[int, int]]:
    """(start, stop) of the chunks ``Executor.run`` answers ``n`` queries in: one query, then
    ``chunk_size`` at a time. A distributed runner cuts the same chunks, so every batch (query
    embeddings, cross-encoder batches) is the same as a local run's."""
    bounds = []
    start = 0
    while start < n:
        stop = min(n, start + (1 if start == 0 else max(1, chunk_size)))
        bounds.append((start, stop))
        start = stop
    return bounds


#: check(execution so far), after each chunk: the nodes to stop, each with why (a node stopped is
#: not asked again); it may also raise to stop the run.
Check = Callable[[Execution], "Mapping[str, str] | None"]
Progress = Callable[[str, int, int], None]


class Executor:
    """Runs the requested strategies (and the nodes they are built on) over query batches.

    Args:
        nodes: node name -> node; must hold every requested strategy and every input of a node.
        requested: the strategies whose lists are reported.
        k: results reported per query.
    """

    def __init__(self, nodes: Mapping[str, Node], requested: Sequence[str], k: int,
                 chunk_size: int = CHUNK_SIZE) -> None:
        check_k(k)
        self.nodes = dict(nodes)
        self.requested = list(dict.fromkeys(requested))
        self.k = k
        self.chunk_size = max(1, chunk_size)
        self.order = self._topological(self.requested)
        self.depths = self._depths()

    def _topological(self, names: Sequence[str]) -> list[str]:
        order: list[str] = []
        state: dict[str, int] = {}

        def visit(name: str, path: tuple[str, ...]) -> None:
            if state.get(name) == 2:
                return
            if state.get(name) == 1:
                raise SearchGradeError(f"strategies {' -> '.join((*path, name))} depend on each other in a cycle")
            if name not in self.nodes:
                raise SearchGradeError(f"strategy {path[-1] if path else name!r} needs {name!r}, "
                                       "which was not built")
            state[name] = 1
            for dep in self.nodes[name].inputs:
                visit(dep, (*path, name))
            state[name] = 2
            order.append(name)

        for name in names:
            visit(name, ())
        return order

    def _depths(self) -> dict[str, int]:
        """Each node's depth: k if reported, and as deep as any consumer needs."""
        depths = {name: self.k if name in self.requested else 0 for name in self.order}
        for name in reversed(self.order):  # consumers come after their inputs
            node = self.nodes[name]
            needed = node.input_depth(max(depths[name], 1))
            for dep in node.inputs:
                depths[dep] = max(depths[dep], needed)
        return depths

    def run(self, batch: QueryBatch, progress: Progress | None = None,
            check: Check | None = None, stage: str = "search") -> Execution:
        """Answer every query with every requested strategy.

        Args:
            batch: the queries.
            progress: called as progress(stage, queries done, queries).
            check: called with the execution so far after each chunk: the nodes it returns are
                stopped (``Execution.stopped``); it may raise to stop the run.
        """
        total = Execution()
        if progress is not None:
            progress(stage, 0, len(batch))
        for start, stop in chunk_bounds(len(batch), self.chunk_size):
            total.extend(self.run_chunk(batch.slice(start, stop), total.stopped))
            if check is not None:
                total.stopped.update(check(total) or {})
            if progress is not None:
                progress(stage, stop, len(batch))
        return total

    def run_chunk(self, batch: QueryBatch, stopped: Mapping[str, str] | None = None) -> Execution:
        """Answer one chunk of queries (each node once per query); a node in ``stopped`` is not
        asked: each query fails for it with the reason given."""
        stopped = stopped or {}
        outcomes: dict[str, list[Outcome]] = {}
        seconds: dict[str, float] = {}
        for name in self.order:
            node = self.nodes[name]
            inputs = {dep: outcomes[dep] for dep in node.inputs}
            if name in stopped:
                outcomes[name] = [Failure(stopped[name], 0) for _ in range(len(batch))]
                seconds[name] = 0.0
                continue
            failed = [self._failed_input(node, inputs, i) for i in range(len(batch))]
            todo = [i for i, f in enumerate(failed) if f is None]
            result: list[Outcome] = list(failed)  # type: ignore[arg-type]
            if todo:
                sub = batch if len(todo) == len(batch) else QueryBatch(
                    [batch.ids[i] for i in todo], [batch.texts[i] for i in todo])
                sub_inputs = inputs if len(todo) == len(batch) else {
                    dep: [outs[i] for i in todo] for dep, outs in inputs.items()}
                answered = node.answer(sub, self.depths[name], sub_inputs)
                if len(answered) != len(todo):
                    raise RuntimeError(f"strategy {name!r} answered {len(answered)} of {len(todo)} queries")
                for i, outcome in zip(todo, answered, strict=True):
                    result[i] = outcome
            outcomes[name] = result
            seconds[name] = sum(o.seconds for o in result if isinstance(o, Answer))
        return self._report(batch, outcomes, seconds)

    @staticmethod
    def _failed_input(node: Node, inputs: Mapping[str, Sequence[Outcome]], i: int) -> Failure | None:
        for dep, outs in inputs.items():
            if isinstance(outs[i], Failure):
                return Failure(f"{dep} failed on this query: {outs[i].error}", 0)
        return None

    def _report(self, batch: QueryBatch, outcomes: dict[str, list[Outcome]],
                seconds: dict[str, float]) -> Execution:
        latency: dict[str, list[float]] = {}
        for name in self.order:
            node = self.nodes[name]
            own = [o.seconds if isinstance(o, Answer) else 0.0 for o in outcomes[name]]
            for dep in node.inputs:
                own = [a + b for a, b in zip(own, latency[dep], strict=True)]
            latency[name] = own
        out = Execution(seconds=seconds)
        for name in self.requested:
            hits: list[SearchHits | None] = []
            failed: dict[str, Failure] = {}
            docs: dict[str, Document] = {}
            for qid, outcome, seconds_alone in zip(batch.ids, outcomes[name], latency[name], strict=True):
                if isinstance(outcome, Failure):
                    hits.append(None)
                    failed[qid] = outcome
                    continue
                top = outcome.docs[: self.k]
                passages = ({d.doc_id: outcome.passages[d.doc_id] for d in top if d.doc_id in outcome.passages}
                            if outcome.passages else None)
                hits.append(SearchHits(top, seconds_alone, passages))
                described = outcome.documents or {}
                for d in top:
                    if d.doc_id in described:
                        docs.setdefault(d.doc_id, described[d.doc_id])
            out.hits[name] = hits
            out.failures[name] = failed
            out.documents[name] = docs
        return out


class StrategySearcher:
    """One strategy behind the plain ``Searcher`` interface (``search(queries, k)``): an executor
    over that strategy alone. For code and tests that want one strategy's lists."""

    def __init__(self, name: str, nodes: Mapping[str, Node]) -> None:
        self.name = name
        self.nodes = nodes

    def search(self, queries: Sequence[str], k: int) -> list[SearchHits]:
        check_k(k)
        if isinstance(queries, str):
            raise TypeError("queries must be a sequence of strings, not one string")
        ids = [f"q{i}" for i in range(len(queries))]
        execution = Executor(self.nodes, [self.name], k).run(QueryBatch(ids, list(queries)))
        failed = execution.failures.get(self.name, {})
        if failed:
            qid, failure = next(iter(failed.items()))
            raise SearchGradeError(f"{self.name} failed on query {queries[ids.index(qid)]!r}: {failure.error}")
        return [h for h in execution.hits[self.name] if h is not None]

    def search_one(self, query: str, k: int) -> list[ScoredDoc]:
        return self.search([query], k)[0].docs
