"""Options several commands share, and turning them into what the engine takes."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from searchgrade.core.records import Collection, SearchGradeError
from searchgrade.engine.paths import data_dir, resolve_collection
from searchgrade.engine.run.strategies import (
    ENV_STRATEGIES_FILE,
    Registry,
    known_strategies,
    registry_for_declared,
    strategies_file_from_env,
)
from searchgrade.indexes.settings import IndexSettings

if TYPE_CHECKING:
    from searchgrade.engine.store import Store


def add_common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--data-dir", help="where runs, indexes and caches live "
                   "(default: $SEARCHGRADE_HOME, else ./.searchgrade)")


def add_collection(p: argparse.ArgumentParser) -> None:
    from searchgrade.engine.collections import FolderLimits
    from searchgrade.engine.collections.fields import GUESSES

    def guessed(role: str) -> str:
        return "default: the first of " + ", ".join(GUESSES[role]) + " the file has"

    limits = FolderLimits()
    p.add_argument("collection", help="a BEIR folder, a .jsonl/.csv/.tsv/.parquet file, a folder of "
                   ".txt/.md files, or 'demo' for the bundled demo collection")
    g = p.add_argument_group("collection columns and limits")
    g.add_argument("--id-field", help=f"column of the document id ({guessed('id')})")
    g.add_argument("--title-field", help=f"column of the title ({guessed('title')}; '' for none)")
    g.add_argument("--text-field", help=f"column(s) of the text, e.g. abstract,body to join several "
                   f"({guessed('text')})")
    g.add_argument("--max-files", type=int, default=limits.max_files,
                   help=f"a folder walk stops past this many files (default: {limits.max_files:,})")
    g.add_argument("--max-folder-mb", type=int, default=limits.max_mb,
                   help=f"... or past this many MB of .txt/.md files (default: {limits.max_mb:,})")


def add_judgment_files(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("queries and judgments beside a single-file corpus")
    g.add_argument("--queries", metavar="FILE", help="queries (.jsonl, .csv, .tsv: an id and a text "
                   "column); for a BEIR folder, instead of its queries.jsonl")
    g.add_argument("--qrels-file", metavar="FILE", help="judgments: TREC qrels (qid 0 docid grade) or "
                   "BEIR TSV (query-id, corpus-id, score); for a BEIR folder, instead of its qrels.tsv")
    g.add_argument("--query-id-field", help="column of the query id (default: guessed: _id, id, "
                   "query_id, qid, ...)")
    g.add_argument("--query-text-field", help="column of the query text (default: guessed: text, "
                   "query, question, ...)")


def add_index_options(p: argparse.ArgumentParser) -> None:
    d = IndexSettings()
    g = p.add_argument_group("indexes")
    g.add_argument("--embedding-model", default=d.embedding_model,
                   help=f"sentence-transformers model name or local path (default: {d.embedding_model})")
    g.add_argument("--embedding-backend", default=d.embedding_backend, metavar="BACKEND",
                   help="what computes the embeddings: torch (sentence-transformers, fp32), onnx "
                   "(ONNX Runtime, fp32) or onnx-int8 (ONNX Runtime, int8 weights: faster on a CPU, "
                   f"slightly different vectors; see the README) (default: {d.embedding_backend})")
    g.add_argument("--device", default=d.device,
                   help="where the torch backend embeds: auto (a CUDA GPU when torch sees one, else "
                   f"the CPU), cpu, cuda or cuda:N (default: {d.device})")
    g.add_argument("--ann-index", default=d.ann_index,
                   help="faiss index: auto (exact up to 200,000 documents, ivf above), flat (exact), hnsw or ivf")
    g.add_argument("--ivf-nprobe", type=int, default=d.ivf_nprobe,
                   help=f"inverted lists an IVF search visits (--ann-index ivf; default: {d.ivf_nprobe})")
    g.add_argument("--reranker-model", default=d.reranker_model,
                   help="the default reranker (of X_rerank): a cross-encoder name or local path, trained:NAME "
                   "for a reranker trained by `searchgrade train-reranker`, or the NAME of a [reranker.NAME] "
                   f"the strategies file declares (default: {d.reranker_model})")
    g.add_argument("--rerankers", default=None, metavar="NAME,...",
                   help="declared rerankers ([reranker.NAME] in the strategies file) that also rerank every "
                   "retrieval strategy run: adds X_NAME beside X and X_rerank (see docs/reranker.md)")
    g.add_argument("--rerank-depth", type=int, default=d.rerank_depth,
                   help=f"candidates the reranker rescores (default: {d.rerank_depth})")
    g.add_argument("--rrf-k", type=int, default=d.rrf_k, help=f"RRF constant (default: {d.rrf_k})")
    g.add_argument("--fusion-depth", type=int, default=d.fusion_depth,
                   help=f"candidates fused per list in hybrid (default: {d.fusion_depth})")
    g.add_argument("--fusion", default=d.fusion, metavar="METHOD",
                   help="how hybrid fuses the ANN and full-text lists: rrf, wrrf(w=0.7), combsum(norm=zscore), "
                   "combmnz(norm=minmax), convex(w=0.3,norm=minmax); norm is minmax, zscore or sum "
                   f"(docs/tuning.md) (default: {d.fusion})")
    g.add_argument("--bm25-k1", type=float, default=d.bm25_k1, help=f"BM25 k1 (default: {d.bm25_k1})")
    g.add_argument("--bm25-b", type=float, default=d.bm25_b, help=f"BM25 b (default: {d.bm25_b})")
    g.add_argument("--batch-size", type=int, default=d.batch_size,
                   help=f"encoding batch size (default: {d.batch_size})")
    g.add_argument("--strategies", default=None,
                   help="comma-separated strategies to run, among the built-ins ("
                   + ", ".join(known_strategies()) + "), those a strategies file declares, and those "
                   "added in the app, by name (default: the built-ins and the file's)")
    add_strategies_file(g)


def add_strategies_file(p: argparse.ArgumentParser | argparse._ArgumentGroup) -> None:
    p.add_argument("--strategies-file", metavar="FILE",
                   help="a TOML file declaring your own search systems as strategies (HTTP, "
                   f"Elasticsearch, OpenSearch, Milvus, Postgres, LanceDB, Python), variants of the built-ins "
                   f"(another model, chunking) and sweeps of them; default: ${ENV_STRATEGIES_FILE}")


def add_llm_options(p: argparse.ArgumentParser) -> None:
    from searchgrade.engine.llm.querygen import QueryGenSettings

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
    g.add_argument("--judge-prompt", metavar="FILE",
                   help="the judge's prompt, in the format of engine/llm/prompts/judge_v1.txt ({{query}}, "
                   "{{document}}, the 0-3 scale); its hash keys the cache and is shown with the run")
    g.add_argument("--judge-unjudged", action="store_true",
                   help="with --qrels --llm or --clicks --llm: also judge the results the qrels (or the clicks) "
                   "miss and use those grades (a panel's grade with --judge-models)")
    g.add_argument("--judge-models", metavar="A,B[,C]",
                   help="a panel: each judge grades every retrieved pair, NAME a model on the run's endpoint, "
                   "NAME@URL one on its own; each judge's grade, cache and calls kept; accepted without --model "
                   "(`searchgrade judges RUN` says which decides as people do)")
    g.add_argument("--judge-price", action="append", default=[], metavar="MODEL=USD_PER_MTOK",
                   help="a judge's price in US dollars per million tokens, prompt and completion alike "
                   "(repeat per judge)")
    g.add_argument("--judge-aggregate", choices=("median", "mean"),
                   help="how a panel's grades become one: the lower median (default) or the mean, rounded")


def open_store(args: argparse.Namespace) -> Store:
    """The run store of --data-dir, with runs whose process died marked interrupted."""
    from searchgrade.engine.store import Store

    store = Store(data_dir(args.data_dir))
    store.mark_stale_runs()
    return store


def load(args: argparse.Namespace) -> Collection:
    """The collection the command names, loaded with its column, file and limit options."""
    from searchgrade.engine.collections import FolderLimits, load_collection

    for flag, value in (("--max-files", args.max_files), ("--max-folder-mb", args.max_folder_mb)):
        if value < 1:
            raise SearchGradeError(f"{flag} of {value} must be at least 1")
    return load_collection(
        resolve_collection(args.collection), id_field=args.id_field, title_field=args.title_field,
        text_field=args.text_field, queries_file=getattr(args, "queries", None),
        qrels_file=getattr(args, "qrels_file", None),
        query_id_field=getattr(args, "query_id_field", None),
        query_text_field=getattr(args, "query_text_field", None),
        limits=FolderLimits(args.max_files, args.max_folder_mb * 1024**2))


def index_settings(args: argparse.Namespace) -> IndexSettings:
    """The index options as IndexSettings; a bad backend or device stops here, before any work."""
    from searchgrade.indexes.embeddings.backends import resolve_device

    settings = IndexSettings(
        embedding_model=args.embedding_model, embedding_backend=args.embedding_backend,
        device=args.device, ann_index=args.ann_index,
        reranker_model=args.reranker_model, rerank_depth=args.rerank_depth, rrf_k=args.rrf_k,
        fusion_depth=args.fusion_depth, fusion=args.fusion, bm25_k1=args.bm25_k1, bm25_b=args.bm25_b,
        batch_size=args.batch_size, ivf_nprobe=args.ivf_nprobe,
    )
    resolve_device(settings.embedding_backend, settings.device)
    return settings


def declared(args: argparse.Namespace) -> dict[str, dict]:
    """The strategies --strategies-file (or $SEARCHGRADE_STRATEGIES_FILE) declares, as a run stores
    them, and those --strategies names that were added in the app (saved in the run store of
    --data-dir); the file's declaration wins over a saved one of the same name."""
    from searchgrade.engine.run.strategies import declarations

    found = declarations(getattr(args, "strategies_file", None), data_dir(args.data_dir), strategy_names(args))
    sweep_file = getattr(args, "sweep", None)
    if sweep_file:  # evaluate --sweep FILE: its variants, as a strategies file's sweeps are
        from searchgrade.engine.run.strategies import declared_from_file

        found.update(declared_from_file(sweep_file))
    return found


def declared_sweeps(args: argparse.Namespace) -> dict[str, dict]:
    """The sweeps (``[sweep.NAME]``) of --strategies-file and of evaluate's --sweep FILE, as a run
    stores them (indexes/variants/sweep.py)."""
    from searchgrade.engine.run.strategies import sweeps_from_file

    found = sweeps_from_file(strategies_file_from_env(getattr(args, "strategies_file", None)))
    sweep_file = getattr(args, "sweep", None)
    if sweep_file:
        found.update(sweeps_from_file(sweep_file))
    return found


def declared_rerankers(args: argparse.Namespace) -> dict[str, dict]:
    """The rerankers --strategies-file (or $SEARCHGRADE_STRATEGIES_FILE) declares, as a run stores them."""
    from searchgrade.engine.run.strategies import rerankers_from_file

    return rerankers_from_file(strategies_file_from_env(getattr(args, "strategies_file", None)))


def strategy_names(args: argparse.Namespace) -> list[str] | None:
    """--strategies as typed, split at commas (None: not given)."""
    text = getattr(args, "strategies", None)
    return None if text is None else text.split(",")


def reranker_names(args: argparse.Namespace) -> list[str]:
    """--rerankers, split at commas."""
    return [n.strip() for n in (getattr(args, "rerankers", None) or "").split(",") if n.strip()]


def strategies(args: argparse.Namespace, registry: Registry | None = None) -> tuple[str, ...]:
    """--strategies as a tuple of registered strategy names (default: the registry's defaults),
    with ``X_NAME`` for every retrieval strategy X and every NAME of --rerankers."""
    from searchgrade.engine.run.strategies import choose_strategies

    registry = registry if registry is not None else registry_for_declared(declared(args), declared_rerankers(args))
    return choose_strategies(strategy_names(args), reranker_names(args), registry, data_dir=data_dir(args.data_dir))
