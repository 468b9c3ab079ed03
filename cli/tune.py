"""`searchgrade tune RUN_OR_SUITE`: tune one strategy's parameters on part of a run's queries (a
suite's: its latest complete run, on its frozen queries), and measure the gain on the others
(docs/tuning.md)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from searchgrade.cli.options import add_common, open_store
from searchgrade.engine.paths import data_dir


def add_commands(sub: argparse._SubParsersAction) -> None:
    from searchgrade.engine.tuning.judging import DEFAULT_JUDGE_BUDGET
    from searchgrade.engine.tuning.study import DEFAULT_TRIALS

    p = sub.add_parser("tune", help="tune a strategy's parameters (Optuna TPE) on some of a run's queries; "
                       "the gain is measured on the held-out rest with a paired 95%% CI")
    p.add_argument("run", metavar="RUN_OR_SUITE", help="run id (or an unambiguous prefix) of a complete run, or "
                   "a suite's name: its latest complete run, on the suite's frozen queries")
    p.add_argument("--space", metavar="FILE", help="a TOML search space ([params] NAME = [low, high] or a list "
                   "of choices; docs/tuning.md); default: the strategy kind's space")
    p.add_argument("--strategy", help="the strategy to tune (default: the space file's, else the run's "
                   "recommended one)")
    p.add_argument("--metric", default="ndcg@10", help="metric@k to maximise (default: ndcg@10)")
    p.add_argument("--trials", type=int, default=DEFAULT_TRIALS,
                   help=f"trials per fold, stored ones included (default: {DEFAULT_TRIALS})")
    p.add_argument("--time-budget", type=float, metavar="SECONDS",
                   help="stop starting trials after this many seconds per fold")
    p.add_argument("--judge-budget", type=int, metavar="N", default=None,
                   help="an LLM-judged run: pairs trials retrieve without a grade that the run's judge may grade "
                   f"during tuning (each once, through the cache; default {DEFAULT_JUDGE_BUDGET}); the held-out "
                   "comparison judges every pair it shows")
    p.add_argument("--seed", type=int, default=0, help="seed of the split and the sampler (default: 0)")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output (default: text)")
    add_common(p)
    p.set_defaults(handler=cmd_tune)


def cmd_tune(args: argparse.Namespace) -> int:
    from searchgrade.engine.tuning.source import resolve_source
    from searchgrade.engine.tuning.study import run_study

    store = open_store(args)
    source = resolve_source(store, args.run)
    run_id = source.run_id
    quiet = args.format == "json"

    def ready(tuning: Any, split: Any) -> None:
        if quiet:
            return
        folds = f"{len(split.folds)}-fold cross-validation" if split.method == "k-fold" else (
            f"{len(split.tuning)} tuning queries, {len(split.heldout)} held out")
        print(f"tuning {tuning.target.strategy} of {source.words()}: {folds}; {args.metric}, TPE (seed {args.seed}); "
              f"space: {'; '.join(p.describe() for p in tuning.space.params)}", file=sys.stderr)
        if tuning.judge is not None:
            print(f"new pairs are judged by the run's LLM judge ({tuning.judge.client.model}), at most "
                  f"{tuning.judge.budget} during tuning (--judge-budget); the held-out comparison judges all "
                  "it shows", file=sys.stderr)

    best: dict[int, float] = {}

    def trial(record: Any, tuning: Any) -> None:
        best[record.fold] = max(best.get(record.fold, record.value), record.value)
        if quiet:
            return
        fold = "" if record.fold == 0 else f"fold {record.fold} " if record.fold > 0 else "all queries "
        params = ", ".join(f"{k}={_short(v)}" for k, v in record.params.items())
        calls = f" calls {record.calls}" if record.calls else ""
        print(f"{fold}trial {record.number + 1}: {args.metric} {record.value:.4f} (best {best[record.fold]:.4f}) "
              f"judged {record.judged:.2f} p95 {record.p95_ms:.1f} ms{calls}  {params}", file=sys.stderr)

    report = run_study(store, run_id, data_dir(args.data_dir), strategy=args.strategy, space_file=args.space,
                       metric=args.metric, trials=args.trials, time_budget_s=args.time_budget, seed=args.seed,
                       on_trial=trial, on_ready=ready, only_queries=source.query_ids,
                       judge_budget=args.judge_budget)
    report["suite"] = source.suite
    if quiet:
        print(json.dumps(report, indent=2, default=str))
    else:
        print_report(report)
    return 0


def _short(v: Any) -> str:
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def _figure(d: dict[str, float]) -> str:
    return f"{d['value']:.4f} (95% CI {d['ci_low']:.4f} to {d['ci_high']:.4f})"


def _ms(d: dict[str, Any]) -> str:
    return "n/a" if d["p95_ms"] is None else f"p50 {d['p50_ms']:.1f} ms, p95 {d['p95_ms']:.1f} ms"


def print_report(report: dict[str, Any]) -> None:
    h = report["heldout"]
    metric = h["metric"]
    resumed = f" ({report['resumed_trials']} resumed from the store)" if report.get("resumed_trials") else ""
    of = f" of suite {report['suite']}'s latest complete run {report['run']}" if report.get("suite") else ""
    print(f"study {report['study']}: {report['trials']} trials of {report['strategy']}{of}{resumed}")
    print(f"held out ({h['queries']} queries{', each held out once: k-fold' if report['split']['method'] == 'k-fold' else ''}):")
    print(f"  start  {metric} {_figure(h['start'])}  judged {h['judged']['start']:.2f}  {_ms(h['latency']['start'])}")
    print(f"  tuned  {metric} {_figure(h['tuned'])}  judged {h['judged']['tuned']:.2f}  {_ms(h['latency']['tuned'])}")
    print(f"  {h['verdict']}")
    print(f"start:  {json.dumps(report['start'])}")
    print(f"tuned:  {json.dumps(report['best'])}")
    words = report["configuration"]
    if "flags" in words:
        print(f"as flags: {words['flags']}")
    if "snippet" in words:
        print("in the strategies file:\n" + words["snippet"])
    print(f"recommendation: the {'tuned' if report['recommendation'] == 'tuned' else 'starting'} configuration")
    print(f"held-out grades read during tuning: {report['heldout_grade_reads']}")
    judge = report.get("judge")
    if judge:
        sent = judge["pairs_judged"]
        print(f"judge: {sent['tuning']} new pairs judged during tuning (budget {judge['budget']}) + "
              f"{sent['heldout']} for the held-out comparison, {judge['cache_hits']} from the cache; "
              f"{judge['requests']['total']} requests")
        if judge["unjudged_over_budget"]:
            print(f"judge budget spent: {judge['unjudged_over_budget']} new pairs of tuning queries stayed "
                  "unjudged (they count 0; --judge-budget raises it)")
    calls = report["backend_calls"]
    if calls["total"]:
        print(f"backend requests: {calls['tuning']} tuning + {calls['heldout']} held-out = {calls['total']}")
