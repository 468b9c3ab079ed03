"""What `searchgrade tune NAME` tunes: a run, or a suite's latest complete run on its frozen queries.

``resolve_source`` reads NAME as a run id (or an unambiguous prefix) and as a suite name
(engine/suites/): exactly one must match. A suite tunes its newest entry whose run is complete and
was evaluated (``previous_complete``, the run a new suite run would be compared with), restricted
to the suite's frozen queries, so the tuning and held-out parts come from the queries the suite
keeps evaluating. A name that is both, or neither, is one line.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from searchgrade.core.records import SearchGradeError


@dataclass(frozen=True)
class TuneSource:
    run_id: str
    #: The suite's name when NAME is a suite (None: a run).
    suite: str | None = None
    #: The queries tuned on and held out (None: every query of the run).
    query_ids: tuple[str, ...] | None = None

    def words(self) -> str:
        return (f"run {self.run_id}" if self.suite is None else
                f"suite {self.suite}'s latest complete run {self.run_id} ({len(self.query_ids or ())} frozen queries)")


def resolve_source(store: Any, name: str) -> TuneSource:
    """NAME as a run or a suite (see the module).

    Raises:
        SearchGradeError: NAME is both a run and a suite, neither, or a suite without a complete run.
    """
    from searchgrade.engine.suites.suite_run import previous_complete

    try:
        run_id = store.get_run(name).run_id
    except SearchGradeError:
        run_id = None
    suites = {s.name: s for s in store.list_suites()}
    suite = suites.get(name)
    if run_id is not None and suite is not None:
        raise SearchGradeError(f"{name!r} is both run {run_id} and a suite: give the run's full id (when {name!r} "
                               "is a prefix), or delete and make the suite again under another name")
    if run_id is not None:
        return TuneSource(run_id)
    if suite is None:
        raise SearchGradeError(f"{name!r} is neither a run nor a suite; list them with `searchgrade runs` and "
                               "`searchgrade suite list`")
    entry = previous_complete(store, suite.name)
    if entry is None or not entry.get("run_id"):
        raise SearchGradeError(f"suite {suite.name!r} has no complete run to tune: run it with "
                               f"`searchgrade suite run {suite.name}`")
    return TuneSource(entry["run_id"], suite.name, tuple(suite.query_ids))
