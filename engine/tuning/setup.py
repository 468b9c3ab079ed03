"""From a stored run to what the tuner needs: its queries, its grades, and the strategy to tune.

``prepare_tuning`` reads the run's configuration (engine/run/config.py), loads its collection as
the run did, builds the strategy's nodes with the run's settings (reusing every artifact on disk:
the embeddings, the ANN and BM25 indexes) and returns a ``Tuning``: the Target (engine/tuning/
target.py), the grades (the collection's qrels for a qrels run, else the run's stored grades), the
space (the file's, or the strategy kind's default) and the queries with their types.

Kinds (engine/tuning/space.py PARAMS_OF): ``fulltext`` (BM25 k1 and b on the same index),
``hybrid`` (the built-in, or a declared ``kind = "hybrid"``: fusion method, normalisation, weight,
depth, rrf_k, and BM25's k1 and b when one input is the built-in full-text), ``rerank`` (X_rerank's
depth over X's list and the cross-encoder scores already computed), ``declared`` (an HTTP,
Elasticsearch or OpenSearch strategy's template variables), ``ann-ivf`` (an IVF index's nprobe,
the queries embedded once). Exact ANN and HNSW, and declared kinds without templates, have nothing
the tuner can change: refused with one line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.tuning.grades import Grades
from searchgrade.engine.tuning.space import Space, default_space, parse_space, read_space_file
from searchgrade.engine.tuning.target import Target
from searchgrade.indexes.base import Found, Outcome, QueryBatch, answer_each
from searchgrade.indexes.builtin.fusion import Fusion

#: Declared kinds whose requests are templates with variables.
TEMPLATE_KINDS = ("http", "elasticsearch", "opensearch")


@dataclass
class Tuning:
    target: Target
    grades: Grades
    space: Space
    query_ids: list[str]
    query_types: dict[str, str]
    k: int
    threshold: int
    label_source: str
    #: The run's LLM judge for the pairs trials retrieve (engine/tuning/judging.py); None: no judge.
    judge: Any = None


def recommended_strategy(store: Any, run: Any) -> str:
    """The run's recommendation: the strategy with the best DCG at the run's k (its headline)."""
    rows = [r for r in store.metric_summary(run.run_id, k=run.k) if r["metric"] == "dcg"]
    if not rows:
        raise SearchGradeError(f"run {run.run_id} has no scored strategies: evaluate it to completion first")
    return max(rows, key=lambda r: (r["value"], r["strategy"]))["strategy"]


def strategy_kind(name: str, registry: Any, settings: Any, n_docs: int) -> str:
    info = registry.info(name)
    if info.reranks is not None:
        return "rerank"
    if name in ("fulltext", "hybrid"):
        return name
    if name == "ann":
        return "ann"
    spec = registry.declared.get(name)
    if spec is not None and spec.kind in ("hybrid", "fulltext"):  # a fusion, or a BM25 variant (indexes/variants/)
        return spec.kind
    if spec is not None and spec.kind in TEMPLATE_KINDS:
        return "declared"
    raise SearchGradeError(f"strategy {name} (kind {info.kind}) has nothing the tuner can change: tune hybrid, "
                           "fulltext, a reranked strategy or an HTTP strategy with template variables")


def prepare_tuning(store: Any, run_id: str, data_dir: Path, *, strategy: str | None = None,
                   space_file: str | None = None, reuse: bool = True, collection: Any = None,
                   only_queries: Any = None, judge_budget: int | None = None) -> Tuning:
    """Everything ``tune`` needs for one strategy of a stored run (see the module); with
    ``only_queries`` (a suite's frozen ids), only those of the run's queries are tuned and held out.

    Raises:
        SearchGradeError: the run is not complete, the strategy is not in it or has nothing to
            tune, the space file is wrong (one line), the collection cannot be loaded.
    """
    from searchgrade.engine.collections import load_collection
    from searchgrade.engine.run.config import RunConfig
    from searchgrade.indexes.build import build_searchers
    from searchgrade.indexes.settings import IndexSettings

    run = store.get_run(run_id)
    if run.status != "complete":
        raise SearchGradeError(f"run {run.run_id} is {run.status}: tune a complete run (`searchgrade resume "
                               f"{run.run_id}` finishes it)")
    config = RunConfig.from_json(run.config)
    registry = config.registry()
    table, file_strategy, source = (read_space_file(space_file) if space_file else (None, None, ""))
    strategy = strategy or file_strategy or recommended_strategy(store, run)
    if strategy not in config.strategies:
        raise SearchGradeError(f"strategy {strategy!r} is not in run {run.run_id}: use one of "
                               f"{', '.join(config.strategies)}")
    settings = config.index or IndexSettings()
    if collection is None:
        collection = load_collection(run.collection_path, **config.collection_fields)
    kind = strategy_kind(strategy, registry, settings, len(collection.documents))
    if kind == "ann":
        index = settings.resolved(len(collection.documents)).ann_index
        if index != "ivf":
            raise SearchGradeError(f"strategy {strategy} is {'exact' if index == 'flat' else index} nearest-neighbour "
                                   "search: the tuner has nothing to change in it (an IVF index's nprobe can be "
                                   "tuned); tune hybrid, fulltext or a reranked strategy")
        kind = "ann-ivf"
    spec = registry.declared.get(registry.info(strategy).reranks or strategy)
    variables = template_variables(spec) if kind == "declared" else {}
    if table is not None:
        space = parse_space(table, kind, strategy, variables=list(variables), source=source)
    else:
        space = default_space(kind, strategy)
    queries = store.queries(run.run_id)
    if only_queries is not None:
        wanted = set(only_queries)
        queries = [q for q in queries if q["query_id"] in wanted]
        if not queries:
            raise SearchGradeError(f"run {run.run_id} has none of the {len(wanted)} queries asked for: tune a run "
                                   "that evaluated them")
    texts = {q["query_id"]: q["text"] for q in queries}
    types = {q["query_id"]: q["query_type"] for q in queries}
    if run.mode == "qrels" and collection.qrels:
        grades = {q: dict(collection.qrels.get(q, {})) for q in texts}
        label_source = "qrels"
    else:
        grades = {}
        for g in store.grades(run.run_id):
            if g["grade"] is not None:
                grades.setdefault(g["query_id"], {})[g["doc_id"]] = int(g["grade"])
        label_source = run.label_source
    judge = None
    if run.mode == "llm":
        judge = _run_judge(store, config, queries, collection, judge_budget)
    k = run.k
    built = build_searchers(collection, settings, data_dir, [strategy], registry=registry,
                            collection_fingerprint=run.stats.get("collection_fingerprint"))
    if strategy in built.skipped:
        raise SearchGradeError(f"strategy {strategy} cannot be built here: {built.skipped[strategy]}")
    maker = _MAKERS[kind]
    target = maker(strategy, built, settings, space, texts, k, spec, reuse)
    return Tuning(target, Grades(grades), space, sorted(texts), types, k, run.threshold, label_source, judge)


def _run_judge(store: Any, config: Any, queries: list[dict[str, Any]], collection: Any,
               budget: int | None) -> Any:
    """The run's judge (its model, endpoint and prompt, the store's LLM cache) for new pairs."""
    from searchgrade.core.records import Query
    from searchgrade.engine.llm.cache import StoreCache
    from searchgrade.engine.llm.client import LLMClient
    from searchgrade.engine.llm.judge import JudgeSettings
    from searchgrade.engine.tuning.judging import DEFAULT_JUDGE_BUDGET, TuneJudge

    budget = DEFAULT_JUDGE_BUDGET if budget is None else budget
    if budget < 0:
        raise SearchGradeError(f"--judge-budget of {budget} is negative: give 0 (judge nothing new during "
                               "tuning) or more")
    by_id = {q["query_id"]: Query(q["query_id"], q["text"], q["query_type"] or "natural") for q in queries}
    documents = {d.doc_id: d for d in collection.documents}
    return TuneJudge(LLMClient(config.llm), StoreCache(store), config.judge or JudgeSettings(), by_id,
                     documents, budget)


def template_variables(spec: Any) -> dict[str, Any]:
    """A declared HTTP strategy's template variables and their declared values (``variables``)."""
    from searchgrade.indexes.declared.http import template_names

    names = template_names(spec.options)
    declared = spec.options.get("variables") or {}
    return {name: declared.get(name) for name in names}


def _space_max(space: Space, name: str, fallback: int) -> int:
    for p in space.params:
        if p.name == name:
            return int(max(p.choices) if p.kind == "choice" else p.high)
    return fallback


def _fusion_target(strategy: str, built: Any, settings: Any, space: Space, texts: Mapping[str, str],
                   k: int, spec: Any, reuse: bool) -> Target:
    from searchgrade.indexes.builtin.hybrid import HybridNode

    node = built.nodes[strategy]
    start_fusion: Fusion = node.fusion
    inputs = list(node.inputs)
    depth = max(_space_max(space, "fusion_depth", 0), start_fusion.max_depth, k)
    weights = start_fusion.weights
    start = {"method": start_fusion.method, "norm": start_fusion.norm,
             "weight": weights[0] if weights and len(weights) == 1 else None,
             "fusion_depth": start_fusion.depth, "rrf_k": start_fusion.rrf_k,
             "bm25_k1": settings.bm25_k1, "bm25_b": settings.bm25_b}
    bm25 = _Bm25(built, settings) if "fulltext" in inputs and {"bm25_k1", "bm25_b"} & set(space.names()) else None

    def fusion_of(params: Mapping[str, Any]) -> Fusion:
        p = {**start, **params}
        weight = p["weight"]
        method = p["method"]
        weights = (float(weight),) if weight is not None and method != "rrf" else None
        if method == "rrf":
            weights = None
        return Fusion(method, p["norm"], weights, float(p["rrf_k"]), p["fusion_depth"])

    def make(params: Mapping[str, Any], batch: QueryBatch) -> tuple[Any, dict[str, list[Any]] | None]:
        fused = HybridNode(tuple(inputs), name=strategy, fusion=fusion_of(params))
        replaced = None
        if bm25 is not None:
            k1 = params.get("bm25_k1", start["bm25_k1"])
            b = params.get("bm25_b", start["bm25_b"])
            if (k1, b) != (start["bm25_k1"], start["bm25_b"]):
                replaced = {"fulltext": bm25.answers(k1, b, batch, depth)}
        return fused, replaced

    def describe(params: Mapping[str, Any]) -> dict[str, Any]:
        p = {**start, **params}
        out = {"fusion": fusion_of(p).text()}
        if bm25 is not None:
            out.update(bm25_k1=p["bm25_k1"], bm25_b=p["bm25_b"])
        return out

    return Target(strategy, "hybrid", texts, built.nodes, inputs, depth, k, make, start, reuse=reuse,
                  describe=describe)


class _Bm25:
    """BM25 searches with other k1 and b over the run's index (weights kept in memory only): the
    built-in's, or a full-text variant's over its documents or chunks (``node``: the variant's)."""

    def __init__(self, built: Any, settings: Any, node: Any = None) -> None:
        from searchgrade.indexes.variants.nodes import ChunkedNode

        self.chunked = node if isinstance(node, ChunkedNode) else None
        searcher = (self.chunked.component.searcher if self.chunked is not None
                    else node.searcher if node is not None else built.context.fulltext())
        self.index = searcher.index
        self.index.save_weights = False  # trials' weights stay out of the index folder
        self.start = (searcher.k1, searcher.b) if node is not None else (settings.bm25_k1, settings.bm25_b)
        self.last: tuple[float, float] | None = None

    def node(self, k1: float, b: float) -> Any:
        from dataclasses import replace

        from searchgrade.indexes.builtin.fulltext import FulltextNode, FulltextSearcher
        from searchgrade.indexes.variants.nodes import ChunkedNode

        if self.last is not None and self.last != (k1, b) and self.last != self.start:
            self.index.forget(*self.last)  # memory stays flat over many trials
        self.last = (k1, b)
        searcher = FulltextSearcher(self.index, k1, b)
        if self.chunked is not None:
            chunked = self.chunked
            return ChunkedNode(chunked.name, replace(chunked.component, searcher=searcher), chunked.how,
                               chunked.batch_size)
        return FulltextNode(searcher)

    def answers(self, k1: float, b: float, batch: QueryBatch, depth: int) -> list[Outcome]:
        return self.node(k1, b).answer(batch, depth, {})


def _fulltext_target(strategy: str, built: Any, settings: Any, space: Space, texts: Mapping[str, str],
                     k: int, spec: Any, reuse: bool) -> Target:
    variant = built.nodes[strategy] if spec is not None else None  # a kind = "fulltext" variant's own index
    bm25 = _Bm25(built, settings, variant)
    start = {"bm25_k1": bm25.start[0], "bm25_b": bm25.start[1]}

    def make(params: Mapping[str, Any], batch: QueryBatch) -> tuple[Any, None]:
        p = {**start, **params}
        return bm25.node(p["bm25_k1"], p["bm25_b"]), None

    return Target(strategy, "fulltext", texts, built.nodes, [], k, k, make, start, reuse=reuse,
                  describe=lambda params: {**start, **params})


def _rerank_target(strategy: str, built: Any, settings: Any, space: Space, texts: Mapping[str, str],
                   k: int, spec: Any, reuse: bool) -> Target:
    from searchgrade.indexes.rerank.cross_encoder import RerankNode

    node = built.nodes[strategy]
    start = {"rerank_depth": node.depth}
    depth = max(_space_max(space, "rerank_depth", 0), node.depth, k)

    def make(params: Mapping[str, Any], batch: QueryBatch) -> tuple[Any, None]:
        d = int({**start, **params}["rerank_depth"])
        return RerankNode(strategy, node.base, node.shared, d, node.contents, capped=node.capped), None

    return Target(strategy, "rerank", texts, built.nodes, [node.base], depth, k, make, start, reuse=reuse,
                  describe=lambda params: {**start, **params})


def _declared_target(strategy: str, built: Any, settings: Any, space: Space, texts: Mapping[str, str],
                     k: int, spec: Any, reuse: bool) -> Target:
    from searchgrade.indexes.declared.http import HttpNode

    start = {name: value for name, value in template_variables(spec).items()}
    missing = [p.name for p in space.params if start.get(p.name) is None]
    if missing:
        raise SearchGradeError(f"strategy {strategy}: {{{{{missing[0]}}}}} has no starting value: add variables = "
                               f"{{ {missing[0]} = ... }} to its declaration (the value the run used)")
    counter = _Counter()

    class CountingNode(HttpNode):
        def request(self, query: str, k: int) -> Any:
            counter.add()
            return super().request(query, k)

    def make(params: Mapping[str, Any], batch: QueryBatch) -> tuple[Any, None]:
        values = {**start, **params}
        options = {**spec.options, "variables": values}
        return CountingNode(replace(spec, options=options)), None

    return Target(strategy, "declared", texts, built.nodes, [], k, k, make, start, calls=counter.total,
                  reuse=reuse, describe=lambda params: {**start, **params})


def _ivf_target(strategy: str, built: Any, settings: Any, space: Space, texts: Mapping[str, str],
                k: int, spec: Any, reuse: bool) -> Target:
    """IVF nprobe trials: the queries embedded once, each trial one index search per query."""
    import time

    import faiss

    from searchgrade.indexes.builtin.ann import encode

    searcher = built.context.ann()
    ivf = faiss.extract_index_ivf(searcher.index)
    start = {"ivf_nprobe": int(ivf.nprobe)}
    embedded: dict[str, tuple[Any, float]] = {}

    class IvfNode:
        name = strategy
        inputs: tuple[str, ...] = ()

        def __init__(self, nprobe: int) -> None:
            self.nprobe = min(int(nprobe), ivf.nlist)

        def input_depth(self, depth: int) -> int:
            return depth

        def answer(self, batch: QueryBatch, depth: int,
                   inputs: Mapping[str, Sequence[Outcome]]) -> list[Outcome]:  # noqa: ARG002 - the node contract's signature
            missing = [i for i, q in enumerate(batch.ids) if q not in embedded or not reuse]
            if missing:
                began = time.perf_counter()
                vectors = encode(searcher.model, [batch.texts[i] for i in missing], batch_size=settings.batch_size)
                share = (time.perf_counter() - began) / len(missing)
                for i, vector in zip(missing, vectors, strict=True):
                    embedded[batch.ids[i]] = (vector, share)
            ivf.nprobe = self.nprobe
            return answer_each([embedded[qid][0] for qid in batch.ids],
                               lambda vector: Found(searcher.search_vectors(vector[None, :], depth)[0]),
                               shares=[embedded[qid][1] for qid in batch.ids])

    def make(params: Mapping[str, Any], batch: QueryBatch) -> tuple[Any, None]:
        return IvfNode({**start, **params}["ivf_nprobe"]), None

    return Target(strategy, "ann-ivf", texts, built.nodes, [], k, k, make, start, reuse=reuse,
                  describe=lambda params: {**start, **params})


class _Counter:
    def __init__(self) -> None:
        import threading

        self.lock = threading.Lock()
        self.n = 0

    def add(self) -> None:
        with self.lock:
            self.n += 1

    def total(self) -> int:
        return self.n


_MAKERS = {"hybrid": _fusion_target, "fulltext": _fulltext_target, "rerank": _rerank_target,
           "declared": _declared_target, "ann-ivf": _ivf_target}
