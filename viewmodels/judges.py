""""Can I trust the judge?": what Results, Review, `searchgrade judges` and the MCP tool show of a
run's judges, from engine/judges/report.py, in words and tables: decisions first, then stability,
then item agreement, then what each judge costs and which to use.

``judges_json`` is the contract of `searchgrade judges RUN --format json` (and the MCP tool's
``judges`` list): ``{"judges": [{model, pairs, queries, kappa_w, kappa_w_ci, bias, bias_ci, tau,
tau_ci, decision_agreement, decision_agreement_ci, retest_agreement, cost_per_1000_pairs,
recommended}]}``, the panel as model "panel", a figure below its minimum null.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pandas as pd

from searchgrade.engine.judges.calibration import calibration_record
from searchgrade.engine.judges.report import MIN_PAIRS, JudgeFigures, JudgeReport, judge_report
from searchgrade.engine.judges.spec import PANEL
from searchgrade.engine.judges.suite import SEPARATOR, SuiteDecisions, suite_decisions
from searchgrade.engine.metrics import metric_record
from searchgrade.engine.run.strategies import label
from searchgrade.engine.statistics.decisions import DecisionAgreement, PairVerdict
from searchgrade.engine.statistics.judge_vs_human import Estimate
from searchgrade.engine.store import Store
from searchgrade.viewmodels.common import Sentence, metric_label, plural


def page_metric(metric: str, k: int) -> tuple[str, str | None]:
    """The metric@k a page's section reads decisions on: the page's, unless it reads which results
    were judged (both sides grade every result here), then DCG@k; and the words saying so."""
    record = metric_record(metric)
    if record.unjudged or record.diagnostic or record.function is None:
        return f"dcg@{k}", (f"Decisions are read on DCG@{k}: {metric_label(metric, k)} does not compare grades "
                            "(both sides here grade every result).")
    return f"{metric}@{k}", None


def judge_words(name: str) -> str:
    """The words a judge goes by in sentences."""
    return "The panel" if name == PANEL else f"The judge {name}"


def _ci(e: Estimate | None) -> list[float] | None:
    return None if e is None or e.low is None else [e.low, e.high]


def _value(e: Estimate | None) -> float | None:
    return None if e is None else e.value


def _item(f: JudgeFigures, attribute: str) -> Estimate | None:
    """An item-agreement figure, None below MIN_PAIRS pairs."""
    return getattr(f.item, attribute) if f.item.n_pairs >= MIN_PAIRS else None


def judges_json(report: JudgeReport) -> dict[str, Any]:
    """The `searchgrade judges --format json` document (see the module)."""
    out = []
    for f in report.judges:
        decision = f.decision
        retest = f.stability.retest.exact.value if f.stability is not None else None
        out.append({
            "model": f.name, "pairs": f.pairs, "queries": decision.n_queries if decision else 0,
            "kappa_w": _value(_item(f, "kappa_linear")), "kappa_w_ci": _ci(_item(f, "kappa_linear")),
            "bias": _value(_item(f, "bias")), "bias_ci": _ci(_item(f, "bias")),
            "tau": _value(decision.tau if decision else None), "tau_ci": _ci(decision.tau if decision else None),
            "decision_agreement": _value(decision.agreement if decision else None),
            "decision_agreement_ci": _ci(decision.agreement if decision else None),
            "retest_agreement": retest, "cost_per_1000_pairs": f.cost.to_json(), "recommended": f.recommended,
        })
    return {"judges": out}


def _pct(e: Estimate) -> str:
    interval = f" (95% CI {e.low:.0%} to {e.high:.0%})" if e.low is not None else ""
    return f"{e.value:.0%}{interval}"


def _num(e: Estimate | None, spec: str = ".2f") -> str:
    if e is None or e.value is None:
        return "–"
    interval = f" ({e.low:{spec}} to {e.high:{spec}})" if e.low is not None else ""
    return f"{e.value:{spec}}{interval}"


def _system(name: str) -> str:
    """A strategy's label, or "run R: strategy" for a suite's system."""
    if SEPARATOR in name:
        run, strategy = name.split(SEPARATOR, 1)
        return f"{label(strategy)} in run {run}"
    return label(name)


def verdict_words(v: PairVerdict, who: str) -> str:
    """One comparison the judge decides differently from people, in words."""
    a, b = _system(v.a), _system(v.b)
    people, judge = v.people_winner, v.proxy_winner
    if v.kind == "proxy only":
        loser = b if judge == v.a else a
        return f"{who} calls {_system(judge)} better than {loser}; people's grades cannot tell them apart."
    if v.kind == "people only":
        loser = b if people == v.a else a
        return f"People's grades put {_system(people)} ahead of {loser}; {who.lower()} cannot tell them apart."
    return (f"{who} reverses people's verdict on {a} vs {b}: people put {_system(people)} ahead, "
            f"{who.lower()} {_system(judge)}.")


def decision_sentence(name: str, d: DecisionAgreement, metric: str, failures: int = 0) -> Sentence:
    """ "The panel picks the same winner as people in 9 of 10 comparisons on DCG@10 (90%; 95% CI ...)";
    ``failures``: the judge's failed judgments, which count 0 in its metric as in the run's."""
    who = judge_words(name)
    if d.agreement.value is None:
        return Sentence(f"{who}: no decision to compare. " + " ".join(d.notes), "warn")
    a = d.agreement
    interval = f"; 95% CI {a.low:.0%} to {a.high:.0%}" if a.low is not None else ""
    tau = ""
    if d.tau.value is not None:
        tau_ci = f", 95% CI {d.tau.low:.2f} to {d.tau.high:.2f}" if d.tau.low is not None else ""
        tau = f". It orders the strategies with Kendall's tau {d.tau.value:.2f}{tau_ci} against people's order"
    kind = "good" if d.agreeing == d.compared else ("warn" if a.value < 0.75 else "info")
    failed = (f" {plural(failures, 'judgment', 'judgments')} of this judge failed and count 0 in its {metric}, as in "
              "the run's metrics." if failures else "")
    return Sentence(f"{who} picks the same winner as people in {d.agreeing} of {plural(d.compared, 'comparison', 'comparisons')} "
                    f"on {metric} ({a.value:.0%}{interval}), over {plural(d.n_queries, 'query', 'queries')}{tau}.{failed}",
                    "warn" if failures else kind)


@dataclass
class JudgesView:
    report: JudgeReport
    #: The decision metric as the pages name it ("DCG@10").
    metric: str
    #: The run's judge (the panel, or its one judge), whose decisions lead the section.
    main: str
    decisions: list[Sentence]
    #: Judge, Comparison in words: the comparisons each judge decides differently.
    differing: pd.DataFrame
    stability: list[Sentence]
    item: list[Sentence]
    recommendation: Sentence
    #: One row per judge: every figure with its interval, queries and pairs.
    table: pd.DataFrame
    suite: SuiteDecisions | None = None
    suite_sentences: list[Sentence] = field(default_factory=list)
    calibrations: list[dict[str, Any]] = field(default_factory=list)


def _stability_sentences(report: JudgeReport, ordered: list[JudgeFigures]) -> list[Sentence]:
    out = []
    for f in ordered:
        s = f.stability
        if s is None:
            continue
        r = s.retest
        asked = ("The panel, its judges asked again" if f.name == PANEL else f"{judge_words(f.name)}, asked again")
        words = (f"{asked} on {plural(r.n_pairs, 'pair', 'pairs')} of {plural(r.n_queries, 'query', 'queries')} "
                 f"({plural(r.repeats, 'repeat', 'repeats')}): its grades of a pair agree {_pct(r.exact)}; "
                 f"{_pct(r.changed)} of the pairs changed grade; weighted kappa of its first grades with the "
                 f"repeats {_num(r.kappa_linear)}.")
        metric = metric_label(*report.metric.split("@"))
        moved = max(s.movement.values(), default=0.0)
        if s.flagged:
            out.append(Sentence(words + f" Its own noise moves a strategy's {metric} by up to {moved:.3f}, "
                                f"more than the smallest difference it calls real ({s.smallest_difference:.3f}): "
                                "do not trust its close calls.", "warn"))
        else:
            out.append(Sentence(words + (f" Its repeats move a strategy's {metric} by up to {moved:.3f}."
                                         if s.movement else ""), "good" if r.exact.value == 1.0 else "info"))
    if not out:
        out.append(Sentence("Stability not measured: `searchgrade judges RUN --repeat 2` asks a seeded sample of 200 "
                            "pairs again (the calls are estimated first).", "info"))
    return out


def _item_sentences(ordered: list[JudgeFigures]) -> list[Sentence]:
    out = []
    for f in ordered:
        who = judge_words(f.name)
        failed = (f"; {plural(f.failures, 'judgment', 'judgments')} failed (a failure is never a grade: a new run "
                  "of the same judges asks for those again, the cache keeps the rest)") if f.failures else ""
        if f.item.n_pairs < MIN_PAIRS:
            out.append(Sentence(f"{who}: too few pairs graded by it and by people ({f.item.n_pairs}; at least "
                                f"{MIN_PAIRS}) for item agreement{failed}.", "warn"))
            continue
        bias = f.item.bias
        leaning = ""
        if bias.low is not None and (bias.low > 0 or bias.high < 0):
            leaning = (f"; it grades {'higher' if bias.value > 0 else 'lower'} than people by {abs(bias.value):.2f} "
                       f"on average (95% CI {bias.low:+.2f} to {bias.high:+.2f})")
        kappa = f.item.kappa_linear
        kappa_ci = f" (95% CI {kappa.low:.2f} to {kappa.high:.2f})" if kappa.low is not None else ""
        out.append(Sentence(f"{who}: weighted kappa (linear) {_num(kappa, '.2f').split(' (')[0]}{kappa_ci}, exact "
                            f"agreement {_pct(f.item.exact)}, on {plural(f.item.n_pairs, 'pair', 'pairs')} of "
                            f"{plural(f.item.n_queries, 'query', 'queries')}{leaning}{failed}.",
                            "warn" if leaning or failed else "info"))
    return out


def _table(report: JudgeReport) -> pd.DataFrame:
    rows = []
    for f in report.judges:
        d = f.decision
        rows.append({
            "Judge": f.name, "Decisions agree": _num(d.agreement, ".0%") if d else "–",
            "Kendall's tau": _num(d.tau) if d else "–", "Queries": d.n_queries if d else 0,
            "Weighted kappa": _num(_item(f, "kappa_linear")), "Bias (judge − people)": _num(_item(f, "bias"), "+.2f"),
            "Pairs": f.pairs,
            "Retest agreement": _num(f.stability.retest.exact, ".0%") if f.stability else "not measured",
            "Cost per 1,000 pairs": f.cost.text().replace(" per 1,000 pairs", ""),
            "s per call": f"{f.cost.latency_s:.2f}" if f.cost.latency_s is not None else "–",
            "Recommended": "yes" if f.recommended else "",
        })
    return pd.DataFrame(rows)


def judges_view(store: Store, run_id: str, metric: str | None = None) -> JudgesView:
    """The section's content for a run (see the module).

    Raises:
        SearchGradeError: as engine.judges.report.judge_report.
    """
    report = judge_report(store, run_id, metric)
    main = PANEL if any(f.name == PANEL for f in report.judges) else report.judges[0].name
    ordered = sorted(report.judges, key=lambda f: f.name != main)
    metric = metric_label(*report.metric.split("@"))
    decisions = [decision_sentence(f.name, f.decision, metric, f.failures) for f in ordered if f.decision is not None]
    if not decisions:
        decisions = [Sentence(" ".join(report.notes) or "No decision could be compared.", "warn")]
    differing = pd.DataFrame([{"Judge": f.name, "Decided differently": verdict_words(v, judge_words(f.name))}
                              for f in ordered if f.decision is not None for v in f.decision.differing],
                             columns=["Judge", "Decided differently"])
    view = JudgesView(report, metric, main, decisions, differing, _stability_sentences(report, ordered), _item_sentences(ordered),
                      Sentence("Which judge to use: " + report.recommendation.text,
                               "good" if report.recommendation.name else "info"), _table(report))
    view.calibrations = [calibration_record(r) for r in store.judge_calibrations(report.run_id)]
    suite = store.suite_of_runs().get(report.run_id)
    if suite is not None:
        view.suite = suite_decisions(store, suite, metric)
        view.suite_sentences = [Sentence(f"Across the {len(view.suite.runs)} runs of suite {suite}: "
                                         + decision_sentence(n, d, view.suite.metric).text, "info")
                                for n, d in view.suite.judges.items()] or [
            Sentence(f"Across the runs of suite {suite}: " + " ".join(view.suite.notes), "info")]
    return view


def judges_lines(view: JudgesView) -> list[str]:
    """`searchgrade judges RUN`'s text: the section's sentences and table, plainly."""
    report = view.report
    lines = [f"run {report.run_id}: the judges against people's grades ({report.people_source}); decisions on "
             f"{view.metric} over {plural(len(report.queries), 'query', 'queries')} and "
             f"{plural(len(report.strategies), 'strategy', 'strategies')}", "", "Decisions"]
    lines += [f"  {s.text}" for s in view.decisions]
    lines += [f"  {row['Judge']}: {row['Decided differently']}" for row in view.differing.to_dict("records")]
    lines += [f"  {s.text}" for s in view.suite_sentences]
    lines += ["", "Stability", *(f"  {s.text}" for s in view.stability)]
    lines += ["", "Item agreement", *(f"  {s.text}" for s in view.item)]
    lines += ["", "Judges", *("  " + line for line in view.table.to_string(index=False).splitlines())]
    lines += ["", view.recommendation.text]
    for c in view.calibrations[:3]:
        lines.append(f"Calibrated prompt {c['prompt_version']} ({c['judge']}, {c['created_at'][:16]}): {c['why']}")
    lines += [f"note: {n}" for n in report.notes]
    return lines
