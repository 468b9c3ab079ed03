"""The LLM reranker: a declared reranker of ``kind = "llm"`` over the run's OpenAI-compatible endpoint.

Pointwise: each (query, candidate) is scored 0-10 by its own versioned prompt
(engine/llm/prompts/rerank_pointwise_v1.txt, a judge-style prompt), and the candidates are sorted by
score (equal scores keep the base order). Each pair is cached as the judge's pairs are, under
sha256(kind "rerank", query text, document text as sent, the endpoint's identity of the model,
prompt version, truncation): a re-run makes no call. Calls and tokens are counted under the run's
stage ``rerank`` (its accounting, ``searchgrade show``'s LLM calls, the --dry-run estimate). A pair
whose reply is still invalid after the client's retries fails the *query* for the reranked strategy
(indexes/rerank/service.py): its valid pairs are cached, and ``resume`` asks only the others.

When the reranker's model is the judge's, the run's grades come from the model whose ranking is
graded: the run records it (``stats.self_graded``) and says so in its notes.

Listwise (``mode = "listwise"``, in the manner of RankGPT): the candidates are ranked by windows of
``window`` passages (10) in one prompt each (engine/llm/prompts/rerank_listwise_v1.txt, the reply a
permutation of the window's numbers), sliding from the bottom of the list to its top by ``step``
(5), so the best candidates bubble up; a candidate's score is its final place (n - rank). Each
(query, window of texts in order) is cached. A reply that is not a permutation of the window is
invalid (retried, then the query fails). Its scores depend on the whole list, so two strategies'
lists are never mixed (``pointwise = False``: indexes/rerank/service.py scopes the scores by base).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from searchgrade.engine.llm.cache import CacheEntry, LLMCache, cache_key
from searchgrade.engine.llm.client import LLMClient
from searchgrade.engine.llm.prompts import Prompt, load_prompt, neutralise_tags
from searchgrade.indexes.rerank.service import RerankFailed

STAGE = "rerank"
CACHE_KIND = "rerank"
PROMPTS = {"pointwise": "rerank_pointwise_v1", "listwise": "rerank_listwise_v1"}
#: Cache kind of a listwise window's ranking.
WINDOW_CACHE_KIND = "rerank_window"
#: Longer documents are cut to this many characters in the prompt.
MAX_DOC_CHARS = 2000


class RerankScore(BaseModel):
    """The LLM's score of one (query, document) pair."""

    model_config = ConfigDict(extra="ignore")

    score: int = Field(ge=0, le=10)

    @field_validator("score", mode="before")
    @classmethod
    def _integer(cls, value: Any) -> int:
        if isinstance(value, bool):
            raise ValueError("score must be a whole number 0-10, not a boolean")
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if not isinstance(value, int):
            raise ValueError(f"score must be a whole number 0-10, got {value!r}")
        return value


def score_schema() -> dict[str, Any]:
    return {"type": "object", "properties": {"score": {"type": "integer", "enum": list(range(11))}},
            "required": ["score"], "additionalProperties": False}


class LLMReranker:
    """A QueryReranker (indexes/rerank/service.py) asking the LLM for each candidate's score.

    Queries are taken one at a time (``concurrency`` 1); a query's pairs go out on the client's
    threads (its ``--concurrency``).
    """

    concurrency = 1
    pointwise = True

    def __init__(self, name: str, client: LLMClient, cache: LLMCache, mode: str = "pointwise",
                 max_doc_chars: int = MAX_DOC_CHARS) -> None:
        self.name = name
        self.client = client
        self.cache = cache
        self.mode = mode
        self.prompt: Prompt = load_prompt(PROMPTS[mode])
        self.max_doc_chars = max_doc_chars
        self.calls = 0

    @property
    def model(self) -> str:
        return self.client.model

    def key(self, query: str, text: str) -> str:
        return cache_key(CACHE_KIND, query, text[: self.max_doc_chars], self.client.judge_identity,
                         self.prompt.version, self.max_doc_chars)

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        keys = [self.key(query, t) for t in texts]
        unique = dict.fromkeys(keys)
        found = self.cache.get_many(CACHE_KIND, list(unique))
        self.client.usage.add(STAGE, cache_hits=len(found))
        todo = [k for k in unique if k not in found]
        text_of = dict(zip(keys, texts, strict=True))
        schema = score_schema()

        def one(key: str) -> Any:
            messages = self.prompt.messages(query=neutralise_tags(query),
                                            document=neutralise_tags(text_of[key][: self.max_doc_chars]))
            return self.client.complete(STAGE, messages, RerankScore, schema, schema_name="rerank_score")

        errors: list[str] = []
        entries: list[CacheEntry] = []
        for index, reply in self.client.map(one, todo):
            self.calls += 1
            if reply.value is None:
                errors.append(reply.error or "unknown error")
                continue
            verdict = {"score": reply.value.score}
            found[todo[index]] = verdict
            entries.append(CacheEntry(todo[index], self.model, self.prompt.version, verdict))
        if entries:
            self.cache.put_many(CACHE_KIND, entries)
        if errors:
            raise RerankFailed(f"the LLM gave no valid score for {len(errors)} of {len(unique)} documents "
                               f"({errors[0]})")
        return [float(found[k]["score"]) for k in keys]


def window_reply(size: int) -> type[BaseModel]:
    """The reply model of a window of ``size`` passages: a permutation of 1..size."""

    class WindowRanking(BaseModel):
        model_config = ConfigDict(extra="ignore")

        ranking: list[int]

        @field_validator("ranking", mode="after")
        @classmethod
        def _permutation(cls, value: list[int]) -> list[int]:
            if sorted(value) != list(range(1, size + 1)):
                raise ValueError(f"ranking must hold each of the numbers 1 to {size} once, got {value!r}")
            return value

    return WindowRanking


def window_schema(size: int) -> dict[str, Any]:
    return {"type": "object", "properties": {"ranking": {
        "type": "array", "items": {"type": "integer", "enum": list(range(1, size + 1))},
        "minItems": size, "maxItems": size}}, "required": ["ranking"], "additionalProperties": False}


def windows(n: int, window: int, step: int) -> list[tuple[int, int]]:
    """(start, stop) of the windows over n candidates, bottom first (RankGPT's sliding window)."""
    out = []
    stop = n
    while True:
        start = max(0, stop - window)
        out.append((start, stop))
        if start == 0:
            return out
        stop -= step


class ListwiseReranker(LLMReranker):
    """The LLM reranker ranking windows of candidates (see the module docstring)."""

    pointwise = False

    def __init__(self, name: str, client: LLMClient, cache: LLMCache, window: int = 10, step: int = 5,
                 max_doc_chars: int = 1000) -> None:
        super().__init__(name, client, cache, "listwise", max_doc_chars)
        self.window = window
        self.step = step
        self.concurrency = client.settings.concurrency  # windows of one query go in order; queries in parallel

    def rerank(self, query: str, texts: Sequence[str]) -> list[float]:
        order = list(range(len(texts)))
        for start, stop in windows(len(texts), self.window, self.step):
            shown = order[start:stop]
            if len(shown) > 1:
                ranking = self._rank(query, [texts[i][: self.max_doc_chars] for i in shown])
                order[start:stop] = [shown[p - 1] for p in ranking]
        scores = [0.0] * len(texts)
        for place, i in enumerate(order):
            scores[i] = float(len(texts) - place)
        return scores

    def _rank(self, query: str, passages: list[str]) -> list[int]:
        key = cache_key(WINDOW_CACHE_KIND, query, passages, self.client.judge_identity, self.prompt.version,
                        self.max_doc_chars)
        found = self.cache.get_many(WINDOW_CACHE_KIND, [key])
        if key in found:
            self.client.usage.add(STAGE, cache_hits=1)
            return list(found[key]["ranking"])
        listed = "\n".join(f"[{i}] <passage>\n{neutralise_tags(p)}\n</passage>" for i, p in enumerate(passages, 1))
        messages = self.prompt.messages(query=neutralise_tags(query), passages=listed, n=str(len(passages)))
        reply = self.client.complete(STAGE, messages, window_reply(len(passages)), window_schema(len(passages)),
                                     schema_name="ranking")
        self.calls += 1
        if reply.value is None:
            raise RerankFailed(f"the LLM gave no valid ranking of a window of {len(passages)} documents "
                               f"({reply.error})")
        ranking = list(reply.value.ranking)
        self.cache.put_many(WINDOW_CACHE_KIND, [CacheEntry(key, self.model, self.prompt.version,
                                                           {"ranking": ranking})])
        return ranking


def llm_reranker_factory(client: LLMClient, cache: LLMCache) -> Any:
    """The build's ``services["llm_reranker"]``: a declared ``kind = "llm"`` reranker's scorer over
    the run's endpoint (another ``model`` than the run's shares its endpoint and its accounting)."""

    def build(spec: Any) -> LLMReranker:
        model = spec.options.get("model")
        reranker_client = client
        if model and model != client.model:
            reranker_client = LLMClient(replace(client.settings, model=model))
            reranker_client.usage = client.usage  # one run, one account
        concurrency = spec.options.get("concurrency")
        if concurrency and concurrency != reranker_client.settings.concurrency:
            usage = reranker_client.usage
            reranker_client = LLMClient(replace(reranker_client.settings, concurrency=int(concurrency)))
            reranker_client.usage = usage
        if spec.options.get("mode") == "listwise":
            return ListwiseReranker(spec.name, reranker_client, cache, int(spec.options.get("window") or 10),
                                    int(spec.options.get("step") or 5))
        return LLMReranker(spec.name, reranker_client, cache, spec.options.get("mode") or "pointwise")

    return build


def self_graded(reranker_models: dict[str, str], judge_model: str | None) -> dict[str, Any] | None:
    """The rerankers whose model is the judge's (a system graded by itself), or None."""
    same = sorted(name for name, model in reranker_models.items() if judge_model and model == judge_model)
    if not same:
        return None
    return {"rerankers": same, "model": judge_model,
            "note": (f"reranker{'s' if len(same) > 1 else ''} {', '.join(same)} and the judge are the same model "
                     f"({judge_model}): the reranked strategies are graded by the model that ranked them, "
                     "which favours them; judge with another model (or human labels) to compare fairly")}
