"""What the Results page's Tune section shows, from the store: a run's latest tuning study, its
trials with the Pareto front of quality against p95 latency, and the held-out comparison in words.
Pure reads and arithmetic; the page draws them (views/_tune.py)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from searchgrade.engine.run.settings_words import setting_name, setting_value
from searchgrade.engine.tuning.apply import tuned_run_parts
from searchgrade.engine.tuning.judging import DEFAULT_JUDGE_BUDGET  # the Tune section's judge budget, as the CLI's

__all__ = ["DEFAULT_JUDGE_BUDGET", "UNTUNABLE", "TuneView", "comparison_words", "configuration_words",
           "pareto_flags", "trial_table", "tune_view", "tuned_run_parts"]

#: Left out of the section's choices: ANN is exact search below 200,000 documents (nothing to tune);
#: an IVF index's nprobe is tuned from the command line (`searchgrade tune RUN --strategy ann`).
UNTUNABLE = ("ann",)


@dataclass
class TuneView:
    study: dict[str, Any] | None
    #: One row per trial: fold, trial, value, judged, p95_ms, pareto, and the parameters.
    trials: list[dict[str, Any]] = field(default_factory=list)
    best_so_far: float | None = None


def pareto_flags(points: Sequence[tuple[float, float]]) -> list[bool]:
    """For each (quality, latency) point: True when no other point is at least as good on both
    and better on one (higher quality, lower latency)."""
    out = []
    for i, (q, t) in enumerate(points):
        dominated = any((q2 >= q and t2 <= t) and (q2 > q or t2 < t) for j, (q2, t2) in enumerate(points) if j != i)
        out.append(not dominated)
    return out


def tune_view(store: Any, run_id: str) -> TuneView:
    """The latest study of a run (running or complete) and its trials."""
    studies = store.tuning_studies(run_id)
    if not studies:
        return TuneView(None)
    study = studies[0]
    rows = store.tuning_trials(study["study_id"])
    trials = [{"fold": r["fold"], "trial": r["number"] + 1, "value": r["value"], "judged": r["judged"],
               "p95_ms": r["p95_ms"], "calls": r["calls"], **{f"param {k}": v for k, v in r["params"].items()}}
              for r in rows]
    # The front of the study the recommendation comes from (fold 0, or every query in k-fold).
    main = -1 if any(r["fold"] == -1 for r in rows) else 0
    mine = [t for t in trials if t["fold"] == main]
    for t, flag in zip(mine, pareto_flags([(t["value"], t["p95_ms"]) for t in mine]), strict=True):
        t["pareto"] = flag
    for t in trials:
        t.setdefault("pareto", False)
    best = max((t["value"] for t in mine), default=None)
    return TuneView(study, trials, best)


def comparison_words(report: dict[str, Any]) -> list[str]:
    """The held-out comparison as sentences."""
    h = report["heldout"]
    split = report["split"]
    how = (f"{len(split['heldout'])} queries, each held out once ({len(split.get('folds') or [])}-fold)"
           if split["method"] == "k-fold" else
           f"{len(split['heldout'])} held-out queries (tuned on {len(split['tuning'])} others)")
    s, t = h["start"], h["tuned"]
    judged = []
    judge = report.get("judge")
    if judge:  # an LLM-judged run (engine/tuning/judging.py)
        sent = judge["pairs_judged"]
        judged.append(f"The run's LLM judge graded {sent['tuning']} new pairs during tuning (budget {judge['budget']}) "
                      f"and {sent['heldout']} for the held-out comparison, {judge['cache_hits']} from the cache "
                      f"({judge['requests']['total']} requests)"
                      + (f"; {judge['unjudged_over_budget']} new pairs stayed unjudged once the budget was spent."
                         if judge["unjudged_over_budget"] else "."))
    return [
        (f"On {how}: the starting configuration's {h['metric']} is {s['value']:.4f} (95% CI {s['ci_low']:.4f} to "
         f"{s['ci_high']:.4f}), the tuned one's {t['value']:.4f} (95% CI {t['ci_low']:.4f} to {t['ci_high']:.4f})."),
        h["verdict"][0].upper() + h["verdict"][1:] + ".",
        f"The tuner read held-out grades {report['heldout_grade_reads']} times while tuning.",
        *judged,
    ]


def configuration_words(params: dict[str, Any]) -> str:
    """A configuration of tuned parameters in the words every page uses for settings
    (engine/run/settings_words.py): "BM25 k1 0.9, BM25 b 0.4"."""
    return ", ".join(f"{setting_name(k)} {setting_value(k, v)}" for k, v in params.items()) or "the run's own"


def trial_table(trials: list[dict[str, Any]], metric: str) -> list[dict[str, Any]]:
    """The trials as the page shows them: named columns, the metric by its label ("DCG@10"), each
    parameter by its name in words."""
    out = []
    for t in trials:
        row = {"Fold": "all queries" if t["fold"] < 0 else t["fold"], "Trial": t["trial"], metric: t["value"],
               "Judged": t["judged"], "p95 latency (ms)": t["p95_ms"], "Backend calls": t["calls"],
               "Pareto front": "yes" if t["pareto"] else ""}
        row.update({setting_name(k.removeprefix("param ")): v for k, v in t.items() if k.startswith("param ")})
        out.append(row)
    return out
