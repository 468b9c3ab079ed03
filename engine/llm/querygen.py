"""Query generation: an LLM writes search queries for a seeded sample of documents.

Sampling is stratified by position: the eligible documents (in corpus order) are cut into as many
equal strata as documents wanted, and one document is drawn from each, so the sample spreads over
the whole corpus whatever its order (by topic, by date). Documents shorter than ``min_words``
words or ``min_chars`` characters are not eligible: there is little to ask about them.

Filters, applied in sample order over the whole query set (the first occurrence is kept):

- ``copied_span``: the query shares ``max_copied_tokens`` (default 8) or more consecutive
  normalised tokens with its document: a copied sentence makes retrieval trivially lexical.
- ``duplicate``: same normalised token sequence as a kept query.
- ``near_duplicate``: Jaccard similarity of the token sets >= ``near_duplicate_jaccard``
  (default 0.8) with a kept query, e.g. "what causes rust on iron" vs "what causes iron rust".

Normalised tokens: NFKC, lower case, runs of letters/digits (``\\w+``).

Generation is cached per document: the same document content, seed, counts, model, prompt
version and truncation give the cached reply without a call. The cache holds the raw reply, so
changing the filters needs no new calls.
"""

from __future__ import annotations

import random
import re
import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from searchgrade.core.records import Document, Query, SearchGradeError
from searchgrade.engine.llm.cache import CacheEntry, CacheWriter, LLMCache, cache_key
from searchgrade.engine.llm.client import LLMClient
from searchgrade.engine.llm.prompts import load_prompt, neutralise_tags
from searchgrade.engine.llm.schemas import QueryGenReply, querygen_schema

STAGE = "querygen"
CACHE_KIND = "querygen"


@dataclass(frozen=True)
class QueryGenSettings:
    """How many documents and queries, and what counts as a usable query."""

    n_docs: int = 50
    n_natural: int = 2
    n_keyword: int = 1
    seed: int = 0
    min_words: int = 20
    min_chars: int = 100
    #: Longer documents are cut to this many characters in the prompt.
    max_doc_chars: int = 6000
    near_duplicate_jaccard: float = 0.8
    max_copied_tokens: int = 8
    temperature: float = 0.7
    prompt: str = "querygen_v1"

    def validate(self) -> None:
        if self.n_docs < 1:
            raise SearchGradeError(f"--docs of {self.n_docs} must be at least 1")
        if self.n_natural < 0 or self.n_keyword < 0 or self.n_natural + self.n_keyword < 1:
            raise SearchGradeError(
                f"queries per document ({self.n_natural} natural, {self.n_keyword} keyword) must "
                "add up to at least 1"
            )
        if not 0.0 < self.near_duplicate_jaccard <= 1.0:
            raise SearchGradeError(
                f"near-duplicate Jaccard threshold {self.near_duplicate_jaccard} must be in (0, 1]"
            )
        if self.max_copied_tokens < 2:
            raise SearchGradeError(f"max copied tokens of {self.max_copied_tokens} must be at least 2")

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class QueryGenResult:
    queries: list[Query]
    #: The sampled documents, in corpus order.
    sampled_doc_ids: list[str]
    model: str
    prompt_version: str
    #: Documents answered from the cache (no call).
    cache_hits: int = 0
    #: Documents sent to the LLM in this call.
    generated: int = 0
    #: doc_id -> why generation failed (no queries from that document).
    failures: dict[str, str] = field(default_factory=dict)
    #: Filter name -> queries dropped.
    dropped: dict[str, int] = field(default_factory=dict)


def normalise_tokens(text: str) -> list[str]:
    return re.findall(r"\w+", unicodedata.normalize("NFKC", text).lower())


def jaccard(a: set[str], b: set[str]) -> float:
    """|a & b| / |a | b|; two empty sets -> 1.0."""
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def copies_span(query_tokens: Sequence[str], doc_ngrams: set[tuple[str, ...]], n: int) -> bool:
    """Whether the query has n consecutive tokens that also occur consecutively in the document."""
    return any(tuple(query_tokens[i : i + n]) in doc_ngrams for i in range(len(query_tokens) - n + 1))


def ngrams(tokens: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def sample_documents(
    documents: Sequence[Document], n_docs: int, seed: int, min_words: int = 20, min_chars: int = 100
) -> list[Document]:
    """A seeded sample spread over the corpus (one per position stratum), in corpus order.

    Raises:
        SearchGradeError: No document is long enough.
    """
    eligible = [
        d for d in documents if len(d.content) >= min_chars and len(d.content.split()) >= min_words
    ]
    if not eligible:
        raise SearchGradeError(
            f"no document has at least {min_words} words and {min_chars} characters to write "
            "queries about; lower the minimum or check the collection's text field"
        )
    if n_docs >= len(eligible):
        return eligible
    rng = random.Random(seed)
    picked = []
    for s in range(n_docs):
        lo = s * len(eligible) // n_docs
        hi = (s + 1) * len(eligible) // n_docs
        picked.append(eligible[rng.randrange(lo, hi)])
    return picked


def generate_queries(
    documents: Sequence[Document],
    client: LLMClient,
    cache: LLMCache,
    settings: QueryGenSettings | None = None,
    *,
    progress: Callable[[str, int, int], None] | None = None,
    on_flush: Callable[[], None] | None = None,
) -> QueryGenResult:
    """Sample documents and have the LLM write queries for each.

    Args:
        documents: The corpus.
        client: The LLM client; its usage is counted under stage "querygen".
        cache: Where replies are cached across runs.
        settings: Counts, sampling and filters (defaults if None).
        progress: Called as progress("querygen", done, total).
        on_flush: Called after each batch of replies is written to the cache.

    Returns:
        The kept queries (ids ``g-<doc_id>-n<i>`` / ``g-<doc_id>-k<i>``), with counts of cache
        hits, failures and dropped queries. A document whose generation failed gives no query.
    """
    settings = settings or QueryGenSettings()
    settings.validate()
    prompt = load_prompt(settings.prompt)
    report = progress or (lambda stage, done, total: None)
    sample = sample_documents(documents, settings.n_docs, settings.seed, settings.min_words,
                              settings.min_chars)
    schema = querygen_schema(settings.n_natural, settings.n_keyword)

    def key_of(doc: Document) -> str:
        return cache_key(CACHE_KIND, doc.content, settings.seed, settings.n_natural,
                         settings.n_keyword, client.judge_identity, prompt.version, settings.max_doc_chars)

    keys = [key_of(d) for d in sample]
    cached = cache.get_many(CACHE_KIND, keys)
    replies: dict[str, QueryGenReply] = {}
    for doc, key in zip(sample, keys, strict=True):
        if key in cached:
            replies[doc.doc_id] = QueryGenReply.model_validate(cached[key])
    result = QueryGenResult([], [d.doc_id for d in sample], client.model, prompt.version,
                            cache_hits=len(replies))
    client.usage.add(STAGE, cache_hits=len(replies))

    todo = [(doc, key) for doc, key in zip(sample, keys, strict=True) if doc.doc_id not in replies]
    result.generated = len(todo)

    def generate(item: tuple[Document, str]):
        doc, _key = item
        messages = prompt.messages(
            document=neutralise_tags(doc.content[: settings.max_doc_chars]),
            n_natural=str(settings.n_natural),
            n_keyword=str(settings.n_keyword),
        )
        return client.complete(STAGE, messages, QueryGenReply, schema, schema_name="queries",
                               seed=settings.seed, temperature=settings.temperature)

    writer = CacheWriter(cache, CACHE_KIND, on_flush=on_flush)
    done = len(sample) - len(todo)
    report(STAGE, done, len(sample))
    try:
        for index, reply in client.map(generate, todo):
            doc, key = todo[index]
            if reply.value is None:
                result.failures[doc.doc_id] = reply.error or "unknown error"
            else:
                replies[doc.doc_id] = reply.value
                writer.add(CacheEntry(key, client.model, prompt.version, reply.value.model_dump()))
            done += 1
            report(STAGE, done, len(sample))
    finally:
        writer.flush()

    result.queries, result.dropped = filter_queries(sample, replies, settings)
    return result


def filter_queries(
    sample: Sequence[Document], replies: dict[str, QueryGenReply], settings: QueryGenSettings
) -> tuple[list[Query], dict[str, int]]:
    """Queries from the replies, minus copies, duplicates and near-duplicates (see module doc)."""
    dropped = {"empty": 0, "copied_span": 0, "duplicate": 0, "near_duplicate": 0}
    kept: list[Query] = []
    seen_sequences: set[tuple[str, ...]] = set()
    kept_sets: list[set[str]] = []
    n = settings.max_copied_tokens
    for doc in sample:
        reply = replies.get(doc.doc_id)
        if reply is None:
            continue
        doc_ngrams = ngrams(normalise_tokens(doc.content), n)
        candidates = [("natural", "n", i, t) for i, t in enumerate(reply.natural[: settings.n_natural], 1)]
        candidates += [("keyword", "k", i, t) for i, t in enumerate(reply.keyword[: settings.n_keyword], 1)]
        for query_type, letter, i, text in candidates:
            tokens = normalise_tokens(text)
            if not tokens:
                dropped["empty"] += 1
                continue
            if copies_span(tokens, doc_ngrams, n):
                dropped["copied_span"] += 1
                continue
            sequence = tuple(tokens)
            if sequence in seen_sequences:
                dropped["duplicate"] += 1
                continue
            token_set = set(tokens)
            if any(jaccard(token_set, other) >= settings.near_duplicate_jaccard for other in kept_sets):
                dropped["near_duplicate"] += 1
                continue
            seen_sequences.add(sequence)
            kept_sets.append(token_set)
            kept.append(Query(f"g-{doc.doc_id}-{letter}{i}", text, query_type, doc.doc_id))
    return kept, dropped
