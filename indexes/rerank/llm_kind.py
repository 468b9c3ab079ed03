"""``kind = "llm"``: the LLM reranker's keys and checks (engine/llm/reranker.py scores).

The LLM reranker asks the run's OpenAI-compatible endpoint (``--base-url``, its key policy,
its accounting and cache); indexes/ never imports engine/, so the run gives the build a factory for
it (``BuildContext.services["llm_reranker"]``): a run without the LLM settings cannot build it, and
says so in one line.
"""

from __future__ import annotations

from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.indexes.declared.declaration import Key
from searchgrade.indexes.declared.rerankers import MissingService, RerankerKind, RerankerSpec, register_kind

MODES = ("pointwise", "listwise")

KEYS: dict[str, Key] = {
    "mode": Key((str,), "pointwise", example='"pointwise" (the judge-style prompt scores each document)'),
    "model": Key((str,), None, example='"gpt-4o-mini" (default: the run\'s --model)'),
    "depth": Key((int,), 20, example="20 (candidates rescored per query: one LLM call each)"),
    "concurrency": Key((int,), None, example="4 (default: the run's --concurrency)"),
    "window": Key((int,), 10, example="10 (listwise: passages per prompt)"),
    "step": Key((int,), 5, example="5 (listwise: how far the window slides up)"),
}


def check(spec: RerankerSpec) -> RerankerSpec:
    o, where = spec.options, spec.where
    if o["mode"] not in MODES:
        raise SearchGradeError(f"{where}: mode {o['mode']!r} is not supported: use {', '.join(MODES)}")
    if not 1 <= o["step"] < o["window"]:
        raise SearchGradeError(f"{where}: step ({o['step']}) must be at least 1 and below window ({o['window']}), "
                               "so the windows overlap and the best candidates move up")
    for key in ("depth", "concurrency"):
        if o.get(key) is not None and o[key] < 1:
            raise SearchGradeError(f"{where}: {key} must be >= 1, got {o[key]!r}")
    return spec


def build(spec: RerankerSpec, ctx: Any) -> Any:
    factory = (getattr(ctx, "services", None) or {}).get("llm_reranker")
    if factory is None:
        raise MissingService(f"{spec.where}: the LLM reranker needs the run's LLM: run with --llm (or "
                           "--qrels --llm) with --model and --base-url")
    return factory(spec)


register_kind(RerankerKind("llm", KEYS, check, build))
