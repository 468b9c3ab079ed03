"""The `searchgrade` command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

from engine.types import STRATEGIES, SearchGradeError

#: Metrics shown by `searchgrade show` as a table, in this order.
TABLE_METRICS = ("dcg", "ndcg", "precision", "recall", "mrr", "map", "mean_relevance", "judged")
#: Shown after those when the run has them (LLM mode: is the query's source document in the top k).
TABLE_EXTRA_METRICS = ("source_found",)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line, as for every expected error; --help still gives the full usage.
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", help="where runs, indexes and caches live "
                   "(default: $SEARCHGRADE_HOME, else ./.searchgrade)")


def _add_collection(p: argparse.ArgumentParser) -> None:
    p.add_argument("collection", help="a BEIR folder, a .jsonl/.csv/.parquet file, a folder of "
                   ".txt/.md files, or 'demo' for the bundled demo collection")
    p.add_argument("--id-field", default="_id", help="id field of a single-file corpus (default: _id)")
    p.add_argument("--title-field", default="title", help="title field (default: title; optional)")
    p.add_argument("--text-field", default="text", help="text field (default: text)")


def _add_index_options(p: argparse.ArgumentParser) -> None:
    from indexes.settings import IndexSettings

    d = IndexSettings()
    g = p.add_argument_group("indexes")
    g.add_argument("--embedding-model", default=d.embedding_model,
                   help=f"sentence-transformers model name or local path (default: {d.embedding_model})")
    g.add_argument("--ann-index", default=d.ann_index, help="faiss index: flat (exact), hnsw or ivf")
    g.add_argument("--reranker-model", default=d.reranker_model,
                   help=f"cross-encoder name or local path (default: {d.reranker_model})")
    g.add_argument("--rerank-depth", type=int, default=d.rerank_depth,
                   help=f"candidates the reranker rescores (default: {d.rerank_depth})")
    g.add_argument("--rrf-k", type=int, default=d.rrf_k, help=f"RRF constant (default: {d.rrf_k})")
    g.add_argument("--fusion-depth", type=int, default=d.fusion_depth,
                   help=f"candidates fused per list in hybrid (default: {d.fusion_depth})")
    g.add_argument("--bm25-k1", type=float, default=d.bm25_k1, help=f"BM25 k1 (default: {d.bm25_k1})")
    g.add_argument("--bm25-b", type=float, default=d.bm25_b, help=f"BM25 b (default: {d.bm25_b})")
    g.add_argument("--batch-size", type=int, default=d.batch_size,
                   help=f"encoding batch size (default: {d.batch_size})")
    g.add_argument("--strategies", default=",".join(STRATEGIES),
                   help="comma-separated subset of: " + ", ".join(STRATEGIES))


def _add_llm_options(p: argparse.ArgumentParser) -> None:
    from engine.llm.querygen import QueryGenSettings

    d = QueryGenSettings()
    g = p.add_argument_group("LLM (with --llm)")
    g.add_argument("--model", help="chat model name (default: $SEARCHGRADE_LLM_MODEL)")
    g.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8080/v1 "
                   "(default: $OPENAI_BASE_URL, else the hosted OpenAI API with $OPENAI_API_KEY)")
    g.add_argument("--concurrency", type=int, help="LLM requests in flight (default: 4)")
    g.add_argument("--timeout", type=float, help="seconds per LLM request (default: 60)")
    g.add_argument("--docs", type=int, help=f"documents to write queries for (default: {d.n_docs})")
    g.add_argument("--queries-per-doc", type=int,
                   help=f"natural-language questions per document (default: {d.n_natural})")
    g.add_argument("--keyword-per-doc", type=int,
                   help=f"keyword queries per document (default: {d.n_keyword})")
    g.add_argument("--min-doc-words", type=int, help=f"skip documents shorter than this many words "
                   f"(default: {d.min_words} words and {d.min_chars} characters)")
    g.add_argument("--queries-from", metavar="RUN",
                   help="evaluate the queries stored with RUN instead of generating new ones")
    g.add_argument("--judge-unjudged", action="store_true",
                   help="with --qrels --llm: also judge the results the qrels miss and use those grades")


#: Options that only mean something with --llm (name -> flag).
_LLM_ONLY = {"model": "--model", "base_url": "--base-url", "concurrency": "--concurrency",
             "timeout": "--timeout", "docs": "--docs", "queries_per_doc": "--queries-per-doc",
             "keyword_per_doc": "--keyword-per-doc", "min_doc_words": "--min-doc-words",
             "queries_from": "--queries-from"}
#: Of those, the ones about generating queries (not with --qrels).
_QUERYGEN_ONLY = ("docs", "queries_per_doc", "keyword_per_doc", "min_doc_words", "queries_from")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="searchgrade", description="Tells you how good your search is.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("index", help="build or reuse the indexes of a collection")
    _add_collection(p)
    _add_index_options(p)
    _add_common(p)

    p = sub.add_parser("evaluate", help="evaluate every strategy on a collection and store the run")
    _add_collection(p)
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
    _add_llm_options(p)
    _add_index_options(p)
    _add_common(p)

    p = sub.add_parser("resume", help="continue an interrupted or failed run; only missing work is done")
    p.add_argument("run", help="run id (or an unambiguous prefix)")
    p.add_argument("--base-url", help="the LLM endpoint, if it moved (default: the run's)")
    p.add_argument("--concurrency", type=int, help="LLM requests in flight (default: the run's)")
    _add_common(p)

    p = sub.add_parser("runs", help="list the stored runs, newest first")
    _add_common(p)

    p = sub.add_parser("show", help="a run's metrics per strategy with 95%% confidence intervals")
    p.add_argument("run", help="run id (or an unambiguous prefix)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.add_argument("--k", type=int, help="only this cut-off (default: the run's k for the table, "
                   "all stored cut-offs for JSON)")
    _add_common(p)

    p = sub.add_parser("export", help="write a run as TREC run files or per-query metrics")
    p.add_argument("run", help="run id (or an unambiguous prefix)")
    p.add_argument("--format", choices=("trec", "csv", "parquet"), required=True)
    p.add_argument("--out", required=True, help="output directory")
    _add_common(p)

    p = sub.add_parser("app", help="start the dashboard (Streamlit)")
    p.add_argument("--port", type=int, default=8501)
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    _add_common(p)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except SearchGradeError as exc:
        print(f"searchgrade: error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("searchgrade: interrupted", file=sys.stderr)
        return 130


# -- commands ------------------------------------------------------------------------------


def _store(args: argparse.Namespace):
    from engine.paths import data_dir
    from engine.store import Store

    store = Store(data_dir(args.data_dir))
    store.mark_stale_runs()
    return store


def _load(args: argparse.Namespace):
    from engine.collections import load_collection
    from engine.paths import resolve_collection

    return load_collection(resolve_collection(args.collection), id_field=args.id_field,
                           title_field=args.title_field, text_field=args.text_field)


def _settings(args: argparse.Namespace):
    from indexes.settings import IndexSettings

    return IndexSettings(
        embedding_model=args.embedding_model, ann_index=args.ann_index,
        reranker_model=args.reranker_model, rerank_depth=args.rerank_depth, rrf_k=args.rrf_k,
        fusion_depth=args.fusion_depth, bm25_k1=args.bm25_k1, bm25_b=args.bm25_b,
        batch_size=args.batch_size,
    )


def _strategies(args: argparse.Namespace) -> tuple[str, ...]:
    names = tuple(s.strip() for s in args.strategies.split(",") if s.strip())
    unknown = [s for s in names if s not in STRATEGIES]
    if unknown or not names:
        raise SearchGradeError(f"--strategies {args.strategies!r}: unknown {unknown or 'empty list'}; "
                               f"choose from {', '.join(STRATEGIES)}")
    return names


class _Bars:
    """One tqdm progress bar per stage, on stderr; LLM stages show their calls and tokens so far."""

    def __init__(self) -> None:
        self._bars: dict[str, Any] = {}
        self._usage: dict[str, str] = {}

    def set_usage(self, stage: str, counters: dict[str, float]) -> None:
        tokens = int(counters.get("prompt_tokens", 0) + counters.get("completion_tokens", 0))
        text = f"calls={int(counters.get('requests', 0))} tokens={tokens}"
        if counters.get("cache_hits"):
            text += f" cached={int(counters['cache_hits'])}"
        if counters.get("failures"):
            text += f" failed={int(counters['failures'])}"
        self._usage[stage] = text

    def __call__(self, stage: str, done: int, total: int) -> None:
        from tqdm import tqdm

        bar = self._bars.get(stage)
        if bar is None:
            bar = self._bars[stage] = tqdm(total=total, desc=stage, unit="", leave=True,
                                           file=sys.stderr, dynamic_ncols=True)
        bar.total = total
        if stage in self._usage:
            bar.set_postfix_str(self._usage[stage], refresh=False)
        # update(), not n = done: tqdm derives the rate from updates.
        bar.update(max(0, done - bar.n))
        if done >= total:
            bar.close()

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()


def _print_notes(notes: Sequence[str], skipped: dict[str, str]) -> None:
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    for strategy, reason in skipped.items():
        print(f"skipped {strategy}: {reason}", file=sys.stderr)


def cmd_index(args: argparse.Namespace) -> int:
    from engine.collections import collection_fingerprint
    from engine.paths import data_dir
    from indexes.build import build_searchers

    collection = _load(args)
    bars = _Bars()
    try:
        built = build_searchers(collection, _settings(args), data_dir(args.data_dir),
                                strategies=_strategies(args), progress=bars,
                                collection_fingerprint=collection_fingerprint(collection))
    finally:
        bars.close()
    _print_notes(collection.notes, built.skipped)
    print(f"{collection.name}: {len(collection.documents)} documents; ready: "
          f"{', '.join(built.searchers) or 'none'}")
    for stage, seconds in built.timings.items():
        print(f"  {stage}: {seconds:.1f} s")
    return 0


def _llm_settings(args: argparse.Namespace):
    from engine.llm.client import LLMSettings
    from engine.pipeline import ENV_MODEL

    model = args.model or os.environ.get(ENV_MODEL)
    if not model:
        raise SearchGradeError(f"no LLM model given; pass --model NAME or set {ENV_MODEL}")
    base_url = args.base_url or os.environ.get("OPENAI_BASE_URL") or None
    if base_url is None and not os.environ.get("OPENAI_API_KEY"):
        raise SearchGradeError("no LLM endpoint; pass --base-url URL (a local OpenAI-compatible "
                               "server) or set OPENAI_BASE_URL, or set OPENAI_API_KEY for the hosted API")
    fields: dict[str, Any] = {"model": model, "base_url": base_url}
    if args.concurrency is not None:
        fields["concurrency"] = args.concurrency
    if args.timeout is not None:
        fields["timeout_s"] = args.timeout
    return LLMSettings(**fields)


def _querygen_settings(args: argparse.Namespace):
    from engine.llm.querygen import QueryGenSettings

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


def _run_config(args: argparse.Namespace):
    from engine.pipeline import RunConfig

    if not args.qrels and not args.llm:
        raise SearchGradeError("say how to grade: --qrels (human judgments), --llm (an LLM judge), "
                               "or --qrels --llm (human grades first, judge-vs-human agreement)")
    if not args.llm:
        given = [flag for name, flag in _LLM_ONLY.items() if getattr(args, name) is not None]
        if given or args.judge_unjudged:
            raise SearchGradeError(f"{(given or ['--judge-unjudged'])[0]} goes with --llm")
    elif args.qrels:
        given = [_LLM_ONLY[name] for name in _QUERYGEN_ONLY if getattr(args, name) is not None]
        if given:
            raise SearchGradeError(f"{given[0]} is about generated queries: with --qrels --llm the "
                                   "collection's queries are used; drop it or drop --qrels")
    elif args.max_queries is not None:
        raise SearchGradeError("--max-queries goes with --qrels; with --llm set the number of "
                               "queries with --docs and --queries-per-doc")
    llm = _llm_settings(args) if args.llm else None
    return RunConfig(
        name=args.name, mode="llm" if args.llm and not args.qrels else "qrels", k=args.k,
        depth=args.depth, threshold=args.threshold, strategies=_strategies(args),
        max_queries=args.max_queries, seed=args.seed, index=_settings(args), llm=llm,
        querygen=_querygen_settings(args) if args.llm and not args.qrels else None,
        queries_from=args.queries_from, judge_unjudged=args.judge_unjudged,
        collection_fields={"id_field": args.id_field, "title_field": args.title_field,
                           "text_field": args.text_field},
    )


def cmd_evaluate(args: argparse.Namespace) -> int:
    from engine.paths import data_dir
    from engine.pipeline import run_evaluation

    config = _run_config(args)
    config.validate()
    store = _store(args)
    collection = _load(args)
    bars = _Bars()
    created: list[str] = []
    try:
        outcome = run_evaluation(collection, config, store, data_dir(args.data_dir), progress=bars,
                                 on_run_created=created.append, on_usage=bars.set_usage)
    except KeyboardInterrupt:
        bars.close()
        if created:
            print(f"searchgrade: run {created[0]} interrupted and marked so; continue it with "
                  f"`searchgrade resume {created[0]}`", file=sys.stderr)
        raise
    except SearchGradeError as exc:
        bars.close()
        if created:
            raise SearchGradeError(f"{exc} (run {created[0]} marked failed; after fixing, "
                                   f"`searchgrade resume {created[0]}`)") from None
        raise
    finally:
        bars.close()
    return _report_outcome(store, outcome)


def _report_outcome(store, outcome) -> int:
    """Notes and the metrics table on stderr; the run id alone on stdout's last line."""
    _print_notes(outcome.notes, {})  # the table lists skipped strategies itself
    _print_table(store, outcome.run_id, None, sys.stderr)
    print(outcome.run_id)
    return 0


def cmd_resume(args: argparse.Namespace) -> int:
    from engine.paths import data_dir
    from engine.pipeline import resume_run

    if args.concurrency is not None and args.concurrency < 1:
        raise SearchGradeError(f"--concurrency of {args.concurrency} must be at least 1")
    store = _store(args)
    run_id = store.get_run(args.run).run_id
    bars = _Bars()
    try:
        outcome = resume_run(run_id, store, data_dir(args.data_dir), base_url=args.base_url,
                             concurrency=args.concurrency, progress=bars, on_usage=bars.set_usage)
    except KeyboardInterrupt:
        bars.close()
        print(f"searchgrade: run {run_id} interrupted again and marked so", file=sys.stderr)
        raise
    finally:
        bars.close()
    return _report_outcome(store, outcome)


def cmd_runs(args: argparse.Namespace) -> int:
    runs = _store(args).list_runs()
    if not runs:
        print("no runs yet; start one with `searchgrade evaluate COLLECTION --qrels` (or --llm)")
        return 0
    print(f"{'run id':<24} {'status':<11} {'created (UTC)':<19} {'queries':>7}  name")
    for run in runs:
        n = run.stats.get("queries", "")
        print(f"{run.run_id:<24} {run.status:<11} {run.created_at:%Y-%m-%d %H:%M:%S} {n!s:>7}  {run.name}")
    return 0


def _print_table(store, run_id: str, k: int | None, out) -> None:
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
    for strategy, reason in run.skipped.items():
        print(f"  skipped {strategy}: {reason}", file=out)
    if run.mode == "llm" or run.config.get("llm"):
        llm = llm_summary(store, run)
        calls, hits = llm["llm_calls"], llm["cache_hits"]
        print(f"  LLM {run.config.get('llm', {}).get('model')}: {calls['querygen']} query-generation "
              f"and {calls['judge']} judge calls, {hits['querygen'] + hits['judge']} cache hits, "
              f"{llm['judge_failures']} judge failures (left out of the metrics)", file=out)
        agreement = run.stats.get("agreement")
        if agreement and agreement.get("n"):
            kappa = agreement.get("kappa")
            linear = agreement.get("kappa_linear")
            print(f"  judge vs human on {agreement['n']} pairs: kappa "
                  f"{'-' if kappa is None else f'{kappa:.3f}'}, linear-weighted "
                  f"{'-' if linear is None else f'{linear:.3f}'}", file=out)
    if not cells:
        print("  no metrics stored", file=out)
        return
    metrics = TABLE_METRICS + tuple(m for m in TABLE_EXTRA_METRICS
                                    if any(m in c for c in cells.values()))
    width = 22
    print(f"{'strategy':<16}" + "".join(f"{m + '@' + str(k):>{width}}" for m in metrics), file=out)
    for strategy in [s for s in STRATEGIES if s in cells]:
        print(f"{strategy:<16}" + "".join(f"{cells[strategy].get(m, '-'):>{width}}" for m in metrics),
              file=out)


def llm_summary(store, run) -> dict[str, Any]:
    """A run's LLM accounting for `show --format json` (zeros for a run without LLM calls).

    llm_calls: HTTP requests sent per stage, retries included (over every process that worked on
    the run, resumes included); cache_hits: items answered from the cache; tokens: prompt and
    completion tokens per stage; judge_failures: stored pairs whose judgment failed (grade None).
    """
    usage = store.llm_usage(run.run_id)
    stages = ("querygen", "judge")
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


def cmd_show(args: argparse.Namespace) -> int:
    store = _store(args)
    run = store.get_run(args.run)
    if args.format == "table":
        _print_table(store, run.run_id, args.k, sys.stdout)
        return 0
    metrics = [
        {key: r[key] for key in ("strategy", "metric", "k", "value", "ci_low", "ci_high", "n")}
        for r in store.metric_summary(run.run_id, args.k)
    ]
    run_json = run.to_dict()
    run_json["latency_ms"] = store.latency_summary(run.run_id)
    run_json.update(llm_summary(store, run))
    json.dump({"run": run_json, "metrics": metrics}, sys.stdout, indent=2, default=str)
    print()
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    from engine.export import export_run

    for path in export_run(_store(args), args.run, args.format, args.out):
        print(path)
    return 0


def cmd_app(args: argparse.Namespace) -> int:
    import subprocess

    from engine.paths import data_dir

    app = Path(__file__).resolve().parent.parent / "app.py"
    env = dict(os.environ, SEARCHGRADE_HOME=str(data_dir(args.data_dir).resolve()))
    command = [sys.executable, "-m", "streamlit", "run", str(app), "--server.port", str(args.port),
               "--server.address", args.host, "--server.headless", "true",
               # Streamlit would otherwise watch every module file under the app's folder,
               # .venv included (torch and all): polling thousands of files slows a run ~4x.
               "--server.fileWatcherType", "none",
               "--browser.gatherUsageStats", "false"]
    print(f"searchgrade app on http://{args.host}:{args.port} (Ctrl-C to stop)", file=sys.stderr)
    try:
        return subprocess.call(command, env=env)
    except KeyboardInterrupt:
        return 0


COMMANDS = {
    "index": cmd_index,
    "evaluate": cmd_evaluate,
    "resume": cmd_resume,
    "runs": cmd_runs,
    "show": cmd_show,
    "export": cmd_export,
    "app": cmd_app,
}

if __name__ == "__main__":
    sys.exit(main())
