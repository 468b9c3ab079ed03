"""The searchgrade dashboard: `streamlit run app.py` (or `searchgrade app`)."""

from __future__ import annotations

import streamlit as st

st.set_page_config(page_title="searchgrade", page_icon=":mag:", layout="wide")

navigation = st.navigation([
    st.Page("pages/evaluate.py", title="Evaluate", icon=":material/play_circle:", default=True),
    st.Page("pages/results.py", title="Results", icon=":material/leaderboard:"),
    st.Page("pages/drilldown.py", title="Query drill-down", icon=":material/search:"),
    st.Page("pages/trends.py", title="Trends", icon=":material/trending_up:"),
    st.Page("pages/compare.py", title="Compare", icon=":material/compare_arrows:"),
])
navigation.run()
