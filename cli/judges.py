"""`searchgrade judges RUN`: can the run's judge be trusted where it matters? Its decisions against
people's, its stability, its item agreement, its cost, and the judge to use (engine/judges/).

``--repeat N`` asks a seeded sample of pairs again first (the calls shown before they are made);
``--calibrate [JUDGE]`` evaluates a judge prompt carrying people's rated examples, cross-fitted, and
writes it where it says when it is kept. With ``--format json`` stdout holds only
``{"judges": [...]}`` (viewmodels/judges.py); everything else goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import TYPE_CHECKING, Any

from searchgrade.cli.options import add_common, open_store

if TYPE_CHECKING:
    from searchgrade.engine.store import Store


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("judges", help="can the run's judge be trusted? its decisions against people's, its "
                       "stability, agreement and cost, and the cheapest judge that decides as well")
    p.add_argument("run", help="run id (or an unambiguous prefix)")
    p.add_argument("--metric", help="the metric decisions are read on, metric@k (default: dcg@k at the run's k)")
    p.add_argument("--repeat", type=int, metavar="N",
                   help="first ask a seeded sample of pairs N more times per judge (cache bypassed, the endpoint's "
                   "own sampling; the calls are shown before they are made; stored, so asking again adds only "
                   "what is missing)")
    p.add_argument("--sample", type=int, default=200, help="pairs per judge --repeat asks again (default: 200)")
    p.add_argument("--calibrate", nargs="?", const="", metavar="JUDGE",
                   help="evaluate a prompt with people's rated examples (one per grade, seeded) for JUDGE (default: "
                   "the run's first judge), cross-fitted on queries it never saw; kept only when better")
    p.add_argument("--folds", type=int, default=2, help="folds of --calibrate's evaluation (default: 2)")
    p.add_argument("--seed", type=int, default=0, help="seed of the samples and examples (default: 0)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    add_common(p)
    p.set_defaults(handler=cmd_judges)


def cmd_judges(args: argparse.Namespace) -> int:
    from searchgrade.viewmodels.judges import judges_json, judges_lines, judges_view

    store = open_store(args)
    run = store.get_run(args.run)
    if args.repeat is not None:
        _repeat(args, store, run.run_id)
    if args.calibrate is not None:
        _calibrate(args, store, run.run_id)
    view = judges_view(store, run.run_id, args.metric)
    if args.format == "json":
        json.dump(judges_json(view.report), sys.stdout, indent=2)
        print()
    else:
        print("\n".join(judges_lines(view)))
    return 0


def _repeat(args: argparse.Namespace, store: Store, run_id: str) -> None:
    from searchgrade.cli.output import Bars
    from searchgrade.engine.judges.repeat import plan_repeats, run_repeats

    plan = plan_repeats(store, run_id, args.repeat, sample=args.sample, seed=args.seed)
    for line in plan.lines():
        print(line, file=sys.stderr)
    if not plan.calls:
        print("every repeat is stored already: no call", file=sys.stderr)
        return
    bars = Bars()
    try:
        outcome = run_repeats(store, plan, progress=bars)
    finally:
        bars.close()
    print(f"asked {outcome.asked:,}, stored {outcome.stored:,}, failed {outcome.failed:,}", file=sys.stderr)
    for judge, errors in outcome.errors.items():
        print(f"  {judge}: {len(errors)} failed, e.g. {errors[0]} (asked again by the next --repeat)", file=sys.stderr)


def _calibrate(args: argparse.Namespace, store: Store, run_id: str) -> None:
    from searchgrade.cli.output import Bars
    from searchgrade.engine.judges.calibration import plan_calibration, run_calibration
    from searchgrade.engine.paths import data_dir

    plan = plan_calibration(store, run_id, args.calibrate or None, folds=args.folds, seed=args.seed,
                            metric=args.metric)
    for line in plan.lines():
        print(line, file=sys.stderr)
    bars = Bars()
    try:
        result = run_calibration(store, plan, progress=bars)
    finally:
        bars.close()
    report = result.report
    print(f"calibrated prompt for {result.judge} ({result.calls:,} calls): weighted kappa "
          f"{_estimate(report['kappa_calibrated'])} against the plain prompt's {_estimate(report['kappa_plain'])}, "
          f"difference {_estimate(report['kappa_difference'], '+.2f')}; decision agreement "
          f"{_estimate(report['agreement_calibrated'], '.0%')} against {_estimate(report['agreement_plain'], '.0%')}, "
          f"difference {_estimate(report['agreement_difference'], '+.0%')}; {report['why']}", file=sys.stderr)
    if result.kept:
        folder = data_dir(args.data_dir) / "prompts"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{result.prompt_version}.txt"
        path.write_text(result.prompt_text, encoding="utf-8")
        print(f"kept: {path} (evaluate with --judge-prompt {path})", file=sys.stderr)


def _estimate(e: dict[str, Any], spec: str = ".2f") -> str:
    if e.get("value") is None:
        return "–"
    interval = f" (95% CI {e['low']:{spec}} to {e['high']:{spec}})" if e.get("low") is not None else ""
    return f"{e['value']:{spec}}{interval}"
