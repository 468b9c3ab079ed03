"""The grades a tuner may read: only its tuning queries'.

``Grades`` holds query id -> doc id -> grade (the qrels, or a run's stored grades) and the query
ids its holder may read; reading any other query's grades raises ``HeldOutRead``, so a bug that
peeks at held-out grades fails loudly instead of inflating the gain. The tuner gets
``grades.only(tuning ids)``; the held-out comparison gets the held-out part after the last trial.
``reads`` counts the grade reads per query, so the report can say how many held-out reads the
tuning made (zero, by construction).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping


class HeldOutRead(RuntimeError):  # noqa: N818 - names the bug it catches
    """A held-out query's grades were asked for during tuning (a bug: never a user error)."""


class Grades:
    """Grades of some queries, readable for ``allowed`` ones only (None: every query)."""

    def __init__(self, grades: Mapping[str, Mapping[str, int]], allowed: Iterable[str] | None = None,
                 reads: Counter | None = None) -> None:
        self._grades = grades
        self.allowed = frozenset(allowed) if allowed is not None else None
        self.reads: Counter = reads if reads is not None else Counter()

    def of(self, query_id: str) -> Mapping[str, int]:
        """doc id -> grade of one query (empty when it has none)."""
        if self.allowed is not None and query_id not in self.allowed:
            raise HeldOutRead(f"query {query_id!r} is not readable here (held out from the tuning)")
        self.reads[query_id] += 1
        return self._grades.get(query_id) or {}

    def of_unread(self, query_id: str) -> Mapping[str, int]:
        """The same as ``of`` (held-out queries refused alike), not counted as a read: which pairs
        hold a grade, for the judge of new pairs (engine/tuning/judging.py)."""
        if self.allowed is not None and query_id not in self.allowed:
            raise HeldOutRead(f"query {query_id!r} is not readable here (held out from the tuning)")
        return self._grades.get(query_id) or {}

    def add(self, query_id: str, doc_id: str, grade: int) -> None:
        """A new grade (the judge's, for a pair a trial retrieved), seen by every view of these grades."""
        if self.allowed is not None and query_id not in self.allowed:
            raise HeldOutRead(f"query {query_id!r} is not writable here (held out from the tuning)")
        self._grades.setdefault(query_id, {})[doc_id] = grade

    def only(self, query_ids: Iterable[str]) -> Grades:
        """The same grades, readable for ``query_ids`` only; reads are counted in the same counter."""
        ids = frozenset(query_ids)
        if self.allowed is not None:
            ids &= self.allowed
        return Grades(self._grades, ids, self.reads)

    def reads_of(self, query_ids: Iterable[str]) -> int:
        """Grade reads of these queries so far."""
        return sum(self.reads[q] for q in query_ids)
