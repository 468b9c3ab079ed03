"""``searchgrade judges RUN --repeat N``: does each judge say the same thing twice?

A seeded sample of the run's pairs (``SAMPLE`` of the pairs in its top k that every judge graded)
is asked again N more times per judge: the cache bypassed (neither read nor written), and no
temperature sent, so the endpoint samples as it is set up to (a judge at temperature 0 on a
deterministic server says the same thing every time; one deployed with sampling on may not). The
calls are counted and estimated before they are made (``RepeatPlan.lines``), and counted in the
run's accounting under ``judge-repeat:NAME``. Each grade is stored as it comes
(``judge_repeats``): an endpoint that fails part-way keeps what was judged, a failed call is not
stored, and the next ``--repeat`` asks only for what is missing. The figures are
engine/statistics/retest.py's, read by engine/judges/report.py.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from searchgrade.core.records import Document, SearchGradeError
from searchgrade.engine.judges.panel import judge_settings, judge_stage
from searchgrade.engine.judges.people import Pair, run_grades
from searchgrade.engine.judges.spec import PANEL, JudgeSpec, parse_judge
from searchgrade.engine.llm.accounting import Usage
from searchgrade.engine.llm.judge import STAGE

if TYPE_CHECKING:
    from searchgrade.engine.llm.client import LLMClient
    from searchgrade.engine.llm.judge import JudgeSettings
    from searchgrade.engine.llm.settings import LLMSettings
    from searchgrade.engine.store import Store

#: Pairs asked again per judge.
SAMPLE = 200
#: The most repeats one command asks for.
MAX_REPEAT = 20
#: Stored every this many grades.
FLUSH_EVERY = 16


def repeat_stage(name: str) -> str:
    return f"judge-repeat:{name}"


@dataclass
class RepeatPlan:
    """What ``--repeat`` will ask, before it asks."""

    run_id: str
    repeat: int
    judges: list[JudgeSpec]
    #: The seeded sample, the same for every judge (a panel's repeats aggregate its members').
    pairs: list[Pair]
    #: judge -> the (pair, repetition) not stored yet.
    missing: dict[str, list[tuple[Pair, int]]]
    #: judge -> tokens per call measured on this run (None: none measured).
    tokens_per_call: dict[str, float | None] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        return sum(len(m) for m in self.missing.values())

    def lines(self) -> list[str]:
        """The estimate, in words, shown before any call."""
        judges = len(self.judges)
        out = [f"--repeat {self.repeat}: {len(self.pairs)} pairs of run {self.run_id} asked {self.repeat} more "
               f"time{'s' if self.repeat > 1 else ''} by each of {judges} judge{'s' if judges > 1 else ''} "
               "(cache bypassed, the endpoint's own sampling)"]
        for spec in self.judges:
            missing = len(self.missing[spec.name])
            per_call = self.tokens_per_call.get(spec.name)
            tokens = f", ~{missing * per_call:,.0f} tokens (~{per_call:,.0f} per call measured on this run)" \
                if per_call else ", tokens unknown (no call of this judge was measured on this run)"
            stored = len(self.pairs) * self.repeat - missing
            out.append(f"  {spec.name}: {missing:,} calls{tokens}" + (f"; {stored:,} already stored" if stored else ""))
        out.append(f"total: {self.calls:,} calls")
        return out


def run_judges(store: Store, run_id: str) -> tuple[LLMSettings, JudgeSettings | None, list[JudgeSpec]]:
    """The LLM settings, the judge prompt and the judges a stored run graded with (a judge's own
    endpoint marked where it was typed: ``judge_llm``).

    Raises:
        SearchGradeError: the run had no LLM judge.
    """
    from searchgrade.engine.run.config import RunConfig

    run = store.get_run(run_id)
    config = RunConfig.from_json(run.config)
    if config.llm is None:
        raise SearchGradeError(f"run {run.run_id} had no LLM judge: nothing to ask again")
    specs = list(config.judge_specs()) or [parse_judge(config.llm.model)]
    return config.llm, config.judge, specs


def judges_declared_in(store: Store, run_id: str) -> dict[str, str]:
    """Judge name -> where its own endpoint was typed, as the run stored it."""
    return dict(store.get_run(run_id).config.get("judges_declared_in") or {})


def plan_repeats(store: Store, run_id: str, repeat: int, *, sample: int = SAMPLE, seed: int = 0) -> RepeatPlan:
    """The seeded sample and the calls still missing for ``repeat`` repeats per judge.

    Raises:
        SearchGradeError: repeat outside 1..MAX_REPEAT, a run without an LLM judge, or no pair
            that every judge graded.
    """
    if not 1 <= repeat <= MAX_REPEAT:
        raise SearchGradeError(f"--repeat of {repeat} must be between 1 and {MAX_REPEAT}")
    grades = run_grades(store, run_id)
    _, _, specs = run_judges(store, grades.run.run_id)
    names = [s.name for s in specs]
    if any(n not in grades.judges for n in names):
        names = [n for n in grades.judges if n != PANEL]
        specs = [parse_judge(n) for n in names]
    top = {(q, d) for by_query in grades.top(grades.run.k).values() for q, docs in by_query.items() for d in docs}
    graded = sorted(p for p in top if all(grades.judges.get(n, {}).get(p) is not None for n in names))
    if not graded:
        raise SearchGradeError(f"run {grades.run.run_id} has no pair in its top {grades.run.k} that every judge graded: "
                               "nothing to ask again")
    pairs = random.Random(seed).sample(graded, min(sample, len(graded)))
    stored = {(r["judge"], r["query_id"], r["doc_id"], r["repetition"]) for r in store.judge_repeats(grades.run.run_id)
              if r["grade"] is not None}
    missing = {n: [(p, r) for p in pairs for r in range(1, repeat + 1) if (n, *p, r) not in stored] for n in names}
    usage = store.llm_usage(grades.run.run_id)
    per_call = {}
    for n in names:
        counters = usage.get(judge_stage(n)) or usage.get(STAGE) or {}
        calls = counters.get("ok", 0) + counters.get("failures", 0)
        tokens = counters.get("prompt_tokens", 0) + counters.get("completion_tokens", 0)
        per_call[n] = tokens / calls if calls and tokens else None
    return RepeatPlan(grades.run.run_id, repeat, specs, pairs, missing, per_call)


@dataclass
class RepeatOutcome:
    asked: int
    stored: int
    failed: int
    #: judge -> a few failure reasons.
    errors: dict[str, list[str]] = field(default_factory=dict)


def run_repeats(store: Store, plan: RepeatPlan, *, progress: Callable[[str, int, int], None] | None = None,
                client_for: Callable[[JudgeSpec, Usage], LLMClient] | None = None) -> RepeatOutcome:
    """Ask the plan's missing calls, storing each grade as it comes (see the module).

    Args:
        client_for: Builds a judge's client (tests pass one); None: the run's settings with the
            judge's model and endpoint, no temperature.

    Raises:
        SearchGradeError: an endpoint refuses a judge for good (401, 403, 404); what was asked
            before is stored.
    """
    from searchgrade.engine.llm.judge import JudgeSettings, judge_messages, judge_prompt
    from searchgrade.engine.llm.schemas import JudgeReply, judge_schema

    llm, settings, _ = run_judges(store, plan.run_id)
    settings = settings or JudgeSettings()
    prompt = judge_prompt(settings)
    texts = {q["query_id"]: q["text"] for q in store.queries(plan.run_id)}
    docs = store.documents(plan.run_id, sorted({d for _, d in plan.pairs}))
    usage = Usage()
    outcome = RepeatOutcome(0, 0, 0)

    declared_in = judges_declared_in(store, plan.run_id)

    def build(spec: JudgeSpec, usage: Usage) -> LLMClient:
        from searchgrade.engine.llm.client import LLMClient

        return LLMClient(judge_settings(llm, spec, declared_in, temperature=None), usage=usage)

    schema = judge_schema()
    buffer: list[tuple[str, str, str, int, int | None]] = []
    try:
        for spec in plan.judges:
            todo = [(p, r) for p, r in plan.missing[spec.name] if p[1] in docs]
            client = (client_for or build)(spec, usage)
            stage = repeat_stage(spec.name)

            def ask(item: tuple[Pair, int], client: LLMClient = client, stage: str = stage) -> Any:
                (q, d), _ = item
                content = Document(d, docs[d]["title"], docs[d]["text"]).content
                return client.complete(stage, judge_messages(prompt, texts[q], content, settings), JudgeReply, schema,
                                       schema_name="judgment")

            for done, (index, reply) in enumerate(client.map(ask, todo), 1):
                (q, d), rep = todo[index]
                outcome.asked += 1
                if reply.value is None:
                    outcome.failed += 1
                    outcome.errors.setdefault(spec.name, []).append(reply.error or "unknown error")
                else:
                    buffer.append((spec.name, q, d, rep, reply.value.grade))
                if len(buffer) >= FLUSH_EVERY:
                    outcome.stored += _flush(store, plan.run_id, buffer)
                if progress is not None:
                    progress(stage, done, len(todo))
            outcome.stored += _flush(store, plan.run_id, buffer)
    finally:
        outcome.stored += _flush(store, plan.run_id, buffer)  # what came before a refusal is kept
        for stage, counters in usage.snapshot().items():
            deltas = {k: v for k, v in counters.items() if v}
            if deltas:
                store.add_llm_usage(plan.run_id, stage, deltas)
    return outcome


def _flush(store: Store, run_id: str, buffer: list[tuple[str, str, str, int, int | None]]) -> int:
    n = len(buffer)
    store.add_judge_repeats(run_id, buffer)
    buffer.clear()
    return n
