"""The read-only tools: runs, collections and suites, a run's summary, two runs compared, one
query's results, the failed queries, the gate. A run of a suite carries its suite's name, its
summary the suite's stored verdict, and compare_runs / gate take it alone (server/mcp/suites.py).

Each figure comes from the view model that shows it elsewhere, never from a second computation:
the summary is `searchgrade show`'s (stored metrics with their CIs, the Results page's paired
comparisons, judged@k from viewmodels/holes.py), the comparison is the Compare screen's
(viewmodels/compare.py), the gate is `searchgrade gate`'s (engine/gate.py); all their
intervals and p-values come from engine/statistics/paired.py. What is added here is only the
shape: compact JSON with lists cut to a size an agent's context can hold.
"""

from __future__ import annotations

from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.metrics import parse_metric
from searchgrade.engine.run.strategies import label, strategy_order
from searchgrade.engine.store import RunRecord, Store
from searchgrade.server.mcp import suites
from searchgrade.server.mcp.payload import DATA_NOTE, capped, untrusted, untrusted_query
from searchgrade.viewmodels.common import PRIMARY_METRIC, best_row, metric_label, primary_k

#: The metrics a summary gives per strategy (`searchgrade show`'s table), then source found when stored.
SUMMARY_METRICS = ("dcg", "ndcg", "precision", "recall", "mrr", "map", "mean_relevance", "judged", "source_found")
#: Lists are cut to these lengths; each cut list says how many were left out.
MAX_RUNS = 50
MAX_NOTES = 5
MAX_CHANGED = 10
MAX_ROWS = 50


def run_brief(run: RunRecord, suite: str | None = None) -> dict[str, Any]:
    """A run's identity and state: what a list or a summary says about it (no configuration:
    it may name endpoints and files, and an agent needs none of it); ``suite``: the suite it is a
    run of, if any."""
    return {"run_id": run.run_id, "name": run.name, "suite": suite, "collection": run.collection_name,
            "status": run.status, "mode": run.mode, "labels": run.label_source,
            "created_at": run.created_at.isoformat(timespec="seconds"),
            "finished_at": run.finished_at.isoformat(timespec="seconds") if run.finished_at else None,
            "queries": run.stats.get("queries"), "k": run.k, "depth": run.depth}


def list_runs(store: Store, collection: str | None = None, limit: int = 20,
              suite: str | None = None) -> dict[str, Any]:
    """Stored runs newest first (at most ``limit``; only ``collection``'s, only ``suite``'s), every
    collection with its runs, and every suite with its schedule, last run and last verdict."""
    limit = max(1, min(int(limit), MAX_RUNS))
    with store.session():
        return _list_runs(store, collection, limit, suite)


def _list_runs(store: Store, collection: str | None, limit: int, suite: str | None) -> dict[str, Any]:
    runs = store.list_runs()
    of_suite = store.suite_of_runs()
    if suite is not None:
        store.get_suite(suite)  # an unknown suite: one line naming `searchgrade suite list`
    collections: dict[str, dict[str, Any]] = {}
    for run in runs:
        c = collections.setdefault(run.collection_name, {"collection": run.collection_name, "runs": 0,
                                                        "latest_complete_run": None})
        c["runs"] += 1
        if run.status == "complete" and c["latest_complete_run"] is None:
            c["latest_complete_run"] = run.run_id
    chosen = [r for r in runs if (collection is None or r.collection_name == collection)
              and (suite is None or of_suite.get(r.run_id) == suite)]
    shown, left_out = capped(chosen, limit)
    listed, suites_left_out = suites.suite_briefs(store)
    return {"runs": [run_brief(r, of_suite.get(r.run_id)) for r in shown], "runs_left_out": left_out,
            "collections": list(collections.values()),
            "suites": listed, "suites_left_out": suites_left_out,
            "startable_collections": "'demo', a collection listed here, or a folder inside the server's "
                                     "--collections-root (start_evaluation)"}


def _metrics(store: Store, run: RunRecord, k: int) -> list[dict[str, Any]]:
    from searchgrade.viewmodels.recompute import Figures

    table = Figures(store, run, k).summary()
    by_strategy: dict[str, dict[str, Any]] = {}
    for r in table.to_dict("records"):
        if r["metric"] not in SUMMARY_METRICS:
            continue
        row = by_strategy.setdefault(r["strategy"], {"strategy": r["strategy"], "label": label(r["strategy"]),
                                                      "queries": int(r["n"])})
        row[f"{r['metric']}@{k}"] = {"value": r["value"], "ci_low": r["ci_low"], "ci_high": r["ci_high"]}
    return [by_strategy[s] for s in strategy_order(by_strategy)]


def run_summary(store: Store, run_id: str, k: int | None = None) -> dict[str, Any]:
    """A run's headline, per-strategy metrics with 95% CIs, paired comparisons, judged@k and
    failures: the same figures as `searchgrade show RUN --format json`, in a size that does not
    grow with the number of queries."""
    from searchgrade.engine.failures.causes import CAUSES, KINDS
    from searchgrade.engine.run.stored_metrics import check_cutoff
    from searchgrade.viewmodels.clicks import coverage
    from searchgrade.viewmodels.failures import failure_summary
    from searchgrade.viewmodels.holes import holes_panel
    from searchgrade.viewmodels.metric_help import metric_json
    from searchgrade.viewmodels.significance import family_records, results_family, significance

    with store.session():
        run = store.get_run(run_id)
        found = suites.suite_run(store, run.run_id)
        out: dict[str, Any] = {"run": run_brief(run, found.suite.name if found else None)}
        if found is not None:
            out["suite"] = suites.verdict_json(store, found)
        notes, left = capped(run.notes, MAX_NOTES)
        out["run"].update(error=run.error, skipped=run.skipped, notes=notes, notes_left_out=left)
        k = k or run.k
        check_cutoff(run, k)
        if not store.stored_cutoffs(run.run_id):
            out["note"] = (f"run {run.run_id} is {run.status} and has no metrics yet"
                           + ("; poll run_progress" if run.status == "running" else ""))
            return out
        hk = primary_k(run)
        rows, tested = results_family(store, run, PRIMARY_METRIC, hk)
        if not rows.empty:
            best = best_row(rows, PRIMARY_METRIC)
            out["headline"] = {"metric": metric_label(PRIMARY_METRIC, hk), "value": best["value"],
                               "ci_low": best["ci_low"], "ci_high": best["ci_high"],
                               "strategy": best["strategy"], "label": best["label"],
                               "queries": store.query_count(run.run_id)}
        out["k"] = k
        out["strategies"] = _metrics(store, run, k)
        covered = coverage(store, run, k)
        if covered:  # graded by clicks: each strategy's figures rest on this share of its top k
            for row in out["strategies"]:
                row[f"coverage@{k}"] = covered.get(row["strategy"], 0.0)
        # What each figure is, from its metric's record: definition, range, direction, ir_measures name.
        out["metrics"] = {f"{m}@{k}": metric_json(m, k, run) for m in SUMMARY_METRICS
                          if any(f"{m}@{k}" in row for row in out["strategies"])}
        out["comparisons"] = {
            "metric": metric_label(PRIMARY_METRIC, hk),
            "pairs": family_records(tested),
            "findings": [s.text for s in significance(rows, PRIMARY_METRIC, hk, tested)] if not rows.empty else []}
        holes = holes_panel(store, run.run_id, k=k)
        out["judged"] = {"k": k, "warning": holes.warning, "judged_gap": holes.gap,
                         "strategies": {r.strategy: {"judged": r.judged, "ndcg_judged": r.condensed.value,
                                                     "bpref": r.bpref, "rbp": r.rbp, "rbp_residual": r.residual}
                                        for r in holes.rows}}
        failures = failure_summary(store, run.run_id)
        out["failures"] = {
            "top1_not_relevant": {r["strategy"]: {"failed": int(r["failed"]), **{k: int(r[k]) for k in KINDS},
                                                  "judge_failed": int(r["judge_failed"]), "queries": int(r["queries"])}
                                  for r in failures.table.to_dict("records")},
            "causes": {r["strategy"]: {c: int(r[c]) for c in CAUSES} for r in failures.table.to_dict("records")},
            "strategy_failures": [{k: f[k] for k in ("strategy", "reason", "queries_failed")}
                                  for f in failures.strategy_failures],
            "how": "failed_queries lists them, each with its kind, cause and evidence (docs/metrics.md)"}
    return out


def _metric(metric: str, default_k: int = 10) -> tuple[str, int]:
    spec = parse_metric(metric)
    return spec.key, spec.k or default_k


def compare_runs(store: Store, run_a: str, run_b: str | None = None, metric: str | None = None) -> dict[str, Any]:
    """Run B against run A per strategy (the Compare screen): each change with its 95% CI and
    p-value adjusted for the strategies compared, and the queries that changed most.

    ``run_a`` alone, a run of a suite, is compared with the suite's previous complete run (it is
    then run B), on the suite's metric unless ``metric`` is given.
    """
    from searchgrade.engine.statistics.pairing import RESAMPLES, SEED
    from searchgrade.viewmodels.clicks import coverage_across_runs
    from searchgrade.viewmodels.compare import compare_runs as compare
    from searchgrade.viewmodels.metric_help import metric_json

    of_suite = None
    if run_b is None:
        of_suite = suites.baseline_of(store, run_a, "run_b")
        run_a, run_b = of_suite.baseline_run_id, of_suite.entry["run_id"]
        metric = metric or of_suite.suite.metric
    name, k = _metric(metric or "dcg@10")
    c = compare(store, run_a, run_b, metric=name, k=k, n_changed=MAX_CHANGED)
    names = store.suite_of_runs()
    out: dict[str, Any] = {"run_a": run_brief(c.run_a, names.get(c.run_a.run_id)),
                           "run_b": run_brief(c.run_b, names.get(c.run_b.run_id)),
                           "metric": metric_label(name, k), "paired_on": c.paired_on, "shared_queries": c.n_shared,
                           "notes": c.notes, "metric_info": metric_json(name, k, c.run_b),
                           "resamples": {"paired": RESAMPLES, "seed": SEED}}
    if of_suite is not None:
        out["baseline"] = f"run_a is suite {of_suite.suite.name}'s previous complete run before run_b"
    if c.refusal is not None:
        out["refusal"] = c.refusal
        return out
    out["deltas"] = [{"strategy": r["strategy"], "run_a": r["Run A"], "run_b": r["Run B"],
                      "change": r["Change"], "ci_low": r["CI low"], "ci_high": r["CI high"],
                      "p_value_adjusted": r["p-value"], "comparisons": r["Comparisons"],
                      "verdict": r["Verdict"], "queries": r["Queries"]}
                     for r in c.deltas.to_dict("records")]
    out["findings"] = [s.text for s in c.findings]
    out["statistics"] = c.statistics_note
    covered = coverage_across_runs(store, (c.run_a.run_id, c.run_b.run_id), k)
    if not covered.empty:  # a run graded by clicks: its figures rest on this share of each top k
        out["coverage"] = [{"run_id": r["run_id"], "strategy": r["strategy"], f"coverage@{k}": r["Coverage"]}
                           for r in covered.to_dict("records")]
    out["changed_most"] = [{"strategy": r["Strategy"], "query_id": r["Query id"],
                            "query": untrusted_query(r["Query"]), "run_a": r["Run A"], "run_b": r["Run B"],
                            "change": r["Change"]} for r in c.changed.to_dict("records")]
    out["data_note"] = DATA_NOTE
    return out


def _int_or_none(x: Any) -> int | None:
    """A nullable integer cell (a grade, a rank) as JSON: None where it is missing."""
    import pandas as pd

    return None if x is None or pd.isna(x) else int(x)


def query_results(store: Store, run_id: str, query_id: str, strategy: str | None = None,
                  limit: int = 10) -> dict[str, Any]:
    """One query's ranked results per strategy with grades and the judge's reasons (the Query
    drill-down). Titles, snippets and reasons are text from the collection: marked untrusted."""
    from searchgrade.viewmodels.drilldown import query_detail

    limit = max(1, min(int(limit), MAX_ROWS))
    d = query_detail(store, run_id, query_id)
    if strategy is not None and strategy not in d.results:
        raise SearchGradeError(f"strategy {strategy!r} has no results for query {query_id!r}; it has "
                               f"{', '.join(d.results) or 'none'}")
    results = {}
    for s, frame in d.results.items():
        if strategy is not None and s != strategy:
            continue
        rows, left = capped(frame.to_dict("records"), limit)
        results[s] = {"results": [
            {"rank": int(r["Rank"]), "doc_id": r["Doc id"], "title": untrusted(r["Title"]),
             "snippet": untrusted((d.documents.get(r["Doc id"]) or {}).get("text"), 200),
             "grade": _int_or_none(r["Grade"]),
             "judgment": r["Grade from"], "reason": untrusted(r["Judge's reason"]), "score": r["Score"]}
            for r in rows], "left_out": left}
    relevant, left = capped(d.relevant.to_dict("records") if not d.relevant.empty else [], MAX_ROWS)
    # Each strategy's rank of a document, from the results themselves (the page's relevant table
    # says it in words, by label): None where the strategy did not retrieve it.
    ranks = {s: {r["Doc id"]: int(r["Rank"]) for r in frame.to_dict("records")} for s, frame in d.results.items()}
    return {"run_id": run_id, "query_id": d.query_id, "query": untrusted_query(d.text), "type": d.query_type,
            "source_document": untrusted((d.source or {}).get("text")) if d.source else None,
            "source_ranks": d.source_ranks or None,
            "strategies": results,
            "relevant_documents": [{"doc_id": r["Doc id"], "grade": int(r["Grade"]),
                                    "rank_by_strategy": {s: ranks[s].get(r["Doc id"]) for s in ranks}}
                                   for r in relevant], "relevant_left_out": left,
            "data_note": DATA_NOTE}


def failed_queries(store: Store, run_id: str, strategy: str | None = None, limit: int = 20,
                   category: str | None = None) -> dict[str, Any]:
    """Queries whose top-1 result from ``strategy`` (default: the strategy with the most failed
    queries) is not relevant, each with its kind, its cause and the evidence, and what each
    strategy put first; the counts per kind and cause; and the strategies that could not answer
    (backend errors). ``category``: only the queries of one kind or cause."""
    from searchgrade.engine.failures.causes import CAUSES, KINDS
    from searchgrade.viewmodels.failures import failure_summary, failure_table

    limit = max(1, min(int(limit), MAX_ROWS))
    run = store.get_run(run_id)
    summary = failure_summary(store, run.run_id)
    if strategy is None:
        if summary.default is None:
            raise SearchGradeError(f"run {run.run_id} has no results yet ({run.status}): nothing failed yet")
        strategy = summary.default
    known = summary.table["strategy"].tolist()
    if strategy not in known:
        raise SearchGradeError(f"strategy {strategy!r} has no results in run {run.run_id}; it has "
                               f"{', '.join(known) or 'none'}")
    if category is not None and category not in KINDS and category not in CAUSES:
        raise SearchGradeError(f"category {category!r} is not a kind ({', '.join(KINDS)}) or a cause "
                               f"({', '.join(CAUSES)})")
    table = failure_table(store, run.run_id, strategy)
    if category is not None:
        table = table[table["kind" if category in KINDS else "cause"] == category]
    records = table.to_dict("records")
    shown, left = capped(records, limit)
    fixed = ("Query id", "Query", "Type", "Kind", "Cause", "Evidence", "kind", "cause")
    tops = [c for c in table.columns if c not in fixed]
    counts = summary.table.set_index("strategy").loc[strategy]
    backend, backend_left = capped(store.failed_queries(run.run_id), limit)
    return {"run_id": run.run_id, "strategy": strategy, "category": category,
            "rule": f"top-1 result graded below {run.threshold} (judged not relevant) or unjudged; a top 1 whose "
                    "judgment failed is neither; each failed query gets the first cause that holds "
                    "(docs/metrics.md#why-queries-fail)",
            "counts": {"failed": int(counts["failed"]), "queries": int(counts["queries"]),
                       "kinds": {k: int(counts[k]) for k in KINDS}, "causes": {c: int(counts[c]) for c in CAUSES}},
            "failed": [{"query_id": r["Query id"], "query": untrusted_query(r["Query"]), "type": r["Type"],
                        "kind": r["kind"], "cause": r["cause"], "evidence": untrusted(r["Evidence"]),
                        "top1": {t: untrusted(r[t]) for t in tops}} for r in shown],
            "failed_total": len(records), "failed_left_out": left,
            "strategy_failures": [{k: f[k] for k in ("strategy", "reason", "queries_failed")}
                                  for f in summary.strategy_failures],
            "backend_errors": [{"strategy": f["strategy"], "query_id": f["query_id"],
                                "error": untrusted(f["error"]), "attempts": f["attempts"]} for f in backend],
            "backend_errors_left_out": backend_left, "data_note": DATA_NOTE}


def gate(store: Store, baseline: str | None, candidate: str, metric: str | None = None, margin: float | None = None,
         alpha: float = 0.05, strategies: list[str] | None = None) -> dict[str, Any]:
    """`searchgrade gate` on two runs: FAIL when a strategy's change is significantly worse (its CI,
    adjusted for the strategies checked, lies entirely below 0) and the drop is larger than the
    margin (engine/gate.py).

    ``baseline`` None: the candidate is a run of a suite, gated against the suite's previous
    complete run on the suite's metric and margin unless ``metric`` / ``margin`` are given;
    otherwise the defaults are `searchgrade gate`'s (ndcg@10, margin 0.01).
    """
    from searchgrade.engine.gate import run_gate

    of_suite = None
    if baseline is None:
        of_suite = suites.baseline_of(store, candidate, "baseline")
        baseline, candidate = of_suite.baseline_run_id, of_suite.entry["run_id"]
        metric = metric or of_suite.suite.metric
        margin = of_suite.suite.margin if margin is None else margin
    metric = metric or "ndcg@10"
    margin = 0.01 if margin is None else margin
    result = run_gate(store, baseline, candidate, metric=metric, strategies=strategies or None,
                      margin=margin, alpha=alpha)
    extra = {} if of_suite is None else {
        "suite": of_suite.suite.name,
        "baseline_is": f"suite {of_suite.suite.name}'s previous complete run before the candidate"}
    return {**extra, "verdict": "FAIL" if result.failed else "PASS", "exit_code": 1 if result.failed else 0,
            "baseline": result.baseline.run_id, "candidate": result.candidate.run_id,
            "metric": result.metric_label, "margin": result.margin, "alpha": result.alpha, "rule": result.rule,
            "strategies": [{"strategy": line.strategy, "baseline": line.baseline, "candidate": line.candidate,
                            "change": line.change, "ci_low": line.ci_low, "ci_high": line.ci_high,
                            "p_value_adjusted": line.p_value, "queries": line.n, "comparisons": line.comparisons,
                            "failed": line.failed, "reading": line.reading, "line": result.describe(line)}
                           for line in result.lines],
            "notes": result.notes}


def judges(store: Store, run_id: str, metric: str | None = None) -> dict[str, Any]:
    """Can the run's judge be trusted: `searchgrade judges RUN --format json`'s ``judges`` list, and
    the same findings in words as the Results section (viewmodels/judges.py)."""
    from searchgrade.viewmodels.judges import judges_json, judges_view

    with store.session():
        view = judges_view(store, store.get_run(run_id).run_id, metric)
    report = view.report
    differing, left_out = capped(view.differing.to_dict("records"), MAX_ROWS)
    return {**judges_json(report), "run_id": report.run_id, "metric": view.metric, "people": report.people_source,
            "queries": len(report.queries), "strategies": [label(s) for s in report.strategies],
            "decisions": [s.text for s in view.decisions], "decided_differently": differing,
            "decided_differently_left_out": left_out, "suite": [s.text for s in view.suite_sentences],
            "stability": [s.text for s in view.stability], "item_agreement": [s.text for s in view.item],
            "recommendation": view.recommendation.text, "notes": report.notes}
