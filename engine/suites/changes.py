"""What changed between two runs of a suite, from their stored configurations.

A run of a suite keeps a snapshot (``snapshot``): the run's stored configuration (strategy
parameters, declared strategies' URLs and query templates, models, the judge's settings), the
collection's fingerprint and size, the judge prompt's hash and the searchgrade version.
``config_changes`` names each difference between two snapshots as one line, in the words every
page uses for settings (engine/run/settings_words.py: "Rerank depth: 50 -> 100", "Strategy es:
query: ... -> ..."), so a trend point says what changed since the previous run.
"""

from __future__ import annotations

import hashlib
from typing import Any

from searchgrade.engine.run.settings_words import SettingChange, settings_diff

#: Config keys that differ between any two runs without meaning a change of the system.
_IGNORED = {"name", "seed_note"}


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


def config_changes(before: dict[str, Any] | None, after: dict[str, Any]) -> list[str]:
    """One line per setting that differs ("Rerank depth: 50 -> 100"); [] for the first run.

    The collection's fingerprint is said in words ("the collection changed: 12 -> 14 documents"),
    the judge prompt's text by its hash.
    """
    if before is None:
        return []
    lines = []
    for change in settings_diff(before, after, ignored=("documents", "judge.prompt_text", "collection_fields",
                                                        "llm.api_key")):
        if change.key == "collection_fingerprint":
            lines.append(f"the collection changed ({before.get('documents')} -> {after.get('documents')} "
                         f"documents, fingerprint {change.before[:8]} -> {change.after[:8]})")
            continue
        lines.append(_line(change))
    return lines


def _line(change: SettingChange) -> str:
    if change.before == "(not set)":
        return f"{change.name}: added {change.after}"
    if change.after == "(not set)":
        return f"{change.name}: removed (was {change.before})"
    return f"{change.name}: {change.before} -> {change.after}"
