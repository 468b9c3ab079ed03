"""The LLM's part of a run: the judge and query generator, calls and tokens, failures, source
found@k and judge-vs-human agreement."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from searchgrade.engine.run.scoring import SOURCE_FOUND
from searchgrade.engine.store import RunRecord, Store
from searchgrade.viewmodels.common import metric_rows

STAGE_LABELS = {"querygen": "Query generation", "judge": "Judge"}
USAGE_COLUMNS = {"requests": "Calls", "ok": "Valid replies", "failures": "Failed",
                 "invalid_replies": "Invalid replies", "retries": "Retries", "cache_hits": "Cache hits",
                 "prompt_tokens": "Prompt tokens", "completion_tokens": "Completion tokens",
                 "latency_s": "Time in calls (s)"}


@dataclass
class AgreementView:
    """Judge vs human labels on the pairs both graded (runs.stats["agreement"])."""

    n: int
    exact: float | None
    #: Measure, Value, Reading (Landis & Koch), What it compares.
    kappas: pd.DataFrame
    #: Rows "Judge g", columns "Human g": pairs per (judge grade, human grade).
    confusion: pd.DataFrame


@dataclass
class LLMPanel:
    judge_model: str | None
    judge_prompt: str | None
    querygen_model: str | None
    querygen_prompt: str | None
    output_mode: str | None
    #: The run whose queries this run reused (queries_from).
    queries_from: str | None
    #: One row per LLM stage: Stage, Calls, Valid replies, Failed, ..., Prompt/Completion tokens.
    usage: pd.DataFrame
    #: Pairs the judge graded (or tried to) in this run.
    pairs: int | None
    judge_failures: int
    failure_reasons: dict[str, int]
    #: Query id, Query, Type, Doc id, Title, Reason: the failed pairs stored with the run.
    failures: pd.DataFrame
    #: Whether the failures are in the metrics (False: qrels runs judging only for agreement).
    failures_in_metrics: bool
    #: Strategy, strategy, value, ci_low, ci_high, n: source found@k (generated queries only).
    source_found: pd.DataFrame
    #: Queries per type (natural, keyword, ...).
    query_types: dict[str, int]
    agreement: AgreementView | None


def usage_table(usage: dict[str, dict[str, float]]) -> pd.DataFrame:
    """A run's (or a job's) LLM accounting, one row per stage, query generation first."""
    order = [s for s in STAGE_LABELS if s in usage] + sorted(s for s in usage if s not in STAGE_LABELS)
    rows = [{"Stage": STAGE_LABELS.get(stage, stage.replace("judge:", "Judge ", 1)),
             **{title: usage[stage].get(name, 0) for name, title in USAGE_COLUMNS.items()}}
            for stage in order]
    frame = pd.DataFrame(rows, columns=["Stage", *USAGE_COLUMNS.values()])
    ints = [t for n, t in USAGE_COLUMNS.items() if n != "latency_s"]
    return frame.astype({c: "int64" for c in ints})


def kappa_reading(kappa: float | None) -> str:
    """Landis & Koch's words for a kappa."""
    if kappa is None or (isinstance(kappa, float) and math.isnan(kappa)):
        return "undefined (one label throughout)"
    for bound, word in ((0.0, "poor"), (0.2, "slight"), (0.4, "fair"), (0.6, "moderate"),
                        (0.8, "substantial")):
        if kappa <= bound:
            return word
    return "almost perfect"


def agreement_view(stats: dict[str, Any], human_threshold: int) -> AgreementView | None:
    if not stats or not stats.get("n"):
        return None
    rows = [
        ("Cohen's kappa", stats.get("kappa"), "grades as categories"),
        ("Weighted kappa (linear)", stats.get("kappa_linear"),
         "grades as an ordinal scale: 2 vs 3 is a smaller disagreement than 0 vs 3"),
        ("Weighted kappa (quadratic)", stats.get("kappa_quadratic"), "as linear, squared distances"),
        ("Kappa, relevant or not", stats.get("kappa_binary"),
         f"judge grade ≥ 2 vs human grade ≥ {human_threshold}"),
    ]
    kappas = pd.DataFrame([{"Measure": m, "Value": v, "Reading": kappa_reading(v), "Compares": what}
                           for m, v, what in rows])
    labels = stats.get("labels", [])
    confusion = pd.DataFrame(stats.get("confusion", []), index=[f"Judge {g}" for g in labels],
                             columns=[f"Human {g}" for g in labels])
    return AgreementView(int(stats["n"]), stats.get("exact"), kappas, confusion)


def llm_panel(store: Store, run: RunRecord, table: pd.DataFrame) -> LLMPanel:
    """The LLM's part of a run at the cut-off of `table` (the run's summary at k)."""
    stats = run.stats or {}
    judge = stats.get("llm", {})
    querygen = stats.get("querygen", {})
    failures = pd.DataFrame(store.judge_failures(run.run_id),
                            columns=["query_id", "text", "query_type", "doc_id", "title", "model", "reason"])
    failures = failures.drop(columns="model").rename(columns={
        "query_id": "Query id", "text": "Query", "query_type": "Type", "doc_id": "Doc id",
        "title": "Title", "reason": "Reason"})
    in_metrics = run.mode == "llm" or bool(run.config.get("judge_unjudged"))
    count = len(failures) if (in_metrics and run.status == "complete") else int(judge.get("judge_failures", 0))
    found = metric_rows(table, SOURCE_FOUND) if not table.empty else pd.DataFrame()
    types = store.query_type_counts(run.run_id)
    llm_config = run.config.get("llm") or {}
    prompt = judge.get("prompt_version")
    if prompt and (run.config.get("judge") or {}).get("prompt_text") is not None:
        prompt += " (a user prompt file)"
    return LLMPanel(
        judge_model=judge.get("model") or llm_config.get("model"),
        judge_prompt=prompt,
        querygen_model=querygen.get("model"),
        querygen_prompt=querygen.get("prompt_version"),
        output_mode=judge.get("output_mode"),
        queries_from=stats.get("queries_from") or run.config.get("queries_from"),
        usage=usage_table(store.llm_usage(run.run_id)),
        pairs=judge.get("pairs"),
        judge_failures=count,
        failure_reasons=dict(judge.get("failure_reasons", {})),
        failures=failures,
        failures_in_metrics=in_metrics,
        source_found=found,
        query_types=types,
        agreement=agreement_view(stats.get("agreement", {}), run.threshold),
    )
