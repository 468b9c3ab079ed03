"""What to do next, in words, drawn from patterns in a run's results."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from searchgrade.engine.metrics import higher_is_better
from searchgrade.engine.run.strategies import base_of, label, reranked_of
from searchgrade.engine.statistics.paired import PairedDifference
from searchgrade.engine.store import RunRecord, Store
from searchgrade.viewmodels.common import Sentence, best_row, metric_label, plural
from searchgrade.viewmodels.failures import failure_findings, failure_summary
from searchgrade.viewmodels.llm_panel import kappa_reading
from searchgrade.viewmodels.runs import skipped_messages
from searchgrade.viewmodels.significance import figures_text
from searchgrade.viewmodels.variants import cost_recommendation

if TYPE_CHECKING:
    from searchgrade.viewmodels.recompute import Figures
    from searchgrade.viewmodels.results_cache import RunReads
    from searchgrade.viewmodels.results_view import ResultsView


def recommendations(store: Store, run: RunRecord, view: ResultsView, figures: Figures,
                    reads: RunReads, tested: dict[tuple[str, str], Any]) -> list[Sentence]:
    """What to do next, drawn from patterns in the results (``figures``: the run at the view's k;
    ``reads``: the run's kept reads; ``tested``: the page's paired tests, ``results_comparisons``)."""
    out: list[Sentence] = []
    k = view.k
    rows = view.metric_summary
    name = metric_label(view.metric, k)
    higher = higher_is_better(view.metric)
    head = view.headline
    if head is not None and not rows.empty:
        best = best_row(rows, view.metric)
        figure = f"{best['value']:.3f}, 95% CI {best['ci_low']:.3f} to {best['ci_high']:.3f}"
        highest = "highest" if higher else "lowest"
        if head.n_strategies < 2:
            out.append(Sentence(f"Only {best['label']} was evaluated ({name} {figure}): there was no "
                                "choice to make; evaluate other strategies to compare.", "info"))
        elif head.withheld:
            out.append(Sentence(
                f"No recommendation on {name}: {best['label']} is the {highest} ({figure}), but too few of the "
                f"results of {', '.join(head.withheld)} were judged to compare {'it' if len(head.withheld) == 1 else 'them'} "
                f"with it: unjudged results count as not relevant, so the figures favour what was judged. Fill the "
                "holes (--judge-unjudged, or the Review page's \"Fill the holes\") and evaluate again.", "warn"))
        elif head.ties:
            out.append(Sentence(
                f"No clear winner on {name}: {best['label']} is the {highest} ({figure}), but "
                f"{len(head.ties)} other strateg{'y is' if len(head.ties) == 1 else 'ies are'} not "
                f"distinguishable from it on these queries ({', '.join(head.ties)}): this run cannot "
                "rank them against it. More queries could; meanwhile cost or speed can choose between them.",
                "info"))
        else:
            out.append(Sentence(f"Use {best['label']}: the {highest} {name} ({figure}), significantly "
                                f"better than every other strategy evaluated.", "good"))
    # Beside the best, the cheapest strategy not significantly worse (viewmodels/variants.py).
    out.extend(cost_recommendation(store, run, rows, view.metric, k, reads.latency_summary(), tested))
    out.extend(_query_type_findings(store, run, view.metric, figures, reads))
    for r in view.reranker_table.to_dict("records"):
        out.append(_reranker_finding(r, name, higher))
    out.extend(_unretrieved(reads, k, run.depth))
    out.extend(failure_findings(failure_summary(store, run.run_id), run.run_id))
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


def _unretrieved(reads: RunReads, k: int, depth: int) -> list[Sentence]:
    """Relevant documents in no strategy's top k; of them, those not retrieved at any depth kept,
    which a reranker (reordering what was retrieved) cannot bring up."""
    missing = reads.unretrieved_relevant(k)
    if not missing["never_retrieved"]:
        return []
    share = missing["never_retrieved"] / missing["relevant"]
    text = (f"{missing['never_retrieved']} of {missing['relevant']} relevant documents ({share:.0%}), over "
            f"{plural(missing['queries_affected'], 'query', 'queries')}, are never retrieved by any strategy in "
            f"its top {k}")
    cure = ": a reranker cannot fix that; look at chunking, the embedding model or the wording of those documents."
    if k >= depth:
        return [Sentence(text + cure, "warn")]
    deep = reads.unretrieved_relevant()["never_retrieved"]
    if not deep:
        return [Sentence(text + f", but every one is in some strategy's top {depth} (the depth kept): a "
                         "better ranking of what is retrieved (a reranker) can bring them up.", "info")]
    return [Sentence(text + f"; {deep} of them are not in any strategy's top {depth} (the depth kept) either"
                     + cure, "warn")]


def _reranker_finding(r: dict, name: str, higher: bool) -> Sentence:
    """One baseline-vs-reranker row in words: significant (its adjusted interval excludes 0) or
    not distinguishable, with the interval and p-value the table shows."""
    change = r["Change"]
    subject = reranked_of(r["strategy"])
    n = r["Queries improved"] + r["Queries hurt"] + r["Unchanged"]
    figures = figures_text(PairedDifference(change, r["CI low"], r["CI high"], r["p-value"], n,
                                            int(r["Comparisons"] or 1)))
    counts = f"{r['Queries improved']} queries improved, {r['Queries hurt']} hurt"
    if r["Verdict"].startswith("no verdict"):  # withheld: too few of one side's results judged
        return Sentence(f"On {r['Strategy']}, the reranker changes {name} by {change:+.3f} with unjudged results "
                        f"counted as not relevant, but there is {r['Verdict']}", "warn", subject)
    if not r["Verdict"].startswith("significant"):
        return Sentence(
            f"On {r['Strategy']}, the reranker changes {name} by {change:+.3f}, not distinguishable "
            f"from no reranker on these queries ({figures}; {counts}).", "info", subject)
    if higher:
        words = f"{'adds' if change > 0 else 'costs'} {change:+.3f} {name}"
    else:
        words = f"{'raises' if change > 0 else 'lowers'} {name} by {abs(change):.3f} (lower is better)"
    better = (change > 0) == higher
    return Sentence(f"On {r['Strategy']}, the reranker {words} ({figures}, significant; {counts}).",
                    "good" if better else "warn", subject)


def _query_type_findings(store: Store, run: RunRecord, metric: str, figures: Figures,
                         reads: RunReads) -> list[Sentence]:
    if not higher_is_better(metric):
        # "Does poorly" reads the ratio of a better-is-larger value; the same pattern shows on
        # the metric's larger-is-better twin (share relevant for share not relevant).
        return []
    k = figures.k
    if figures.stored:
        rows = reads.metric_by_query_type(metric, k)
    else:
        typed = figures.per_query(metric).merge(store.query_table(run.run_id)[["query_id", "query_type"]],
                                                on="query_id")
        rows = typed.groupby(["strategy", "query_type"])["value"].mean().reset_index().to_dict("records")
    rows = [r for r in rows if base_of(r["strategy"]) is None]  # by name: declared strategies too
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
