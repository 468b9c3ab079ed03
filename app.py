"""The searchgrade dashboard: `streamlit run app.py` (or `searchgrade app`)."""

from __future__ import annotations

import streamlit as st

from searchgrade.views._common import get_store
from searchgrade.views._login import require_login

st.set_page_config(page_title="searchgrade", page_icon=":mag:", layout="wide")
# Nothing of the app (not even its navigation) exists for a visitor who has not logged in.
require_login()

navigation = st.navigation([
    st.Page("views/evaluate.py", title="Evaluate", icon=":material/play_circle:", default=True),
    st.Page("views/results.py", title="Results", icon=":material/leaderboard:"),
    st.Page("views/drilldown.py", title="Query drill-down", icon=":material/search:"),
    st.Page("views/trends.py", title="Trends", icon=":material/trending_up:"),
    st.Page("views/compare.py", title="Compare", icon=":material/compare_arrows:"),
    st.Page("views/review.py", title="Review", icon=":material/rate_review:"),
    st.Page("views/suites.py", title="Suites", icon=":material/event_repeat:"),
])
# One open database for every read of this rerun (the file is free for other processes after).
with get_store().session():
    navigation.run()
