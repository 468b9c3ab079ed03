"""The LLM judge: a 0-3 grade and a short reason for (query, document) pairs.

Each unique (query text, document content) pair is judged once, however many strategies
returned it and whichever query ids share the text. Valid grades are cached across runs under
sha256(query text, document content, judge identity (the model name and the endpoint's fingerprint
of it, engine/llm/client.py), prompt version, document truncation), so an
unchanged evaluation makes no judge call, and a run stopped half-way resumes with only the
missing pairs. A reply that fails validation after its retries becomes a failure record
(grade None, reason "judge failure: ..."), never a grade, and is not cached.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from searchgrade.core.records import Document, Grade, Query
from searchgrade.engine.llm.cache import CacheEntry, CacheWriter, LLMCache, cache_key
from searchgrade.engine.llm.client import LLMClient
from searchgrade.engine.llm.prompts import Prompt, load_prompt, neutralise_tags, parse_prompt
from searchgrade.engine.llm.schemas import JudgeReply, judge_schema

STAGE = "judge"
CACHE_KIND = "judge"
FAILURE_PREFIX = "judge failure: "


@dataclass(frozen=True)
class JudgeSettings:
    #: A packaged prompt's name (engine/llm/prompts/<name>.txt), or a user prompt file's stem.
    prompt: str = "judge_v1"
    #: The text of a user's prompt file (--judge-prompt), kept with the run so a resume uses the
    #: same prompt; None: the packaged prompt ``prompt``.
    prompt_text: str | None = None
    #: Longer documents are cut to this many characters in the prompt.
    max_doc_chars: int = 6000
    #: Cache writes: every this many grades, or this many seconds.
    flush_every: int = 16
    flush_interval_s: float = 2.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class JudgeResult:
    #: One per unique (query_id, doc_id) in input order; failures have grade None.
    grades: list[Grade]
    model: str
    prompt_version: str
    #: Unique (query text, document) pairs answered from the cache.
    cache_hits: int = 0
    #: Unique pairs sent to the LLM.
    judged: int = 0
    #: Unique pairs whose judging failed.
    failures: int = 0
    failure_reasons: dict[str, int] = field(default_factory=dict)


def judge_prompt(settings: JudgeSettings) -> Prompt:
    """The packaged prompt, or the user's (its version hashes its text, so it keys the cache)."""
    if settings.prompt_text is None:
        return load_prompt(settings.prompt)
    return parse_prompt(settings.prompt, settings.prompt_text, source=f"the judge prompt {settings.prompt}")


def judge_key(query_text: str, content: str, identity: str, prompt_version: str, max_doc_chars: int) -> str:
    """The cache key of one grade; ``identity`` is the client's ``judge_identity``."""
    return cache_key(CACHE_KIND, query_text, content, identity, prompt_version, max_doc_chars)


def judge_messages(prompt: Prompt, query_text: str, content: str, settings: JudgeSettings) -> list[dict[str, str]]:
    """The chat messages asking for one pair's grade: the pair as data, tags defanged, the
    document cut to ``settings.max_doc_chars``."""
    return prompt.messages(query=neutralise_tags(query_text), document=neutralise_tags(content[: settings.max_doc_chars]))


def judge_pairs(
    pairs: Sequence[tuple[Query, Document]],
    client: LLMClient,
    cache: LLMCache,
    settings: JudgeSettings | None = None,
    *,
    progress: Callable[[str, int, int], None] | None = None,
    on_flush: Callable[[], None] | None = None,
    stage: str = STAGE,
) -> JudgeResult:
    """Grade (query, document) pairs, each unique one once.

    Args:
        pairs: Pairs to grade; repeats (same query id and doc id, or same text and content) are
            judged once.
        client: The LLM client; its usage is counted under stage "judge".
        cache: Where grades are cached across runs.
        settings: Prompt and batching (defaults if None).
        progress: Called as progress("judge", done, total) over unique pairs.
        on_flush: Called after each batch of grades is written to the cache.
        stage: The accounting stage of the calls and the progress (a panel's judge: "judge:NAME").
    """

    settings = settings or JudgeSettings()
    prompt = judge_prompt(settings)
    model = client.model
    report = progress or (lambda stage, done, total: None)

    # (query_id, doc_id) -> key, and key -> the pair to send; both in first-seen order.
    key_of: dict[tuple[str, str], str] = {}
    to_judge: dict[str, tuple[str, str]] = {}
    for query, doc in pairs:
        ids = (query.query_id, doc.doc_id)
        if ids in key_of:
            continue
        key = judge_key(query.text, doc.content, client.judge_identity, prompt.version,
                        settings.max_doc_chars)
        key_of[ids] = key
        to_judge.setdefault(key, (query.text, doc.content))

    verdicts: dict[str, dict[str, Any]] = cache.get_many(CACHE_KIND, list(to_judge))
    result = JudgeResult([], model, prompt.version, cache_hits=len(verdicts))
    client.usage.add(stage, cache_hits=len(verdicts))
    todo = [key for key in to_judge if key not in verdicts]
    result.judged = len(todo)
    schema = judge_schema()

    def judge_one(key: str):
        query_text, content = to_judge[key]
        return client.complete(stage, judge_messages(prompt, query_text, content, settings), JudgeReply, schema,
                               schema_name="judgment")

    errors: dict[str, str] = {}
    writer = CacheWriter(cache, CACHE_KIND, every=settings.flush_every,
                         interval_s=settings.flush_interval_s, on_flush=on_flush)
    done = len(to_judge) - len(todo)
    report(stage, done, len(to_judge))
    try:
        for index, reply in client.map(judge_one, todo):
            key = todo[index]
            if reply.value is None:
                errors[key] = reply.error or "unknown error"
            else:
                verdict = {"grade": reply.value.grade, "reason": reply.value.reason}
                verdicts[key] = verdict
                writer.add(CacheEntry(key, model, prompt.version, verdict))
            done += 1
            report(stage, done, len(to_judge))
    finally:
        writer.flush()

    for (query_id, doc_id), key in key_of.items():
        verdict = verdicts.get(key)
        if verdict is not None:
            result.grades.append(Grade(query_id, doc_id, int(verdict["grade"]), "llm", model,
                                       prompt.version, verdict.get("reason")))
        else:
            result.grades.append(Grade(query_id, doc_id, None, "llm", model, prompt.version,
                                       FAILURE_PREFIX + errors.get(key, "not judged")))
    result.failures = len(errors)
    for error in errors.values():
        kind = error.split(":")[0]
        result.failure_reasons[kind] = result.failure_reasons.get(kind, 0) + 1
    return result
