"""A panel: every pair judged by each of several judges, and the panel's grade of it.

Each judge is a model on its own client (the run's endpoint, or its own ``NAME@URL``): its cache key
is its own (engine/llm/judge.py keys grades by the model and the endpoint's fingerprint of it), so
an unchanged run asks no judge again, and its calls are counted under the stage ``judge:NAME`` in
the run's accounting. The judges go one after the other, each with the run's concurrency. The
panel's grade is engine/judges/spec.py's aggregate of the judges that graded the pair; a pair none
of them graded is a failure, never a grade.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from searchgrade.core.records import Document, Grade, Query
from searchgrade.engine.judges.spec import PANEL, JudgeSpec, panel_grade
from searchgrade.engine.llm.accounting import Usage
from searchgrade.engine.llm.cache import LLMCache
from searchgrade.engine.llm.client import LLMClient
from searchgrade.engine.llm.judge import FAILURE_PREFIX, STAGE, JudgeResult, JudgeSettings, judge_pairs
from searchgrade.engine.llm.settings import LLMSettings
from searchgrade.engine.store.judges import JudgeGradeRow


def judge_stage(name: str) -> str:
    """The accounting stage of a panel's judge ("judge:NAME")."""
    return f"{STAGE}:{name}"


@dataclass
class PanelResult:
    """What a panel gave."""

    #: The panel's grade of each unique pair, in input order (source "llm", model "panel").
    grades: list[Grade]
    #: Every judge's grade of every pair, and the panel's: rows of the store's judge_grades.
    rows: list[JudgeGradeRow]
    #: Each judge's own result, by name.
    results: dict[str, JudgeResult] = field(default_factory=dict)

    def stats(self, judges: Sequence[JudgeSpec], aggregate: str) -> dict[str, Any]:
        """What the run's stats keep about each judge (``stats["judges"]``)."""
        members = {}
        for spec in judges:
            result = self.results[spec.name]
            members[spec.name] = {"model": spec.model, "base_url": spec.base_url, "pairs": len(result.grades),
                                  "judged": result.judged, "cache_hits": result.cache_hits,
                                  "failures": result.failures, "prompt_version": result.prompt_version}
        return {"aggregate": aggregate, "members": members,
                "failures": sum(g.grade is None for g in self.grades)}


def judge_settings(llm: LLMSettings, spec: JudgeSpec, declared_in: Mapping[str, str] | None = None,
                   **changes: Any) -> LLMSettings:
    """A judge's LLM settings: the run's with the judge's model and, where it names one, its own
    endpoint, marked where that was typed (``declared_in``: judge name -> "app" / "exposed app";
    every connection to a typed endpoint goes through the outbound policy); ``changes`` on top."""
    if spec.base_url:
        return replace(llm, model=spec.model, base_url=spec.base_url,
                       declared_in=(declared_in or {}).get(spec.name, ""), **changes)
    return replace(llm, model=spec.model, **changes)


def judge_clients(llm: LLMSettings, judges: Sequence[JudgeSpec], usage: Usage,
                  declared_in: Mapping[str, str] | None = None) -> list[tuple[JudgeSpec, LLMClient]]:
    """A client per judge (``judge_settings``), all counting into ``usage``."""
    return [(spec, LLMClient(judge_settings(llm, spec, declared_in), usage=usage)) for spec in judges]


def judge_panel(
    pairs: Sequence[tuple[Query, Document]],
    judges: Sequence[tuple[JudgeSpec, LLMClient]],
    cache: LLMCache,
    settings: JudgeSettings | None = None,
    *,
    aggregate: str = "median",
    progress: Callable[[str, int, int], None] | None = None,
    on_flush: Callable[[], None] | None = None,
) -> PanelResult:
    """Every pair judged by each judge (each unique pair once per judge, cached), and the panel's grade.

    Raises:
        SearchGradeError: a judge's endpoint refuses it for good (401, 403, 404): what the judges
            before it graded is in the cache, so a resume asks only for the rest.
    """
    results = {spec.name: judge_pairs(pairs, client, cache, settings, progress=progress, on_flush=on_flush,
                                      stage=judge_stage(spec.name))
               for spec, client in judges}
    rows: list[JudgeGradeRow] = []
    by_pair: dict[tuple[str, str], list[tuple[str, Grade]]] = {}
    for name, result in results.items():
        for g in result.grades:
            rows.append((name, g.query_id, g.doc_id, g.grade, g.reason, g.prompt_version))
            by_pair.setdefault((g.query_id, g.doc_id), []).append((name, g))
    version = next(iter(results.values())).prompt_version if results else None
    grades = []
    for (query_id, doc_id), graded in by_pair.items():
        grade = panel_grade([g.grade for _, g in graded], aggregate)
        said = ", ".join(f"{name} {'failed' if g.grade is None else g.grade}" for name, g in graded)
        reason = f"panel {aggregate} of {said}" if grade is not None else f"{FAILURE_PREFIX}no judge of the panel graded it ({said})"
        grades.append(Grade(query_id, doc_id, grade, "llm", PANEL, version, reason))
        rows.append((PANEL, query_id, doc_id, grade, reason, version))
    return PanelResult(grades, rows, results)
