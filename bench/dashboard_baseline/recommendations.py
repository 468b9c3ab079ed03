"""What to do next, in words, drawn from patterns in a run's results."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from bench.dashboard_baseline.common import ALPHA, Sentence, metric_label, plural
from bench.dashboard_baseline.llm_panel import kappa_reading
from bench.dashboard_baseline.runs import skipped_messages
from bench.dashboard_baseline.significance import format_p
from searchgrade.engine.run.strategies import base_strategies, label, reranked_of
from searchgrade.engine.store import RunRecord, Store

if TYPE_CHECKING:
    from bench.dashboard_baseline.results import ResultsView


def recommendations(store: Store, run: RunRecord, view: ResultsView) -> list[Sentence]:
    """What to do next, drawn from patterns in the results."""
    out: list[Sentence] = []
    k = view.k
    rows = view.metric_summary
    name = metric_label(view.metric, k)
    if view.headline is not None and not rows.empty:
        best = rows.loc[rows["value"].idxmax()]
        ties = [s.subject for s in view.significance if s.subject and s.kind == "info"]
        text = (f"Use {best['label']}: the highest {name} ({best['value']:.3f}, 95% CI "
                f"{best['ci_low']:.3f} to {best['ci_high']:.3f}).")
        if ties:
            text += (f" {len(ties)} other strateg{'y is' if len(ties) == 1 else 'ies are'} not "
                     f"distinguishable from it ({', '.join(label(s) for s in ties)}): "
                     "prefer the cheapest of those if latency matters.")
        out.append(Sentence(text, "good"))
    out.extend(_query_type_findings(store, run, view.metric, k))
    for r in view.reranker_table.to_dict("records"):
        change, p = r["Change"], r["p-value"]
        if p < ALPHA:
            word = "adds" if change > 0 else "costs"
            out.append(Sentence(
                f"On {r['Strategy']}, the reranker {word} {change:+.3f} {name} ({format_p(p)}, significant; "
                f"{r['Queries improved']} queries improved, {r['Queries hurt']} hurt).",
                "good" if change > 0 else "warn", reranked_of(r["strategy"])))
        else:
            out.append(Sentence(
                f"On {r['Strategy']}, the reranker changes {name} by {change:+.3f}, not "
                f"distinguishable from no reranker ({format_p(p)}): it is not worth its latency here.",
                "info", reranked_of(r["strategy"])))
    missing = store.unretrieved_relevant(run.run_id, run.threshold)
    if missing["never_retrieved"]:
        share = missing["never_retrieved"] / missing["relevant"]
        out.append(Sentence(
            f"{missing['never_retrieved']} of {missing['relevant']} relevant documents ({share:.0%}), "
            f"over {plural(missing['queries_affected'], 'query', 'queries')}, are never retrieved by any strategy in its "
            f"top {run.depth}: a reranker cannot fix that; look at chunking, the embedding model or "
            "the wording of those documents.", "warn"))
    judged = view.distribution
    judged_col = "% judged"
    if run.label_source == "human" and judged_col in judged and not judged.empty:
        low = judged[judged_col].max()
        if low < 50:
            out.append(Sentence(
                f"At most {low:.0f}% of the top-{k} results are judged: unjudged results count as "
                "not relevant, so absolute values are lower bounds; compare strategies with each "
                "other rather than reading the numbers on their own.", "info"))
    out.extend(_llm_findings(view))
    for message in skipped_messages(run.skipped):
        out.append(Sentence(message, "warn"))
    return out


def _query_type_findings(store: Store, run: RunRecord, metric: str, k: int) -> list[Sentence]:
    rows = [r for r in store.metric_by_query_type(run.run_id, metric, k) if r["strategy"] in base_strategies()]
    types = sorted({r["query_type"] for r in rows})
    if len(types) < 2:
        return []
    out = []
    name = metric_label(metric, k)
    for query_type in types:
        values = {r["strategy"]: r["value"] for r in rows if r["query_type"] == query_type}
        if len(values) < 2:
            continue
        best = max(values, key=values.get)
        worst = min(values, key=values.get)
        if values[best] <= 0 or values[worst] >= 0.8 * values[best]:
            continue
        text = (f"{query_type.capitalize()} queries do poorly on {label(worst)} ({name} "
                f"{values[worst]:.2f} against {values[best]:.2f} on {label(best)})")
        hybrid = values.get("hybrid")
        if hybrid is not None and best != "hybrid" and hybrid >= 0.9 * values[best]:
            text += f": use hybrid, which keeps {hybrid:.2f} on them and does well on the other types."
        else:
            text += f": use {label(best)} for them, or hybrid to cover every type."
        out.append(Sentence(text, "warn"))
    return out


def _llm_findings(view: ResultsView) -> list[Sentence]:
    """Judge failures, source found and judge-vs-human agreement, said in words."""
    panel = view.llm
    if panel is None:
        return []
    out = []
    if panel.judge_failures:
        share = panel.judge_failures / panel.pairs if panel.pairs else None
        text = f"{plural(panel.judge_failures, 'judgment', 'judgments')} failed"
        if share is not None:
            text += f" ({share:.0%} of {panel.pairs:,} pairs)"
        if panel.failures_in_metrics:
            text += (": they count as 0 in DCG and the other rank metrics and are left out of mean "
                     "relevance (judged@k shows how many results hold a grade). Failures are not "
                     "cached: resuming or re-running the evaluation asks the judge again for them only.")
        else:
            text += ": they are left out of the judge-vs-human agreement; the metrics use human labels."
        out.append(Sentence(text, "warn" if share is None or share >= 0.05 else "info"))
    found = panel.source_found
    if not found.empty:
        best = found.loc[found["value"].idxmax()]
        worst = found.loc[found["value"].idxmin()]
        text = (f"The query's source document is in the top {view.k} for {best['value']:.0%} of "
                f"queries on {best['label']}")
        if worst["strategy"] != best["strategy"]:
            text += f", {worst['value']:.0%} on {worst['label']}"
        out.append(Sentence(text + f" (source found@{view.k}).",
                            "warn" if best["value"] < 0.5 else "info"))
    agreement = panel.agreement
    if agreement is not None:
        # Binary human labels: only relevant-or-not compares like with like.
        binary = view.run.grade_max is not None and view.run.grade_max <= 1
        measure = "Kappa, relevant or not" if binary else "Weighted kappa (linear)"
        value = agreement.kappas.set_index("Measure").loc[measure, "Value"]
        if value is not None and not (isinstance(value, float) and math.isnan(value)):
            label = "relevant-or-not kappa" if binary else "linear weighted kappa"
            text = (f"The judge's agreement with the human labels is {kappa_reading(value)} "
                    f"({label} {value:.2f} over {agreement.n:,} pairs both graded)")
            if value < 0.4:
                out.append(Sentence(text + ": read LLM-judged results of this collection with care, "
                                    "or check the judge model and prompt.", "warn"))
            else:
                out.append(Sentence(text + ".", "good" if value > 0.6 else "info"))
    return out
