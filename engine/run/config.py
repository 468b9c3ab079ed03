"""A run's configuration: what it evaluates, how it grades, and with which settings.

``RunConfig`` is stored with every run (as JSON), so a run can be repeated, compared and resumed.

Modes (``MODES``):

- ``qrels``: the collection's queries with human judgments; unjudged results count as 0.
- ``llm``: an LLM writes queries for a seeded sample of documents (or ``queries_from`` reuses a
  stored run's queries) and judges every unique (query, result) pair plus each query's source
  document on the 0-3 scale (relevant: grade >= 2).
- ``qrels`` with ``llm`` settings: human grades win; the judge grades the retrieved pairs the
  humans graded (judge-vs-human agreement) and, with ``judge_unjudged``, the retrieved pairs the
  qrels miss (label source "human+llm").
- ``clicks``: the queries of a query set sampled from a query log (``query_set``), graded by a
  click model over the log's clicks (engine/run/clicks.py); with ``llm`` settings, the judge's
  agreement with the clicks is measured as judge-vs-human is. ``query_set`` in mode ``llm``
  evaluates the set's queries instead of generated ones.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.run.strategies import Registry, known_strategies, registry_for_declared
from searchgrade.indexes.declared.spec import check_environment as spec_check_environment
from searchgrade.indexes.settings import IndexSettings

if TYPE_CHECKING:
    from searchgrade.engine.llm.judge import JudgeSettings
    from searchgrade.engine.llm.querygen import QueryGenSettings
    from searchgrade.engine.llm.settings import LLMSettings

MODES = ("qrels", "llm", "clicks")
#: Relevant on the judge's 0-3 scale.
JUDGE_THRESHOLD = 2
#: The judge's top grade.
JUDGE_MAX_GRADE = 3


@dataclass(frozen=True)
class RunConfig:
    """What a run does. Stored with the run (as JSON) so it can be repeated, compared and resumed."""

    name: str | None = None
    mode: str = "qrels"
    k: int = 10
    #: Results kept per query and strategy; metrics at any k up to it come from stored results.
    depth: int | None = None
    threshold: int | None = None
    strategies: tuple[str, ...] = field(default_factory=known_strategies)
    #: Mode qrels: evaluate a seeded sample of this many queries (None: all with judgments).
    #: Mode llm sets its query count with querygen (n_docs and queries per document).
    max_queries: int | None = None
    seed: int = 0
    n_bootstrap: int = 10_000
    #: None means the defaults.
    index: IndexSettings | None = None
    #: engine.llm.settings.LLMSettings. Mode "llm" with None: model from $SEARCHGRADE_LLM_MODEL,
    #: endpoint from $OPENAI_BASE_URL. Mode "qrels" with settings: the judge runs too.
    llm: LLMSettings | None = None
    querygen: QueryGenSettings | None = None  # None means the defaults
    judge: JudgeSettings | None = None  # None means the defaults
    #: Mode "llm": evaluate the queries stored with this run instead of generating new ones.
    queries_from: str | None = None
    #: Mode "qrels" with llm: also judge the retrieved pairs the qrels miss, and use those grades.
    judge_unjudged: bool = False
    #: A panel of judges (engine/judges/spec.py): each ``NAME`` (a model on the run's endpoint) or
    #: ``NAME@URL`` judges every retrieved pair; the panel's grade is the run's judge grade.
    judges: tuple[str, ...] = ()
    #: Judge name -> US dollars per million tokens (prompt and completion alike).
    judge_prices: dict[str, float] = field(default_factory=dict)
    #: How the panel's grades become one: "median" (the lower median) or "mean" (rounded).
    judge_aggregate: str = "median"
    #: Judge name -> where its own endpoint was typed ("app" / "exposed app": every connection to
    #: it goes through the outbound policy, as ``LLMSettings.declared_in``); absent: the operator's.
    judges_declared_in: dict[str, str] = field(default_factory=dict)
    #: How the collection was loaded (id_field, title_field, text_field), so a resume loads it alike.
    collection_fields: dict[str, str] = field(default_factory=dict)
    #: Strategies declared in a strategies file: name -> declaration as written (``env:`` values
    #: stay ``env:NAME``: secrets are read from the environment when the run builds them).
    declared: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: A query set sampled from a query log (engine/traffic/): its queries, in mode llm or clicks.
    query_set: str | None = None
    #: Mode clicks: the click model (engine/clicks/models.py CLICK_MODELS) and the fewest
    #: impressions a pair needs to be judged.
    click_model: str | None = None
    min_impressions: int = 10
    #: The judging pool (engine/run/pool.py): how deep each strategy's list goes into what the judge
    #: grades (``PoolDepth.to_json``); None: every kept result.
    pool_depth: dict[str, Any] | None = None
    #: Rerankers declared in the strategies file (``[reranker.NAME]``): name -> declaration as
    #: written; ``X_NAME`` strategies of ``strategies`` rerank X with them.
    rerankers: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The first strategy failure fails the run (``evaluate --strict``: all or nothing, for CI);
    #: otherwise a strategy fails alone and the run completes with it recorded as failed.
    strict: bool = False
    #: Sweeps (``[sweep.NAME]``, ``--sweep FILE``): name -> the grid (indexes/variants/sweep.py Sweep);
    #: its variants are in ``declared`` and ``strategies``, compared with its reference.
    sweeps: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        from searchgrade.indexes.declared.rerankers import note_rerankers

        note_rerankers(self.rerankers)  # X_NAME pairs with X wherever this run's names are read

    def check_environment(self) -> None:
        """Every ``env:NAME`` the chosen declared strategies read is set (SearchGradeError if not)."""
        registry = self.registry()
        for name in self.strategies:
            spec = registry.declared.get(registry.info(name).reranks or name)
            if spec is not None:
                spec_check_environment(spec)
        for name in self.rerankers_used(registry):
            spec_check_environment(registry.rerankers[name])

    def rerankers_used(self, registry: Registry | None = None) -> list[str]:
        """The declared rerankers this run's strategies use (``X_NAME``, and ``--reranker-model NAME``)."""
        registry = registry or self.registry()
        used = {registry.info(s).reranker for s in self.strategies if s in registry.infos}
        default = self.index.reranker_model if self.index is not None else None
        if default in registry.rerankers and any(registry.info(s).reranks and registry.info(s).reranker is None
                                                 for s in self.strategies if s in registry.infos):
            used.add(default)
        return [n for n in registry.rerankers if n in used]

    def registry(self) -> Registry:
        """The strategies this run can use: the built-ins, plugins, and its declared ones."""
        registry = registry_for_declared(self.declared, self.rerankers)
        for name in self.strategies:  # X_NAME added by --rerankers (not by a declaration's rerank)
            base, _, reranker = name.rpartition("_")
            if name not in registry.infos and reranker in registry.rerankers and base in registry.infos:
                registry.add_reranked(base, reranker)
        return registry

    @property
    def retrieval_depth(self) -> int:
        return self.depth if self.depth is not None else self.k

    @property
    def uses_llm(self) -> bool:
        return self.mode == "llm" or self.llm is not None

    def validate(self) -> None:
        if self.mode not in MODES:
            raise SearchGradeError(f"mode {self.mode!r} is not one of {', '.join(MODES)}")
        if self.k < 1:
            raise SearchGradeError(f"--k of {self.k} must be at least 1")
        if self.retrieval_depth < self.k:
            raise SearchGradeError(
                f"--depth of {self.retrieval_depth} is smaller than --k of {self.k}; set --depth >= --k"
            )
        registry = self.registry()
        unknown = registry.unknown(self.strategies)
        if unknown or not self.strategies:
            raise SearchGradeError(f"unknown strategies {unknown or '(none given)'}; "
                                   f"choose from {', '.join(registry.names())}")
        if self.max_queries is not None and self.max_queries < 1:
            raise SearchGradeError(f"--max-queries of {self.max_queries} must be at least 1")
        if self.threshold is not None and self.threshold < 1:
            raise SearchGradeError(
                f"--threshold of {self.threshold} must be at least 1 (a grade of 0 is never relevant)"
            )
        if self.mode == "llm" and self.threshold is not None and self.threshold > JUDGE_MAX_GRADE:
            raise SearchGradeError(
                f"--threshold of {self.threshold} is above the judge's top grade ({JUDGE_MAX_GRADE}); "
                "use 1, 2 or 3"
            )
        if self.queries_from is not None and self.mode != "llm":
            raise SearchGradeError("--queries-from goes with --llm (it reuses generated queries)")
        self._validate_judges()
        if self.judge_unjudged and (self.mode not in ("qrels", "clicks") or self.llm is None):
            raise SearchGradeError("--judge-unjudged goes with --qrels --llm or --clicks --llm (human or click "
                                   "grades first, the judge for the rest)")
        for name, sweep in self.sweeps.items():  # a sweep is compared with a strategy the run has
            missing = [s for s in [*sweep.get("variants", {}), sweep.get("reference")] if s not in self.strategies]
            if missing:
                raise SearchGradeError(f"sweep {name!r} needs {', '.join(map(str, missing))} among the run's "
                                       "strategies: add them to --strategies (or leave --strategies out)")
        if self.pool_depth is not None and not (self.mode == "llm" or self.judge_unjudged):
            raise SearchGradeError("--pool-depth goes with --llm or --judge-unjudged: the pool "
                                   "is what the judge grades (for a stored run: `searchgrade judge-pool RUN`)")
        unknown_pool = sorted(set((self.pool_depth or {}).get("per_strategy") or {}) - set(self.strategies))
        if unknown_pool:
            raise SearchGradeError(f"--pool-depth names {', '.join(unknown_pool)}, not a strategy of this run; "
                                   f"use one of {', '.join(self.strategies)}")
        if self.llm is not None:
            self.llm.validate()
        if self.querygen is not None:
            self.querygen.validate()
        self._validate_traffic()

    def judge_specs(self) -> tuple[Any, ...]:
        """The panel's judges (engine.judges.spec.JudgeSpec), parsed; () for one judge or none."""
        from searchgrade.engine.judges.spec import parse_judge_models

        return parse_judge_models(list(self.judges)) if self.judges else ()

    def _validate_judges(self) -> None:
        from searchgrade.engine.judges.spec import AGGREGATES

        if not self.judges:
            if self.judge_prices:
                raise SearchGradeError("--judge-price goes with --judge-models (it prices a judge of the panel)")
            return
        if self.llm is None or self.mode not in ("qrels", "llm", "clicks"):
            raise SearchGradeError("--judge-models goes with --qrels --llm (the judges measured against human "
                                   "labels), --llm (the panel grades) or --clicks --llm (the panel against the "
                                   "clicks, and with --judge-unjudged for the holes)")
        specs = self.judge_specs()
        unknown = sorted(set(self.judge_prices) - {s.name for s in specs})
        if unknown:
            raise SearchGradeError(f"--judge-price names {', '.join(unknown)}, not a judge of --judge-models")
        if self.judge_aggregate not in AGGREGATES:
            raise SearchGradeError(f"--judge-aggregate {self.judge_aggregate!r} is not one of {', '.join(AGGREGATES)}")

    def _validate_traffic(self) -> None:
        """The query-set and click options fit the mode (engine/run/query_set.py, engine/run/clicks.py)."""
        from searchgrade.engine.clicks.models import CLICK_MODELS

        if self.mode == "clicks":
            if self.query_set is None:
                raise SearchGradeError("--clicks grades the queries of a query set sampled from the log the "
                                       "clicks belong to: add --query-set NAME (make one with `searchgrade "
                                       "queries sample`)",
                                       page="grading by clicks needs a query set of the log: sample one under "
                                       "'Queries from a query log', with 'Grade with the clicks' ticked")
            if self.click_model not in CLICK_MODELS:
                raise SearchGradeError(f"--click-model {self.click_model!r} is not one of {', '.join(CLICK_MODELS)}")
            if self.min_impressions < 1:
                raise SearchGradeError(f"--min-impressions of {self.min_impressions} must be at least 1")
            if self.threshold is not None and self.threshold > JUDGE_MAX_GRADE:
                raise SearchGradeError(f"--threshold of {self.threshold} is above the top click grade "
                                       f"({JUDGE_MAX_GRADE}); use 1, 2 or 3")
        elif self.click_model is not None:
            raise SearchGradeError("--click-model goes with --clicks")
        if self.query_set is not None:
            if self.mode == "qrels":
                raise SearchGradeError("a query set's queries come from a log and have no qrels: grade them with "
                                       "--llm or --clicks")
            if self.queries_from is not None:
                raise SearchGradeError("--queries-from and --query-set both choose the queries: keep one")
            if self.max_queries is not None:
                raise SearchGradeError("--max-queries does not go with --query-set: sample a smaller set instead")

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["strategies"] = list(self.strategies)
        d["judges"] = list(self.judges)
        d["index"] = asdict(self.index) if self.index is not None else None
        # The API key is no field of LLMSettings; to_json also drops credentials in the URL.
        d["llm"] = self.llm.to_json() if self.llm is not None else None
        d["querygen"] = self.querygen.to_json() if self.querygen is not None else None
        d["judge"] = self.judge.to_json() if self.judge is not None else None
        return d

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RunConfig:
        """The config a run stored (`to_json`), e.g. to resume it."""
        from searchgrade.engine.llm.judge import JudgeSettings
        from searchgrade.engine.llm.querygen import QueryGenSettings
        from searchgrade.engine.llm.settings import LLMSettings

        known = {f for f in cls.__dataclass_fields__}
        values = {k: v for k, v in d.items() if k in known}
        values["strategies"] = tuple(values.get("strategies") or known_strategies())
        values["judges"] = tuple(values.get("judges") or ())
        values["judge_prices"] = dict(values.get("judge_prices") or {})
        values["judges_declared_in"] = dict(values.get("judges_declared_in") or {})
        nested = {"index": IndexSettings, "llm": LLMSettings, "querygen": QueryGenSettings,
                  "judge": JudgeSettings}
        for key, settings_cls in nested.items():
            if values.get(key) is not None:
                names = settings_cls.__dataclass_fields__
                values[key] = settings_cls(**{k: v for k, v in values[key].items() if k in names})
        values["collection_fields"] = dict(values.get("collection_fields") or {})
        values["declared"] = dict(values.get("declared") or {})
        values["rerankers"] = dict(values.get("rerankers") or {})
        values["sweeps"] = dict(values.get("sweeps") or {})
        return cls(**values)

