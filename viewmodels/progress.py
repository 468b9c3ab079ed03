"""A run's progress in words for the Evaluate page: what each stage is doing, how far it is, and
about how long it has left at its pace so far."""

from __future__ import annotations

#: What each stage of a run (engine/run/pipeline.py, its progress callbacks) is doing.
STAGE_WORDS = {
    "loading": "Loading the collection",
    "embed": "Embedding documents and queries",
    "bm25_build": "Building the full-text index",
    "ann_build": "Building the ANN index",
    "search": "Searching",
    "querygen": "Writing queries with the LLM",
    "judge": "Grading results with the LLM judge",
    "score": "Reranking candidates",
    "export": "Exporting the index",
    "train": "Training the reranker",
}


def duration_words(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``."""
    seconds = max(0, round(seconds))
    if seconds < 60:
        return f"{seconds} s"
    minutes, rest = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {rest:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def stage_words(stage: str, done: int = 0, total: int = 0, remaining_s: float | None = None) -> str:
    """``Searching: 120 of 300 queries done, about 40 s left``; a stage without a count is its words."""
    words = STAGE_WORDS.get(stage, stage.replace("_", " ").capitalize())
    if total > 1:
        words += f": {done:,} of {total:,} done"
        if done >= total:
            words += " ✓"
        elif remaining_s is not None:
            words += f", about {duration_words(max(remaining_s, 1))} left"
    return words
