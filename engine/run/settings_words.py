"""A run's settings in words, the same wherever they appear: Results' "How this run was made",
Compare's "What differs between the two runs", a suite's change notes (engine/suites/changes.py)
and the tuner's result.

A run stores its configuration as nested JSON (``RunConfig.to_json``, engine/run/config.py). Here
it is flattened once (``flat``: "index.bm25_k1"), each key named in words ("BM25 k1"), each value
written as a person reads it ("(not set)", "yes", "ANN (dense), Full-text (BM25)"), and two
configurations are diffed once (``settings_diff``). ``changed_settings`` says what a run changed
from the defaults, which is what "How this run was made" lists.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, NamedTuple

#: Settings that are not a run's own (its name; the record's ids) or that a person never sets.
IGNORED = frozenset({"name", "seed_note", "collection_fields", "llm.api_key"})
#: Longest value written; longer ones (a query template, a prompt) are cut.
SHOWN = 80

#: A setting's name in words, by its flattened key (the run record's fields included).
NAMES: dict[str, str] = {
    "collection_name": "Collection", "mode": "Grading", "label_source": "Labels", "threshold": "Relevant from grade",
    "k": "k", "depth": "Results kept per query", "grade_min": "Lowest grade", "grade_max": "Highest grade",
    "strategies": "Strategies", "max_queries": "Queries sampled", "seed": "Seed",
    "n_bootstrap": "Bootstrap resamples", "queries_from": "Queries reused from run",
    "judge_unjudged": "Judge results the qrels miss", "query_set": "Query set", "click_model": "Click model",
    "min_impressions": "Fewest impressions per judged pair", "pool_depth": "Judging pool depth",
    "index.embedding_model": "Embedding model", "index.embedding_backend": "Embedding backend",
    "index.device": "Embedding device", "index.ann_index": "ANN index", "index.batch_size": "Embedding batch size",
    "index.bm25_k1": "BM25 k1", "index.bm25_b": "BM25 b", "index.rrf_k": "RRF k", "index.fusion_depth": "Fusion depth",
    "index.fusion": "Fusion", "index.reranker_model": "Reranker model", "index.rerank_depth": "Rerank depth",
    "index.hnsw_m": "HNSW M", "index.hnsw_ef_search": "HNSW ef_search", "index.ivf_nprobe": "IVF nprobe",
    "llm.model": "LLM model", "llm.base_url": "LLM endpoint", "llm.concurrency": "LLM concurrency",
    "llm.timeout_s": "LLM timeout (s)", "llm.temperature": "LLM temperature", "llm.max_tokens": "LLM max tokens",
    "llm.output_mode": "LLM output mode", "judge.prompt": "Judge prompt", "judge.prompt_text": "Judge prompt text",
    "judge.max_doc_chars": "Judge document length (characters)", "querygen.n_docs": "Documents sampled for queries",
    "querygen.n_natural": "Natural-language queries per document", "querygen.n_keyword": "Keyword queries per document",
    "querygen.seed": "Query sample seed", "querygen.prompt": "Query-writing prompt",
    "querygen.temperature": "Query-writing temperature", "collection_fingerprint": "Collection fingerprint",
    "documents": "Documents", "judge_prompt_hash": "Judge prompt (hash)", "searchgrade_version": "searchgrade version",
    # Tuned parameters (engine/tuning/space.py), as a tuning report names them.
    "bm25_k1": "BM25 k1", "bm25_b": "BM25 b", "method": "Fusion method", "norm": "Score normalisation",
    "weight": "ANN list weight", "fusion_depth": "Fusion depth", "rrf_k": "RRF k", "rerank_depth": "Rerank depth",
    "ivf_nprobe": "IVF nprobe",
}
#: The groups of nested settings of a named thing: "declared.es.url" -> "Strategy es: url".
_GROUPS = {"declared": "Strategy", "rerankers": "Reranker", "config": ""}


class SettingChange(NamedTuple):
    """One setting that differs: its key, its name in words, and both values in words."""

    key: str
    name: str
    before: str
    after: str


def flat(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested settings as one level, keys dotted ("index.bm25_k1"), in sorted order."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key in sorted(value, key=str):
            out.update(flat(value[key], f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def setting_name(key: str) -> str:
    """A flattened key in words: "index.bm25_k1" -> "BM25 k1", "declared.es.query" -> "Strategy es:
    query"; an unknown key is written with spaces for underscores."""
    key = key.removeprefix("config.")
    if key in NAMES:
        return NAMES[key]
    group, _, rest = key.partition(".")
    if group in ("declared", "rerankers") and rest:
        name, _, field = rest.partition(".")
        return f"{_GROUPS[group]} {name}" + (f": {field.replace('_', ' ')}" if field else "")
    return key.replace("_", " ").replace(".", ": ")


def setting_value(key: str, value: Any) -> str:
    """A setting's value as a person reads it: "(not set)", "yes"/"no", numbers as written, the
    strategies by their labels, anything longer than SHOWN characters cut."""
    if value is None:
        return "(not set)"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        text = f"{value:g}"
    elif key.removeprefix("config.") == "strategies" and isinstance(value, list):
        from searchgrade.engine.run.strategies import label

        text = ", ".join(label(s) for s in value)
    elif isinstance(value, (list, tuple)):
        text = ", ".join(str(v) for v in value) or "(none)"
    elif isinstance(value, str):
        text = value
    else:
        text = json.dumps(value, sort_keys=True)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def settings_diff(before: dict[str, Any] | None, after: dict[str, Any], *,
                  ignored: Iterable[str] = IGNORED) -> list[SettingChange]:
    """Each setting that differs between two (nested) configurations, in words; the run record's
    fields first when given at the top level, then the others by key."""
    skip = set(ignored)
    a, b = flat(with_defaults(before or {})), flat(with_defaults(after))
    keys = [k for k in sorted(set(a) | set(b), key=_order)
            if not any(k.removeprefix("config.") == s or k.removeprefix("config.").startswith(s + ".")
                       for s in skip)]
    return [SettingChange(k, setting_name(k), setting_value(k, a.get(k)), setting_value(k, b.get(k)))
            for k in keys if a.get(k) != b.get(k)]


_POSITION = {key: i for i, key in enumerate(NAMES)}


def _order(key: str) -> tuple[bool, int, str]:
    """The run record's fields first, then the settings in NAMES' order, then the rest by key."""
    bare = key.removeprefix("config.")
    return (key.startswith("config.") or "." in key, _POSITION.get(bare, len(_POSITION)), key)


def with_defaults(config: dict[str, Any]) -> dict[str, Any]:
    """A stored configuration with its index settings filled in where it left them to the
    defaults (``index`` None), so that a run on the defaults and one that set them read alike; a
    suite's snapshot (its configuration under ``config``) likewise."""
    if isinstance(config.get("config"), dict):
        return {**config, "config": with_defaults(config["config"])}
    if "index" in config and config["index"] is None:
        from dataclasses import asdict

        from searchgrade.indexes.settings import IndexSettings

        return {**config, "index": asdict(IndexSettings())}
    return config


def changed_settings(config: dict[str, Any]) -> list[tuple[str, str]]:
    """The settings a run changed from the defaults (``RunConfig()``, its index settings'
    defaults): (name, value) in words, as "How this run was made" lists them. Its strategies,
    grading and collection are said elsewhere on the page."""
    from searchgrade.engine.run.config import RunConfig
    from searchgrade.indexes.settings import IndexSettings

    default = RunConfig(index=IndexSettings()).to_json()
    said_elsewhere = {"strategies", "mode", "k", "depth", "threshold", "declared", "rerankers", "llm", "querygen",
                      "judge", "queries_from", "query_set", "n_bootstrap"}
    config = with_defaults({key: value for key, value in config.items() if key not in said_elsewhere})
    default = {key: value for key, value in default.items() if key not in said_elsewhere}
    return [(c.name, c.after) for c in settings_diff(default, config) if c.key in flat(config)]
