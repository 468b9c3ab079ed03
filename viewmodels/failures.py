"""Why queries fail, as Results, `searchgrade show` and MCP show it (engine/failures/): per strategy
the two kinds of a failed top 1 and the causes, the failed queries with what came back instead,
the failed queries in groups by meaning on a map of the run's queries, and the strategies that
could not answer. A complete run's reads are kept (viewmodels/results_cache.py).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from searchgrade.engine.failures.causes import CAUSES, KINDS
from searchgrade.engine.failures.diagnosis import Diagnosis, diagnose_run
from searchgrade.engine.failures.groups import group_failures, text_vectors
from searchgrade.engine.failures.groups import query_map as map_of
from searchgrade.engine.run.strategies import label, strategy_order
from searchgrade.engine.store import RunRecord, Store
from searchgrade.viewmodels.common import Sentence, one_session, plural
from searchgrade.viewmodels.results_cache import RunReads

#: "Every strategy" in the failed-queries picker.
ALL = "*"
#: The seed of the groups and the map (the same run always shows the same groups).
SEED = 0
#: A query's place on the map, for one strategy: its top result relevant, the two kinds of a
#: failed top 1, its top result's judgment failed, or no answer (the strategy failed on it).
STATUS = {"relevant": "Top result relevant", "judged_not_relevant": KINDS["judged_not_relevant"].title,
          "unjudged": KINDS["unjudged"].title, "judge_failed": "Top result's judgment failed",
          "unanswered": "No answer (the strategy failed, or returned nothing)"}


def category_title(key: str) -> str:
    """A kind's or a cause's title ("Ranked too low")."""
    return (KINDS.get(key) or CAUSES[key]).title


@dataclass
class FailureSummary:
    """The counts at the top of Results' failed-queries section.

    Attributes:
        table: one row per strategy with results, in display order: strategy, Strategy (label),
            queries (answered with a top 1), failed, each kind and each cause (keys of KINDS and
            CAUSES), judge_failed (top 1s whose judgment failed: not failed queries).
        strategy_failures: the strategies that could not answer some queries: strategy, reason,
            queries_failed, queries, text.
        default: the strategy the picker opens on: the one with the most failed queries.
        one_strategy_only: per strategy and query type, the failed queries another strategy gets
            right at rank 1, and by which (strategy -> queries): strategy, query_type, count, by.
    """

    table: pd.DataFrame
    strategy_failures: list[dict[str, Any]]
    default: str | None
    threshold: int
    depth: int
    index: str | None = None
    one_strategy_only: list[dict[str, Any]] = field(default_factory=list)


def _summary_json(d: Diagnosis) -> dict[str, Any]:
    table = d.table()
    table.insert(1, "Strategy", [label(s) for s in table["strategy"]])
    one_only = []
    for (strategy, query_type), rows in d.rows[d.rows["cause"] == "one_strategy_only"].groupby(
            ["strategy", "query_type"], sort=False):
        by = Counter(s for firsts in rows["first_by"] for s in firsts)
        one_only.append({"strategy": strategy, "query_type": query_type, "count": len(rows),
                         "by": dict(by.most_common())})
    return {"table": table.to_dict("records"), "default": d.most_failed(), "threshold": d.threshold,
            "depth": d.depth, "index": d.index, "one_strategy_only": one_only,
            "strategy_failures": [{**f.to_json(), "queries": f.queries, "text": f.text} for f in d.strategy_failures]}


@one_session
def failure_summary(store: Store, run_id: str) -> FailureSummary:
    """Per strategy: failed queries by kind and by cause, and the strategies that failed."""
    run = store.get_run(run_id)
    reads = RunReads(store, run)
    kept = reads.failure_summary(lambda: _summary_json(diagnose_run(store, run)))
    reads.save()
    columns = ["strategy", "Strategy", "queries", "failed", *KINDS, *CAUSES, "judge_failed"]
    return FailureSummary(pd.DataFrame(kept["table"], columns=columns), kept["strategy_failures"], kept["default"],
                          kept["threshold"], kept["depth"], kept["index"], kept["one_strategy_only"])


def failures_json(store: Store, run: RunRecord) -> dict[str, Any]:
    """`show --format json`'s ``failures`` (per strategy, each kind "top1" and each cause "cause":
    {strategy, kind, category, count, query_ids}, zero counts included) and ``strategy_failures``
    ({strategy, reason, queries_failed})."""
    d = diagnose_run(store, run)
    return {"failures": d.counts(), "strategy_failures": [f.to_json() for f in d.strategy_failures]}


def strategy_failure_lines(store: Store, run: RunRecord) -> list[str]:
    """`searchgrade show`'s strategies that failed on queries, each with its reason, and the fix."""
    return [f"  {f['text']}; `searchgrade resume {run.run_id}` retries only what failed"
            for f in failure_summary(store, run.run_id).strategy_failures]


def failures_lines(store: Store, run: RunRecord) -> list[str]:
    """`searchgrade show`'s failed queries per strategy: each kind and each cause (each adding up to
    the failed), a column per strategy."""
    summary = failure_summary(store, run.run_id)
    lines: list[str] = []
    if summary.table.empty:
        return lines
    rows = summary.table.to_dict("records")
    width = max(12, *(len(r["strategy"]) + 2 for r in rows))
    lines.append(f"failed queries: top result not relevant (grade < {summary.threshold}, or unjudged), by kind "
                 "and by cause (docs/metrics.md#why-queries-fail)")
    lines.append(" " * 24 + "".join(f"{r['strategy']:>{width}}" for r in rows))
    for name, key in [("answered", "queries"), ("failed", "failed"), *[(f"  {k}", k) for k in (*KINDS, *CAUSES)]]:
        lines.append(f"{name:<24}" + "".join(f"{r[key]:>{width}}" for r in rows))
    return lines


@one_session
def failure_table(store: Store, run_id: str, strategy: str) -> pd.DataFrame:
    """The failed queries of ``strategy`` (or of every strategy: ``ALL``), one row each.

    Columns: (Strategy, for ALL), Query id, Query, Type, Kind, Cause, Evidence, then, for one
    strategy, each strategy's top 1 as "[grade] title (doc id)" ("[unjudged] ...", "[judge
    failed] ..."), that strategy's first: what came back instead. ``kind`` and ``cause`` keep the
    keys (to filter on).
    """
    run = store.get_run(run_id)
    reads = RunReads(store, run)
    table = reads.failure_table(strategy, lambda: _table(store, run, strategy))
    reads.save()
    return pd.DataFrame(table)


def _table(store: Store, run: RunRecord, strategy: str) -> dict[str, list]:
    d = diagnose_run(store, run)
    rows = d.of(None if strategy == ALL else strategy)
    out = pd.DataFrame({
        "Query id": rows["query_id"], "Query": rows["text"], "Type": rows["query_type"],
        "Kind": rows["kind"].map(category_title), "Cause": rows["cause"].map(category_title),
        "Evidence": rows["detail"], "kind": rows["kind"], "cause": rows["cause"]})
    if strategy == ALL:
        out.insert(0, "Strategy", rows["strategy"].map(label))
    else:
        out = out.merge(_top1_cells(store, run, strategy), on="Query id", how="left")
    return {name: values.tolist() for name, values in out.reset_index(drop=True).items()}


def _top1_cells(store: Store, run: RunRecord, strategy: str) -> pd.DataFrame:
    """Per failed query of ``strategy``: each strategy's top 1 as a cell, that strategy's first."""
    frame = store.failed_top1_cells(run.run_id, strategy, run.threshold)
    labels = [label(s) for s in strategy_order([strategy, *store.result_strategies(run.run_id)])]
    if frame.empty:
        return pd.DataFrame(columns=["Query id", *labels])
    wide = frame.pivot(index="query_id", columns="strategy", values="cell")
    others = [s for s in strategy_order(wide.columns.tolist()) if s != strategy]
    wide = wide[[strategy, *others]]
    wide.columns = [label(s) for s in wide.columns]
    return wide.fillna("(no results)").reset_index().rename(columns={"query_id": "Query id"})


@dataclass
class FailureGroups:
    """The failed queries of a strategy (or those failed by every strategy) in groups by meaning.

    Attributes:
        groups: largest first: terms, size, query_ids, examples (three query texts), kinds and
            causes (key -> count).
        status: query id -> its status on the map: for one strategy a key of STATUS; for ALL
            "failed" (every strategy that answered it failed), "relevant", "judge_failed" or
            "unanswered".
        vectors: "embedding" (the run's embedding model) or "words" (TF-IDF: no vectors stored).
        failed: the failed queries grouped.
    """

    groups: list[dict[str, Any]]
    status: dict[str, str]
    vectors: str
    failed: int


def _vectors(store: Store, run: RunRecord) -> tuple[list[str], list[str], np.ndarray, str]:
    """The run's query ids and texts (id order), their vectors, and where the vectors come from:
    the run's ("embedding"), or the queries' words ("words") when it stored none."""
    queries = store.query_table(run.run_id)
    ids, texts = queries["query_id"].tolist(), queries["text"].tolist()
    stored_ids, vectors = store.query_vectors(run.run_id)
    if stored_ids == ids:
        return ids, texts, vectors, "embedding"
    return ids, texts, text_vectors(texts, seed=SEED), "words"


@one_session
def failure_groups(store: Store, run_id: str, strategy: str) -> FailureGroups:
    """The failed queries of ``strategy`` in groups by meaning; for ``ALL``, the queries every
    strategy that answered them failed (no strategy gets their top result right)."""
    run = store.get_run(run_id)
    reads = RunReads(store, run)
    kept = reads.failure_groups(strategy, lambda: _groups(store, run, strategy))
    reads.save()
    return FailureGroups(kept["groups"], kept["status"], kept["vectors"], kept["failed"])


def _groups(store: Store, run: RunRecord, strategy: str) -> dict[str, Any]:
    ids, texts, vectors, source = _vectors(store, run)
    d = diagnose_run(store, run)
    status = _status(store, run, d.strategies, strategy, ids)
    failed = [i for i, s in enumerate(status) if s in ("judged_not_relevant", "unjudged", "failed")]
    found = group_failures(vectors[failed], [texts[i] for i in failed], texts, seed=SEED) if failed else []
    rows = d.of(None if strategy == ALL else strategy)
    groups = []
    for g in found:
        members = [ids[failed[m]] for m in g.members]
        mine = rows[rows["query_id"].isin(members)]
        groups.append({"terms": g.terms, "size": len(members), "query_ids": members,
                       "examples": [texts[failed[m]] for m in g.members[:3]],
                       "kinds": {k: int(v) for k, v in mine["kind"].value_counts().items()},
                       "causes": {k: int(v) for k, v in mine["cause"].value_counts().items()}})
    return {"groups": groups, "status": dict(zip(ids, status, strict=True)), "vectors": source,
            "failed": len(failed)}


@dataclass
class QueryMap:
    """Every query of the run on a 2-D map: query_id, text, x, y; ``how`` it was made."""

    points: pd.DataFrame
    how: str


@one_session
def query_map(store: Store, run_id: str) -> QueryMap:
    """The run's queries on a 2-D map (engine/failures/groups.py), the same for every strategy."""
    run = store.get_run(run_id)
    reads = RunReads(store, run)

    def compute() -> dict[str, Any]:
        ids, texts, vectors, _ = _vectors(store, run)
        where, how = map_of(vectors, seed=SEED)
        return {"query_id": ids, "text": texts, "x": where[:, 0].tolist(), "y": where[:, 1].tolist(), "how": how}

    kept = reads.query_map(compute)
    reads.save()
    how = kept.pop("how")
    return QueryMap(pd.DataFrame(kept, columns=["query_id", "text", "x", "y"]), how)


def _status(store: Store, run: RunRecord, strategies: list[str], strategy: str, ids: list[str]) -> list[str]:
    """Each query's status on the map: for one strategy a key of ``STATUS``; for ALL "failed" when
    every strategy that answered it failed, "relevant" when one did not, "unanswered" when none did."""
    top1 = {(r["strategy"], r["query_id"]): r["top1"] for r in store.top1_kinds(run.run_id, run.threshold)}
    if strategy != ALL:
        return [top1.get((strategy, qid), "unanswered") for qid in ids]
    out = []
    for qid in ids:
        tried = [top1[(s, qid)] for s in strategies if (s, qid) in top1]
        if not tried:
            out.append("unanswered")
        elif all(k in KINDS for k in tried):
            out.append("failed")
        else:
            out.append("relevant" if "relevant" in tried else "judge_failed")
    return out


def failure_findings(summary: FailureSummary, run_id: str) -> list[Sentence]:
    """What the failure counts say to do (Results' recommendations)."""
    out: list[Sentence] = []  # the strategies that failed are said at the top of the page (result_overlap.py)
    table = summary.table
    if table.empty or not table["failed"].any():
        return out
    rows = table.to_dict("records")
    gaps = [r for r in rows if r["failed"] and r["unjudged"] * 2 >= r["failed"]]
    if gaps:
        worst = max(gaps, key=lambda r: r["unjudged"])
        out.append(Sentence(
            f"{worst['unjudged']} of {worst['Strategy']}'s {worst['failed']} failed queries have an unjudged top "
            "result: a labelling gap, not a known search failure. Fill it with Review's \"Fill the holes\" or "
            f"the LLM judge (`searchgrade judge-pool {run_id} --pool-depth 1`).", "info"))
    lost = [r for r in rows if r["lost_by_index"]]
    if lost:
        where = ", ".join(f"{r['lost_by_index']} of {r['Strategy']}'s {r['failed']}" for r in lost)
        out.append(Sentence(
            f"The {summary.index or 'approximate'} index loses what exact search finds on {where} failed "
            f"queries: {CAUSES['lost_by_index'].fix}.", "warn"))
    low = max(rows, key=lambda r: r["ranked_too_low"])
    if low["ranked_too_low"] and low["ranked_too_low"] * 4 >= low["failed"]:
        out.append(Sentence(
            f"{low['ranked_too_low']} of {low['Strategy']}'s {low['failed']} failed queries have a relevant "
            f"document below rank 1 (ranked too low): {CAUSES['ranked_too_low'].fix}.", "info", low["strategy"]))
    for r in sorted(summary.one_strategy_only, key=lambda r: -r["count"])[:2]:
        other = next(iter(r["by"]))
        text = (f"{plural(r['count'], r['query_type'] + ' query', r['query_type'] + ' queries')} "
                f"fail{'s' if r['count'] == 1 else ''} on {label(r['strategy'])} that {label(other)} gets right "
                f"at rank 1")
        out.append(Sentence(text + (": use hybrid, which combines them." if "hybrid" not in (r["strategy"], other)
                                    else "."), "info", r["strategy"]))
    unknown = int(table["no_relevant_known"].max())
    if unknown:
        out.append(Sentence(
            f"{plural(unknown, 'failed query has', 'failed queries have')} no relevant document known: "
            f"{'its failure says' if unknown == 1 else 'their failures say'} nothing about the search yet; "
            f"{CAUSES['no_relevant_known'].fix}.", "info"))
    disagree = int(table["judge_disagrees"].max())
    if disagree:
        out.append(Sentence(f"People and the judge disagree on the top result of "
                            f"{plural(disagree, 'failed query', 'failed queries')}: "
                            f"{CAUSES['judge_disagrees'].fix}.", "info"))
    return out


def first_failures(store: Store, run_id: str) -> None:
    """What the failed-queries section of a run's first Results page reads: the summary, and the
    table and groups of the strategy the picker opens on (kept for a complete run)."""
    summary = failure_summary(store, run_id)
    if summary.default is not None:
        failure_table(store, run_id, summary.default)
        failure_groups(store, run_id, summary.default)
    # The map (t-SNE) is drawn when asked for: computed then, and kept.
