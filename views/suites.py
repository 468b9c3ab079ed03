"""Suites: the saved, repeatable evaluations, their runs as one paired series with the significant
changes marked and what changed named, notes, "Run now", the schedule and the alert channels."""

from __future__ import annotations

import streamlit as st

from searchgrade.engine import SearchGradeError
from searchgrade.engine.run.strategies import label as strategy_label
from searchgrade.server.outbound import check_typed_url
from searchgrade.viewmodels.suites import (
    alerts_table,
    metric_words,
    send_test_alert,
    set_alerts,
    set_note,
    set_schedule,
    skipped_slots,
    suite_runs_table,
    suite_trend,
    summary,
)
from searchgrade.views._common import app_exposed, get_store, plain
from searchgrade.views._suite_actions import may_change_suites, start_suite_run
from searchgrade.views._suite_trend import suite_trend_chart

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

st.caption(plain(f"{info.collection}: {info.queries} frozen queries, strategies "
                 f"{', '.join(strategy_label(s) for s in info.strategies)}; regression test on "
                 f"{metric_words(info.metric)} (a drop alerts when its adjusted 95% CI lies below 0 and it is "
                 f"larger than the margin, {info.margin:g}), adjusted over the strategies; "
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
    suite_trend_chart(trend, name, info.metric, key="suites_trend")

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
