"""What a person asks a run to do, from any surface, and the one place that checks it.

`searchgrade evaluate`'s options, the Evaluate page's form and an agent's ``start_evaluation``
each make a ``RunRequest``: the options as given, None where not given. ``run_config`` checks it
and makes the run's ``RunConfig`` (validated, its ``env:`` secrets set), so every surface accepts
and refuses the same requests with the same words. The words name each option as the CLI does
(``--k``, ``--max-queries``): the one name the docs give it, whichever surface it came from.

A new option is one field here, its checks here (or in ``RunConfig.validate``), and each surface's
flag or widget for it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.run.config import RunConfig
from searchgrade.engine.run.strategies import choose_strategies, registry_for_declared
from searchgrade.indexes.settings import IndexSettings

if TYPE_CHECKING:
    from searchgrade.engine.llm.judge import JudgeSettings
    from searchgrade.engine.llm.querygen import QueryGenSettings
    from searchgrade.engine.llm.settings import LLMSettings

#: The default click model: the one whose labels ranked systems closest to the qrels in the click
#: study (bench/RESULTS.md).
DEFAULT_CLICK_MODEL = "pbm"

#: Options that only mean something with the LLM (field -> its name in messages), in the order
#: a message names the first one given.
LLM_ONLY = {"model": "--model", "base_url": "--base-url", "concurrency": "--concurrency",
            "timeout_s": "--timeout", "docs": "--docs", "queries_per_doc": "--queries-per-doc",
            "keyword_per_doc": "--keyword-per-doc", "min_doc_words": "--min-doc-words",
            "queries_from": "--queries-from", "judge": "--judge-prompt"}
#: A panel's options (field -> its name in messages): given when not empty.
PANEL_OPTIONS = {"judge_models": "--judge-models", "judge_prices": "--judge-price",
                 "judge_aggregate": "--judge-aggregate"}
#: Of those, the ones about generating queries (not when the queries are given).
QUERYGEN_ONLY = ("docs", "queries_per_doc", "keyword_per_doc", "min_doc_words", "queries_from")


@dataclass(frozen=True)
class RunRequest:
    """A run as a person asked for it: what to grade with, what to search, and the options given.

    None (or False) is "not given": ``run_config`` fills the defaults, as the CLI documents them.

    Attributes:
        qrels, llm, clicks: how to grade: the collection's human judgments, an LLM judge, a click
            model over a query log's clicks (``llm`` with either: the judge's agreement with them).
        strategies: the strategies asked for, by name (None: the registry's defaults).
        rerankers: declared rerankers that also rerank every retrieval strategy asked for (X_NAME).
        declared, declared_rerankers: the declarations the surface offers (a strategies file's,
            those saved in the app), as a run stores them.
        sweeps: the sweeps asked for (indexes/variants/sweep.py, as a run stores them): their
            variants (in ``declared``) and reference strategies join ``strategies``.
        index: the index settings (None: the defaults).
        model, base_url: the LLM endpoint (None: the environment's); a ``base_url`` typed empty
            is the hosted OpenAI API.
        endpoint_declared_in: where ``base_url`` was typed: "" for the operator's (the command
            line, the environment), "app" / "exposed app" for a page's, as server/outbound.py's
            ``check_llm_endpoint`` marks it (its connections then go through the outbound policy).
        judge: the judge prompt the person gave, read and checked (None: the packaged one).
        pool_depth: the judging pool as typed, ``D[,STRATEGY=D]``.
    """

    qrels: bool = False
    llm: bool = False
    clicks: bool = False
    name: str | None = None
    k: int = 10
    depth: int | None = None
    threshold: int | None = None
    max_queries: int | None = None
    seed: int = 0
    strategies: tuple[str, ...] | None = None
    rerankers: tuple[str, ...] = ()
    declared: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    declared_rerankers: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    sweeps: Mapping[str, dict[str, Any]] = field(default_factory=dict)
    index: IndexSettings | None = None
    model: str | None = None
    base_url: str | None = None
    endpoint_declared_in: str = ""
    concurrency: int | None = None
    timeout_s: float | None = None
    docs: int | None = None
    queries_per_doc: int | None = None
    keyword_per_doc: int | None = None
    min_doc_words: int | None = None
    queries_from: str | None = None
    judge: JudgeSettings | None = None
    judge_unjudged: bool = False
    #: A panel of judges as named (``NAME`` or ``NAME@URL``: engine/judges/spec.py), their prices
    #: as typed (``MODEL=USD_PER_MTOK``) and how their grades become one ("median", "mean").
    judge_models: tuple[str, ...] = ()
    judge_prices: tuple[str, ...] = ()
    judge_aggregate: str | None = None
    #: Judge name -> where its own endpoint (NAME@URL) was typed, as ``endpoint_declared_in``.
    judges_declared_in: Mapping[str, str] = field(default_factory=dict)
    query_set: str | None = None
    click_model: str | None = None
    min_impressions: int | None = None
    pool_depth: str | None = None
    #: The first strategy failure fails the run (``--strict``), instead of failing that strategy alone.
    strict: bool = False


def run_config(request: RunRequest) -> RunConfig:
    """The run ``request`` asks for, checked: validated, and every ``env:`` secret it reads set.

    Raises:
        SearchGradeError: one line naming the option and the fix; nothing has run.
    """
    _check_grading(request)
    judges = _judges(request)
    # A panel needs no --model: its first judge is the run's model.
    model = request.model if request.model or not judges else judges[0].model
    llm = (llm_settings(model, request.base_url, request.concurrency, request.timeout_s,
                        request.endpoint_declared_in) if request.llm else None)
    registry = registry_for_declared(request.declared, request.declared_rerankers)
    mode = "clicks" if request.clicks else "llm" if request.llm and not request.qrels else "qrels"
    chosen = choose_strategies(request.strategies, request.rerankers, registry)
    # A sweep's reference and its variants join the strategies asked for.
    chosen += tuple(dict.fromkeys(n for sweep in request.sweeps.values()
                                  for n in [sweep["reference"], *sweep["variants"]] if n not in chosen))
    config = RunConfig(
        name=request.name, mode=mode, k=request.k, depth=request.depth, threshold=request.threshold,
        strategies=chosen, declared=dict(request.declared), sweeps=dict(request.sweeps),
        rerankers=dict(request.declared_rerankers), max_queries=request.max_queries, seed=request.seed,
        index=request.index or IndexSettings(), llm=llm,
        querygen=_querygen_settings(request) if mode == "llm" and request.query_set is None else None,
        judge=request.judge if request.llm else None, queries_from=request.queries_from,
        judge_unjudged=request.judge_unjudged, **_traffic(request), pool_depth=_pool_depth(request.pool_depth),
        judges=tuple(j.name for j in judges), judge_prices=_judge_prices(request, judges),
        judge_aggregate=request.judge_aggregate or "median",
        judges_declared_in={name: where for name, where in request.judges_declared_in.items() if where},
        strict=request.strict,
    )
    config.validate()
    config.check_environment()
    return config


def _check_grading(request: RunRequest) -> None:
    """The options fit the way of grading asked for."""
    if not request.qrels and not request.llm and not request.clicks:
        raise SearchGradeError("say how to grade: --qrels (human judgments), --llm (an LLM judge), "
                               "--qrels --llm (human grades first, judge-vs-human agreement), or --clicks "
                               "with --query-set (a click model over a query log's clicks)")
    if not request.clicks and (request.click_model is not None or request.min_impressions is not None):
        raise SearchGradeError(f"{'--click-model' if request.click_model else '--min-impressions'} goes with --clicks")
    if request.clicks and request.qrels:
        raise SearchGradeError("--clicks and --qrels are two label sources: keep one (people's ratings apply to "
                               "either)")
    if request.llm and (request.judge_prices or request.judge_aggregate) and not request.judge_models:
        raise SearchGradeError(f"{'--judge-price' if request.judge_prices else '--judge-aggregate'} goes with "
                               "--judge-models (it is about the judges of a panel)")
    if not request.llm:
        given = [flag for name, flag in LLM_ONLY.items() if getattr(request, name) is not None]
        given += [flag for name, flag in PANEL_OPTIONS.items() if getattr(request, name)]
        if given or request.judge_unjudged:
            raise SearchGradeError(f"{(given or ['--judge-unjudged'])[0]} goes with --llm")
    elif request.qrels or request.clicks or request.query_set:
        given = [LLM_ONLY[name] for name in QUERYGEN_ONLY if getattr(request, name) is not None]
        if given:
            raise SearchGradeError(f"{given[0]} is about generated queries: with --qrels, --clicks or "
                                   "--query-set the queries are given; drop it")
    elif request.max_queries is not None:
        raise SearchGradeError("--max-queries goes with --qrels; with --llm set the number of "
                               "queries with --docs and --queries-per-doc")


def _endpoint(base_url: str | None) -> str | None:
    """The LLM's base URL: the one given, else $OPENAI_BASE_URL; typed empty, the hosted API."""
    from searchgrade.engine.llm.env import ENV_BASE_URL, require_endpoint

    if base_url is not None and not base_url.strip():
        # As if $OPENAI_BASE_URL were unset: the hosted API, which needs $OPENAI_API_KEY.
        return require_endpoint(None, {k: v for k, v in os.environ.items() if k != ENV_BASE_URL})
    return require_endpoint(base_url.strip() if base_url else None)


def llm_settings(model: str | None, base_url: str | None, concurrency: int | None = None,
                 timeout_s: float | None = None, declared_in: str = "") -> LLMSettings:
    """The LLM's settings from its options as given (None: the environment's model and endpoint,
    the defaults' concurrency and timeout; ``declared_in``: where ``base_url`` was typed, "" for
    the operator's); also what `searchgrade judge-pool` judges with.

    Raises:
        SearchGradeError: no model, or no endpoint, given or in the environment.
    """
    from searchgrade.engine.llm.env import require_model
    from searchgrade.engine.llm.settings import LLMSettings

    fields: dict[str, Any] = {"model": require_model((model or "").strip() or None), "base_url": _endpoint(base_url),
                              "declared_in": declared_in if (base_url or "").strip() else ""}
    if concurrency is not None:
        fields["concurrency"] = concurrency
    if timeout_s is not None:
        fields["timeout_s"] = timeout_s
    return LLMSettings(**fields)


def _querygen_settings(request: RunRequest) -> QueryGenSettings:
    from searchgrade.engine.llm.querygen import QueryGenSettings

    fields: dict[str, Any] = {"seed": request.seed}
    for name, given in (("n_docs", request.docs), ("n_natural", request.queries_per_doc),
                        ("n_keyword", request.keyword_per_doc)):
        if given is not None:
            fields[name] = given
    if request.min_doc_words is not None:
        if request.min_doc_words < 1:
            raise SearchGradeError(f"--min-doc-words of {request.min_doc_words} must be at least 1")
        # One explicit minimum: the character minimum of the default no longer applies.
        fields.update(min_words=request.min_doc_words, min_chars=0)
    return replace(QueryGenSettings(), **fields)


def _traffic(request: RunRequest) -> dict[str, Any]:
    """The query set, and the click model grading by clicks uses."""
    fields: dict[str, Any] = {"query_set": request.query_set}
    if request.clicks:
        fields["click_model"] = request.click_model or DEFAULT_CLICK_MODEL
        if request.min_impressions is not None:
            fields["min_impressions"] = request.min_impressions
    return fields


def _judges(request: RunRequest) -> tuple[Any, ...]:
    """The panel's judges (engine.judges.spec.JudgeSpec), checked; () without --judge-models."""
    if not request.judge_models:
        return ()
    from searchgrade.engine.judges.spec import parse_judge_models

    return parse_judge_models(list(request.judge_models))


def _judge_prices(request: RunRequest, judges: tuple[Any, ...]) -> dict[str, float]:
    from searchgrade.engine.judges.spec import parse_prices

    return parse_prices(list(request.judge_prices), judges) if request.judge_prices else {}


def _pool_depth(text: str | None) -> dict[str, Any] | None:
    """--pool-depth as the config stores it (engine/run/pool.py), None when not given."""
    if text is None:
        return None
    from searchgrade.engine.run.pool import parse_pool_depth

    return parse_pool_depth(text).to_json()

