"""The `searchgrade` command line."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

from engine.types import STRATEGIES, SearchGradeError

#: Metrics shown by `searchgrade show` as a table, in this order.
TABLE_METRICS = ("dcg", "ndcg", "precision", "recall", "mrr", "map", "mean_relevance", "judged")


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


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="searchgrade", description="Tells you how good your search is.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    p = sub.add_parser("index", help="build or reuse the indexes of a collection")
    _add_collection(p)
    _add_index_options(p)
    _add_common(p)

    p = sub.add_parser("evaluate", help="evaluate every strategy on a collection and store the run")
    _add_collection(p)
    p.add_argument("--qrels", action="store_true", required=True,
                   help="grade with the collection's human judgments (qrels)")
    p.add_argument("--name", help="a name for the run (default: collection and time)")
    p.add_argument("--k", type=int, default=10, help="cut-off of the headline metrics (default: 10)")
    p.add_argument("--depth", type=int, help="results kept per query (default: k); metrics at any "
                   "cut-off up to it are derived later without searching again")
    p.add_argument("--threshold", type=int, help="lowest grade that counts as relevant (default: 2 "
                   "on scales reaching 3 or more, 1 on binary labels)")
    p.add_argument("--max-queries", type=int, help="evaluate a seeded sample of this many queries")
    p.add_argument("--seed", type=int, default=0, help="seed of samples and bootstraps (default: 0)")
    _add_index_options(p)
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
    """One tqdm progress bar per stage, on stderr."""

    def __init__(self) -> None:
        self._bars: dict[str, Any] = {}

    def __call__(self, stage: str, done: int, total: int) -> None:
        from tqdm import tqdm

        bar = self._bars.get(stage)
        if bar is None:
            bar = self._bars[stage] = tqdm(total=total, desc=stage, unit="", leave=True,
                                           file=sys.stderr, dynamic_ncols=True)
        bar.total = total
        bar.n = done
        bar.refresh()
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


def cmd_evaluate(args: argparse.Namespace) -> int:
    from engine.paths import data_dir
    from engine.pipeline import RunConfig, run_evaluation

    config = RunConfig(
        name=args.name, mode="qrels", k=args.k, depth=args.depth, threshold=args.threshold,
        strategies=_strategies(args), max_queries=args.max_queries, seed=args.seed,
        index=_settings(args),
    )
    config.validate()
    store = _store(args)
    collection = _load(args)
    bars = _Bars()
    created: list[str] = []
    try:
        outcome = run_evaluation(collection, config, store, data_dir(args.data_dir), progress=bars,
                                 on_run_created=created.append)
    except KeyboardInterrupt:
        bars.close()
        if created:
            print(f"searchgrade: run {created[0]} interrupted and marked so", file=sys.stderr)
        raise
    finally:
        bars.close()
    _print_notes(outcome.notes, outcome.skipped)
    _print_table(store, outcome.run_id, None, sys.stderr)
    print(outcome.run_id)
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    runs = _store(args).list_runs()
    if not runs:
        print("no runs yet; start one with `searchgrade evaluate COLLECTION --qrels`")
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
        if r["metric"] in TABLE_METRICS:
            cells.setdefault(r["strategy"], {})[r["metric"]] = (
                f"{r['value']:.3f} [{r['ci_low']:.3f},{r['ci_high']:.3f}]")
    print(f"run {run.run_id} '{run.name}' {run.status} ({run.collection_name}, {run.label_source} "
          f"labels, relevant >= {run.threshold}, k={k})", file=out)
    if run.error:
        print(f"  error: {run.error}", file=out)
    for strategy, reason in run.skipped.items():
        print(f"  skipped {strategy}: {reason}", file=out)
    if not cells:
        print("  no metrics stored", file=out)
        return
    width = 22
    print(f"{'strategy':<16}" + "".join(f"{m + '@' + str(k):>{width}}" for m in TABLE_METRICS), file=out)
    for strategy in [s for s in STRATEGIES if s in cells]:
        print(f"{strategy:<16}" + "".join(f"{cells[strategy].get(m, '-'):>{width}}" for m in TABLE_METRICS),
              file=out)


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
               "--browser.gatherUsageStats", "false"]
    print(f"searchgrade app on http://{args.host}:{args.port} (Ctrl-C to stop)", file=sys.stderr)
    try:
        return subprocess.call(command, env=env)
    except KeyboardInterrupt:
        return 0


COMMANDS = {
    "index": cmd_index,
    "evaluate": cmd_evaluate,
    "runs": cmd_runs,
    "show": cmd_show,
    "export": cmd_export,
    "app": cmd_app,
}

if __name__ == "__main__":
    sys.exit(main())
