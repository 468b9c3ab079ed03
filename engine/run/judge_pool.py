"""Pooled judging of a stored run: the holes of its pool judged once each by the LLM judge, in a new run.

A run graded with judgments made for something else has holes: results nobody judged, which count
as not relevant. ``judge_pool_run`` makes a *new* run from the parent's stored results (no search):
the pool is the union of every strategy's top D (engine/run/pool.py), and each pair of it without
a grade (unjudged, a failed judgment, or pooled but not judged in the qrels) is judged once; every
grade the parent had stays (human grades first), every metric and CI is computed again with the
pipeline's scoring (a derived run: engine/run/derived.py). Its stats say how many pairs the pool
held, how many were holes and how many the judge was asked about.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from searchgrade.core.records import Document, SearchGradeError
from searchgrade.engine.run.config import JUDGE_THRESHOLD, RunConfig
from searchgrade.engine.run.derived import derive_run, stored_grades, stored_hits
from searchgrade.engine.run.pool import PoolDepth, pool_pairs

if TYPE_CHECKING:
    from searchgrade.engine.llm.client import LLMClient
    from searchgrade.engine.llm.judge import JudgeSettings
    from searchgrade.engine.llm.settings import LLMSettings
    from searchgrade.engine.store import RunRecord, Store


@dataclass
class PoolHoles:
    """A stored run's judging pool at a depth, and its holes (pairs with no grade), in pool order."""

    depth: PoolDepth
    pairs: int
    holes: list[tuple[str, str]]

    def text(self) -> str:
        return (f"the pool ({self.depth.text()}) holds {self.pairs:,} (query, document) pairs, "
                f"{len(self.holes):,} of them unjudged")


def _binary(run: RunRecord) -> bool:
    return (run.grade_max or 0) <= 1


def check_scale(run: RunRecord) -> None:
    """The judge grades 0-3: it fills runs on that scale, or binary ones (grade >= 2 is relevant).

    Raises:
        SearchGradeError: the run's labels are on another scale.
    """
    if not (_binary(run) or (run.grade_max == 3 and (run.grade_min or 0) >= 0)):
        raise SearchGradeError(
            f"run {run.run_id}'s labels go from {run.grade_min} to {run.grade_max}: the judge grades 0-3, so "
            "it can fill the holes of runs on that scale or on binary labels; for these, rate the holes "
            "on the Review page (\"fill the holes\") or judge them with the people who made the qrels")


def pool_holes(store: Store, run: RunRecord, depth: PoolDepth) -> PoolHoles:
    """The run's pool at ``depth`` and the pairs in it that hold no grade."""
    queries, hits = stored_hits(store, run.run_id)
    pool = pool_pairs(queries, hits, depth)
    graded = {(g["query_id"], g["doc_id"]) for g in store.grades(run.run_id) if g["grade"] is not None}
    pooled = store.pooled_unjudged(run.run_id)
    holes = [(q, d) for q, d in pool if (q, d) not in graded or d in pooled.get(q, ())]
    return PoolHoles(depth, len(pool), holes)


def judge_pool_run(store: Store, run_id: str, depth: PoolDepth, llm: LLMSettings,
                   judge: JudgeSettings | None = None, *, name: str | None = None,
                   client: LLMClient | None = None, progress: Callable[[str, int, int], None] | None = None,
                   on_complete: Callable[[Any, str], None] | None = None) -> str:
    """A new run: the parent's stored results, its pool's holes judged once each, scored anew.

    Args:
        depth: How deep each strategy's list goes into the pool.
        llm: The judge's model and endpoint; ``client`` (built from them when None) sends the calls.
        judge: The judge's prompt (the packaged one when None).
        on_complete: Called as on_complete(store, run_id) once the new run is complete.

    Raises:
        SearchGradeError: the parent is not complete, its scale is not the judge's, its pool has no
            hole, or every judgment failed.
    """
    from searchgrade.engine.llm.cache import StoreCache
    from searchgrade.engine.llm.client import LLMClient
    from searchgrade.engine.llm.judge import JudgeSettings, judge_pairs

    started = time.perf_counter()
    parent = store.get_run(run_id)
    if parent.status != "complete":
        raise SearchGradeError(f"run {parent.run_id} is {parent.status}; only a complete run's pool can be judged")
    check_scale(parent)
    found = pool_holes(store, parent, depth)
    if not found.holes:
        raise SearchGradeError(f"run {parent.run_id} has no unjudged pair in its pool ({depth.text()}): "
                               "nothing to judge; a deeper --pool-depth reaches further down the lists")
    queries, _ = stored_hits(store, parent.run_id)
    texts = {q.query_id: q for q in queries}
    docs = store.documents(parent.run_id, sorted({d for _, d in found.holes}))
    pairs = [(texts[q], Document(d, docs[d]["title"], docs[d]["text"])) for q, d in found.holes if d in docs]
    judge = judge or JudgeSettings()
    client = client or LLMClient(llm)
    result = judge_pairs(pairs, client, StoreCache(store), judge, progress=progress)
    if result.grades and result.failures == len(result.grades):
        first = next(g.reason for g in result.grades if g.grade is None)
        raise SearchGradeError(f"the judge failed on all {result.failures} pairs ({first}); check --model "
                               "and the endpoint")

    binary = _binary(parent)
    by_pair = {(g.query_id, g.doc_id): g for g in stored_grades(store, parent.run_id)}
    for g in result.grades:
        if g.grade is not None and binary:
            g = g._replace(grade=int(g.grade >= JUDGE_THRESHOLD), reason=f"judge grade {g.grade}: {g.reason}",
                           llm_grade=g.grade)
        by_pair[(g.query_id, g.doc_id)] = g
    grades = list(by_pair.values())
    config = replace(RunConfig.from_json(parent.config), llm=llm, judge=judge, pool_depth=depth.to_json())
    usage = client.usage.snapshot().get("judge", {})
    pool_stats = {"parent": parent.run_id, "depth": depth.to_json(), "pairs": found.pairs,
                  "holes": len(found.holes), "judged": result.judged, "cache_hits": result.cache_hits,
                  "failures": result.failures, "requests": int(usage.get("requests", 0))}
    llm_stats = {"pairs": len(result.grades), "judged": result.judged, "judge_cache_hits": result.cache_hits,
                 "judge_failures": result.failures, "failure_reasons": result.failure_reasons,
                 "model": result.model, "prompt_version": result.prompt_version, "output_mode": client.output_mode}
    return derive_run(store, parent, grades, name=name or f"{parent.name} · pool judged",
                      label_source={"llm": "llm", "clicks": "clicks+llm"}.get(parent.label_source, "human+llm"),
                      config=config.to_json() | {"pool_judged_from": parent.run_id},
                      note=f"the holes of run {parent.run_id}'s pool judged: {found.text()}; {result.judged} judged "
                      f"by {result.model}, {result.cache_hits} from the cache; same search results, no search",
                      stats={"pool": pool_stats, "llm": llm_stats}, stage="judge_pool", started=started,
                      usage={"judge": usage}, on_complete=on_complete)
