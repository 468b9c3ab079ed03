"""What changed between two runs of a suite, from their stored configurations.

A run of a suite keeps a snapshot (``snapshot``): the run's stored configuration (strategy
parameters, declared strategies' URLs and query templates, models, the judge's settings), the
collection's fingerprint and size, the judge prompt's hash and the searchgrade version.
``config_changes`` names each difference between two snapshots as one line
("declared.es.query: ... -> ..."), so a trend point says what changed since the previous run.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

#: Config keys that differ between any two runs without meaning a change of the system.
_IGNORED = {"name", "seed_note"}
#: Longest value shown in a change line; longer ones are cut (a query template, a prompt).
_SHOWN = 80


def searchgrade_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("searchgrade")
    except PackageNotFoundError:
        return "unknown"


def snapshot(config: dict[str, Any], *, fingerprint: str, documents: int) -> dict[str, Any]:
    """What a run of a suite ran with (module docstring)."""
    judge = config.get("judge") or {}
    prompt = judge.get("prompt_text") or judge.get("prompt") or ""
    return {
        "config": {k: v for k, v in config.items() if k not in _IGNORED},
        "collection_fingerprint": fingerprint,
        "documents": documents,
        "judge_prompt_hash": hashlib.sha256(str(prompt).encode()).hexdigest()[:12] if prompt else None,
        "searchgrade_version": searchgrade_version(),
    }


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(_flat(inner, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def _shown(value: Any) -> str:
    text = json.dumps(value, sort_keys=True) if not isinstance(value, str) else value
    return text if len(text) <= _SHOWN else text[: _SHOWN - 1] + "…"


def config_changes(before: dict[str, Any] | None, after: dict[str, Any]) -> list[str]:
    """One line per setting that differs ("config.index.rerank_depth: 50 -> 100"); [] for the first run.

    The collection's fingerprint is said in words ("the collection changed: 12 -> 14 documents"),
    the judge prompt's text by its hash.
    """
    if before is None:
        return []
    a, b = _flat(before), _flat(after)
    lines = []
    for key in sorted(set(a) | set(b)):
        if a.get(key) == b.get(key) or key == "documents" or key.endswith("judge.prompt_text"):
            continue
        if key == "collection_fingerprint":
            lines.append(f"the collection changed ({before.get('documents')} -> {after.get('documents')} "
                         f"documents, fingerprint {str(a.get(key))[:8]} -> {str(b.get(key))[:8]})")
            continue
        name = key.removeprefix("config.")
        if key not in a:
            lines.append(f"{name}: added {_shown(b[key])}")
        elif key not in b:
            lines.append(f"{name}: removed (was {_shown(a[key])})")
        else:
            lines.append(f"{name}: {_shown(a[key])} -> {_shown(b[key])}")
    return lines
