"""`searchgrade suite ...`: evaluation suites (engine/suites/): create one from a run, run it, schedule it,
alert on it, and see its runs."""

from __future__ import annotations

import argparse
import sys

from searchgrade.cli.options import add_common, open_store
from searchgrade.core.records import SearchGradeError
from searchgrade.engine.paths import data_dir


def add_commands(sub: argparse._SubParsersAction) -> None:
    suite = sub.add_parser("suite", help="evaluation suites: a run saved as a repeatable evaluation, run on a "
                           "schedule, compared with its previous run, alerting on significant drops")
    verbs = suite.add_subparsers(dest="verb", required=True, parser_class=type(suite))

    p = verbs.add_parser("create", help="save a complete run as a suite (its queries and configuration)")
    p.add_argument("name")
    p.add_argument("--from", dest="run", required=True, metavar="RUN", help="the run (id or unambiguous prefix)")
    p.add_argument("--metric", help="the metric the regression test reads (default: dcg at the run's k)")
    p.add_argument("--margin", type=float, default=0.0,
                   help="a drop alerts when its adjusted 95%% CI lies entirely below 0 (a significant drop) and "
                   "the drop is larger than this margin, as the gate fails it (default: 0: every significant "
                   "drop)")
    add_common(p)
    p.set_defaults(handler=cmd_create)

    p = verbs.add_parser("list", help="the suites, with their schedule and how many runs they have")
    add_common(p)
    p.set_defaults(handler=cmd_list)

    p = verbs.add_parser("show", help="a suite: its settings, runs (with verdicts and what changed), alerts")
    p.add_argument("name")
    add_common(p)
    p.set_defaults(handler=cmd_show)

    p = verbs.add_parser("run", help="a new run of the suite, compared with its previous complete run")
    p.add_argument("name")
    p.add_argument("--note", help="a note on this run (\"synonyms v3 deployed\"), shown on the trend and in alerts")
    add_common(p)
    p.set_defaults(handler=cmd_run)

    p = verbs.add_parser("delete", help="remove a suite (its runs stay, as runs)")
    p.add_argument("name")
    add_common(p)
    p.set_defaults(handler=cmd_delete)

    p = verbs.add_parser("update", help="take the current declarations of the suite's declared strategies")
    p.add_argument("name")
    p.add_argument("--strategies-file", metavar="FILE",
                   help="the strategies file to read them from (default: the strategies saved in the app)")
    p.add_argument("--metric", help="change the metric of the regression test")
    p.add_argument("--margin", type=float, help="change the margin of the regression test")
    add_common(p)
    p.set_defaults(handler=cmd_update)

    p = verbs.add_parser("schedule", help="run the suite on a schedule (UTC) by `searchgrade worker`")
    p.add_argument("name")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--cron", metavar="EXPR", help="a cron expression in UTC, e.g. \"0 2 * * *\" (02:00 UTC daily)")
    g.add_argument("--every", metavar="INTERVAL", help="a fixed interval: 30s, 15m, 6h, 1d")
    g.add_argument("--off", action="store_true", help="no schedule")
    add_common(p)
    p.set_defaults(handler=cmd_schedule)

    p = verbs.add_parser("alert", help="where the suite's alerts go: a webhook (POST JSON with a text field) "
                         "and/or an email address (SMTP settings from SEARCHGRADE_SMTP_*)")
    p.add_argument("name")
    p.add_argument("--webhook", metavar="URL", help="an incoming webhook (Slack, Teams, Mattermost, ...); '' for none")
    p.add_argument("--email", metavar="ADDRESS", help="an email address; '' for none")
    p.add_argument("--test", action="store_true", help="send a test alert to every channel now")
    add_common(p)
    p.set_defaults(handler=cmd_alert)

    p = verbs.add_parser("note", help="attach a note to a run of a suite, shown on its trend")
    p.add_argument("run", help="run id (or an unambiguous prefix)")
    p.add_argument("text")
    add_common(p)
    p.set_defaults(handler=cmd_note)


def cmd_create(args: argparse.Namespace) -> int:
    from searchgrade.engine.suites.definition import suite_from_run

    suite = suite_from_run(open_store(args), args.name, args.run, metric=args.metric, margin=args.margin)
    print(f"suite {suite.name}: {len(suite.query_ids)} queries of {suite.collection_name}, strategies "
          f"{', '.join(suite.config.get('strategies') or [])}, regression test on {suite.metric} "
          f"(margin {suite.margin:g}); run it with `searchgrade suite run {suite.name}`")
    return 0


def cmd_list(args: argparse.Namespace) -> int:
    from searchgrade.engine.suites.schedule import describe

    store = open_store(args)
    suites = store.list_suites()
    if not suites:
        print("no suites yet; make one with `searchgrade suite create NAME --from RUN`")
        return 0
    print(f"{'suite':<20} {'collection':<16} {'queries':>7}  {'metric':<10} {'runs':>4}  schedule")
    for s in suites:
        runs = sum(1 for e in store.suite_entries(s.name) if e["run_id"])
        outage = "  (could not evaluate: outage)" if s.outage else ""
        print(f"{s.name:<20} {s.collection_name:<16} {len(s.query_ids):>7}  {s.metric:<10} {runs:>4}  "
              f"{describe(s.schedule_kind, s.schedule_expr)}{outage}")
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    from searchgrade.engine.alerts.channels import mask
    from searchgrade.engine.suites.regression import StrategyChange
    from searchgrade.engine.suites.schedule import describe

    store = open_store(args)
    s = store.get_suite(args.name)
    print(f"suite {s.name}: {s.collection_name} ({s.collection_path}), {s.mode}, {len(s.query_ids)} queries, "
          f"made from run {s.source_run_id}")
    print(f"  strategies: {', '.join(s.config.get('strategies') or [])}")
    print(f"  regression test: {s.metric}, margin {s.margin:g}, adjusted over the strategies compared")
    print(f"  schedule: {describe(s.schedule_kind, s.schedule_expr)}")
    print(f"  alerts: webhook {mask(s.webhook) if s.webhook else '-'}, email {mask(s.email) if s.email else '-'}"
          + ("; in an outage (could not evaluate)" if s.outage else ""))
    print("runs (UTC):")
    for e in store.suite_entries(s.name):
        when = f"{e['created_at']:%Y-%m-%d %H:%M:%S}"
        slot = f" slot {e['slot']:%H:%M:%S}" if e["slot"] else ""
        print(f"  {when} {e['trigger']}{slot} run {e['run_id'] or '-'} ({e['run_status'] or '-'}): {e['status']}"
              + (f": {e['error']}" if e["error"] else ""))
        for c in [StrategyChange.from_json(v) for v in e["verdict"] or []]:
            mark = {"drop": "DROP", "gain": "GAIN"}.get(c.verdict or "", "    ")
            print(f"      {mark} {c.line()}")
        for change in e["changes"] or []:
            print(f"      changed: {change}")
        if e["note"]:
            print(f"      note: {e['note']}")
    skipped = [r for r in store.suite_slots(s.name) if r["status"] in ("skipped", "interrupted")]
    for r in skipped:
        print(f"  slot {r['slot']:%Y-%m-%d %H:%M:%S} {r['status']}: {r['note']}")
    alerts = store.suite_alerts(s.name)
    if alerts:
        print("alerts:")
        for a in alerts:
            print(f"  {a['created_at']:%Y-%m-%d %H:%M:%S} {a['kind']} via {a['channel']} {a['target']}: {a['status']} "
                  f"after {a['attempts']} attempt{'s' if a['attempts'] != 1 else ''}"
                  + (f" ({a['error']})" if a["error"] else ""))
    return 0


def cmd_run(args: argparse.Namespace) -> int:
    from searchgrade.cli.output import Bars
    from searchgrade.engine.suites.suite_run import COULD_NOT_EVALUATE, run_suite
    from searchgrade.viewmodels.results import keep_first_view

    store = open_store(args)
    store.get_suite(args.name)
    bars = Bars()
    try:
        outcome = run_suite(store, data_dir(args.data_dir), args.name, progress=bars, on_complete=keep_first_view,
                            note=args.note)
    finally:
        bars.close()
    for note in outcome.notes:
        print(f"note: {note}", file=sys.stderr)
    for change in outcome.config_changes:
        print(f"changed since the previous run: {change}", file=sys.stderr)
    for c in outcome.changes:
        mark = {"drop": "significant drop", "gain": "significant gain"}.get(c.verdict or "", "no significant change")
        print(f"{mark}: {c.line()}", file=sys.stderr)
    for d in outcome.alerts:
        print(f"alert via {d.channel} {d.target}: {'sent' if d.ok else 'failed: ' + (d.error or '')}", file=sys.stderr)
    if outcome.status == COULD_NOT_EVALUATE:
        print(f"searchgrade: suite {args.name} could not evaluate: {outcome.error}", file=sys.stderr)
        if outcome.run_id:
            print(outcome.run_id)
        return 1
    print(outcome.run_id)
    return 0


def cmd_delete(args: argparse.Namespace) -> int:
    open_store(args).delete_suite(args.name)
    print(f"suite {args.name} deleted (its runs stay: `searchgrade runs`)")
    return 0


def cmd_update(args: argparse.Namespace) -> int:
    from searchgrade.engine.metrics import check_quality, parse_metric
    from searchgrade.engine.run.strategies import saved_declarations
    from searchgrade.engine.suites.definition import updated_declarations

    store = open_store(args)
    suite = store.get_suite(args.name)
    fields: dict[str, object] = {}
    if suite.config.get("declared") or args.strategies_file:
        saved = None if args.strategies_file else saved_declarations(data_dir(args.data_dir))
        fields["config"] = updated_declarations(suite, args.strategies_file, saved)
    if args.metric is not None:
        fields["metric"] = parse_metric(args.metric).label
        check_quality(parse_metric(args.metric).key, "--metric")
    if args.margin is not None:
        if not args.margin >= 0:
            raise SearchGradeError(f"--margin of {args.margin} is negative: use 0 or a positive number")
        fields["margin"] = args.margin
    if not fields:
        raise SearchGradeError(f"suite {args.name} has no declared strategy to update; give --metric or --margin")
    store.update_suite(args.name, **fields)
    print(f"suite {args.name} updated ({', '.join(sorted(fields))}); its next run names what changed")
    return 0


def cmd_schedule(args: argparse.Namespace) -> int:
    from searchgrade.engine.store.connection import now_utc
    from searchgrade.engine.suites.schedule import check, describe

    store = open_store(args)
    store.get_suite(args.name)
    if args.off:
        store.update_suite(args.name, schedule_kind=None, schedule_expr=None, schedule_anchor=None)
        print(f"suite {args.name}: not scheduled")
        return 0
    kind, expression = ("cron", args.cron) if args.cron is not None else ("every", args.every)
    expression = check(kind, expression)
    store.update_suite(args.name, schedule_kind=kind, schedule_expr=expression, schedule_anchor=now_utc())
    print(f"suite {args.name}: {describe(kind, expression)}; times are UTC. `searchgrade worker` runs it "
          "(or `searchgrade worker --once` from a system cron)")
    return 0


def cmd_alert(args: argparse.Namespace) -> int:
    from searchgrade.engine.alerts.channels import (
        check_email_address,
        check_smtp_server,
        check_webhook_url,
        mask,
    )
    from searchgrade.engine.alerts.deliver import deliver
    from searchgrade.engine.alerts.text import trial_text

    store = open_store(args)
    suite = store.get_suite(args.name)
    fields: dict[str, object] = {}
    if args.webhook is not None:
        fields["webhook"] = check_webhook_url(args.webhook) if args.webhook.strip() else None
        fields["alerts_declared_in"] = None  # typed on the command line: the operator's
    if args.email is not None:
        if args.email.strip():
            fields["email"] = check_email_address(args.email)
            check_smtp_server()  # no SMTP host set, or none answers: one line now, not a failed alert later
        else:
            fields["email"] = None
    if fields:
        store.update_suite(args.name, **fields)
        suite = store.get_suite(args.name)
    print(f"suite {args.name}: alerts to webhook {mask(suite.webhook) if suite.webhook else '-'}, "
          f"email {mask(suite.email) if suite.email else '-'}")
    if not args.test:
        return 0
    if not suite.webhook and not suite.email:
        raise SearchGradeError(f"suite {args.name} has no alert channel to test; add --webhook URL or --email ADDRESS")
    subject, text = trial_text(suite.name)
    failed = [d for d in deliver(store, suite, kind="test", subject=subject, text=text) if not d.ok]
    for d in failed:
        print(f"searchgrade: error: the test alert via {d.channel} {d.target} failed after {d.attempts} attempts: "
              f"{d.error}; check the address and the server", file=sys.stderr)
    if not failed:
        print("test alert sent to every channel")
    return 1 if failed else 0


def cmd_note(args: argparse.Namespace) -> int:
    suite = open_store(args).set_run_note(args.run, args.text)
    print(f"note kept on run {args.run} of suite {suite}")
    return 0
