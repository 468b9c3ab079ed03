"""`searchgrade judge-pool`: a new run from a stored one, the holes of its judging pool (every
strategy's top D) judged once each by the LLM judge (engine/run/judge_pool.py)."""

from __future__ import annotations

import argparse
import sys

from searchgrade.cli.options import add_common, open_store


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("judge-pool", help="judge the unjudged pairs of a stored run's pool (every strategy's "
                       "top D) once each with the LLM judge, as a new run (no search)")
    p.add_argument("run", help="run id (or an unambiguous prefix)")
    p.add_argument("--pool-depth", required=True, metavar="D[,STRATEGY=D]",
                   help="every strategy's top D goes into the pool; a strategy may have its own depth")
    p.add_argument("--model", help="chat model name (default: $SEARCHGRADE_LLM_MODEL)")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint (default: $OPENAI_BASE_URL, else the "
                   "hosted OpenAI API with $OPENAI_API_KEY)")
    p.add_argument("--concurrency", type=int, help="LLM requests in flight (default: 4)")
    p.add_argument("--timeout", type=float, help="seconds per LLM request (default: 60)")
    p.add_argument("--judge-prompt", metavar="FILE", help="the judge's prompt (as for evaluate)")
    p.add_argument("--name", help="name of the new run (default: the parent's, '· pool judged')")
    p.add_argument("--dry-run", action="store_true", help="say how many pairs the pool holds and how many "
                   "would be judged, then stop (no LLM call, no run)")
    add_common(p)
    p.set_defaults(handler=cmd_judge_pool)


def cmd_judge_pool(args: argparse.Namespace) -> int:
    from searchgrade.cli.evaluate import judge_settings
    from searchgrade.cli.output import Bars
    from searchgrade.cli.show import print_table
    from searchgrade.engine.llm.key_policy import operator_urls
    from searchgrade.engine.run.judge_pool import check_scale, judge_pool_run, pool_holes
    from searchgrade.engine.run.pool import parse_pool_depth
    from searchgrade.engine.run.request import llm_settings
    from searchgrade.viewmodels.results import keep_first_view

    store = open_store(args)
    run = store.get_run(args.run)
    depth = parse_pool_depth(args.pool_depth, sorted({r["strategy"] for r in store.latency_summary(run.run_id)}))
    if args.dry_run:
        check_scale(run)
        found = pool_holes(store, run, depth)
        print(f"dry run: run {run.run_id}: {found.text()}; judge-pool would ask the judge about those "
              f"{len(found.holes):,} (fewer where the cache holds them)")
        return 0
    llm = llm_settings(args.model, args.base_url, args.concurrency, args.timeout)
    bars = Bars()
    try:
        with operator_urls([args.base_url]), store.session():  # one open of the file for the whole run
            new_id = judge_pool_run(store, run.run_id, depth, llm, judge_settings(args), name=args.name,
                                    progress=bars, on_complete=keep_first_view)
    finally:
        bars.close()
    pool = store.get_run(new_id).stats["pool"]
    print(f"judged the pool of run {run.run_id} ({depth.text()}): {pool['pairs']:,} pairs, {pool['holes']:,} "
          f"unjudged, {pool['judged']:,} sent to the judge, {pool['cache_hits']:,} from the cache, "
          f"{pool['failures']:,} failed", file=sys.stderr)
    print_table(store, new_id, None, sys.stderr)
    print(new_id)
    return 0
