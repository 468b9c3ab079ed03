"""What an LLM run will cost, before paying for it: calls per stage and an estimate of the tokens.

No index is built, nothing is searched and no prompt is sent. The numbers:

- Query generation: one call per sampled document (the same stratified sample the run draws),
  minus those whose reply is in the cache; it asks for n_natural + n_keyword queries each (the
  filters drop some afterwards).
- Judging: one call per unique (query, document) pair the strategies return, plus each generated
  query's source document, minus cached pairs. Which documents come back is known only after
  searching, so this is an upper bound: queries x min(strategies x depth, corpus size) (+1 for the
  source); strategies that agree on documents make far fewer. With ``--qrels --llm`` the judge
  sees only the retrieved pairs the qrels grade (at most their number), and everything retrieved
  with ``--judge-unjudged``; a panel (``--judge-models``) sees everything retrieved, once per judge.
- Cached: with a run store, replies already cached for this model and endpoint are not counted
  as calls; finding them asks the endpoint ``GET /models`` (the cache's model fingerprint), the
  only request a dry run makes.
- Tokens: the prompts of a seeded sample of real calls, built exactly as the run builds them (the
  real prompt files and documents; for judging before the queries exist, the collection's queries,
  the reused run's, or a stand-in of typical length), counted at about 4 characters per token
  (the usual figure for English with GPT-style tokenizers; a model's own tokenizer differs by
  tens of percent), times the number of calls. Replies are estimated from the reply format.
- The LLM reranker (a declared ``kind = "llm"`` reranker, engine/llm/reranker.py): one call per
  unique (query, candidate) pair it rescores, an upper bound of queries x min(the candidates of the
  strategies it reranks, corpus size); cached pairs are not subtracted (they are known only after
  searching).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from searchgrade.core.records import Collection, Document, Query
from searchgrade.engine.run.config import RunConfig

if TYPE_CHECKING:
    from searchgrade.engine.llm.cache import LLMCache
    from searchgrade.engine.llm.judge import JudgeSettings
    from searchgrade.engine.store import Store

#: Prompts built per stage to estimate the tokens.
SAMPLE = 20
CHARS_PER_TOKEN = 4.0
#: Tokens a chat message costs beyond its text (role and separators), as OpenAI's chat format counts.
MESSAGE_OVERHEAD = 4
#: Reply tokens: {"grade": 2, "reason": "<one short sentence>"}; per query of a querygen reply.
JUDGE_REPLY_TOKENS = 30
QUERY_REPLY_TOKENS = 14
#: A generated query's typical length, for judge prompts before any query exists.
STAND_IN_QUERY = "how does the method described here compare with the usual approach"


@dataclass
class StageEstimate:
    #: Calls the run would send (an upper bound for the judge).
    calls: int
    #: Items already answered by the cache (no call).
    cached: int
    prompt_tokens: int
    completion_tokens: int
    #: Prompts the token estimate was measured on.
    sampled_prompts: int
    upper_bound: bool = False


@dataclass
class CostEstimate:
    generation: StageEstimate | None
    judge: StageEstimate | None
    #: Queries the run will evaluate (before the generator's filters in LLM mode).
    queries: int
    notes: list[str] = field(default_factory=list)
    #: The LLM reranker's calls (engine/llm/reranker.py), None when the run has none.
    rerank: StageEstimate | None = None

    @property
    def stages(self) -> tuple[StageEstimate, ...]:
        return tuple(s for s in (self.generation, self.judge, self.rerank) if s is not None)

    @property
    def calls(self) -> int:
        return sum(s.calls for s in self.stages)

    @property
    def tokens(self) -> int:
        return sum(s.prompt_tokens + s.completion_tokens for s in self.stages)

    def lines(self) -> list[str]:
        """The estimate in words, one line per stage."""
        out = []
        if self.generation is not None:
            g = self.generation
            out.append(f"query generation: {g.calls:,} calls ({g.cached:,} documents already in the cache), "
                       f"up to {self.queries:,} queries; ~{g.prompt_tokens:,} prompt + ~{g.completion_tokens:,} "
                       f"completion tokens")
        if self.judge is not None:
            j = self.judge
            out.append(f"judge: {'at most ' if j.upper_bound else ''}{j.calls:,} calls "
                       f"({j.cached:,} pairs known to be cached); ~{j.prompt_tokens:,} prompt + "
                       f"~{j.completion_tokens:,} completion tokens{' at most' if j.upper_bound else ''}")
        if self.rerank is not None:
            r = self.rerank
            out.append(f"LLM reranker: at most {r.calls:,} calls (one per query and candidate, or per listwise "
                       "window); "
                       f"~{r.prompt_tokens:,} prompt + ~{r.completion_tokens:,} completion tokens at most")
        if not out:
            out.append("no LLM call: this run grades with the collection's qrels only")
        else:
            measured = max(s.sampled_prompts for s in self.stages)
            out.append(f"total: {'at most ' if self.judge and self.judge.upper_bound else ''}{self.calls:,} "
                       f"calls, ~{self.tokens:,} tokens (measured on {measured} real prompts per stage at "
                       f"~{CHARS_PER_TOKEN:g} characters per token)")
        return out


def estimate_tokens(messages: list[dict[str, str]]) -> int:
    """Tokens of chat messages at ~4 characters per token, plus each message's overhead."""
    return sum(MESSAGE_OVERHEAD + round(len(m["content"]) / CHARS_PER_TOKEN) for m in messages)


def _mean(values: list[int]) -> float:
    return sum(values) / len(values) if values else 0.0


def identity(config: RunConfig) -> str:
    """The cache identity of the run's LLM (model name and endpoint fingerprint)."""
    from searchgrade.engine.llm.client import LLMClient

    return LLMClient(config.llm).judge_identity if config.llm is not None else ""


def estimate_cost(collection: Collection, config: RunConfig, store: Any | None = None) -> CostEstimate:
    """The calls and tokens of an evaluation with ``config`` (see the module doc).

    Args:
        store: The run store, to count cached replies and read --queries-from (None: nothing cached).

    Raises:
        SearchGradeError: What the run itself would refuse (no document long enough to sample,
            an unknown --queries-from run).
    """
    from searchgrade.engine.llm.cache import StoreCache
    from searchgrade.engine.llm.judge import CACHE_KIND as JUDGE_KIND
    from searchgrade.engine.llm.judge import JudgeSettings, judge_key, judge_prompt
    from searchgrade.engine.run.plan import select_qrels_queries
    from searchgrade.engine.run.pool import PoolDepth

    if not config.uses_llm:
        return CostEstimate(None, None, len(collection.queries))
    cache = StoreCache(store) if store is not None else None
    # Cached replies are keyed by who answers (engine/llm/client.py judge_identity: the model and
    # the endpoint's GET /models entry), so counting them asks the endpoint that, and nothing else.
    model = identity(config) if cache is not None else ""
    judge_settings = config.judge or JudgeSettings()
    rng = random.Random(config.seed)
    # Each strategy's list goes into the judging pool down to its pool depth (engine/run/pool.py).
    pool = PoolDepth.from_json(config.pool_depth)
    per_query = min(sum(min(pool.of(s) or config.retrieval_depth, config.retrieval_depth) for s in config.strategies),
                    len(collection.documents))
    notes: list[str] = []
    generation = None
    queries: list[Query]
    if config.query_set is not None:
        from searchgrade.engine.traffic.query_sets import run_queries

        queries = run_queries(store, config.query_set)  # a query set lives in the store (cli opens it)
        n_queries = len(queries)
        bound = n_queries * per_query  # mode clicks: an upper bound (the judge sees the clicked pairs only)
        cached_pairs = 0
    elif config.mode == "llm":
        generation, queries, n_queries = _generation(collection, config, store, cache, model, rng, notes)
        bound = n_queries * (per_query + 1)
        cached_pairs = 0  # the pairs are known only after generating and searching
    else:
        queries = select_qrels_queries(collection, config.max_queries, config.seed)
        n_queries = len(queries)
        docs = {d.doc_id: d for d in collection.documents}
        # The pairs the qrels grade (those the judge sees when retrieved), less the cached ones.
        graded = {q.query_id: [d for d in (collection.qrels or {}).get(q.query_id, {}) if d in docs]
                  for q in queries}
        cached_pairs = 0
        if cache is not None:
            prompt = judge_prompt(judge_settings)
            keys = {(q.query_id, d): judge_key(q.text, docs[d].content, model, prompt.version,
                                               judge_settings.max_doc_chars)
                    for q in queries for d in graded[q.query_id]}
            hits = cache.get_many(JUDGE_KIND, list(set(keys.values())))
            cached_pairs = sum(key in hits for key in keys.values())
            graded = {q: [d for d in ds if keys[(q, d)] not in hits] for q, ds in graded.items()}
        if config.judge_unjudged or config.judges:
            bound = n_queries * per_query
        else:
            bound = sum(min(len(graded[q.query_id]), per_query) for q in queries)
    if config.judges:
        # A panel: each judge grades every retrieved pair, each with its own cache.
        judges = len(config.judge_specs())
        bound, cached_pairs = bound * judges, 0
        notes.append(f"a panel of {judges} judges: each grades every retrieved pair (at most {bound // judges:,} "
                     "each); replies a judge has cached are not counted here")
    judge = _judge(collection, queries, judge_settings, bound, cached_pairs, rng)
    return CostEstimate(generation, judge, n_queries, notes, _rerank(collection, config, queries, n_queries, rng))


#: Reply tokens of the LLM reranker: {"score": 7}.
RERANK_REPLY_TOKENS = 8


def _rerank(collection: Collection, config: RunConfig, queries: list[Query], n_queries: int,
            rng: random.Random) -> StageEstimate | None:
    """The LLM rerankers' calls: per query, every candidate of every strategy they rerank (an upper bound)."""
    from searchgrade.engine.llm.prompts import load_prompt
    from searchgrade.engine.llm.prompts import neutralise_tags as neutralise
    from searchgrade.engine.llm.reranker import MAX_DOC_CHARS, PROMPTS, windows

    registry = config.registry()
    default = config.index.reranker_model if config.index is not None else None
    candidates = listwise_calls = 0
    modes: set[str] = set()
    for name in config.strategies:
        info = registry.info(name)
        reranker = info.reranker or (default if info.reranks and default in registry.rerankers else None)
        spec = registry.rerankers.get(reranker) if reranker else None
        if spec is None or spec.kind != "llm":
            continue
        depth = spec.depth or (config.index.rerank_depth if config.index is not None else 50)
        n = min(max(depth, config.retrieval_depth), len(collection.documents))
        mode = spec.options.get("mode") or "pointwise"
        modes.add(mode)
        if mode == "listwise":  # one call per window, each base's list on its own
            listwise_calls += len(windows(n, int(spec.options.get("window") or 10), int(spec.options.get("step") or 5)))
        else:  # one call per (query, candidate), shared by the strategies it reranks
            candidates += n
    if not modes:
        return None
    pointwise_calls = n_queries * min(candidates, len(collection.documents))
    listwise_calls *= n_queries
    calls = pointwise_calls + listwise_calls
    docs = collection.documents
    picked = rng.sample(docs, min(SAMPLE, len(docs)))
    texts = [q.text for q in queries] or [STAND_IN_QUERY]
    prompt_tokens = 0
    tokens: list[int] = []
    if pointwise_calls:
        prompt = load_prompt(PROMPTS["pointwise"])
        measured = [estimate_tokens(prompt.messages(query=neutralise(rng.choice(texts)),
                                                    document=neutralise(d.content[:MAX_DOC_CHARS]))) for d in picked]
        prompt_tokens += round(_mean(measured) * pointwise_calls)
        tokens += measured
    if listwise_calls:  # a window of 10 sampled passages per prompt
        prompt = load_prompt(PROMPTS["listwise"])
        measured = [estimate_tokens(prompt.messages(query=neutralise(rng.choice(texts)), n="10", passages="\n".join(
            f"[{i}] <passage>\n{neutralise(d.content[:1000])}\n</passage>"
            for i, d in enumerate(rng.sample(docs, min(10, len(docs))), 1)))) for _ in picked]
        prompt_tokens += round(_mean(measured) * listwise_calls)
        tokens += measured
    return StageEstimate(calls, 0, prompt_tokens, RERANK_REPLY_TOKENS * pointwise_calls + 40 * listwise_calls,
                         len(tokens), upper_bound=True)


def _generation(collection: Collection, config: RunConfig, store: Store | None, cache: LLMCache | None, model: str,
                rng: random.Random, notes: list[str]) -> tuple[StageEstimate | None, list[Query], int]:
    from searchgrade.engine.llm.cache import cache_key
    from searchgrade.engine.llm.prompts import load_prompt, neutralise_tags
    from searchgrade.engine.llm.querygen import CACHE_KIND, QueryGenSettings, sample_documents

    if config.queries_from is not None and store is None:
        raise ValueError("an estimate with --queries-from needs the run store")

    if config.queries_from is not None:
        source = store.get_run(config.queries_from)
        queries = [Query(**row) for row in store.queries(source.run_id)]
        notes.append(f"queries reused from run {source.run_id}: no query generation")
        return None, queries, len(queries)
    qg = config.querygen or QueryGenSettings(seed=config.seed)  # the run's defaults (engine/run/pipeline.py)
    sample = sample_documents(collection.documents, qg.n_docs, qg.seed, qg.min_words, qg.min_chars)
    prompt = load_prompt(qg.prompt)
    cached = 0
    if cache is not None:
        keys = [cache_key(CACHE_KIND, d.content, qg.seed, qg.n_natural, qg.n_keyword, model, prompt.version,
                          qg.max_doc_chars) for d in sample]
        cached = len(cache.get_many(CACHE_KIND, keys))
    measured = rng.sample(sample, min(SAMPLE, len(sample)))
    tokens = [estimate_tokens(prompt.messages(document=neutralise_tags(d.content[: qg.max_doc_chars]),
                                      n_natural=str(qg.n_natural), n_keyword=str(qg.n_keyword)))
              for d in measured]
    calls = len(sample) - cached
    per_reply = 10 + QUERY_REPLY_TOKENS * (qg.n_natural + qg.n_keyword)
    stage = StageEstimate(calls, cached, round(_mean(tokens) * calls), per_reply * calls, len(measured))
    n_queries = len(sample) * (qg.n_natural + qg.n_keyword)
    # Stand-in queries of typical length: judge prompts are measured on the sampled documents.
    queries = [Query(f"stand-in-{d.doc_id}", STAND_IN_QUERY, "natural", d.doc_id) for d in sample]
    return stage, queries, n_queries


def _judge(collection: Collection, queries: list[Query], settings: JudgeSettings, bound: int, cached: int,
           rng: random.Random) -> StageEstimate:
    from searchgrade.engine.llm.judge import judge_prompt
    from searchgrade.engine.llm.prompts import neutralise_tags as neutralise

    prompt = judge_prompt(settings)
    documents: list[Document] = collection.documents
    picked_docs = rng.sample(documents, min(SAMPLE, len(documents)))
    picked_queries = [rng.choice(queries) for _ in picked_docs] if queries else []
    tokens = [estimate_tokens(prompt.messages(query=neutralise(q.text), document=neutralise(d.content[: settings.max_doc_chars])))
              for q, d in zip(picked_queries, picked_docs, strict=True)]
    calls = bound
    return StageEstimate(calls, cached, round(_mean(tokens) * calls), JUDGE_REPLY_TOKENS * calls,
                         len(tokens), upper_bound=True)
