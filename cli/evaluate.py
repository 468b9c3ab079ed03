"""`searchgrade evaluate` and `resume`: run an evaluation and store it, or continue a stopped one."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
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
    strategies,
)
from searchgrade.cli.output import Bars, print_notes
from searchgrade.cli.show import print_table
from searchgrade.cli.traffic_options import add_traffic_options, traffic_fields
from searchgrade.core.records import SearchGradeError
from searchgrade.engine.llm.env import require_endpoint, require_model
from searchgrade.engine.llm.key_policy import operator_urls
from searchgrade.engine.paths import data_dir
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.lifecycle import RunCancelled, RunTakenOver

if TYPE_CHECKING:
    from searchgrade.engine.llm.judge import JudgeSettings
    from searchgrade.engine.llm.querygen import QueryGenSettings
    from searchgrade.engine.llm.settings import LLMSettings
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

#: Options that only mean something with --llm (name -> flag).
_LLM_ONLY = {"model": "--model", "base_url": "--base-url", "concurrency": "--concurrency",
             "timeout": "--timeout", "docs": "--docs", "queries_per_doc": "--queries-per-doc",
             "keyword_per_doc": "--keyword-per-doc", "min_doc_words": "--min-doc-words",
             "queries_from": "--queries-from", "judge_prompt": "--judge-prompt"}
#: Of those, the ones about generating queries (not with --qrels).
_QUERYGEN_ONLY = ("docs", "queries_per_doc", "keyword_per_doc", "min_doc_words", "queries_from")


def _llm_settings(args: argparse.Namespace) -> LLMSettings:
    from searchgrade.engine.llm.settings import LLMSettings

    fields: dict[str, Any] = {"model": require_model(args.model),
                              "base_url": require_endpoint(args.base_url)}
    if args.concurrency is not None:
        fields["concurrency"] = args.concurrency
    if args.timeout is not None:
        fields["timeout_s"] = args.timeout
    return LLMSettings(**fields)


def _querygen_settings(args: argparse.Namespace) -> QueryGenSettings:
    from searchgrade.engine.llm.querygen import QueryGenSettings

    d = QueryGenSettings()
    fields: dict[str, Any] = {"seed": args.seed}
    for name, attr in (("n_docs", "docs"), ("n_natural", "queries_per_doc"),
                       ("n_keyword", "keyword_per_doc")):
        if getattr(args, attr) is not None:
            fields[name] = getattr(args, attr)
    if args.min_doc_words is not None:
        if args.min_doc_words < 1:
            raise SearchGradeError(f"--min-doc-words of {args.min_doc_words} must be at least 1")
        # One explicit minimum: the character minimum of the default no longer applies.
        fields.update(min_words=args.min_doc_words, min_chars=0)
    return replace(d, **fields)


def _judge_settings(args: argparse.Namespace) -> JudgeSettings | None:
    """The user's judge prompt (validated), or None for the packaged one."""
    if args.judge_prompt is None:
        return None
    from searchgrade.engine.llm.judge import JudgeSettings
    from searchgrade.engine.llm.prompts import read_judge_prompt

    name, text = read_judge_prompt(args.judge_prompt)
    return JudgeSettings(prompt=name, prompt_text=text)


def _run_config(args: argparse.Namespace) -> RunConfig:
    if not args.qrels and not args.llm and not args.clicks:
        raise SearchGradeError("say how to grade: --qrels (human judgments), --llm (an LLM judge), "
                               "--qrels --llm (human grades first, judge-vs-human agreement), or --clicks "
                               "with --query-set (a click model over a query log's clicks)")
    traffic = traffic_fields(args)
    if not args.llm:
        given = [flag for name, flag in _LLM_ONLY.items() if getattr(args, name) is not None]
        if given or args.judge_unjudged:
            raise SearchGradeError(f"{(given or ['--judge-unjudged'])[0]} goes with --llm")
    elif args.qrels or args.clicks or args.query_set:
        given = [_LLM_ONLY[name] for name in _QUERYGEN_ONLY if getattr(args, name) is not None]
        if given:
            raise SearchGradeError(f"{given[0]} is about generated queries: with --qrels, --clicks or "
                                   "--query-set the queries are given; drop it")
    elif args.max_queries is not None:
        raise SearchGradeError("--max-queries goes with --qrels; with --llm set the number of "
                               "queries with --docs and --queries-per-doc")
    llm = _llm_settings(args) if args.llm else None
    declarations = declared(args)
    rerankers = declared_rerankers(args)
    sweeps = declared_sweeps(args)
    from searchgrade.engine.run.strategies import registry_for_declared

    mode = "clicks" if args.clicks else "llm" if args.llm and not args.qrels else "qrels"
    chosen = strategies(args, registry_for_declared(declarations, rerankers))
    # A sweep's variants and its reference join the strategies --strategies picks.
    chosen += tuple(dict.fromkeys(n for sweep in sweeps.values() for n in [sweep["reference"], *sweep["variants"]]
                                  if n not in chosen))
    return RunConfig(
        name=args.name, mode=mode, k=args.k,
        depth=args.depth, threshold=args.threshold,
        strategies=chosen, declared=declarations, sweeps=sweeps,
        rerankers=rerankers,
        max_queries=args.max_queries, seed=args.seed, index=index_settings(args), llm=llm,
        querygen=_querygen_settings(args) if mode == "llm" and args.query_set is None else None,
        judge=_judge_settings(args) if args.llm else None,
        queries_from=args.queries_from, judge_unjudged=args.judge_unjudged, **traffic,
        pool_depth=_pool_depth(args),
    )


def _pool_depth(args: argparse.Namespace) -> dict[str, Any] | None:
    """--pool-depth as the config stores it (engine/run/pool.py), None when not given."""
    if args.pool_depth is None:
        return None
    from searchgrade.engine.run.pool import parse_pool_depth

    return parse_pool_depth(args.pool_depth).to_json()


def cmd_evaluate(args: argparse.Namespace) -> int:
    config = _run_config(args)
    config.validate()
    config.check_environment()
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
        # The endpoint typed here is the operator's choice: it may get $OPENAI_API_KEY.
        with operator_urls([args.base_url]):
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
    """Notes and the metrics table on stderr; the run id alone on stdout's last line."""
    print_notes(outcome.notes, {})  # the table lists skipped strategies itself
    print_table(store, outcome.run_id, None, sys.stderr)
    print(outcome.run_id)
    return 0


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
