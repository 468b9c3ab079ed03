"""What a trial runs: the tuned strategy's node, rebuilt from the trial's parameters, over the
answers of its inputs computed once.

A ``Target`` holds the queries (ids and texts), the strategy's executor inputs answered once for
every query at the deepest depth the space can ask for (``ann`` and ``fulltext`` for hybrid, the
base strategy for ``X_rerank``), and a maker that turns a trial's parameters into a node. So a
fusion trial fuses the stored lists (no search again), a rerank-depth trial reorders with the
cross-encoder scores already computed (``SharedScores``: each pair once), a BM25 trial searches
the same index with other k1 and b (nothing rebuilt, the weights kept in memory only and dropped
after the trial), and a declared HTTP trial calls the backend with its declared concurrency,
counting every request (``calls``).

``reuse=False`` recomputes the inputs for every trial: what a tuner that does not keep the base
lists would do (bench/bench_tune.py measures both).

Latency of a query in a trial: the node's own seconds plus the seconds its inputs took when they
were computed (the executor's rule, indexes/executor.py).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from searchgrade.indexes.base import Answer, Failure, QueryBatch


@dataclass
class TrialLists:
    """One configuration's answers for some queries."""

    #: query id -> ranked doc ids (the top k); a failed query is absent.
    docs: dict[str, list[str]] = field(default_factory=dict)
    #: query id -> seconds (the strategy's latency on its own).
    seconds: dict[str, float] = field(default_factory=dict)
    #: query id -> why it failed.
    failed: dict[str, str] = field(default_factory=dict)
    #: Requests sent to an external backend for these lists.
    calls: int = 0


#: Parameters -> the strategy's node, and input answers that replace the cached ones (or None).
Maker = Callable[[Mapping[str, Any], QueryBatch], tuple[Any, "dict[str, list[Any]] | None"]]


class Target:
    """One strategy to tune (see the module).

    Args:
        strategy: its name.
        kind: a key of engine.tuning.space.PARAMS_OF.
        queries: query id -> text, every query of the run (tuning and held out).
        nodes: every node the inputs are built from (the build's nodes).
        inputs: the names of the nodes the trial's node reads (answered once, at ``depth``).
        depth: how deep the inputs are answered.
        k: results kept per query in a trial.
        make: builds a trial's node (see ``Maker``).
        start: the parameters the run used (the starting configuration).
        calls: counts an external backend's requests (a callable returning the total so far).
        reuse: keep the inputs' answers across trials (False: recompute them every trial).
    """

    def __init__(self, strategy: str, kind: str, queries: Mapping[str, str], nodes: Mapping[str, Any],
                 inputs: Sequence[str],
                 depth: int, k: int, make: Maker, start: Mapping[str, Any],
                 calls: Callable[[], int] | None = None, reuse: bool = True,
                 describe: Callable[[Mapping[str, Any]], dict[str, Any]] | None = None) -> None:
        self.strategy = strategy
        self.kind = kind
        self.queries = dict(queries)
        self.nodes = dict(nodes)
        self.inputs = list(inputs)
        self.depth = depth
        self.k = k
        self.make = make
        self.start = dict(start)
        self._calls = calls
        self.reuse = reuse
        self.describe = describe or (lambda params: dict(params))
        self._cache: dict[str, dict[str, Any]] = {}
        self.base_seconds = 0.0

    def calls(self) -> int:
        return self._calls() if self._calls is not None else 0

    def batch(self, query_ids: Sequence[str]) -> QueryBatch:
        ids = list(query_ids)
        return QueryBatch(ids, [self.queries[q] for q in ids])

    def input_answers(self, batch: QueryBatch) -> dict[str, list[Any]]:
        """Each input's answer for each query of the batch: kept from the first time (reuse), or
        computed again."""
        from searchgrade.indexes.executor import Executor

        if not self.inputs:
            return {}
        missing = [q for q in batch.ids if not self.reuse or any(q not in self._cache.get(n, {}) for n in self.inputs)]
        if missing:
            start = time.perf_counter()
            sub = self.batch(missing)
            execution = Executor(self.nodes, self.inputs, self.depth).run(sub)
            for name in self.inputs:
                cache = self._cache.setdefault(name, {})
                failures = execution.failures.get(name, {})
                for qid, hits in zip(sub.ids, execution.hits[name], strict=True):
                    cache[qid] = Failure(failures[qid].error) if hits is None else Answer(hits.docs, hits.latency_s)
            self.base_seconds += time.perf_counter() - start
        out = {name: [self._cache[name][q] for q in batch.ids] for name in self.inputs}
        if not self.reuse:
            self._cache.clear()
        return out

    def run(self, params: Mapping[str, Any], query_ids: Sequence[str]) -> TrialLists:
        """The strategy configured by ``params`` over ``query_ids``."""
        batch = self.batch(query_ids)
        inputs = self.input_answers(batch)
        before = self.calls()
        node, replaced = self.make(params, batch)
        if replaced:
            inputs = {**inputs, **replaced}
        answers = node.answer(batch, self.k, inputs)
        out = TrialLists()
        for i, (qid, answer) in enumerate(zip(batch.ids, answers, strict=True)):
            failed = next((o.error for outs in inputs.values() for o in [outs[i]] if isinstance(o, Failure)), None)
            if isinstance(answer, Failure) or failed is not None:
                out.failed[qid] = failed or answer.error
                continue
            out.docs[qid] = [d.doc_id for d in answer.docs[: self.k]]
            out.seconds[qid] = answer.seconds + sum(outs[i].seconds for outs in inputs.values())
        out.calls = self.calls() - before
        return out
