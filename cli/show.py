"""`searchgrade runs`, `show` and `export`: the stored runs, one run's metrics, its files."""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any, TextIO

from searchgrade.cli.options import add_common, open_store
from searchgrade.engine.run.scoring import SOURCE_FOUND
from searchgrade.engine.run.strategies import base_of, reranker_of, strategy_order
from searchgrade.viewmodels.ann_index import ann_index_text, variant_index_lines
from searchgrade.viewmodels.clicks import coverage, coverage_by_cutoff, coverage_words, grades_made_with, judge_share
from searchgrade.viewmodels.costs import cost_lines, costs_json
from searchgrade.viewmodels.embedding import embedding_text
from searchgrade.viewmodels.failures import failures_json, failures_lines, strategy_failure_lines
from searchgrade.viewmodels.holes import holes_lines, holes_panel
from searchgrade.viewmodels.metric_help import metric_json
from searchgrade.viewmodels.reranker import trained_reranker_use
from searchgrade.viewmodels.runs import skipped_messages
from searchgrade.viewmodels.sweep import sweep_grids, sweep_lines, sweeps_json
from searchgrade.viewmodels.traffic import traffic_json, traffic_lines

if TYPE_CHECKING:
    from searchgrade.engine.store import RunRecord, Store


#: Metrics shown by `searchgrade show` as a table, in this order.
TABLE_METRICS = ("dcg", "ndcg", "precision", "recall", "mrr", "map", "mean_relevance", "judged")
#: Shown after those when the run has them (LLM mode: is the query's source document in the top k).
TABLE_EXTRA_METRICS = (SOURCE_FOUND,)


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("runs", help="list the stored runs, newest first")
    add_common(p)
    p.set_defaults(handler=cmd_runs)

    p = sub.add_parser("show", help="a run's metrics per strategy with 95%% confidence intervals")
    p.add_argument("run", help="run id (or an unambiguous prefix)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--k", type=int, help="only this cut-off (default: the run's k for the table, "
                   "all stored cut-offs for JSON)")
    add_common(p)
    p.set_defaults(handler=cmd_show)

    p = sub.add_parser("export", help="write a run as TREC run files (one per strategy), or as its ranked "
                       "results and per-query metrics (CSV, Parquet); every score is strictly decreasing within a "
                       "query, so trec_eval, ir_measures and ranx rank as the app does")
    p.add_argument("run", help="run id (or an unambiguous prefix)")
    p.add_argument("--format", choices=("trec", "csv", "parquet"), required=True)
    p.add_argument("--out", required=True, help="output directory")
    add_common(p)
    p.set_defaults(handler=cmd_export)


def cmd_runs(args: argparse.Namespace) -> int:
    runs = open_store(args).list_runs()
    if not runs:
        print("no runs yet; start one with `searchgrade evaluate COLLECTION --qrels` (or --llm)")
        return 0
    suites = open_store(args).suite_of_runs()
    width = max(len("collection"), *(len(r.collection_name) for r in runs))
    print(f"{'run id':<24} {'status':<11} {'created (UTC)':<19} {'collection':<{width}} {'queries':>7}  "
          f"{'suite':<16} name")
    for run in runs:
        n = run.stats.get("queries", "")
        print(f"{run.run_id:<24} {run.status:<11} {run.created_at:%Y-%m-%d %H:%M:%S} {run.collection_name:<{width}} "
              f"{n!s:>7}  {suites.get(run.run_id, '-'):<16} {run.name}")
    return 0


def print_table(store: Store, run_id: str, k: int | None, out: TextIO) -> None:
    """A run's metrics as a strategy x metric table with 95% CIs, its skips and LLM accounting."""
    run = store.get_run(run_id)
    k = k or run.k
    rows = store.metric_summary(run.run_id, k)
    cells: dict[str, dict[str, str]] = {}
    for r in rows:
        if r["metric"] in TABLE_METRICS or r["metric"] in TABLE_EXTRA_METRICS:
            cells.setdefault(r["strategy"], {})[r["metric"]] = (
                f"{r['value']:.3f} [{r['ci_low']:.3f},{r['ci_high']:.3f}]")
    print(f"run {run.run_id} '{run.name}' {run.status} ({run.collection_name}, {run.label_source} "
          f"labels, relevant >= {run.threshold}, k={k})", file=out)
    if run.error:
        print(f"  error: {run.error}", file=out)
    for line in skipped_messages(run.skipped):  # one line per reason, not one per strategy
        print(f"  skipped: {line}", file=out)
    for line in strategy_failure_lines(store, run):  # failed alone: the others' figures are complete
        print(line, file=out)
    for note in run.notes:
        print(f"  note: {note}", file=out)
    embedding = embedding_text(run.config, run.stats)
    if embedding:
        print(f"  {embedding}", file=out)
    ann_index = ann_index_text(run.stats)
    if ann_index:
        print(f"  {ann_index}", file=out)
    for line in variant_index_lines(run.stats):
        print(f"  {line}", file=out)
    use = trained_reranker_use(run)
    if use is not None:
        print(f"  {use.line}", file=out)
    if run.mode == "llm" or run.config.get("llm"):
        llm = llm_summary(store, run)
        calls, hits = llm["llm_calls"], llm["cache_hits"]
        print(f"  LLM {run.config.get('llm', {}).get('model')}: {calls['querygen']} query-generation "
              f"and {calls['judge']} judge calls, {hits['querygen'] + hits['judge']} cache hits, "
              f"{llm['judge_failures']} judge failures (counted as 0 in the rank metrics)", file=out)
        if "rerank" in calls:
            tokens = llm["tokens"]["rerank"]
            print(f"  LLM reranker: {calls['rerank']} calls, {hits['rerank']} cache hits, "
                  f"{tokens['prompt'] + tokens['completion']:,} tokens", file=out)
        prompt = run.stats.get("llm", {}).get("prompt_version")
        if prompt:
            custom = (run.config.get("judge") or {}).get("prompt_text") is not None
            print(f"  judge prompt {prompt}{' (a user prompt file)' if custom else ''}", file=out)
        agreement = run.stats.get("agreement")
        if agreement and agreement.get("n"):
            kappa = agreement.get("kappa")
            linear = agreement.get("kappa_linear")
            print(f"  judge vs human on {agreement['n']} pairs: kappa "
                  f"{'-' if kappa is None else f'{kappa:.3f}'}, linear-weighted "
                  f"{'-' if linear is None else f'{linear:.3f}'}", file=out)
    for line in traffic_lines(store, run, "dcg", k) if cells else []:
        print(f"  {line}", file=out)
    made = grades_made_with(run)
    for line in made.lines if made else []:
        print(f"  {line}", file=out)
    covered = coverage(store, run, k) if cells else None
    if covered:
        for strategy, value in covered.items():
            cells.setdefault(strategy, {})["coverage"] = f"{value:.3f}"
        print(f"  {coverage_words(covered, k, judge_share(store, run, k))}", file=out)
    if not cells:
        print("  no metrics stored", file=out)
        return
    metrics = TABLE_METRICS + tuple(m for m in (*TABLE_EXTRA_METRICS, "coverage")
                                    if any(m in c for c in cells.values()))
    width = 22
    print(f"{'strategy':<16}" + "".join(f"{m + '@' + str(k):>{width}}" for m in metrics), file=out)
    for strategy in strategy_order(cells):
        print(f"{strategy:<16}" + "".join(f"{cells[strategy].get(m, '-'):>{width}}" for m in metrics),
              file=out)
    queries = store.query_count(run.run_id)
    over = {r["strategy"]: r["n"] for r in rows if r["metric"] == "dcg"}
    for strategy in strategy_order(s for s, n in over.items() if n < queries):
        # A strategy that failed on queries: its figures are over those it answered.
        print(f"  {strategy}: figures over the {over[strategy]:,} of {queries:,} queries it answered", file=out)
    for line in holes_lines(store, run.run_id, k=k):  # judged@k apart: what the holes hide
        print(line, file=out)
    for line in cost_lines(store, run):  # beside quality, what each strategy costs
        print(line, file=out)
    for line in sweep_lines(sweep_grids(store, run, k=k)):  # a sweep's grid against its reference
        print(line, file=out)
    print_comparisons(store, run, k, out)
    for line in failures_lines(store, run):  # why queries fail: kinds and causes per strategy
        print(line, file=out)


def print_comparisons(store: Store, run: RunRecord, k: int, out: TextIO) -> None:
    """The Results page's paired differences on the headline metric at k, in its words and with
    its figures (the same kept tests): the best strategy against each other, each reranked twin."""
    from searchgrade.viewmodels.common import PRIMARY_METRIC, metric_label
    from searchgrade.viewmodels.significance import family_note, family_size, figures_text, results_family
    from searchgrade.viewmodels.significance import significance as best_against_others

    rows, tested = results_family(store, run, PRIMARY_METRIC, k)
    if not tested and not tested.withheld:
        return
    print(f"paired differences on {metric_label(PRIMARY_METRIC, k)} (as on the Results page):", file=out)
    for sentence in best_against_others(rows, PRIMARY_METRIC, k, tested):
        print(f"  {sentence.text}", file=out)
    for (a, b), d in tested.items():
        if base_of(a) == b:
            queries = f"; {d.n} queries" if d.estimable else ""
            by = reranker_of(a)  # a declared reranker's X_NAME: say which reranker
            where = " on condensed lists" if (a, b) in tested.condensed else ""
            print(f"  {'reranker ' + by if by else 'reranker'} on {b}{where}: {d.diff:+.3f} ({figures_text(d)}"
                  f"{queries}): {'significant' if d.significant else 'not distinguishable'}", file=out)
    for (a, b), reason in tested.withheld.items():
        if base_of(a) == b:
            by = reranker_of(a)
            print(f"  {'reranker ' + by if by else 'reranker'} on {b}: no verdict. {reason}", file=out)
    if tested:
        print(f"  {family_note(family_size(tested), 'These figures make')}", file=out)


def llm_summary(store: Store, run: RunRecord) -> dict[str, Any]:
    """A run's LLM accounting for `show --format json` (zeros for a run without LLM calls).

    llm_calls: HTTP requests sent per stage (querygen, judge; rerank for a run with the LLM
    reranker), retries included (over every process that worked on
    the run, resumes included); cache_hits: items answered from the cache; tokens: prompt and
    completion tokens per stage; judge_failures: stored pairs whose judgment failed (grade None).
    A panel's judges (stages "judge:NAME") count under "judge" together.
    """
    usage = panel_usage_summed(store.llm_usage(run.run_id))
    # rerank: the LLM reranker (engine/llm/reranker.py), listed for the runs that used it
    stages = ("querygen", "judge", *(("rerank",) if "rerank" in usage else ()))
    failures = sum(1 for g in store.grades(run.run_id) if g["grade"] is None and g["source"] == "llm")
    if not failures and run.status != "complete":
        failures = int(run.stats.get("llm", {}).get("judge_failures", 0))
    return {
        "llm_calls": {s: int(usage.get(s, {}).get("requests", 0)) for s in stages},
        "cache_hits": {s: int(usage.get(s, {}).get("cache_hits", 0)) for s in stages},
        "tokens": {s: {"prompt": int(usage.get(s, {}).get("prompt_tokens", 0)),
                       "completion": int(usage.get(s, {}).get("completion_tokens", 0))}
                   for s in stages},
        "judge_failures": failures,
    }


def panel_usage_summed(usage: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """The accounting with a panel's judges (stages "judge:NAME") added into "judge"."""
    out = {stage: dict(counters) for stage, counters in usage.items() if not stage.startswith("judge:")}
    for stage, counters in usage.items():
        if stage.startswith("judge:"):
            total = out.setdefault("judge", {})
            for name, value in counters.items():
                total[name] = total.get(name, 0) + value
    return out


def cmd_show(args: argparse.Namespace) -> int:
    store = open_store(args)
    run = store.get_run(args.run)
    if args.format == "table":
        print_table(store, run.run_id, args.k, sys.stdout)
        return 0
    metrics = [
        {key: r[key] for key in ("strategy", "metric", "k", "value", "ci_low", "ci_high", "n")}
        for r in store.metric_summary(run.run_id, args.k)
    ]
    # A click-graded run's figures rest on what the log judged: each row says how much of its top k that is.
    covered = coverage_by_cutoff(store, run, {r["k"] for r in metrics})
    if covered:
        # With the judge filling the holes, each figure also says how much of it is the judge's.
        filled = coverage_by_cutoff(store, run, {r["k"] for r in metrics}, "llm") if "llm" in (
            run.label_source or "").split("+") else {}
        for row in metrics:
            row["coverage"] = covered.get((row["strategy"], row["k"]), 0.0)
            if filled:
                row["judged_by_judge"] = filled.get((row["strategy"], row["k"]), 0.0)
    run_json = run.to_dict()
    run_json["latency_ms"] = store.latency_summary(run.run_id)
    run_json.update(llm_summary(store, run))
    traffic = traffic_json(store, run, "dcg", args.k or run.k)
    if traffic is not None:
        run_json["traffic"] = traffic
    holes = holes_panel(store, run.run_id, k=args.k).to_json() if metrics else None
    # Beside the stored keys: what each metric is, from its record (definition, range, direction,
    # ir_measures name; a diagnostic is never ranked).
    about = {m: metric_json(m, None, run) for m in dict.fromkeys(r["metric"] for r in metrics)}
    json.dump({"run": run_json, "metrics": metrics, "comparisons": comparisons_json(store, run, args.k),
               "holes": holes, "metric_records": about, **failures_json(store, run), "costs": costs_json(store, run),
               "sweeps": sweeps_json(sweep_grids(store, run, k=args.k)) if metrics else []},
              sys.stdout, indent=2, default=str)
    print()
    return 0


def comparisons_json(store: Store, run: RunRecord, k: int | None) -> dict[str, Any]:
    """The Results page's paired differences on the headline metric (at k, default the page's)."""
    from searchgrade.viewmodels.common import PRIMARY_METRIC, primary_k
    from searchgrade.viewmodels.significance import family_records, results_family

    k = k or primary_k(run)
    if run.status != "complete" and not store.metric_summary(run.run_id, k):
        return {"metric": PRIMARY_METRIC, "k": k, "pairs": []}
    _, tested = results_family(store, run, PRIMARY_METRIC, k)
    return {"metric": PRIMARY_METRIC, "k": k, "pairs": family_records(tested)}


def cmd_export(args: argparse.Namespace) -> int:
    from searchgrade.engine.export import export_run

    for path in export_run(open_store(args), args.run, args.format, args.out):
        print(path)
    return 0
