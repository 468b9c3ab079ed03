"""The runs as the dropdowns list them, and why strategies were skipped, in words."""

from __future__ import annotations

from dataclasses import dataclass

from searchgrade.engine.run.settings_words import changed_settings
from searchgrade.engine.run.strategies import label, strategy_order
from searchgrade.engine.store import RunRecord, Store


@dataclass(frozen=True)
class RunChoice:
    run_id: str
    label: str
    status: str
    collection_name: str


def run_label(run: RunRecord) -> str:
    """A run as every page names it: "name · collection · date" (and the status when not complete).

    Parts the name already holds (the default name is collection and date) are not repeated.
    """
    parts = [run.name]
    if run.collection_name not in run.name:
        parts.append(run.collection_name)
    date = f"{run.created_at:%Y-%m-%d %H:%M}"
    if date not in run.name:
        parts.append(date)
    label = " · ".join(parts)
    return label if run.status == "complete" else f"{label} ({run.status})"


def skipped_messages(skipped: dict[str, str]) -> list[str]:
    """One line per distinct reason: "ANN + reranker, Hybrid + reranker were skipped: <reason with the fix>"."""
    by_reason: dict[str, list[str]] = {}
    for strategy in strategy_order(list(skipped)):
        by_reason.setdefault(skipped[strategy], []).append(label(strategy))
    return [f"{', '.join(names)} {'was' if len(names) == 1 else 'were'} skipped: {reason}"
            for reason, names in by_reason.items()]


def run_choices(store: Store, *, complete_only: bool = False,
                collection_name: str | None = None) -> list[RunChoice]:
    """Runs for a dropdown, newest first."""
    return [
        RunChoice(r.run_id, run_label(r), r.status, r.collection_name)
        for r in store.list_runs(collection_name)
        if r.status == "complete" or not complete_only
    ]


def settings_words(run: RunRecord) -> str:
    """The settings a run changed from the defaults, in the words every page uses for settings
    (engine/run/settings_words.py): "Settings changed from the defaults: BM25 k1 0.05 · BM25 b 0"."""
    changed = changed_settings(run.config)
    if not changed:
        return "Every search setting at its default."
    return "Settings changed from the defaults: " + " · ".join(f"{name} {value}" for name, value in changed)
