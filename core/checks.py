"""Checks both sides apply alike: a cut-off k, and ids that must be unique."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from searchgrade.core.records import SearchGradeError


def check_k(k: int) -> None:
    """Raises ValueError unless k is a positive integer (a bool is not one)."""
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise ValueError(f"k of {k!r} is not a positive integer: k must be a whole number >= 1, e.g. k=10")


def first_duplicate(ids: Iterable[str]) -> str | None:
    """The first id that occurs a second time, or None when every id is unique."""
    seen: set[str] = set()
    for item_id in ids:
        if item_id in seen:
            return item_id
        seen.add(item_id)
    return None


class UniqueIds:
    """Ids read so far and where each was first read: a repeated id stops with both places named.

    Args:
        kind: What the ids name ("document", "query"), for the message.
        place: Shortens a location for the "first at" part (e.g. "corpus.jsonl:12" -> "line 12").
    """

    def __init__(self, kind: str, place: Callable[[str], str] = str) -> None:
        self.kind = kind
        self._place = place
        self._first: dict[str, str] = {}

    def add(self, item_id: str, where: str) -> None:
        """Record ``item_id`` read at ``where``; raise SearchGradeError if it was read before."""
        first = self._first.get(item_id)
        if first is not None:
            raise SearchGradeError(
                f"{where}: duplicate {self.kind} id {item_id!r} (first at {self._place(first)}); "
                f"give every {self.kind} a unique id"
            )
        self._first[item_id] = where

    def __len__(self) -> int:
        return len(self._first)
