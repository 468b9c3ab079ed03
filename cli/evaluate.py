"""`searchgrade evaluate` and `resume`: run an evaluation and store it, or continue a stopped one."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from searchgrade.cli.options import (
    add_collection,
    add_common,
    add_index_options,
    add_judgment_files,
    add_llm_options,
    declared,
    declared_rerankers,
    declared_sweeps,
    index_settings,
    load,
    open_store,
    reranker_names,
    strategy_names,
)
from searchgrade.cli.output import Bars, print_notes
from searchgrade.cli.show import print_table
from searchgrade.cli.traffic_options import add_traffic_options
from searchgrade.core.records import SearchGradeError
from searchgrade.engine.llm.key_policy import operator_urls
from searchgrade.engine.paths import data_dir
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.lifecycle import RunCancelled, RunTakenOver
from searchgrade.engine.run.request import RunRequest, run_config

if TYPE_CHECKING:
    from searchgrade.engine.llm.judge import JudgeSettings
    from searchgrade.engine.run.pipeline import RunOutcome
    from searchgrade.engine.run.stage_runner import StageRunner
    from searchgrade.engine.store import Store


def add_commands(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("evaluate", help="evaluate every strategy on a collection and store the run")
    add_collection(p)
    add_judgment_files(p)
    p.add_argument("--qrels", action="store_true",
                   help="grade with the collection's human judgments (qrels); with --llm too, human "
                   "grades win and the judge's agreement with them is reported")
    p.add_argument("--llm", action="store_true",
                   help="an LLM writes queries for sampled documents and grades every result 0-3")
    p.add_argument("--name", help="a name for the run (default: collection and time)")
    p.add_argument("--k", type=int, default=10, help="cut-off of the headline metrics (default: 10)")
    p.add_argument("--depth", type=int, help="results kept per query (default: k); metrics at any "
                   "cut-off up to it are derived later without searching again")
    p.add_argument("--threshold", type=int, help="lowest grade that counts as relevant (default: 2 "
                   "on scales reaching 3 or more, 1 on binary labels)")
    p.add_argument("--max-queries", type=int, help="evaluate a seeded sample of this many queries")
    p.add_argument("--seed", type=int, default=0, help="seed of samples and bootstraps (default: 0)")
    p.add_argument("--dry-run", action="store_true",
                   help="show the LLM calls and an estimate of the tokens the run would use, then stop "
                   "(no index, search, LLM call or stored run)")
    add_llm_options(p)
    add_traffic_options(p)
    p.add_argument("--pool-depth", metavar="D[,STRATEGY=D]",
                   help="with --llm or --judge-unjudged: judge only the pool, every strategy's top D (a "
                   "strategy may have its own depth), each pair once (default: every kept result)")
    p.add_argument("--strict", action="store_true",
                   help="the first strategy failure fails the run (exit 1), for CI that wants all or "
                   f"nothing; without it a strategy fails alone and the run completes (exit {EXIT_STRATEGIES_FAILED})")
    add_index_options(p)
    p.add_argument("--sweep", metavar="FILE",
                   help="a TOML file of [sweep.NAME] grids (models x chunkings x aggregates): each variant "
                   "is evaluated beside the others and compared with the sweep's reference strategy "
                   "(docs/strategies.md#sweeps)")
    add_ray_option(p)
    add_common(p)
    p.set_defaults(handler=cmd_evaluate)

    p = sub.add_parser("resume",
                       help="continue an interrupted, cancelled or failed run; only missing work is done")
    p.add_argument("run", help="run id (or an unambiguous prefix)")
    p.add_argument("--base-url", help="the LLM endpoint, if it moved (default: the run's)")
    p.add_argument("--concurrency", type=int, help="LLM requests in flight (default: the run's)")
    add_ray_option(p)
    add_common(p)
    p.set_defaults(handler=cmd_resume)


def add_ray_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--ray", nargs="?", const=RAY_LOCAL, default=None, metavar="ADDRESS",
                   help="run the heavy stages on Ray: alone, a local Ray started for the run; with "
                   "HOST:PORT (or ray://HOST:PORT), an existing cluster whose nodes see the collection "
                   "and --data-dir at the same paths (pip install 'searchgrade[ray]')")


#: ``--ray`` without an address.
RAY_LOCAL = "local"


@contextmanager
def _runner(args: argparse.Namespace) -> Iterator[StageRunner]:
    """Where the run's heavy stages run: on the Ray session --ray asks for (closed when the
    command ends), else here."""
    if args.ray is None:
        from searchgrade.engine.run.stage_runner import LocalRunner

        yield LocalRunner()
        return
    from searchgrade.engine.ray.session import ray_session
    from searchgrade.engine.ray.stage_runner import RayRunner

    with ray_session(None if args.ray == RAY_LOCAL else args.ray) as session:
        yield RayRunner(session)


#: The exit status of a run stopped by Ctrl-C or Cancel in the app (as for SIGINT).
EXIT_CANCELLED = 130
#: The exit status of a run that completed with strategies that failed (on some queries or all):
#: the others' figures are stored and shown; `resume` retries only what failed.
EXIT_STRATEGIES_FAILED = 3

def run_request(args: argparse.Namespace) -> RunRequest:
    """What `searchgrade evaluate` was asked, as every surface asks it (engine/run/request.py checks it)."""
    return RunRequest(
        qrels=args.qrels, llm=args.llm, clicks=args.clicks, name=args.name, k=args.k, depth=args.depth,
        threshold=args.threshold, max_queries=args.max_queries, seed=args.seed,
        strategies=strategy_names(args), rerankers=tuple(reranker_names(args)),
        declared=declared(args), declared_rerankers=declared_rerankers(args), sweeps=declared_sweeps(args),
        index=index_settings(args),
        model=args.model, base_url=args.base_url, concurrency=args.concurrency, timeout_s=args.timeout,
        docs=args.docs, queries_per_doc=args.queries_per_doc, keyword_per_doc=args.keyword_per_doc,
        min_doc_words=args.min_doc_words, queries_from=args.queries_from, judge=judge_settings(args),
        judge_unjudged=args.judge_unjudged, judge_models=tuple(j for j in (args.judge_models or "").split(",") if j),
        judge_prices=tuple(args.judge_price), judge_aggregate=args.judge_aggregate,
        query_set=args.query_set, click_model=args.click_model,
        min_impressions=args.min_impressions, pool_depth=args.pool_depth, strict=args.strict,
    )


def judge_settings(args: argparse.Namespace) -> JudgeSettings | None:
    """The judge prompt of --judge-prompt FILE, read and checked; None for the packaged one (also
    `searchgrade judge-pool`'s)."""
    if args.judge_prompt is None:
        return None
    from searchgrade.engine.llm.judge import JudgeSettings
    from searchgrade.engine.llm.prompts import read_judge_prompt

    if not getattr(args, "llm", True):  # judge-pool always judges; evaluate only with --llm
        # Unread: run_config refuses a judge prompt without --llm, in the words every surface uses.
        return JudgeSettings(prompt=str(args.judge_prompt))
    name, text = read_judge_prompt(args.judge_prompt)
    return JudgeSettings(prompt=name, prompt_text=text)


def cmd_evaluate(args: argparse.Namespace) -> int:
    config = run_config(run_request(args))
    if args.dry_run:
        return _dry_run(args, config)
    if args.ray is not None and config.index is not None:
        from searchgrade.engine.ray.stage_runner import device_on_ray

        device_on_ray(config.index.device, config.index.embedding_backend)  # --device cuda: stop here
    collection = load(args)
    with _runner(args) as runner:  # a wrong address stops here, before anything is written
        return _evaluate(args, config, collection, runner)


def _evaluate(args: argparse.Namespace, config: RunConfig, collection: Any, runner: StageRunner) -> int:
    from searchgrade.engine.run.pipeline import run_evaluation
    from searchgrade.viewmodels.results import keep_first_view

    store = open_store(args)
    bars = Bars()
    created: list[str] = []
    try:
        # The endpoints typed here (the run's, a panel's judges') are the operator's choice: they may
        # get $OPENAI_API_KEY.
        with operator_urls([args.base_url, *(j.base_url for j in config.judge_specs())]):
            outcome = run_evaluation(collection, config, store, data_dir(args.data_dir), progress=bars,
                                     on_run_created=created.append, on_usage=bars.set_usage,
                                     on_complete=keep_first_view, runner=runner)
    except (KeyboardInterrupt, RunCancelled) as exc:
        bars.close()
        if created:
            how = "by Ctrl-C" if isinstance(exc, KeyboardInterrupt) else "from the app"
            print(f"searchgrade: run {created[0]} cancelled {how}; what was done is kept: continue "
                  f"it with `searchgrade resume {created[0]}`", file=sys.stderr)
            return EXIT_CANCELLED
        raise KeyboardInterrupt from None
    except RunTakenOver as exc:
        raise SearchGradeError(str(exc)) from None
    except SearchGradeError as exc:
        bars.close()
        if created:
            raise SearchGradeError(f"{exc} (run {created[0]} marked failed; after fixing, "
                                   f"`searchgrade resume {created[0]}`)") from None
        raise
    finally:
        bars.close()
    return _report_outcome(store, outcome)


def _dry_run(args: argparse.Namespace, config: RunConfig) -> int:
    """The calls and tokens the run would use (engine/run/estimate.py); nothing is run or stored."""
    from searchgrade.engine.run.estimate import estimate_cost
    from searchgrade.engine.store.connection import DB_FILENAME

    # An existing store tells what is cached; a dry run never creates one.
    exists = (data_dir(args.data_dir) / DB_FILENAME).exists()
    store = open_store(args) if exists or config.queries_from or config.query_set else None
    estimate = estimate_cost(load(args), config, store)
    print("dry run: nothing was indexed, searched, prompted or stored")
    for note in estimate.notes:
        print(f"note: {note}")
    for line in estimate.lines():
        print(line)
    return 0


def _report_outcome(store: Store, outcome: RunOutcome) -> int:
    """Notes and the metrics table on stderr; the run id alone on stdout's last line. Exit 0, or
    ``EXIT_STRATEGIES_FAILED`` when strategies failed (a skipped reranker is not a failure)."""
    print_notes(outcome.notes, {})  # the table lists skipped strategies itself
    print_table(store, outcome.run_id, None, sys.stderr)
    print(outcome.run_id)
    return EXIT_STRATEGIES_FAILED if store.failed_query_counts(outcome.run_id) else 0


def cmd_resume(args: argparse.Namespace) -> int:
    if args.concurrency is not None and args.concurrency < 1:
        raise SearchGradeError(f"--concurrency of {args.concurrency} must be at least 1")
    with _runner(args) as runner:  # a wrong address stops here, before the store is opened
        store = open_store(args)
        run_id = store.get_run(args.run).run_id
        return _resume(args, store, run_id, runner)


def _resume(args: argparse.Namespace, store: Store, run_id: str, runner: StageRunner) -> int:
    from searchgrade.engine.run.pipeline import resume_run
    from searchgrade.viewmodels.results import keep_first_view

    bars = Bars()
    try:
        with operator_urls([args.base_url]):
            outcome = resume_run(run_id, store, data_dir(args.data_dir), base_url=args.base_url,
                                 concurrency=args.concurrency, progress=bars, on_usage=bars.set_usage,
                                 on_complete=keep_first_view, runner=runner)
    except (KeyboardInterrupt, RunCancelled) as exc:
        bars.close()
        how = "by Ctrl-C" if isinstance(exc, KeyboardInterrupt) else "from the app"
        print(f"searchgrade: run {run_id} cancelled {how} again; `searchgrade resume {run_id}` "
              "continues it", file=sys.stderr)
        return EXIT_CANCELLED
    except RunTakenOver as exc:
        bars.close()
        raise SearchGradeError(str(exc)) from None
    finally:
        bars.close()
    return _report_outcome(store, outcome)
