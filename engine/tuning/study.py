"""One tuning study from a stored run to its report, its trials kept in the run store.

``run_study`` prepares the strategy (engine/tuning/setup.py), splits the queries before the first
trial (engine/tuning/split.py), opens or resumes the study in the store (engine/store/tuning.py:
the same run, strategy, metric, space, seed and split are the same study, and its stored trials
are told to the sampler again), tunes and compares (engine/tuning/tuner.py), and keeps the
report. ``configuration_words`` says the winning configuration as the user would type it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from searchgrade.core.records import SearchGradeError
from searchgrade.engine.metrics import METRICS, check_quality, parse_metric
from searchgrade.engine.store.tuning import study_key
from searchgrade.engine.tuning.setup import Tuning, prepare_tuning
from searchgrade.engine.tuning.split import split_queries
from searchgrade.engine.tuning.tuner import TrialRecord, tune

#: Trials when --trials is not given.
DEFAULT_TRIALS = 50


def run_study(store: Any, run_id: str, data_dir: Path, *, strategy: str | None = None,
              space_file: str | None = None, metric: str = "ndcg@10", trials: int = DEFAULT_TRIALS,
              time_budget_s: float | None = None, seed: int = 0,
              on_trial: Callable[[TrialRecord, Tuning], None] | None = None,
              on_ready: Callable[[Tuning, Any], None] | None = None, collection: Any = None,
              only_queries: Any = None, judge_budget: int | None = None) -> dict[str, Any]:
    """Tune one strategy of a stored run and keep the study (see the module).

    Raises:
        SearchGradeError: bad input, one line (the run, the strategy, the space file, the metric,
            --trials, --time-budget).
    """
    if trials < 1:
        raise SearchGradeError(f"--trials of {trials} must be at least 1")
    if time_budget_s is not None and not time_budget_s > 0:
        raise SearchGradeError(f"--time-budget of {time_budget_s} must be a number of seconds > 0")
    spec = parse_metric(metric)
    if spec.name not in METRICS or spec.p is not None:
        raise SearchGradeError(f"--metric {metric}: the tuner maximises a metric without parameters, e.g. ndcg@10")
    record = check_quality(spec.key, "--metric")
    if not record.higher_is_better:
        raise SearchGradeError(f"--metric {metric}: the tuner maximises, and lower is better for "
                               f"{record.label.lower()}: tune its twin (share relevant: pct_relevant) or e.g. ndcg@10")
    run = store.get_run(run_id)
    spec.check_threshold(run.threshold)
    tuning = prepare_tuning(store, run.run_id, data_dir, strategy=strategy, space_file=space_file,
                            collection=collection, only_queries=only_queries,
                            judge_budget=judge_budget)
    tuning.target.k = max(tuning.k, spec.k or 0)
    try:
        split = split_queries(tuning.query_ids, tuning.query_types, seed=seed)
    except ValueError as exc:
        raise SearchGradeError(f"run {run.run_id}: {exc}") from None
    if on_ready is not None:
        on_ready(tuning, split)
    sid = study_key(run.run_id, tuning.target.strategy, spec.label, tuning.space.to_json(), seed, split.to_json())
    resumed = store.open_tuning_study(sid, run.run_id, tuning.target.strategy, spec.label, tuning.space.to_json(),
                                      seed, split.to_json())
    stored: dict[int, list[TrialRecord]] = {}
    for row in store.tuning_trials(sid):
        stored.setdefault(row["fold"], []).append(TrialRecord(**row))

    def keep(record: TrialRecord) -> None:
        store.add_tuning_trial(sid, record)
        if on_trial is not None:
            on_trial(record, tuning)

    report = tune(tuning.target, tuning.grades, split, tuning.space, spec, k=tuning.target.k,
                  threshold=tuning.threshold, trials=trials, time_budget_s=time_budget_s, seed=seed,
                  stored=stored, on_trial=keep, judge=tuning.judge)
    if tuning.judge is not None:  # the run's accounting keeps the tuning's judge calls apart from its own
        usage = tuning.judge.client.usage.snapshot().get("judge")
        if usage:
            store.add_llm_usage(run.run_id, "tune-judge", usage)
    report.update(study=sid, run=run.run_id, resumed=resumed, resumed_trials=sum(map(len, stored.values())),
                  kind=tuning.target.kind, label_source=tuning.label_source, space=tuning.space.to_json(),
                  seed=seed, configuration=configuration_words(tuning.target.kind, tuning.target.strategy,
                                                               report["best"], _declared(store, run)))
    store.finish_tuning_study(sid, report)
    return report


def _declared(store: Any, run: Any) -> Mapping[str, Any]:
    return dict(run.config.get("declared") or {})


def _value(v: Any) -> str:
    return f'"{v}"' if isinstance(v, str) else f"{v:g}" if isinstance(v, float) else str(v)


def configuration_words(kind: str, strategy: str, best: Mapping[str, Any],
                        declared: Mapping[str, Any]) -> dict[str, str]:
    """The winning configuration as typed: ``flags`` (command line) and/or ``snippet`` (a
    strategies file's table)."""
    if strategy in declared:
        table = dict(declared[strategy])
        lines = [f"[strategy.{strategy}]"]
        if kind == "hybrid":
            table["fusion"] = best["fusion"]
            table.pop("rrf_k", None)  # the fusion string carries its k and depth
            table.pop("depth", None)
        elif kind == "fulltext":  # a BM25 variant (indexes/variants/): its own k1 and b
            table.update(best)
        else:
            table["variables"] = {**(table.get("variables") or {}), **best}
        for key, value in table.items():
            if key in ("source", "declared_in") or value is None:
                continue
            if isinstance(value, dict):
                inner = ", ".join(f"{k} = {_value(v)}" for k, v in value.items())
                lines.append(f"{key} = {{ {inner} }}")
            elif isinstance(value, list):
                lines.append(f"{key} = [{', '.join(_value(v) for v in value)}]")
            elif isinstance(value, bool):
                lines.append(f"{key} = {'true' if value else 'false'}")
            else:
                lines.append(f"{key} = {_value(value)}")
        words = {"snippet": "\n".join(lines)}
        if "bm25_k1" in best and kind != "fulltext":  # the built-in full-text inside a declared hybrid: the command line's
            words["flags"] = f"--bm25-k1 {best['bm25_k1']:g} --bm25-b {best['bm25_b']:g}"
        return words
    flags = []
    if "fusion" in best:
        flags.append(f"--fusion '{best['fusion']}'")
    if "bm25_k1" in best:
        flags += [f"--bm25-k1 {best['bm25_k1']:g}", f"--bm25-b {best['bm25_b']:g}"]
    if "rerank_depth" in best:
        flags.append(f"--rerank-depth {int(best['rerank_depth'])}")
    if "ivf_nprobe" in best:
        flags.append(f"--ann-index ivf --ivf-nprobe {int(best['ivf_nprobe'])}")
    return {"flags": " ".join(flags)}
