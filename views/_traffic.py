"""The Results page's traffic figures for a run on a query set: per-query vs traffic-weighted means,
the bands (head, torso, tail) and how often each fails, and the judge against the clicks."""

from __future__ import annotations

import pandas as pd
import plotly.graph_objects as go
import streamlit as st

from searchgrade.engine.run.strategies import label
from searchgrade.engine.store import RunRecord
from searchgrade.viewmodels import clicks as clicks_model
from searchgrade.viewmodels import traffic as traffic_model
from searchgrade.viewmodels.common import metric_label
from searchgrade.views._common import home, plain, store_for


@st.cache_data(show_spinner="Weighting by traffic…", max_entries=32)
def traffic_view(path: str, run_id: str, metric: str, k: int) -> traffic_model.TrafficView | None:
    store = store_for(path)
    return traffic_model.traffic_view(store, store.get_run(run_id), metric, k)


def traffic_section(run: RunRecord, metric: str, k: int) -> None:
    view = traffic_view(home(), run.run_id, metric, k)
    if view is None:
        return
    name = metric_label(metric, k)
    share = view.searches / view.log_searches if view.log_searches else 0.0
    st.subheader(f"{name} weighted by traffic")
    st.caption(plain(f"Query set {view.set_name} ({view.method}) of log {view.log_name}: its queries carry "
                     f"{share:.1%} of the log's searches. The per-query mean counts every query once (the "
                     "average query); the traffic-weighted mean weights each by its searches over its chance of "
                     "being drawn (the average search), with a 95% weighted-bootstrap interval."))
    for note in view.notes:
        st.caption(plain(f"Note: {note}"))
    if view.sentence:
        st.info(plain(view.sentence))
    numbers = {c: st.column_config.NumberColumn(format="%.3f") for c in
               ("Per-query mean", "CI low", "CI high", "Traffic-weighted", "TW CI low", "TW CI high")}
    if not view.table.empty:
        st.dataframe(view.table.drop(columns="strategy"), hide_index=True, column_config=numbers,
                     key="results_traffic_table")
    if not view.bands.empty:
        figure = go.Figure()
        for band in ("head", "torso", "tail"):
            rows = view.bands[view.bands["Band"] == band]
            if rows.empty:
                continue
            figure.add_bar(name=band, x=rows["Strategy"], y=rows["Traffic-weighted"],
                           error_y={"type": "data", "symmetric": False,
                                    "array": rows["TW CI high"] - rows["Traffic-weighted"],
                                    "arrayminus": rows["Traffic-weighted"] - rows["TW CI low"]})
        figure.update_layout(barmode="group", height=340, margin={"t": 30, "b": 10}, yaxis_title=name,
                             legend_title_text="Band")
        st.plotly_chart(figure, key="results_traffic_bands_chart")
        shown = view.bands[["Band", "Strategy", "Queries", "Share of searches", "Per-query mean",
                            "Traffic-weighted", "TW CI low", "TW CI high", "Failure rate"]]
        st.dataframe(shown, hide_index=True, key="results_traffic_bands",
                     column_config={**numbers,
                                    "Share of searches": st.column_config.NumberColumn(format="percent"),
                                    "Failure rate": st.column_config.NumberColumn(
                                        "Top result graded 0", format="percent")})
    agreement = view.agreement
    if agreement is not None:
        st.markdown(f"**Judge vs clicks** on the {agreement.n:,} pairs both graded"
                    + (f": exact agreement {agreement.exact:.0%}" if agreement.exact is not None else ""))
        kappa_col, matrix_col = st.columns([3, 2])
        kappa_col.dataframe(agreement.kappas.replace({"human grade": "click grade"}, regex=True), hide_index=True,
                            key="results_click_kappas",
                            column_config={"Value": st.column_config.NumberColumn(format="%.2f")})
        matrix_col.caption("Pairs per judge grade (rows) and click grade (columns)")
        matrix_col.dataframe(agreement.confusion.rename(columns=lambda c: c.replace("Human", "Clicks")),
                             key="results_click_confusion")


@st.cache_data(show_spinner=False, max_entries=32)
def _coverage(path: str, run_id: str, k: int) -> tuple[dict[str, float] | None, dict[str, float], list[str],
                                                      list[str]]:
    store = store_for(path)
    run = store.get_run(run_id)
    made = clicks_model.grades_made_with(run)
    interleaved = [c["sentence"] for c in clicks_model.run_interleaving(store, run)]
    return (clicks_model.coverage(store, run, k), clicks_model.judge_share(store, run, k),
            made.lines if made else [], interleaved)


def coverage_section(run: RunRecord, k: int) -> None:
    """A click-graded run's coverage per strategy beside its figures, and what its grades were made
    with (the cut-points and the position bias, each with its source). Nothing for another run."""
    found, by_judge, lines, interleaved = _coverage(home(), run.run_id, k)
    if interleaved:
        st.markdown("**Team-draft interleaving** of this query set's searches: both systems shown to the same "
                    "people, each click credited to the system whose result it was (no holes, no position bias)")
        for sentence in interleaved:
            st.write(plain(sentence))
    if not found:
        return
    st.markdown(f"**Coverage@{k}**: what the click log judges of each strategy's top {k}",
                help="Users judge only what they were shown. A result shown too rarely to judge counts as not "
                     "relevant, so a figure graded by clicks rewards resemblance to the system users saw as much "
                     "as quality. Comparisons between strategies whose coverage differs are made on the results "
                     "both have judged, or withheld (Which differences are real?).")
    table = pd.DataFrame({"Strategy": [label(s) for s in found], f"Coverage@{k}": list(found.values())})
    bar = {"format": "%.3f", "min_value": 0, "max_value": 1}
    config = {f"Coverage@{k}": st.column_config.ProgressColumn(**bar)}
    if by_judge:  # the holes filled by the LLM judge: each figure says how much of it is the judge's
        table[f"By the judge@{k}"] = [by_judge.get(s, 0.0) for s in found]
        config[f"By the judge@{k}"] = st.column_config.ProgressColumn(**bar)
    st.dataframe(table, hide_index=True, key="results_click_coverage", column_config=config)
    low = [label(s) for s, v in found.items() if v + by_judge.get(s, 0.0) < clicks_model.LOW_COVERAGE]
    if low:
        one = len(low) == 1
        st.warning(plain(f"{', '.join(low)}: less than half of the top {k} was judged by the clicks. "
                         f"{'Its' if one else 'Their'} figures say how much {'it resembles' if one else 'they resemble'} "
                         f"what users were shown, not how good {'it is' if one else 'they are'}; fill the holes "
                         "(evaluate with --clicks --llm --judge-unjudged, or Review's \"Fill the holes\") before "
                         "choosing."), icon=":material/visibility_off:")
    for line in lines:
        st.caption(plain(line[0].upper() + line[1:] + "."))


@st.cache_data(show_spinner=False, max_entries=32)
def _coverage_across(path: str, run_ids: tuple[str, ...], k: int) -> pd.DataFrame:
    return clicks_model.coverage_across_runs(store_for(path), run_ids, k)


def runs_coverage(run_ids: tuple[str, ...], k: int, key: str) -> None:
    """Compare's and Trends' coverage: each click-graded run's coverage@k per strategy, beside figures
    from different runs (nothing when no run is graded by clicks)."""
    table = _coverage_across(home(), run_ids, k)
    if table.empty:
        return
    st.markdown(f"**Coverage@{k} of the runs graded by clicks**",
                help="The share of each strategy's top k the click log judges. A figure graded by clicks counts "
                     "the rest as not relevant: where coverage differs between runs (or strategies), so do the "
                     "figures, whatever the search did. Compare's verdicts are then made on the results both "
                     "runs judged, or withheld.")
    # Three decimals, as Results shows coverage; the judge's share beside it where it filled holes.
    table = table.assign(Cell=[f"{c:.3f}" + (f" + {j:.3f} by the judge" if j else "")
                               for c, j in zip(table["Coverage"], table["By the judge"], strict=True)])
    wide = table.pivot(index=["Created", "Run"], columns="Strategy", values="Cell")
    st.dataframe(wide.reset_index().drop(columns="Created").fillna("-"), hide_index=True, key=key)
