"""Suites: the saved, repeatable evaluations, their runs as one paired series with the significant
changes marked and what changed named, notes, "Run now", the schedule and the alert channels."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from searchgrade.engine import SearchGradeError
from searchgrade.engine.report.suites import (
    alerts_table,
    send_test_alert,
    set_alerts,
    set_note,
    set_schedule,
    skipped_slots,
    suite_runs_table,
    suite_trend,
    summary,
)
from searchgrade.engine.run.strategies import label as strategy_label
from searchgrade.server.outbound import check_typed_url
from searchgrade.views._colors import strategy_color
from searchgrade.views._common import app_exposed, chart_text, get_store, plain
from searchgrade.views._suite_actions import may_change_suites, start_suite_run

st.session_state.setdefault("suites_name", None)

st.title("Suites")
store = get_store()
suites = store.list_suites()
if not suites:
    st.info("No suite yet. Save a complete run as a suite on Results (\"Save as suite\"), or from the command "
            "line: `searchgrade suite create NAME --from RUN`.")
    st.stop()
names = [s.name for s in suites]
if st.session_state["suites_name"] not in names:
    st.session_state["suites_name"] = names[0]
name = st.selectbox("Suite", names, key="suites_name")
info = summary(store.get_suite(name))
can_change = may_change_suites()

st.caption(plain(f"{info.collection}: {info.queries} frozen queries, strategies {', '.join(info.strategies)}; "
                 f"regression test on {info.metric} (margin {info.margin:g}), adjusted over the strategies; "
                 f"{info.schedule}. Times are UTC."))
if info.outage:
    st.warning("The last run could not evaluate (a backend did not answer): no quality figure for it.")

left, right = st.columns([1, 3])
if can_change and left.button("Run now", type="primary", key="suites_run_now"):
    start_suite_run(name)
if not can_change:
    st.caption("This app is exposed without a login: suites can be seen here, not changed or run.")

trend = suite_trend(store, name)
if trend.empty:
    st.info("No complete run of this suite yet.")
else:
    figure = go.Figure()
    for strategy, rows in trend.groupby("strategy", sort=False):
        color = strategy_color(strategy) or "#888888"
        label = chart_text(strategy_label(strategy))
        x = [t.isoformat() for t in rows["created_at"]]
        hover = [chart_text(" | ".join(filter(None, [line, "changed: " + "; ".join(ch) if ch else "",
                                                     f"note: {note}" if note else ""]))) or "no change"
                 for line, ch, note in zip(rows["line"], rows["changes"], rows["note"], strict=True)]
        figure.add_scatter(x=x, y=rows["value"].tolist(), mode="lines+markers", name=label, line={"color": color},
                           error_y={"type": "data", "array": (rows["ci_high"] - rows["value"]).tolist(),
                                    "arrayminus": (rows["value"] - rows["ci_low"]).tolist()},
                           text=hover, hovertemplate="%{y:.3f}<br>%{text}<extra>" + label + "</extra>")
        for verdict, symbol, mark in (("drop", "triangle-down", "#c0392b"), ("gain", "triangle-up", "#1e8449")):
            marked = rows[rows["verdict"] == verdict]
            if not marked.empty:
                figure.add_scatter(x=[t.isoformat() for t in marked["created_at"]], y=marked["value"].tolist(),
                                   mode="markers", name=f"{label}: significant {verdict}",
                                   marker={"symbol": symbol, "size": 16, "color": mark})
    figure.update_layout(title=f"{info.metric} per run of suite {chart_text(name)} (paired: the same queries)",
                         xaxis_title="run (UTC)", yaxis_title=info.metric, height=420, meta={"chart": "suite_trend"})
    st.plotly_chart(figure, key="suites_trend")
    st.caption("Each run is compared with the suite's previous complete run by the paired test of the "
               "dashboard; a marker says the change is significant (a triangle down: a drop, which "
               "alerts; up: a gain).")

st.subheader("Runs")
table = suite_runs_table(store, name)
st.dataframe(table, hide_index=True, key="suites_runs")
for line in skipped_slots(store, name):
    st.caption(plain(line))

if can_change and not table.empty:
    with st.expander("Note on a run"):
        runs = [r for r in table["run"].tolist() if r != "-"]
        run_id = st.selectbox("Run", runs, key="suites_note_run")
        text = st.text_input("Note (shown on the trend and in alerts)", key="suites_note_text",
                             placeholder="synonyms v3 deployed")
        if st.button("Save note", key="suites_note_save") and run_id and text.strip():
            set_note(store, run_id, text.strip())
            st.rerun()

if can_change:
    with st.expander("Schedule (UTC)"):
        kind = st.radio("Run", ["not scheduled", "every", "cron"], horizontal=True, key="suites_schedule_kind")
        expression = st.text_input("Interval (30s, 6h, 1d) or cron expression (\"0 2 * * *\": 02:00 UTC daily)",
                                   key="suites_schedule_expr")
        if st.button("Save schedule", key="suites_schedule_save"):
            try:
                said = set_schedule(store, name, None if kind == "not scheduled" else kind, expression)
            except SearchGradeError as exc:
                st.error(plain(str(exc)))
            else:
                st.success(plain(f"Suite {name}: {said}. `searchgrade worker` (or `searchgrade app --worker`) runs it."))

with st.expander("Alerts"):
    st.caption(plain(f"Webhook: {info.webhook or 'none'}; email: {info.email or 'none'} (shown in part: they may "
                     "hold tokens). Email uses the server's SEARCHGRADE_SMTP_* settings."))
    if can_change:
        webhook = st.text_input("Webhook URL (POST JSON with a text field; empty keeps it)", key="suites_alert_webhook")
        email = st.text_input("Email address (empty keeps it)", key="suites_alert_email")
        one, two = st.columns(2)
        if one.button("Save alert channels", key="suites_alert_save"):
            try:
                exposed = app_exposed()
                set_alerts(store, name, webhook=webhook or None, email=email or None,
                           declared_in="exposed app" if exposed else "app",
                           check_url=lambda url: check_typed_url(url, exposed=exposed, what="webhook url"))
            except SearchGradeError as exc:
                st.error(plain(str(exc)))
            else:
                st.rerun()
        if two.button("Send test alert", key="suites_alert_test"):
            try:
                sent = send_test_alert(store, name)
            except SearchGradeError as exc:
                st.error(plain(str(exc)))
            else:
                for d in sent:
                    (st.success if d.ok else st.error)(plain(
                        f"{d.channel} {d.target}: " + ("sent" if d.ok else f"failed after {d.attempts} attempts: {d.error}")))
    alerts = alerts_table(store, name)
    if not alerts.empty:
        st.dataframe(alerts, hide_index=True, key="suites_alerts")
