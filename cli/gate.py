"""`searchgrade gate`: fail a CI job when a candidate run is significantly worse than a baseline.

A strategy fails when its change is significantly worse (the 95% CI, adjusted for the strategies
checked, lies entirely below 0) and the drop is larger than --margin (engine/gate.py). Exit codes:
0 no strategy fails; 1 at least one does (a regression); 2 the gate could not run (a missing run,
an unknown metric, ...), with one line saying why. A CI job can tell a regression from a broken
setup.
"""

from __future__ import annotations

import argparse
import sys

from searchgrade.cli.options import add_common, open_store
from searchgrade.core.records import SearchGradeError

#: Exit code when the gate could not run.
EXIT_ERROR = 2


def add_commands(sub: argparse._SubParsersAction) -> None:
    rule = ("a strategy fails when its change's 95% CI, adjusted for the strategies checked, lies entirely "
            "below 0 (a significant drop) and the drop is larger than --margin; noise never fails")
    # (help is %-formatted by argparse, a description is not)
    p = sub.add_parser("gate", help="exit 1 when a candidate run is significantly worse than a baseline: "
                       + rule.replace("%", "%%"),
                       description=f"Gate a candidate run against a baseline, per strategy, paired per query: {rule}. "
                       "Exit 0: no strategy fails; 1: one does (a regression); 2: the gate could not run. "
                       "docs/trust.md has the rule and a CI job.")
    p.add_argument("--baseline", required=True,
                   help="baseline run id, or 'latest-complete': the newest complete run of the "
                   "candidate's collection before it")
    p.add_argument("--candidate", required=True, help="candidate run id (or an unambiguous prefix)")
    p.add_argument("--strategy", action="append", metavar="S",
                   help="a strategy to check (repeat, or comma-separate; default: every strategy both runs have)")
    p.add_argument("--metric", default="ndcg@10", help="metric@k (default: ndcg@10); a quality metric the runs' "
                   "labels support (judged@k and the RBP residual are diagnostics: no verdict on them)")
    p.add_argument("--margin", type=float, default=0.01,
                   help="the smallest significant drop that fails, in the metric's units (default: 0.01; 0 fails "
                   "every significant drop; noise, an interval that reaches 0, never fails)")
    p.add_argument("--alpha", type=float, default=0.05,
                   help="family-wise level over the strategies checked: each interval is at 1 - alpha/m "
                   "(default: 0.05)")
    p.add_argument("--junit", metavar="FILE", help="also write the result as JUnit XML")
    add_common(p)
    p.set_defaults(handler=cmd_gate)


def cmd_gate(args: argparse.Namespace) -> int:
    from searchgrade.engine.gate import run_gate, write_junit

    strategies = [s.strip() for value in (args.strategy or []) for s in value.split(",") if s.strip()]
    try:
        result = run_gate(open_store(args), args.baseline, args.candidate, metric=args.metric,
                          strategies=strategies or None, margin=args.margin, alpha=args.alpha)
        if args.junit:
            write_junit(result, args.junit)
    except SearchGradeError as exc:
        print(f"searchgrade gate: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print(f"gate: candidate {result.candidate.run_id} against baseline {result.baseline.run_id} "
          f"on {result.metric_label}, margin {result.margin}, alpha {result.alpha}: {result.rule}",
          file=sys.stderr)
    for note in result.notes:
        print(f"note: {note}", file=sys.stderr)
    for line in result.lines:
        print(result.describe(line))
    return 1 if result.failed else 0
